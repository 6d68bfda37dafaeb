"""The checks of what a derivative is asked at: argnums, the differentiated arguments (float or
complex arrays; no np.matrix, masked array, float16 or integer), jvp's tangents and vjp's
cotangents. Each names the input it refuses and says what to pass instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adcore import complex_split, tree
from adcore.core import Tracer
from adcore.errors import ComplexValueError, InvalidArgnumsError, InvalidInputError, InvalidValueError


def normalize_argnums(argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    """argnums as a tuple of non-negative positions, checked against the call's arguments."""
    nums = (argnums,) if type(argnums) is int else argnums
    if not isinstance(nums, (tuple, list)) or not nums or any(type(i) is not int for i in nums):
        raise InvalidArgnumsError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    positions = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise InvalidArgnumsError(
                f"argnums {argnums!r} is out of range: the function was called with {nargs} positional "
                f"argument(s), so argnums must lie in [{-nargs}, {nargs - 1}]"
            )
        positions.append(i % nargs)
    return tuple(positions)


def float_input(x: Any, where: str) -> Any:
    """A float32 or float64 array (or tracer) for the input `where` names; other dtypes and types
    are an error."""
    _plain_ndarray(x, where)
    dtype = x.dtype if isinstance(x, (Tracer, np.ndarray)) else None
    if dtype is None:
        try:
            x = np.asarray(x)
        except Exception as e:
            raise InvalidInputError(f"{where} ({type(x).__name__}) is not an array") from e
        dtype = x.dtype
    if dtype.kind != "f":
        raise InvalidInputError(
            f"{where} has dtype {dtype}: derivatives are taken with respect to float32, float64, "
            "complex64 or complex128 arrays only (integers have no derivative). Pass it as "
            "np.asarray(x, float), or leave it out of argnums."
        )
    if dtype not in _FLOAT_DTYPES:  # float16, longdouble: no rule is written or checked for them
        raise InvalidInputError(
            f"{where} has dtype {dtype}: adcore differentiates float32 and float64 (and complex64, "
            f"complex128) only; pass it as np.asarray(x, np.float32) or np.asarray(x, np.float64)"
        )
    return x


_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _plain_ndarray(x: Any, where: str) -> None:
    """np.matrix (whose * is a matrix product, whose reductions stay 2-d) and masked arrays (whose
    mask no op reads) are refused: a derivative of them would be of another function than f's."""
    if x.__class__ is np.ndarray or not isinstance(x, np.ndarray):
        return  # both are subclasses of ndarray
    if isinstance(x, np.ma.MaskedArray):
        raise InvalidInputError(
            f"{where} is a masked array (np.ma), and no op reads its mask: pass x.filled(value) or "
            "x.compressed(), or the data and the mask as two arguments (np.asarray(x) drops the mask)"
        )
    if isinstance(x, np.matrix):
        raise InvalidInputError(
            f"{where} is an np.matrix: pass np.asarray(x), a plain ndarray (and write @ for its "
            "matrix products: * on an ndarray multiplies elementwise)"
        )


def differentiable_input(x: Any, where: str) -> Any:
    """A float or complex array (or tracer) for the input `where` names, as the API takes it
    (adcore.complex_split hands a complex one to the engine as two float arrays)."""
    _plain_ndarray(x, where)
    if isinstance(x, complex) or (isinstance(x, (Tracer, np.ndarray, np.generic)) and x.dtype.kind == "c"):
        return np.asarray(x) if isinstance(x, complex) else x
    return float_input(x, where)


def check_tangent(t: Any, x: Any, where: str) -> Any:
    """The tangent for the primal `where` names: its shape and dtype, or a clear error."""
    if isinstance(t, (int, float)) or (isinstance(t, complex) and x.dtype.kind == "c"):
        t = np.asarray(t, dtype=x.dtype)
    elif not isinstance(t, (Tracer, np.ndarray, np.generic)):
        raise InvalidInputError(f"jvp: the tangent of {where} ({type(t).__name__}) is not an array")
    if np.shape(t) != np.shape(x):
        raise InvalidInputError(
            f"jvp: the tangent of {where} has shape {np.shape(t)} but its primal has shape {np.shape(x)}; "
            "a tangent is a direction in the primal's space, so the shapes must match"
        )
    if t.dtype != x.dtype:
        raise InvalidInputError(
            f"jvp: the tangent of {where} has dtype {t.dtype} but its primal has dtype {x.dtype}; "
            f"pass the tangent as np.asarray(t, {x.dtype})"
        )
    return t


def check_cotangent(cotangent: Any, out: Any, where: str = "f's output") -> Any:
    """vjp_fn's cotangent for the output `where` names: real numbers of the output's shape.
    A traced cotangent (vjp_fn differentiated) is checked by shape only, never converted."""
    if not isinstance(cotangent, Tracer):
        given = cotangent
        cotangent = np.asarray(cotangent)
        if cotangent.dtype.kind not in "fiu":
            raise InvalidInputError(
                f"vjp_fn: the cotangent must be real numbers, got {type(given).__name__} of dtype "
                f"{cotangent.dtype} for {where}; pass an array of its dtype ({np.result_type(out)})"
            )
    if np.shape(cotangent) != np.shape(out):
        raise InvalidValueError(
            f"vjp_fn: the cotangent has shape {np.shape(cotangent)} but {where} has shape "
            f"{np.shape(out)}; a cotangent weighs each output element, so pass one of shape {np.shape(out)}"
        )
    return cotangent


def real_arguments(what: str, args: Sequence[Any], argnums: int | Sequence[int]) -> None:
    """hessian and hvp take real arguments only, for now."""
    for n in normalize_argnums(argnums, len(args)):
        if any(complex_split.is_complex(x) for x in tree.leaves(args[n])):
            raise ComplexValueError(
                f"{what} of a complex argument (argument {n}) is not supported yet: split it into real and "
                f"imaginary parts yourself (f(x + 1j*y) of real x and y) and take the {what} of that"
            )
