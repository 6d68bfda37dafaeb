"""conv2d and its two gradients, computed by one of four algorithms (seed 001, 卷积算子).

    conv2d(x, w, stride=1, padding=0, dilation=1, algorithm="auto") -> y
    conv2d_input_grad(g, w, input_size, stride=1, padding=0, dilation=1, algorithm="auto") -> gx
    conv2d_weight_grad(x, g, kernel_size, stride=1, padding=0, dilation=1, algorithm="auto") -> gw

Layouts are PyTorch's: x (N, C, H, W), w (O, C, kh, kw), y and the cotangent g
(N, O, H', W'); cross-correlation. stride, padding and dilation are ints or (h, w)
pairs. float32 or float64 in, the inputs' common dtype out (np.result_type).
`conv2d_input_grad` is d<g, conv2d(x, w)>/dx for x of spatial size input_size (the
transposed convolution), `conv2d_weight_grad` is d<g, conv2d(x, w)>/dw.

The algorithms (each in its own module; numba for data movement, NumPy's BLAS and FFT
for the arithmetic):

    direct     plain loops (`_direct`), the baseline; any geometry
    im2col     unfold windows into a matrix, one GEMM (`_im2col`); any geometry
    fft        products of spectra (`_fft`); any geometry, cost independent of kernel size
    winograd   F(2x2, 3x3) (`_winograd`): 3x3 kernels at stride 1 and dilation 1 only

All four apply to both gradients as well: the input gradient at stride 1 is the forward
convolution of the cotangent with the flipped, transposed kernel (so winograd and fft run
their forward on it; fft upsamples the cotangent at larger strides), im2col scatters
`w.T @ g` back (col2im), and the weight gradient is `g @ cols.T` for im2col, a correlation
of spectra for fft and the adjoint of the winograd map for winograd.

`algorithm="auto"` picks by shape, see `choose_algorithm` (the rule and the measurements
behind it are there; `benchmarks/kernels_conv.py` reprints them). `applicable` lists the
algorithms that apply to a geometry.

The numba kernels compile on first use (`cache=True`: a later process loads them from
disk), never at import. winograd's three tile transforms run in parallel over the
(image, channel) planes (`parallel=True`, `prange`); the other kernels run on one thread,
and the multiplies go to OpenBLAS, which has its own threads. numba's threading layer is
the workqueue one (set in `_numba`, imported before any compile): GNU OpenMP's spinning
threads got in OpenBLAS's way (on 2 cores with some other load, winograd's forward took
a median 280 ms against 11 ms on one thread) and do not survive fork. The parallel
transforms made winograd's forward + both gradients ~10% faster on 2 cores (also with a
busy process on one core), and doubled their compile time (~10 s for both dtypes against
~5 s; ~0.3 s from the cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adcore_kernels import _direct, _fft, _im2col, _winograd
from adcore_kernels._geometry import Geometry, flipped_transposed, transposed, upsampled
from adcore_kernels.reference import conv2d_output_size, pair

ALGORITHMS = ("direct", "im2col", "fft", "winograd")
FUNCTIONS = ("conv2d", "input_grad", "weight_grad")

FFT_MIN_KERNEL = 7  # `auto`'s threshold (see choose_algorithm)


# ----------------------------------------------------------------------------- choosing
def applicable(kernel_size: Any, stride: Any = 1, dilation: Any = 1) -> tuple[str, ...]:
    """The algorithms that can compute a convolution (and both its gradients) with this kernel size and geometry."""
    kernel, s, d = pair(kernel_size, "kernel_size"), pair(stride, "stride"), pair(dilation, "dilation")
    winograd = kernel == (3, 3) and s == (1, 1) and d == (1, 1)
    return ALGORITHMS if winograd else tuple(a for a in ALGORITHMS if a != "winograd")


def choose_algorithm(
    x_shape: Sequence[int],
    w_shape: Sequence[int],
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    function: str = "conv2d",
) -> str:
    """What `algorithm="auto"` runs for x of shape (N, C, H, W) and w of shape (O, C, kh, kw).

    The rule, for the forward and both gradients alike (`function` is one of FUNCTIONS):

    1. winograd where it applies (3x3 kernel, stride 1, dilation 1) and the input has at
       least half as many channels as the output (2*C >= O): its multiplies are 2.25x
       fewer than im2col's, but its tile transforms cost ~4*(C + O) memory passes per
       pixel against im2col's unfold's 9*C, so with few input channels im2col wins;
    2. fft for large kernels at stride 1 (kh or kw >= FFT_MIN_KERNEL = 7): its cost does
       not grow with the kernel, im2col's grows as kh*kw;
    3. im2col otherwise: unfold + one GEMM, good for any geometry.

    direct is never chosen: it is the baseline the others beat at every shape measured.
    Evidence (benchmarks/kernels_conv.py, 2-core AMD EPYC, float32, forward + both
    gradients, N=8, 32x32, 3x3, padding 1; im2col / winograd in ms): C=O=4 0.76 / 0.53,
    C=64 O=4 14.1 / 6.6, C=O=64 17.1 / 10.2, C=32 O=64 10.4 / 10.8, C=16 O=64 5.6 / 8.0,
    C=8 O=64 3.1 / 6.6, C=3 O=64 1.6 / 4.3. k x k kernels, N=2, C=O=16, 48x48 (im2col /
    fft): k=5 5.3 / 7.2, k=7 10.2 / 8.2, k=11 25.8 / 8.5; 15x15 on 64x64, N=2, C=O=8:
    fft 4.8, im2col 83, direct 181.
    """
    if function not in FUNCTIONS:
        raise ValueError(f"conv2d: unknown function {function!r}; choose one of {', '.join(FUNCTIONS)}")
    kernel, s = tuple(w_shape[2:]), pair(stride, "stride")
    n_in, n_out = x_shape[1], w_shape[0]
    if "winograd" in applicable(kernel, s, dilation) and 2 * n_in >= n_out:
        return "winograd"
    if s == (1, 1) and max(kernel) >= FFT_MIN_KERNEL:
        return "fft"
    return "im2col"


def _resolve(algorithm: str, x_shape, w_shape, geometry_args: tuple, function: str) -> str:
    """The algorithm to run: `auto`'s choice, or the one asked for once checked to apply."""
    stride, padding, dilation = geometry_args
    if algorithm == "auto":
        return choose_algorithm(x_shape, w_shape, stride, padding, dilation, function)
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"conv2d: unknown algorithm {algorithm!r}; choose one of auto, {', '.join(ALGORITHMS)}"
        )
    fitting = applicable(tuple(w_shape[2:]), stride, dilation)
    if algorithm not in fitting:
        kh, kw = w_shape[2:]
        raise ValueError(
            f"conv2d: algorithm {algorithm!r} does not apply to a {kh}x{kw} kernel at stride {stride} and "
            f"dilation {dilation} (winograd is F(2x2, 3x3): 3x3 kernels, stride 1, dilation 1 only); "
            f"algorithms that apply: {', '.join(fitting)}"
        )
    return algorithm


