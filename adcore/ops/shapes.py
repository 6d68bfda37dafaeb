"""Shape ops: transpose, reshape, broadcasting, concatenate, stack, indexing and astype (NumPy's
functions that only move elements, flip, roll, tril, ..., are adcore/ops/rearrangements.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore.spec import REAL, OpSpec, Sample, fixed_samples


def _getitem(x, index):
    return x[index]


def _scatter_add(values, index, shape):
    """zeros(shape) with `values` added at `index` (repeated indices accumulate): getitem's transpose."""
    out = np.zeros(shape, dtype=np.result_type(values))
    if is_basic_index(index):  # no element is hit twice: assignment, 7-20x faster than np.add.at
        out[index] = values
    else:
        np.add.at(out, index, values)
    return out


def is_basic_index(index: Any) -> bool:
    """Whether index is NumPy basic indexing (ints, slices, Ellipsis, None, or a tuple of them), which
    selects each element at most once. Bools and arrays (even 0-d) are advanced indexing."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        part is None
        or part is Ellipsis
        or isinstance(part, slice)
        or (isinstance(part, (int, np.integer)) and not isinstance(part, (bool, np.bool_)))
        for part in parts
    )


def _concatenate(*arrays, axis=0):
    return np.concatenate(arrays, axis=axis)


def _stack(*arrays, axis=0):
    return np.stack(arrays, axis=axis)


def _getitem_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    indices = (
        1,
        (slice(1, 3),),
        (slice(None), 2),
        (-1, slice(None, None, -1)),
        (np.array([0, 2, 2]),),  # a repeated index: its gradient accumulates
        (np.array([True, False, True, True]),),
        (np.array([0, 3]), np.array([2, 0])),
        (Ellipsis, None),
    )
    out = [Sample((REAL.draw(rng, (4, 3), dtype),), {"index": i}) for i in indices]
    return out + [Sample((REAL.draw(rng, (), dtype),), {"index": ()})]


def _scatter_add_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    return [
        Sample((REAL.draw(rng, (3, 3), dtype),), {"index": (np.array([0, 2, 2]),), "shape": (4, 3)}),
        Sample((REAL.draw(rng, (2,), dtype),), {"index": (slice(None), 1), "shape": (2, 3)}),
    ]


def _variadic_samples(*calls):
    def draw(rng: np.random.Generator, dtype) -> list[Sample]:
        return [
            Sample(tuple(REAL.draw(rng, s, dtype) for s in shapes), {"axis": axis}) for shapes, axis in calls
        ]

    return draw


transpose = OpSpec(
    "transpose",
    np.transpose,
    params=("axes",),
    numpy=(np.transpose,),
    samples=fixed_samples(
        (((2, 3, 4),), {"axes": None}),
        (((2, 3, 4),), {"axes": (1, 0, 2)}),
        (((2, 3, 4),), {"axes": (2, 0, 1)}),
        (((3,),), {}),
    ),
    accepts_complex=True,
)
reshape = OpSpec(
    "reshape",
    np.reshape,
    params=("shape",),
    numpy=(np.reshape,),
    samples=fixed_samples(
        (((2, 3),), {"shape": (3, 2)}),
        (((6,),), {"shape": (2, 3)}),
        (((),), {"shape": (1, 1)}),
        (((2, 3, 4),), {"shape": (-1, 4)}),
    ),
    accepts_complex=True,
)
broadcast_to = OpSpec(
    "broadcast_to",
    np.broadcast_to,
    params=("shape",),
    numpy=(np.broadcast_to,),
    samples=fixed_samples(
        (((3,),), {"shape": (2, 3)}),
        (((2, 1),), {"shape": (2, 4)}),
        (((),), {"shape": (3,)}),
    ),
    accepts_complex=True,
)
expand_dims = OpSpec(
    "expand_dims",
    np.expand_dims,
    params=("axis",),
    numpy=(np.expand_dims,),
    samples=fixed_samples(
        (((3,),), {"axis": 0}),
        (((2, 3),), {"axis": -1}),
        (((2, 3),), {"axis": (0, 2)}),
    ),
    accepts_complex=True,
)
squeeze = OpSpec(
    "squeeze",
    np.squeeze,
    params=("axis",),
    numpy=(np.squeeze,),
    samples=fixed_samples((((1, 3, 1),), {"axis": None}), (((1, 3),), {"axis": 0})),
    accepts_complex=True,
)
concatenate = OpSpec(
    "concatenate",
    _concatenate,
    variadic=True,
    params=("axis",),
    numpy=(np.concatenate,),
    samples=_variadic_samples(
        (((2, 3), (1, 3)), 0),
        (((2, 1), (2, 2), (2, 3)), 1),
        (((3,), (2,)), 0),
    ),
    accepts_complex=True,
)
stack = OpSpec(
    "stack",
    _stack,
    variadic=True,
    params=("axis",),
    numpy=(np.stack,),
    samples=_variadic_samples(
        (((3,), (3,)), 0),
        (((2, 3), (2, 3), (2, 3)), -1),
    ),
    accepts_complex=True,
)
getitem = OpSpec(
    "getitem",
    _getitem,
    params=("index",),
    samples=_getitem_samples,
    doc="x[index]: basic slicing, integer-array and boolean indexing",
    accepts_complex=True,
)
scatter_add = OpSpec(
    "scatter_add",
    _scatter_add,
    params=("index", "shape"),
    samples=_scatter_add_samples,
    doc="zeros(shape) with values added at index; the transpose of getitem",
    accepts_complex=True,
)


# --- casts ----------------------------------------------------------------------------------------


def _astype(x, dtype):
    target = np.dtype(dtype)
    if target.kind not in "fc":
        raise InvalidValueError(
            f"op 'astype': dtype={target} is not a float or complex dtype; a cast to integers or booleans "
            "has no derivative (x.astype(int) on a traced value is refused: use anp.floor or a comparison)"
        )
    if target.kind == "f" and np.result_type(x).kind == "c":
        raise InvalidValueError(
            f"op 'astype': a cast of a complex x to {target} would drop its imaginary part; take "
            "np.real(x) (or np.abs(x)) instead"
        )
    return np.asarray(x).astype(target)


def _astype_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    # into `dtype` from the other float dtype: up to float64 exactly; down to float32 the tangent is
    # rounded too (as torch's is), which float32's tolerance allows
    other = np.float32 if np.dtype(dtype) == np.float64 else np.float64
    return [
        Sample((REAL.draw(rng, (2, 3), other),), {"dtype": np.dtype(dtype).type}),
        Sample((REAL.draw(rng, (), other),), {"dtype": np.dtype(dtype).name}),
        Sample((REAL.draw(rng, (3,), dtype),), {"dtype": dtype}),
    ]


astype = OpSpec(
    "astype",
    _astype,
    params=("dtype",),
    samples=_astype_samples,
    doc="x.astype(dtype) to a float or complex dtype (complex to real refused): the derivative casts "
    "back to x's dtype",
    accepts_complex=True,
)
