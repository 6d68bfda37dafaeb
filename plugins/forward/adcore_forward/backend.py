"""The forward backend: evaluate f once on Duals whose tangents are the identity, chunk by chunk."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.backend import Backend, check_output
from adcore.core import new_trace
from adcore.errors import InvalidInputError
from adcore_forward.dual import Dual, ForwardTrace

# Tangent directions per pass by default: a chunk of the identity as seed costs
# chunk * n numbers per input element, so chunks of at most 2**22 seed entries
# (32 MiB in float64) keep memory bounded while n up to 2048 still takes one pass.
SEED_ENTRIES = 2**22


def default_chunk_size(n: int) -> int:
    """Directions per pass for n inputs: all of them while the seed stays under SEED_ENTRIES."""
    return max(1, min(n, SEED_ENTRIES // max(n, 1)))


class ForwardBackend(Backend):
    """Forward mode (dual numbers): one pass per chunk of input directions, so best when
    inputs are few and outputs many. Option `chunk_size`: directions per pass."""

    name = "forward"
    kinds = ("jvp",)

    def value_and_jacobian(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        scalar_output: bool = False,
        chunk_size: int | None = None,
    ) -> tuple[Any, tuple[Any, ...]]:
        sizes = [int(np.prod(np.shape(args[i]))) for i in argnums]
        n = sum(sizes)
        chunk = default_chunk_size(n) if chunk_size is None else _checked_chunk_size(chunk_size)
        value, columns = None, []
        for start in range(0, n, chunk) if n else [0]:
            stop = min(start + chunk, n)
            with new_trace(ForwardTrace, batch=stop - start) as trace:
                inputs = list(args)
                offset = 0
                for i, size in zip(argnums, sizes):
                    seed = _identity_rows(start, stop, offset, size, args[i])
                    if seed is not None:
                        inputs[i] = Dual(args[i], seed, trace)
                    offset += size
                out = f(*inputs)
            value, tangent = _split(out, trace)
            if start == 0:
                check_output(value, self.name, scalar_output)
            columns.append(tangent if tangent is not None else _zeros((stop - start,), value))
        tangents = columns[0] if len(columns) == 1 else ops.concatenate(*columns, axis=0)
        jacobians, offset = [], 0
        for i, size in zip(argnums, sizes):
            part = tangents if size == n else ops.getitem(tangents, index=slice(offset, offset + size))
            jacobians.append(_as_jacobian(part, value, args[i]))
            offset += size
        return value, tuple(jacobians)

    def jvp(self, f: Callable[..., Any], args: tuple, tangents: tuple) -> tuple[Any, Any]:
        """f(*args) and J·tangents in one pass, with a batch of one direction."""
        with new_trace(ForwardTrace, batch=1) as trace:
            inputs = [
                Dual(x, ops.reshape(t, shape=(1,) + np.shape(x)), trace) for x, t in zip(args, tangents)
            ]
            out = f(*inputs)
        value, tangent = _split(out, trace)
        check_output(value, self.name, scalar=False)
        if tangent is None:
            return value, _zeros((), value)
        return value, ops.reshape(tangent, shape=np.shape(value))


def _checked_chunk_size(chunk_size: Any) -> int:
    if type(chunk_size) is not int or chunk_size < 1:
        raise InvalidInputError(
            f"backend 'forward': chunk_size must be a positive int (tangent directions per pass), "
            f"got {chunk_size!r}"
        )
    return chunk_size


def _identity_rows(start: int, stop: int, offset: int, size: int, arg: Any) -> np.ndarray | None:
    """Rows start..stop of the n x n identity, restricted to this argument's columns
    offset..offset+size and shaped (stop - start,) + arg.shape; None if they are all zero."""
    if max(start, offset) >= min(stop, offset + size):
        return None
    seed = np.eye(stop - start, size, k=start - offset, dtype=arg.dtype)
    return seed.reshape((stop - start,) + np.shape(arg))


def _split(out: Any, trace: ForwardTrace) -> tuple[Any, Any]:
    """(primal, batched tangent) of f's output; the tangent is None if it does not depend on the inputs."""
    if isinstance(out, Dual) and out._trace is trace:
        return out.value, out.tangent
    return out, None


def _zeros(batch_shape: tuple[int, ...], value: Any) -> np.ndarray:
    return np.zeros(batch_shape + np.shape(value), dtype=np.result_type(value))


def _as_jacobian(tangents: Any, value: Any, arg: Any) -> Any:
    """Tangents of shape (arg.size,) + out.shape as the Jacobian, shape out.shape + arg.shape."""
    out_ndim = len(np.shape(value))
    moved = ops.transpose(tangents, axes=tuple(range(1, out_ndim + 1)) + (0,))
    return ops.reshape(moved, shape=np.shape(value) + np.shape(arg))