# ----------------------------------------------------------------------------- checking
def _float_array(a: Any, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"conv2d: {name} has dtype {a.dtype}; conv2d takes float32 or float64 arrays "
            f"(convert with {name}.astype(np.float64))"
        )
    return a


def _four_d(a: np.ndarray, name: str, layout: str) -> None:
    if a.ndim != 4:
        raise ValueError(
            f"conv2d: {name} must be a 4-D array {layout}, got shape {a.shape}"
            + ("; add a batch axis with [None]" if a.ndim == 3 and name != "w" else "")
        )


def _geometry_args(stride: Any, padding: Any, dilation: Any) -> tuple[tuple[int, int], ...]:
    checked = []
    for name, value, least in (("stride", stride, 1), ("padding", padding, 0), ("dilation", dilation, 1)):
        try:
            v = pair(value, name)
        except (TypeError, ValueError) as error:
            raise ValueError(f"conv2d: {error}") from None
        if min(v) < least:
            kind = "positive" if least else "non-negative"
            raise ValueError(f"conv2d: {name} must be {kind} ints, got {value!r}")
        checked.append(v)
    return tuple(checked)


def _size(value: Any, name: str) -> tuple[int, int]:
    try:
        size = pair(value, name)
    except (TypeError, ValueError) as error:
        raise ValueError(f"conv2d: {error}") from None
    if min(size) < 1:
        raise ValueError(f"conv2d: {name} must be positive, got {value!r}")
    return size


def _geometry(input_size, kernel_size, stride, padding, dilation) -> Geometry:
    """The forward's geometry, after checking that the dilated kernel fits in the padded input."""
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel_size))
    padded = tuple(n + 2 * p for n, p in zip(input_size, padding))
    if extent[0] > padded[0] or extent[1] > padded[1]:
        raise ValueError(
            f"conv2d: the {kernel_size[0]}x{kernel_size[1]} kernel (spanning {extent[0]}x{extent[1]} at dilation "
            f"{dilation}) is larger than the padded input {padded[0]}x{padded[1]} (input {input_size[0]}x"
            f"{input_size[1]}, padding {padding}); use a smaller kernel or dilation, or more padding"
        )
    out = conv2d_output_size(input_size, kernel_size, stride, padding, dilation)
    return Geometry(out, stride, padding, dilation)


