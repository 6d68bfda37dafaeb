"""The forward backend: evaluate f once on Duals that carry a batch of tangent directions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.core import new_trace
from adcore_forward.dual import Dual, ForwardTrace


class ForwardBackend(Backend):
    """Forward mode (dual numbers): one pass per batch of tangent directions, so best when
    inputs are few and outputs many (adcore.derivatives builds a Jacobian from chunks of the
    identity; its option `chunk_size` is the directions per pass)."""

    name = "forward"
    kinds = ("jvp",)
    builds = "jvp"
    reference_priority = 10  # after symbolic and reverse
    outer_priority = 2  # the outer of second derivatives first: a whole Hessian in one batched pass

    def jvp(self, f: Callable[..., Any], args: tuple, tangents: tuple) -> tuple[Any, Any]:
        """f(*args) and its tangents, shape (B,) + out.shape, in one pass over f; None where no
        tangent reaches the output."""
        perturbed = [t for t in tangents if t is not None]
        if not perturbed:
            return f(*args), None
        with new_trace(ForwardTrace, batch=np.shape(perturbed[0])[0]) as trace:
            inputs = [x if t is None else Dual(x, t, trace) for x, t in zip(args, tangents)]
            out = f(*inputs)
        if isinstance(out, Dual) and out._trace is trace:
            return out.value, out.tangent
        return out, None
