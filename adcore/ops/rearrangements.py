"""Ops that move elements: NumPy's shape and indexing functions (swapaxes, ravel, diag, tril, flip,
roll, repeat, tile, pad, take, ...). Each is linear and only moves elements (or fills in zeros, or
pad's constant): every output element is one input element or a constant. `source_index` finds
which by running the op on the positions 1..n, so the rules of most of them are one gather
(forward, symbolic) and one scatter (reverse) through that map, exact for every param NumPy
accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.errors import UnsupportedFunctionError
from adcore.spec import OpSpec, fixed_samples


def source_index(impl: Callable[..., Any], shape: tuple[int, ...], params: dict) -> np.ndarray:
    """For an op that only moves elements: the flat position in its input (of `shape`) each output
    element comes from, -1 where the output is a constant (tril's zeros, pad's constant_values)."""
    if "constant_values" in params:
        params = {**params, "constant_values": 0}
    positions = np.arange(1, int(np.prod(shape, dtype=np.int64)) + 1, dtype=np.int64).reshape(shape)
    return np.asarray(impl(positions, **params), dtype=np.int64) - 1


def axes_permutation(impl: Callable[..., Any], ndim: int, params: dict) -> tuple[int, ...]:
    """For an op that only reorders axes (swapaxes, moveaxis, rollaxis): the input axis behind each
    output axis, read from the shape the op gives an array whose axis i has length i + 2."""
    probe = np.broadcast_to(np.empty((), dtype=np.int8), tuple(range(2, ndim + 2)))
    return tuple(n - 2 for n in impl(probe, **params).shape)


def _ravel(a, order="C"):
    if order not in ("C", "F"):
        # 'A' and 'K' follow the memory layout, which a derivative cannot see
        raise UnsupportedFunctionError(
            f"op 'ravel': order={order!r} follows the array's memory layout; use order='C' or 'F'"
        )
    return np.ravel(a, order=order)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad(array, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise UnsupportedFunctionError(
            f"op 'pad': mode={mode!r} is not supported (its value is not one element of the input "
            f"or a constant); the supported modes are {list(_PAD_MODES)}"
        )
    if mode == "constant":
        return np.pad(array, pad_width, mode, constant_values=constant_values)
    if mode in ("reflect", "symmetric") and reflect_type != "even":
        # 'odd' is 2 * edge - reflection: linear, but not a move of elements
        raise UnsupportedFunctionError(
            f"op 'pad': reflect_type={reflect_type!r} is not supported; only 'even' (the default)"
        )
    return np.pad(array, pad_width, mode)


def _take(a, indices, axis=None, mode="raise"):
    return np.take(a, indices, axis=axis, mode=mode)


def _take_along_axis(arr, indices, axis=-1):
    return np.take_along_axis(arr, indices, axis=axis)


def _x(shape):  # one input of this shape, no params
    return ((shape,), {})


_MATRICES = ((3, 4), (4, 3), (3, 3), (2, 3, 4), (0, 3))

swapaxes = OpSpec(
    "swapaxes",
    np.swapaxes,
    params=("axis1", "axis2"),
    numpy=(np.swapaxes,),
    samples=fixed_samples(
        (((2, 3),), {"axis1": 0, "axis2": 1}),
        (((2, 3, 4),), {"axis1": -1, "axis2": 0}),
        (((2, 3),), {"axis1": 1, "axis2": 1}),
        (((0, 3),), {"axis1": 0, "axis2": 1}),
    ),
    accepts_complex=True,
)
moveaxis = OpSpec(
    "moveaxis",
    np.moveaxis,
    params=("source", "destination"),
    numpy=(np.moveaxis,),
    samples=fixed_samples(
        (((2, 3, 4),), {"source": 0, "destination": -1}),
        (((2, 3, 4),), {"source": (0, 1), "destination": (2, 0)}),
        (((3,),), {"source": 0, "destination": 0}),
    ),
    accepts_complex=True,
)
rollaxis = OpSpec(
    "rollaxis",
    np.rollaxis,
    params=("axis", "start"),
    numpy=(np.rollaxis,),
    samples=fixed_samples(
        (((2, 3, 4),), {"axis": 2}),
        (((2, 3, 4),), {"axis": 0, "start": 3}),
        (((2, 3, 4),), {"axis": -1, "start": 1}),
    ),
    accepts_complex=True,
)
ravel = OpSpec(
    "ravel",
    _ravel,
    params=("order",),
    samples=fixed_samples(
        (((2, 3),), {}),
        (((),), {}),
        (((2, 3, 4),), {"order": "F"}),
        (((0, 2),), {}),
    ),
    doc="anp.ravel: order 'C' or 'F'; 'A' and 'K' (memory layout) are refused. np.ravel(x), x.ravel() "
    "and x.flatten() on a traced value are reshape(x, -1) (order 'C' only)",
    accepts_complex=True,
)
atleast_1d = OpSpec(
    "atleast_1d",
    np.atleast_1d,
    samples=fixed_samples(_x(()), _x((3,)), _x((2, 3))),
    doc="np.atleast_1d of one array (of several: adcore.numpy.atleast_1d, a list of these)",
    accepts_complex=True,
)
atleast_2d = OpSpec(
    "atleast_2d",
    np.atleast_2d,
    samples=fixed_samples(_x(()), _x((3,)), _x((2, 3)), _x((0,))),
    doc="np.atleast_2d of one array (of several: adcore.numpy.atleast_2d, a list of these)",
    accepts_complex=True,
)
atleast_3d = OpSpec(
    "atleast_3d",
    np.atleast_3d,
    samples=fixed_samples(_x(()), _x((3,)), _x((2, 3)), _x((2, 3, 4))),
    doc="np.atleast_3d of one array (of several: adcore.numpy.atleast_3d, a list of these)",
    accepts_complex=True,
)
diag = OpSpec(
    "diag",
    np.diag,
    params=("k",),
    numpy=(np.diag,),
    samples=fixed_samples(
        (((3,),), {}),
        (((3,),), {"k": -1}),
        (((3, 4),), {}),
        (((3, 4),), {"k": 2}),
        (((4, 3),), {"k": -1}),
        (((3, 3),), {"k": 5}),  # past the matrix: an empty diagonal
        (((0,),), {}),
    ),
    doc="np.diag: a 1-d input becomes the k-th diagonal of a square matrix, a 2-d one gives its k-th diagonal",
    accepts_complex=True,
)
diagonal = OpSpec(
    "diagonal",
    np.diagonal,
    params=("offset", "axis1", "axis2"),
    numpy=(np.diagonal,),
    samples=fixed_samples(
        (((3, 4),), {}),
        (((3, 4),), {"offset": -1}),
        (((2, 3, 4),), {"offset": 1, "axis1": -1, "axis2": 0}),
        (((0, 3),), {}),
    ),
    accepts_complex=True,
)
diagflat = OpSpec(
    "diagflat",
    np.diagflat,
    params=("k",),
    numpy=(np.diagflat,),
    samples=fixed_samples((((3,),), {}), (((2, 2),), {"k": 1}), (((),), {"k": -2})),
    accepts_complex=True,
)
tril = OpSpec(
    "tril",
    np.tril,
    params=("k",),
    numpy=(np.tril,),
    samples=fixed_samples(*[((s,), {"k": k}) for s in _MATRICES for k in (0, -1, 2)], (((3,),), {})),
    doc="np.tril: the lower triangle of the last two axes, zeros above the k-th diagonal",
    accepts_complex=True,
)
triu = OpSpec(
    "triu",
    np.triu,
    params=("k",),
    numpy=(np.triu,),
    samples=fixed_samples(*[((s,), {"k": k}) for s in _MATRICES for k in (0, 1, -2)], (((3,),), {})),
    doc="np.triu: the upper triangle of the last two axes, zeros below the k-th diagonal",
    accepts_complex=True,
)
flip = OpSpec(
    "flip",
    np.flip,
    params=("axis",),
    numpy=(np.flip,),
    samples=fixed_samples(
        (((2, 3),), {}),
        (((2, 3),), {"axis": -1}),
        (((2, 3, 4),), {"axis": (0, 2)}),
        (((),), {}),
        (((0, 3),), {"axis": 0}),
    ),
    accepts_complex=True,
)
flipud = OpSpec(
    "flipud",
    np.flipud,
    numpy=(np.flipud,),
    samples=fixed_samples(_x((3,)), _x((3, 2)), _x((0, 2))),
    accepts_complex=True,
)
fliplr = OpSpec(
    "fliplr",
    np.fliplr,
    numpy=(np.fliplr,),
    samples=fixed_samples(_x((2, 3)), _x((2, 3, 2))),
    accepts_complex=True,
)
rot90 = OpSpec(
    "rot90",
    np.rot90,
    params=("k", "axes"),
    numpy=(np.rot90,),
    samples=fixed_samples(
        (((2, 3),), {}),
        (((2, 3),), {"k": 2}),
        (((2, 3),), {"k": -1}),
        (((2, 3, 4),), {"k": 3, "axes": (2, 0)}),
        (((2, 3),), {"k": 4}),
    ),
    accepts_complex=True,
)
roll = OpSpec(
    "roll",
    np.roll,
    params=("shift", "axis"),
    numpy=(np.roll,),
    samples=fixed_samples(
        (((5,),), {"shift": 2}),
        (((2, 3),), {"shift": -1}),  # no axis: the flattened array rolls
        (((2, 3),), {"shift": 4, "axis": -1}),
        (((2, 3, 4),), {"shift": (1, -2), "axis": (0, 2)}),
        (((0,),), {"shift": 1}),
    ),
    accepts_complex=True,
)
repeat = OpSpec(
    "repeat",
    np.repeat,
    params=("repeats", "axis"),
    numpy=(np.repeat,),
    samples=fixed_samples(
        (((3,),), {"repeats": 2}),
        (((2, 3),), {"repeats": 3}),  # no axis: the flattened array's elements repeat
        (((2, 3),), {"repeats": np.array([1, 0, 2]), "axis": -1}),
        (((2, 3),), {"repeats": 2, "axis": 0}),
        (((),), {"repeats": 3}),
        (((3,),), {"repeats": 0}),
    ),
    accepts_complex=True,
)
tile = OpSpec(
    "tile",
    np.tile,
    params=("reps",),
    numpy=(np.tile,),
    samples=fixed_samples(
        (((3,),), {"reps": 2}),
        (((2, 3),), {"reps": (2, 1)}),
        (((2, 3),), {"reps": (2, 1, 2)}),
        (((2, 3),), {"reps": 0}),
        (((),), {"reps": (2, 2)}),
    ),
    accepts_complex=True,
)
pad = OpSpec(
    "pad",
    _pad,
    params=("pad_width", "mode", "constant_values", "reflect_type"),
    samples=fixed_samples(
        (((3,),), {"pad_width": 2}),
        (((2, 3),), {"pad_width": ((1, 0), (2, 1)), "constant_values": 1.5}),
        (((2, 3),), {"pad_width": 1, "constant_values": ((1.0, 2.0), (3.0, 4.0))}),
        (((3,),), {"pad_width": (2, 4), "mode": "edge"}),
        (((3, 4),), {"pad_width": ((2, 2), (3, 1)), "mode": "reflect"}),  # past the edge: reflected again
        (((3,),), {"pad_width": 5, "mode": "reflect"}),
        (((2, 3),), {"pad_width": 2, "mode": "symmetric"}),
        (((2, 3),), {"pad_width": (1, 4), "mode": "wrap"}),
        (((),), {"pad_width": 0}),
        (((0,),), {"pad_width": (1, 2), "constant_values": 3.0}),
    ),
    doc="np.pad with mode constant (constant_values, which have no derivative), edge, reflect, "
    "symmetric or wrap (reflect_type 'even'); the other modes are refused",
    accepts_complex=True,
)
take = OpSpec(
    "take",
    _take,
    params=("indices", "axis", "mode"),
    numpy=(np.take,),
    samples=fixed_samples(
        (((5,),), {"indices": np.array([0, 4, 4, -1])}),  # repeated indices: their gradients add up
        (((2, 3),), {"indices": np.array([[2, 0], [1, 1]])}),  # no axis: from the flattened array
        (((2, 3),), {"indices": 1, "axis": -1}),
        (((2, 3),), {"indices": np.array([2, 5, -4]), "axis": 1, "mode": "wrap"}),
        (((2, 3),), {"indices": np.array([3, -1, 0]), "axis": 0, "mode": "clip"}),
        (((3,),), {"indices": np.array([], dtype=int)}),
    ),
    doc="np.take: mode 'raise', 'wrap' or 'clip' (an index clipped to the last element sends its "
    "derivative there)",
    accepts_complex=True,
)
take_along_axis = OpSpec(
    "take_along_axis",
    _take_along_axis,
    params=("indices", "axis"),
    numpy=(np.take_along_axis,),
    samples=fixed_samples(
        (((2, 3),), {"indices": np.array([[2, 2], [0, 1]]), "axis": 1}),
        (((2, 3),), {"indices": np.array([[1, 0, 1]]), "axis": 0}),
        (((2, 3, 2),), {"indices": np.zeros((2, 1, 2), dtype=int), "axis": -2}),
        (((4,),), {"indices": np.array([3, 3, 0]), "axis": None}),
    ),
    accepts_complex=True,
)