def _common(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The arrays in their common dtype, C-contiguous (what the numba kernels are compiled for)."""
    dtype = np.result_type(*arrays)
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def _check_cotangent(g: np.ndarray, expected: tuple[int, ...]) -> None:
    if g.shape != expected:
        raise ValueError(
            f"conv2d: the cotangent g has shape {g.shape} but the convolution's output is {expected}; "
            f"pass the g of this convolution (same stride, padding and dilation)"
        )


# ----------------------------------------------------------------------------- the three functions
def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: str = "auto",
) -> np.ndarray:
    """y[n, o, r, q] = sum over c, i, j of w[o, c, i, j] * xpad[n, c, r*s + i*d, q*s + j*d]."""
    x, w = _float_array(x, "x"), _float_array(w, "w")
    _four_d(x, "x", "(N, C, H, W)")
    _four_d(w, "w", "(O, C, kh, kw)")
    if x.shape[1] != w.shape[1]:
        raise ValueError(
            f"conv2d: x has {x.shape[1]} channels but w (O, C, kh, kw) = {w.shape} expects {w.shape[1]}; "
            f"x.shape[1] must equal w.shape[1]"
        )
    args = _geometry_args(stride, padding, dilation)
    geometry = _geometry(x.shape[2:], w.shape[2:], *args)
    chosen = _resolve(algorithm, x.shape, w.shape, args, "conv2d")
    x, w = _common([x, w])
    return _FORWARD[chosen](x, w, geometry)


def conv2d_input_grad(
    g: np.ndarray,
    w: np.ndarray,
    input_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: str = "auto",
) -> np.ndarray:
    """d<g, conv2d(x, w)>/dx, shape (N, C, *input_size): the transposed convolution of g with w."""
    g, w = _float_array(g, "g"), _float_array(w, "w")
    _four_d(g, "g", "(N, O, H', W')")
    _four_d(w, "w", "(O, C, kh, kw)")
    size = _size(input_size, "input_size")
    args = _geometry_args(stride, padding, dilation)
    geometry = _geometry(size, w.shape[2:], *args)
    _check_cotangent(g, (g.shape[0], w.shape[0], *geometry.out))
    x_shape = (g.shape[0], w.shape[1], *size)
    chosen = _resolve(algorithm, x_shape, w.shape, args, "input_grad")
    g, w = _common([g, w])
    if chosen in ("winograd", "fft"):  # a forward convolution of the upsampled g with the flipped kernel
        through = transposed(geometry, size, w.shape[2:])
        return _FORWARD[chosen](upsampled(g, geometry.stride), flipped_transposed(w), through)
    return _INPUT_GRAD[chosen](g, w, size, geometry)


def conv2d_weight_grad(
    x: np.ndarray,
    g: np.ndarray,
    kernel_size: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    algorithm: str = "auto",
) -> np.ndarray:
    """d<g, conv2d(x, w)>/dw, shape (O, C, *kernel_size): the input's windows correlated with g."""
    x, g = _float_array(x, "x"), _float_array(g, "g")
    _four_d(x, "x", "(N, C, H, W)")
    _four_d(g, "g", "(N, O, H', W')")
    kernel = _size(kernel_size, "kernel_size")
    args = _geometry_args(stride, padding, dilation)
    geometry = _geometry(x.shape[2:], kernel, *args)
    _check_cotangent(g, (x.shape[0], g.shape[1], *geometry.out))
    w_shape = (g.shape[1], x.shape[1], *kernel)
    chosen = _resolve(algorithm, x.shape, w_shape, args, "weight_grad")
    x, g = _common([x, g])
    if chosen == "winograd":
        return _winograd.weight_grad(x, g, geometry)
    return _WEIGHT_GRAD[chosen](x, g, kernel, geometry)


_FORWARD = {
    "direct": _direct.forward,
    "im2col": _im2col.forward,
    "fft": _fft.forward,
    "winograd": _winograd.forward,
}
_INPUT_GRAD = {"direct": _direct.input_grad, "im2col": _im2col.input_grad}
_WEIGHT_GRAD = {"direct": _direct.weight_grad, "im2col": _im2col.weight_grad, "fft": _fft.weight_grad}
