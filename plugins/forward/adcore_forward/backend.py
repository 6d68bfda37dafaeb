"""The forward backend: evaluate f once on Duals that carry a batch of tangent directions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.core import new_trace
from adcore.hookspecs import RuleKind
from adcore_forward.dual import Dual, ForwardTrace

# The contract of the "jvp" rules this plugin brings: the batched tangent of this input and the
# output, then the op's inputs -> this input's share of the output's batched tangent. `t` has shape
# (B,) + input.shape: B tangent directions at once. The share must broadcast to (B,) + ans.shape
# (the backend broadcasts it there). One rule per input, None where none flows.
JVP = RuleKind(
    ("t", "ans"),
    per_input=True,
    column=1,
    doc="(t, ans, *inputs) -> this input's tangent share",
    joint="(ts, ans, *inputs) -> the output's tangent; ts: each input's tangent, None where it has none",
)


class ForwardBackend(Backend):
    """Forward mode (dual numbers): one pass per batch of tangent directions, so best when
    inputs are few and outputs many (adcore.derivatives builds a Jacobian from chunks of the
    identity; its option `chunk_size` is the directions per pass)."""

    name = "forward"
    kinds = ("jvp",)
    rule_kinds = {"jvp": JVP}  # the contract of the kind it brings, as data
    builds = "jvp"
    reference_priority = 10  # after symbolic and reverse
    outer_priority = 2  # the outer of second derivatives first: a whole Hessian in one batched pass
    batches = True  # its dual numbers carry vmap's batches, and run inside vmap too

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
