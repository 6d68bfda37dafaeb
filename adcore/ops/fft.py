"""The np.fft ops: fftn, ifftn, rfftn and irfftn, each over any axes with NumPy's s, axes and norm.

NumPy's other fft functions are calls of these on traced values (`NUMPY_FUNCTIONS`): fft is
fftn over one axis with s=(n,), fft2 fftn over the last two axes, and so on, hfft and ihfft
irfftn and rfftn with a conjugation; fftshift and ifftshift are rolls. Every op is linear (R-linear: rfftn takes real input, irfftn gives real
output), so its JVP is the op on the tangent and its VJP the transpose in JAX's convention
(adcore_reverse.vjps.fft).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcore.errors import InvalidValueError, UnsupportedFunctionError
from adcore.ops.rearrangements import pad, roll
from adcore.ops.shapes import getitem
from adcore.spec import REAL, OpSpec, Sample

NORMS = ("backward", "ortho", "forward")
# a transform's norm and the norm of its transpose's transform: the scale 1, 1/sqrt(N) or 1/N
# stays where it is when the transpose runs the other direction (irfftn for rfftn and back)
SWAPPED_NORM = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


@dataclass(frozen=True)
class FFTPlan:
    """NumPy's s and axes made explicit: the transform's length along each of its axes."""

    lengths: tuple[int, ...]
    axes: tuple[int, ...]  # non-negative, each once
    norm: str

    def shape(self, shape: Sequence[int], halved: bool = False) -> tuple[int, ...]:
        """`shape` with the transformed axes at their lengths; `halved`: the last at n // 2 + 1,
        the length of rfftn's output and of irfftn's input that irfftn uses."""
        out = list(shape)
        for n, axis in zip(self.lengths, self.axes):
            out[axis] = n
        if halved and self.axes:
            out[self.axes[-1]] = self.lengths[-1] // 2 + 1
        return tuple(out)


def fft_plan(name: str, shape: Sequence[int], s: Any = None, axes: Any = None, norm: Any = None) -> FFTPlan:
    """The plan of op `name` (irfftn's default last length is 2 (m - 1)), as NumPy's
    _cook_nd_args makes it, without its deprecation warnings; repeated axes are refused."""
    ndim = len(shape)
    if norm is None:
        norm = "backward"
    if norm not in NORMS:
        raise InvalidValueError(f"op {name!r}: norm must be one of {NORMS} or None, got {norm!r}")
    if axes is None:
        axes = range(ndim) if s is None else range(-len(s), 0)
    axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    bad = [a for a in axes if not -ndim <= a < ndim]
    if bad:
        raise InvalidValueError(f"op {name!r}: axes {bad} out of bounds for an array of {ndim} dimensions")
    axes = tuple(int(a) % ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise UnsupportedFunctionError(
            f"op {name!r}: axes {list(axes)} repeat an axis (NumPy transforms it again); adcore's fft "
            "ops take each axis once: call the op once per repetition"
        )
    s = [-1] * len(axes) if s is None else list(np.atleast_1d(s))
    if len(s) != len(axes):
        raise InvalidValueError(f"op {name!r}: s {s} and axes {list(axes)} have different lengths")
    lengths = [shape[a] if n is None or n == -1 else int(n) for n, a in zip(s, axes)]
    if name == "irfftn" and axes and (s[-1] is None or s[-1] == -1):
        lengths[-1] = 2 * (shape[axes[-1]] - 1)
    return FFTPlan(tuple(lengths), axes, norm)


def _transform(name: str, function: Any) -> Any:
    def impl(a, s=None, axes=None, norm=None):
        plan = fft_plan(name, np.shape(a), s, axes, norm)
        return function(a, s=plan.lengths, axes=plan.axes, norm=plan.norm)

    impl.__name__ = name
    return impl


def resized(x: Any, shape: Sequence[int]) -> Any:
    """x cropped or zero-padded at the end of each axis to `shape`, as the fft ops do to their
    input; resizing back to x's shape is its transpose (a crop's is a pad, a pad's a crop)."""
    if any(n > m for n, m in zip(x.shape, shape)):
        x = getitem(x, index=tuple(slice(0, m) for m in shape))
    if any(n < m for n, m in zip(x.shape, shape)):
        x = pad(x, pad_width=tuple((0, m - n) for n, m in zip(x.shape, shape)))
    return x


def _calls(*calls: tuple[tuple[int, ...], dict]):
    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample((REAL.draw(rng, shape, dtype),), dict(params)) for shape, params in calls]

    return draw


# every axes form, every norm, pads and crops (alone and together), an axis of length 1
_SAMPLES = (
    ((5,), {}),
    ((6,), {"s": (9,), "axes": (0,), "norm": "ortho"}),
    ((7,), {"s": (4,), "axes": (-1,), "norm": "forward"}),
    ((2, 3), {}),
    ((3, 4), {"axes": (0,)}),
    ((2, 3, 4), {"s": (3, 3), "axes": (0, 2), "norm": "ortho"}),
    ((3, 4), {"s": (2, 6), "axes": (-2, -1), "norm": "forward"}),
    ((4, 1), {"axes": (1,)}),
)
# irfftn: the length of the output's last axis, even (a Nyquist bin) and odd, by default 2 (m - 1)
_IRFFTN_SAMPLES = (
    ((5,), {}),
    ((4,), {"s": (7,), "axes": (0,), "norm": "ortho"}),
    ((6,), {"s": (4,), "axes": (-1,), "norm": "forward"}),
    ((3, 4), {}),
    ((3, 3), {"axes": (0,)}),
    ((2, 3, 4), {"s": (3, 5), "axes": (0, 2), "norm": "ortho"}),
    ((3, 4), {"s": (2, 9), "axes": (-2, -1), "norm": "forward"}),
    ((2, 3), {"s": (1,), "axes": (1,)}),
)
_DOC = "s, axes and norm as NumPy's; each axis once"

