"""The reverse backend: trace f on Tensors, then sweep backwards once per output element."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.backend import Backend, check_output
from adcore.core import new_trace
from adcore.errors import StateChangedError
from adcore_reverse.backward import backward_pass
from adcore_reverse.tensor import ReverseTrace, Tensor


class ReverseBackend(Backend):
    """Reverse mode (a tape): one backward sweep per output element, so best for scalar losses."""

    name = "reverse"
    kinds = ("vjp",)

    def value_and_jacobian(
        self, f: Callable[..., Any], args: tuple, argnums: Sequence[int], *, scalar_output: bool = False
    ) -> tuple[Any, tuple[Any, ...]]:
        thawed = _freeze([args[i] for i in argnums])
        try:
            return self._value_and_jacobian(f, args, argnums, scalar_output)
        except ValueError as e:
            if thawed and "read-only" in str(e):
                raise _written(e) from e
            raise
        finally:
            for a in reversed(thawed):
                a.flags.writeable = True

    def _value_and_jacobian(self, f, args, argnums, scalar_output):
        out, leaves, trace = _trace(f, args, argnums)
        value = _value(out, trace)
        check_output(value, self.name, scalar_output)
        shape = getattr(value, "shape", ())
        if not _connected(out, trace):
            return value, tuple(_zeros(shape, args[i]) for i in argnums)
        if shape == ():  # one sweep: the common case of a scalar loss
            reached = _sweep(out, value.dtype.type(1), retain_graph=False)
            return value, tuple(
                [_or_zeros(reached.get(leaf._seq), args[i]) for leaf, i in zip(leaves, argnums)]
            )
        rows: list[list[Any]] = [[] for _ in argnums]
        cells = list(np.ndindex(shape))
        for k, index in enumerate(cells):
            seed = np.zeros_like(value)
            seed[index] = 1
            reached = _sweep(out, seed, retain_graph=k < len(cells) - 1)
            for row, leaf in zip(rows, leaves):
                row.append(reached.get(leaf._seq))
        return value, tuple(_assemble(row, shape, args[i]) for row, i in zip(rows, argnums))

    def vjp(self, f: Callable[..., Any], args: tuple) -> tuple[Any, Callable[[Any], tuple]]:
        # the pullback runs later, after the caller may have changed its arrays: keep copies
        copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        out, leaves, trace = _trace(f, copies, range(len(args)))
        value = _value(out, trace)
        check_output(value, self.name, scalar=False)

        def pullback(cotangent: Any) -> tuple:
            # adcore.vjp has checked its shape and kind (api._cotangent), with a typed error
            cotangent = np.asarray(cotangent, dtype=np.result_type(value))
            reached = _sweep(out, cotangent, retain_graph=True) if _connected(out, trace) else {}
            return tuple(_or_zeros(reached.get(leaf._seq), arg) for leaf, arg in zip(leaves, args))

        return value, pullback


def _trace(f, args, argnums):
    with new_trace(ReverseTrace) as trace:
        inputs = list(args)
        leaves = []
        for i in argnums:
            inputs[i] = Tensor._leaf(args[i], trace)
            leaves.append(inputs[i])
        out = f(*inputs)
    return out, leaves, trace


def _freeze(arrays: list) -> list:
    """Make the differentiated arrays, and the arrays they are views of, read-only while f runs
    and the backward pass reads them; return those that were writable, to thaw afterwards.
    Copying them instead on every call costs more than the sweep of a small MLP (fresh pages
    for every weight matrix), and a write from inside f (through a global naming the same
    array) would change the values the derivative is taken at."""
    thawed = []
    for a in arrays:
        while isinstance(a, np.ndarray):
            if a.flags.writeable:
                a.flags.writeable = False
                thawed.append(a)
            a = a.base
    return thawed


def _written(e: ValueError) -> StateChangedError:
    return StateChangedError(
        f"backend 'reverse': f wrote into an array it is differentiated with respect to ({e}); "
        "the derivative would be taken at values that changed under it. Compute on a copy "
        "inside f, or change the array before or after the call."
    )


def _value(out: Any, trace: ReverseTrace) -> Any:
    return out.value if isinstance(out, Tensor) and out._trace is trace else out


def _connected(out: Any, trace: ReverseTrace) -> bool:
    return isinstance(out, Tensor) and out._trace is trace and out.requires_grad


def _sweep(out: Tensor, seed: Any, retain_graph: bool) -> dict[int, Any]:
    return {leaf._seq: g for leaf, g in backward_pass(out, seed, retain_graph=retain_graph)}


def _zeros(out_shape: tuple[int, ...], arg: Any) -> np.ndarray:
    return np.zeros(out_shape + np.shape(arg), dtype=arg.dtype)


def _or_zeros(g: Any, arg: Any) -> Any:
    return _zeros((), arg) if g is None else g


def _assemble(row: list[Any], out_shape: tuple[int, ...], arg: Any) -> Any:
    """Stack one gradient per output element into shape out.shape + arg.shape."""
    if not row:  # an empty output: no sweep ran
        return _zeros(out_shape, arg)
    row = [_or_zeros(g, arg) for g in row]
    return ops.reshape(ops.stack(*row), shape=out_shape + np.shape(arg))
