"""Dropout (torch.nn.Dropout) with an explicit numpy Generator.

In train mode each call draws one mask (keep with probability 1 - p) and scales the kept values
by 1 / (1 - p), as torch; p = 1 gives zeros; eval mode is the identity. The mask is a constant of
the call, so reverse and forward (one evaluation) differentiate the function with that mask.
Refused (UnsupportedByBackendError) where one mask cannot be right: a backend that evaluates f
several times for one derivative (numeric: every evaluation would draw another mask, the
derivative of no function), adcore.vmap (one draw for all examples; torch.func refuses too), and
sparsity detection and symbolic (both record f once and reuse the record: one mask for every call).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from adcore.core import Tracer
from adcore.errors import InvalidInputError, InvalidValueError, UnsupportedByBackendError
from adcore_nn import evaluation, init
from adcore_nn.module import Module

__all__ = ["Dropout"]


def _recording_backend(input: Any) -> str | None:
    """The backend that records the input's ops once and reuses the record for later calls (sparsity
    detection's pattern, symbolic's cached expression), so one mask would be reused; or None."""
    while isinstance(input, Tracer):
        backend = evaluation._trace_backend(input._trace)
        if backend in ("sparsity", "symbolic"):
            return backend
        input = input.value
    return None


class Dropout(Module):
    """Zero each value with probability p in train mode, scale the rest by 1 / (1 - p).

    `generator` (a numpy Generator) draws the masks; None draws from adcore_nn's default generator
    (`adcore_nn.manual_seed`). `inplace=True` writes into a plain NumPy input as torch; a traced
    input cannot be written, so it gets a new value (the same numbers).
    """

    def __init__(
        self, p: float = 0.5, inplace: bool = False, *, generator: np.random.Generator | None = None
    ) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise InvalidValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise InvalidInputError(
                f"Dropout: generator must be a numpy.random.Generator or None, got {type(generator).__name__}"
            )
        self.p = float(p)
        self.inplace = inplace
        self.generator = generator

    def forward(self, input: Any) -> Any:
        dtype = getattr(input, "dtype", None)
        if dtype is None or np.dtype(dtype).kind != "f":
            raise InvalidInputError(f"Dropout: the input must be a float array, got {type(input).__name__}")
        if not self.training or self.p == 0:
            return input
        backend = evaluation.repeats_f()
        if backend is not None:
            raise UnsupportedByBackendError(
                f"Dropout: backend {backend!r} evaluates the function several times for one derivative, "
                "and each evaluation would draw another mask; call model.eval() or use backend='reverse'"
            )
        if evaluation.batched(input):
            raise UnsupportedByBackendError(
                "Dropout: under adcore.vmap one mask would be drawn for every example alike (torch.func "
                "refuses it too); call model.eval(), or apply the model to the whole batch without vmap"
            )
        recorder = _recording_backend(input)
        if recorder is not None:
            raise UnsupportedByBackendError(
                f"Dropout: backend {recorder!r} records the function once and reuses the record for later "
                "calls (a sparsity pattern, a symbolic derivative), so one mask would serve every call and "
                "a pattern would miss the entries the next masks keep; call model.eval() or use "
                "backend='reverse'"
            )
        rng = self.generator if self.generator is not None else init.default_generator()
        keep = rng.random(np.shape(input)) >= self.p
        scale = 0.0 if self.p == 1 else 1.0 / (1.0 - self.p)
        mask = (keep * scale).astype(dtype)
        if self.inplace and isinstance(input, np.ndarray) and not isinstance(input, Tracer):
            if not input.flags.writeable:
                raise InvalidValueError(
                    "Dropout(inplace=True): the input array is read-only; pass a writeable array or "
                    "use inplace=False"
                )
            return np.multiply(input, mask, out=input)
        return input * mask

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
