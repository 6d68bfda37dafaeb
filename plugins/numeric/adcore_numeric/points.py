"""Evaluating f at perturbed points: one by one, as one batch, or spread over an executor.

A point is a column and an offset. A column is a direction: the j-th element of one
argument (`Basis`, for a Jacobian column) or a tangent for every argument (`Along`, for
a JVP). The offset is a signed step, or an imaginary one for the complex step. Every way
of evaluating builds each point with the same arithmetic, x + offset, and only collects
f's outputs; the differences are taken afterwards by the same code, so the results of
the serial, batched and executor paths are bit-identical.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from adcore.core import Tracer
from adcore.errors import AdcoreError, InvalidInputError, InvalidOutputError

if TYPE_CHECKING:  # an annotation only: loading the backend imports no concurrent.futures
    from concurrent.futures import Executor

_PLAIN = frozenset({float, np.float64, np.float32})  # outputs that pass every check as they are

# The columns go to an executor in at most this many tasks of consecutive points: enough
# to keep a few dozen workers busy, few enough that sending f and x stays cheap.
EXECUTOR_TASKS = 64


@dataclass(frozen=True)
class Basis:
    """Columns j = 0..x.size-1: args[argnum] with its j-th element moved by the offset."""

    argnum: int

    def each(self, args: tuple, columns: np.ndarray, offsets: np.ndarray) -> Iterator[tuple]:
        """The arguments at each point in turn."""
        x = args[self.argnum]
        flat, dtype = x.reshape(-1), _moved_dtype(x, offsets)
        numbers = flat.tolist()  # x + offset is exact (the steps land exactly), in any precision
        before, after = args[: self.argnum], args[self.argnum + 1 :]
        for column, offset in zip(columns.tolist(), offsets.tolist()):
            moved = flat.copy() if dtype == x.dtype else flat.astype(dtype)  # complex for the complex step
            moved[column] = numbers[column] + offset
            yield fresh(before) + (moved if x.ndim == 1 else moved.reshape(x.shape),) + fresh(after)

    def batch(self, args: tuple, columns: np.ndarray, offsets: np.ndarray) -> tuple:
        """The arguments at every point at once, on a new leading axis of the moved one."""
        x = args[self.argnum]
        dtype = _moved_dtype(x, offsets)
        batch = np.repeat(x[None].astype(dtype), len(columns), axis=0)
        rows = batch.reshape(len(columns), -1)
        rows[np.arange(len(columns)), columns] = x.ravel()[columns] + offsets.astype(dtype)
        return fresh(args[: self.argnum]) + (batch,) + fresh(args[self.argnum + 1 :])

    def describe(self, args: tuple, column: int, offset: Any) -> str:
        x = args[self.argnum]
        element = tuple(int(i) for i in np.unravel_index(column, x.shape))
        return f"argument {self.argnum}, element {element} (x = {x.flat[column].item()!r}) moved by {_number(offset)}"


@dataclass(frozen=True)
class Along:
    """One column: every argument moved by offset · its tangent (a directional derivative);
    an argument whose tangent is None stays where it is (and, with vectorized=True, unbatched)."""

    tangents: tuple

    def each(self, args: tuple, columns: np.ndarray, offsets: np.ndarray) -> Iterator[tuple]:
        for offset in offsets.tolist():
            yield tuple(fresh((x,))[0] if t is None else x + offset * t for x, t in zip(args, self.tangents))

    def batch(self, args: tuple, columns: np.ndarray, offsets: np.ndarray) -> tuple:
        return tuple(
            fresh((x,))[0]
            if t is None
            else x[None]
            + offsets.astype(_moved_dtype(x, offsets)).reshape((-1,) + (1,) * np.ndim(x)) * t[None]
            for x, t in zip(args, self.tangents)
        )

    def describe(self, args: tuple, column: int, offset: Any) -> str:
        return f"every argument moved by {_number(offset)} times its tangent"


Direction = Basis | Along


def fresh(args: tuple) -> tuple:
    """The arguments with every array copied: an f that writes into its input (x *= 2) must
    neither see another point's writes nor change the caller's array. Each keeps its memory layout
    (order K): NumPy's sums depend on it, and f's value at x must be f(x)'s bits."""
    if not any(isinstance(a, np.ndarray) for a in args):  # the common case, at no cost
        return args
    return tuple(a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args)