fftn = OpSpec(
    "fftn",
    _transform("fftn", np.fft.fftn),
    params=("s", "axes", "norm"),
    numpy=(np.fft.fftn,),
    samples=_calls(*_SAMPLES),
    accepts_complex=True,
    doc=f"the n-d discrete Fourier transform; {_DOC}",
)
ifftn = OpSpec(
    "ifftn",
    _transform("ifftn", np.fft.ifftn),
    params=("s", "axes", "norm"),
    numpy=(np.fft.ifftn,),
    samples=_calls(*_SAMPLES),
    accepts_complex=True,
    doc=f"the inverse of fftn; {_DOC}",
)
rfftn = OpSpec(
    "rfftn",
    _transform("rfftn", np.fft.rfftn),
    params=("s", "axes", "norm"),
    numpy=(np.fft.rfftn,),
    samples=_calls(*_SAMPLES),
    doc=f"fftn of real input, the last axis halved to n // 2 + 1; {_DOC}. A complex input is "
    "refused (NumPy would drop its imaginary part)",
)
irfftn = OpSpec(
    "irfftn",
    _transform("irfftn", np.fft.irfftn),
    params=("s", "axes", "norm"),
    numpy=(np.fft.irfftn,),
    samples=_calls(*_IRFFTN_SAMPLES),
    accepts_complex=True,
    doc=f"the inverse of rfftn, real output; {_DOC}. The imaginary parts of the zero (and, for an "
    "even length, Nyquist) bins of the last axis do not reach the output: their derivative is 0",
)


# --- NumPy's other fft functions on traced values ---------------------------------------------


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise UnsupportedFunctionError(
            f"numpy.fft.{name}(..., out=z) on a traced value: a traced value cannot be written into "
            f"a plain array; write z = numpy.fft.{name}(...)"
        )


def _one_axis(op: OpSpec, name: str) -> Any:
    def function(
        a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None
    ) -> Any:
        _no_out(name, out)
        return op(a, s=None if n is None else (n,), axes=(axis,), norm=norm)

    function.__name__ = name
    function.__doc__ = f"np.fft.{name}: op {op.name!r} over one axis"
    return function


def _two_axes(op: OpSpec, name: str) -> Any:
    def function(
        a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None, out: Any = None
    ) -> Any:
        _no_out(name, out)
        return op(a, s=s, axes=axes, norm=norm)

    function.__name__ = name
    function.__doc__ = f"np.fft.{name}: op {op.name!r} over the last two axes by default"
    return function


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None) -> Any:
    """np.fft.hfft: the real spectrum of a Hermitian-symmetric signal, irfft of conj(a) in the other norm."""
    _no_out("hfft", out)
    plan = fft_plan("irfftn", np.shape(a), None if n is None else (n,), (axis,), norm)
    return irfftn(np.conjugate(a), s=plan.lengths, axes=plan.axes, norm=SWAPPED_NORM[plan.norm])


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None) -> Any:
    """np.fft.ihfft: hfft's inverse, conj of rfft in the other norm (a real input only)."""
    _no_out("ihfft", out)
    plan = fft_plan("rfftn", np.shape(a), None if n is None else (n,), (axis,), norm)
    return np.conjugate(rfftn(a, s=plan.lengths, axes=plan.axes, norm=SWAPPED_NORM[plan.norm]))


def _shift(x: Any, axes: Any, sign: int) -> Any:
    ndim = np.ndim(x)
    axes = tuple(range(ndim)) if axes is None else axes
    shape = np.shape(x)
    if np.ndim(axes) == 0:
        return roll(x, shift=sign * (shape[axes] // 2), axis=axes)
    return roll(x, shift=tuple(sign * (shape[a] // 2) for a in axes), axis=tuple(axes))


def fftshift(x: Any, axes: Any = None) -> Any:
    """np.fft.fftshift: the zero frequency moved to the middle, a roll by n // 2 along each axis."""
    return _shift(x, axes, 1)


def ifftshift(x: Any, axes: Any = None) -> Any:
    """np.fft.ifftshift: fftshift undone, a roll by -(n // 2) along each axis."""
    return _shift(x, axes, -1)


fft = _one_axis(fftn, "fft")
ifft = _one_axis(ifftn, "ifft")
rfft = _one_axis(rfftn, "rfft")
irfft = _one_axis(irfftn, "irfft")
fft2 = _two_axes(fftn, "fft2")
ifft2 = _two_axes(ifftn, "ifft2")
rfft2 = _two_axes(rfftn, "rfft2")
irfft2 = _two_axes(irfftn, "irfft2")

NUMPY_FUNCTIONS = {
    np.fft.fft: fft,
    np.fft.ifft: ifft,
    np.fft.rfft: rfft,
    np.fft.irfft: irfft,
    np.fft.fft2: fft2,
    np.fft.ifft2: ifft2,
    np.fft.rfft2: rfft2,
    np.fft.irfft2: irfft2,
    np.fft.hfft: hfft,
    np.fft.ihfft: ihfft,
    np.fft.fftshift: fftshift,
    np.fft.ifftshift: ifftshift,
}
