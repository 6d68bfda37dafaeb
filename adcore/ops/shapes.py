"""Shape ops: transpose, reshape, broadcast_to, expand_dims, squeeze, concatenate, stack, indexing."""

from __future__ import annotations

import numpy as np

from adcore.spec import REAL, OpSpec, Sample, fixed_samples


def _getitem(x, index):
    return x[index]


def _scatter_add(values, index, shape):
    """zeros(shape) with `values` added at `index` (repeated indices accumulate): getitem's transpose."""
    out = np.zeros(shape, dtype=np.result_type(values))
    np.add.at(out, index, values)
    return out


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
)
squeeze = OpSpec(
    "squeeze",
    np.squeeze,
    params=("axis",),
    numpy=(np.squeeze,),
    samples=fixed_samples((((1, 3, 1),), {"axis": None}), (((1, 3),), {"axis": 0})),
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
)
getitem = OpSpec(
    "getitem",
    _getitem,
    params=("index",),
    samples=_getitem_samples,
    doc="x[index]: basic slicing, integer-array and boolean indexing",
)
scatter_add = OpSpec(
    "scatter_add",
    _scatter_add,
    params=("index", "shape"),
    samples=_scatter_add_samples,
    doc="zeros(shape) with values added at index; the transpose of getitem",
)