def evaluate(
    f: Callable[..., Any],
    args: tuple,
    direction: Direction,
    columns: np.ndarray,
    offsets: np.ndarray,
    *,
    vectorized: bool = False,
    executor: Executor | None = None,
) -> np.ndarray:
    """f at every point (columns[p], offsets[p]), stacked: shape (points,) + f's output shape."""
    if len(columns) == 0:
        raise ValueError("evaluate needs at least one point")
    if vectorized:
        return evaluate_batch(f, args, direction, columns, offsets)
    if executor is None:
        return evaluate_serial(f, args, direction, columns, offsets)
    tasks = [t for t in np.array_split(np.arange(len(columns)), min(EXECUTOR_TASKS, len(columns))) if len(t)]
    try:
        futures = [
            executor.submit(evaluate_serial, f, args, direction, columns[t], offsets[t]) for t in tasks
        ]
        return np.concatenate([future.result() for future in futures])
    except AdcoreError:
        raise
    except Exception as e:
        if _is_pickling_error(e):
            raise InvalidInputError(
                f"backend 'numeric': executor={type(executor).__name__} could not send f to its workers "
                f"({type(e).__name__}: {e}). A process pool pickles f: define f at module level (not a "
                "lambda or a closure), or use an executor that sends closures (a Dask Client's "
                "get_executor() uses cloudpickle)."
            ) from e
        raise


def evaluate_serial(
    f: Callable[..., Any], args: tuple, direction: Direction, columns: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """f at each point in turn (what a worker of an executor runs, too)."""
    is_complex = np.iscomplexobj(offsets)
    values = None
    with _evaluating(is_complex):
        points = zip(columns.tolist(), offsets.tolist(), direction.each(args, columns, offsets))
        for p, (column, offset, moved) in enumerate(points):
            try:
                out = f(*moved)
            except Exception as e:
                raise _failed(
                    e, is_complex, functools.partial(direction.describe, args, column, offset)
                ) from e
            if out.__class__ in _PLAIN and not is_complex:  # a real number passes every check
                shape = ()
            else:
                out = checked(out, is_complex, functools.partial(direction.describe, args, column, offset))
                shape = out.shape
            if values is None:
                values = np.empty((len(columns),) + shape, dtype=_stored_dtype(np.asarray(out)))
            elif shape != values.shape[1:]:
                raise InvalidOutputError(
                    f"backend 'numeric': f returned shape {shape} at {direction.describe(args, column, offset)}, "
                    f"but {values.shape[1:]} elsewhere; its output shape must not depend on its inputs' values"
                )
            values[p] = out
    return values


def evaluate_batch(
    f: Callable[..., Any], args: tuple, direction: Direction, columns: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """f called once with every point, batched on a new leading axis of the moved arguments."""
    is_complex = np.iscomplexobj(offsets)

    def where() -> str:
        return f"a batch of {len(columns)} points (vectorized=True)"

    with _evaluating(is_complex):
        try:
            out = f(*direction.batch(args, columns, offsets))
        except Exception as e:
            raise _failed(e, is_complex, where) from e
    out = checked(out, is_complex, where)
    if out.ndim == 0 or out.shape[0] != len(columns):
        raise InvalidOutputError(
            f"backend 'numeric' with vectorized=True: f was called with a batch of {len(columns)} points "
            f"(a new leading axis on the arguments it is differentiated with respect to) and returned "
            f"shape {out.shape}; it must return one output per point, stacked on a leading axis "
            f"of length {len(columns)}. Leave vectorized out if f takes one point at a time."
        )
    return out.astype(_stored_dtype(out), copy=False)


@contextmanager
def _evaluating(is_complex: bool):
    """Out-of-domain points are reported by the caller, not warned about; for the complex
    step, a cast of complex to real is an error, not a warning."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        if is_complex:
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
        yield


def _failed(e: Exception, is_complex: bool, where: Callable[[], str]) -> Exception:
    """The error to raise when f raised e at a point."""
    if isinstance(e, np.exceptions.ComplexWarning):
        return InvalidOutputError(_drops_imaginary(where(), f"it cast a complex value to real ({e})"))
    if is_complex and not isinstance(e, AdcoreError):
        return InvalidInputError(
            f"backend 'numeric' with method='complex': f failed on complex input at {where()} "
            f"({type(e).__name__}: {e}). The complex step evaluates f at x + ih and needs f to accept "
            "complex arrays; use method='richardson' or 'central' for this f."
        )
    return e


def checked(out: Any, is_complex: bool, where: Callable[[], str]) -> np.ndarray:
    """f's output as an array, or an error that says at which point f returned what."""
    if isinstance(out, Tracer):
        if out.concrete_itself:  # f closes over a vmap's batch: vmap runs f per example instead
            out._concrete_value()
        raise InvalidInputError(
            "backend 'numeric' works on plain arrays and cannot run inside another backend's "
            f"transformation (f returned a {type(out).__name__}). Make numeric the outer derivative, "
            "e.g. hessian(f, inner='reverse', outer='numeric')."
        )
    if not isinstance(out, (np.ndarray, np.generic, float, int)) or isinstance(out, bool):
        raise InvalidOutputError(
            f"backend 'numeric': f returned {type(out).__name__} at {where()}; it must return one "
            "array of numbers (differentiate each output separately, or stack them)"
        )
    out = np.asarray(out)
    if is_complex and out.dtype.kind != "c":
        raise InvalidOutputError(
            _drops_imaginary(where(), f"it returned {out.dtype} values for complex input")
        )
    if out.dtype.kind not in "iuf" and not (is_complex and out.dtype.kind == "c"):
        raise InvalidOutputError(
            f"backend 'numeric': f returned {out.dtype} values at {where()}; it must return real numbers"
        )
    return out


def first_nonfinite(values: np.ndarray) -> int | None:
    """The first point (row of values) where f was not finite, or None."""
    bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    return int(np.argmax(bad)) if bad.any() else None


def _number(offset: Any) -> str:
    """An offset as a person writes it: 2.0e-06, or 1e-16j for the complex step."""
    offset = complex(offset)
    return f"{offset.imag:.3g}j" if offset.imag else f"{offset.real:.6g}"


def _drops_imaginary(where: str, how: str) -> str:
    return (
        f"backend 'numeric' with method='complex': f drops the imaginary part at {where}: {how}. "
        "The complex step reads the derivative from Im f(x + ih), so f must be a real function of real "
        "inputs that carries complex values through (no abs, np.real, float(), comparisons or casts to "
        "float, no complex values of its own inside: adcore hands a complex output to the backend as its "
        "real and imaginary parts); use method='richardson' or 'central' for this f."
    )


def _moved_dtype(x: np.ndarray, offsets: np.ndarray) -> np.dtype:
    """x's dtype, or its complex counterpart for the complex step (as x + a Python offset gives)."""
    return np.result_type(x.dtype, 1j) if offsets.dtype.kind == "c" else x.dtype


def _stored_dtype(out: np.ndarray) -> np.dtype:
    """Outputs are kept in double precision, whatever f returned: the differences are taken there."""
    return np.dtype(np.complex128 if out.dtype.kind == "c" else np.float64)


def _is_pickling_error(e: BaseException) -> bool:
    import pickle

    return isinstance(e, (pickle.PicklingError, AttributeError, TypeError)) and (
        "pickle" in str(e).lower() or "can't get local" in str(e).lower() or "lambda" in str(e).lower()
    )
