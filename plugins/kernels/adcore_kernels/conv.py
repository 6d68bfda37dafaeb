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
    winograd   F(4x4, 3x3) (`_winograd`): 3x3 kernels at stride 1 and dilation 1 only

All four apply to both gradients as well: the input gradient at stride 1 is the forward
convolution of the cotangent with the flipped, transposed kernel (so winograd and fft run
their forward on it; fft upsamples the cotangent at larger strides), im2col scatters
`w.T @ g` back (col2im), and the weight gradient is `g @ cols.T` for im2col, a correlation
of spectra for fft and the adjoint of the winograd map for winograd (which reuses the input
transform its forward computed, when x is byte-equal to the forward's).

`algorithm="auto"` picks by shape, see `choose_algorithm` (the rule and the measurements
behind it are there; `benchmarks/kernels_conv.py` reprints them). `applicable` lists the
algorithms that apply to a geometry.

Each function is the impl of the op of its name (`adcore_kernels.ops`): its inputs are
checked once, by `_geometry` (dtypes, shapes, params, the algorithm's applicability), and
a bad one raises InvalidInputError (dtype) or InvalidValueError naming that op, e.g.
`op 'conv2d_weight_grad': the cotangent g has shape ...`.

The numba kernels compile on first use (`cache=True`: a later process loads them from
disk), never at import, once per dtype (`_numba.frozen`). winograd's three tile transforms
run in parallel over the (image, channel) planes (`prange`) from `_numba.PARALLEL_FROM`
elements on, on one thread below (`_numba.SerialOrParallel`: each variant compiles on its
first use, so the conformance suite's tiny samples compile only the serial one, ~5 s of CPU
for both dtypes against ~15 s); the other kernels run on one thread, and the multiplies go
to OpenBLAS, which has its own threads. numba's threading layer is the workqueue one (set in
`_numba`, imported before any compile): GNU OpenMP's spinning threads got in OpenBLAS's way
(on 2 cores with some other load, winograd's forward took a median 280 ms against 11 ms on
one thread) and do not survive fork. The parallel transforms made winograd's forward + both
gradients ~10% faster on 2 cores (also with a busy process on one core).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore_kernels import _direct, _fft, _geometry, _im2col, _winograd
from adcore_kernels._geometry import (
    applicable,
    flipped_transposed,
    float_array,
    int_pair,
    plan_conv2d,
    plan_input_grad,
    plan_weight_grad,
    transposed,
    upsampled,
)

ALGORITHMS = _geometry.ALGORITHMS
FUNCTIONS = ("conv2d", "input_grad", "weight_grad")

FFT_MIN_TAPS = 25  # `auto` takes fft for kernels of at least this many taps (5x5) ...
FFT_TAPS_PER_OUTPUT = 12  # ... when FFT_TAPS_PER_OUTPUT * O <= N * kh * kw (see choose_algorithm)


# ----------------------------------------------------------------------------- choosing
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
       least half as many channels as the output (2*C >= O): F(4x4, 3x3) multiplies 4x
       less than im2col, but its output-side transforms (of y, and of the cotangent for
       the weight gradient) cost per output channel, so with few input channels im2col,
       whose unfold costs per input channel, wins;
    2. fft at stride 1 for kernels of at least FFT_MIN_TAPS = 25 taps (5x5) when
       FFT_TAPS_PER_OUTPUT * O <= N * kh * kw (12 * O <= N * kh * kw): im2col's work grows
       as N * C * O * kh * kw, fft's does not grow with the kernel, but the spectra of
       the O x C kernels (and of the weight gradient) cost the same for any batch, so
       fft pays for large kernels on large batches with few output channels;
    3. im2col otherwise: unfold + one GEMM, good for any geometry (at stride 2 it beat
       fft at every shape measured: fft computes the stride-1 output and drops 3/4).

    direct is never chosen: it is the baseline the others beat at every shape measured.
    Evidence (benchmarks/kernels_conv.py and its crossover table; 2 cores shared with
    other processes, so the figures are a busy machine's). 3x3, padding 1, float32,
    forward + both gradients, N=8, 32x32, the best of 5 (im2col / winograd in ms):
    C=O=3 1.66 / 1.12, C=3 O=64 3.10 / 7.86, C=8 O=32 4.45 / 4.72, C=8 O=64 5.51 / 7.52,
    C=16 O=32 7.63 / 6.11, C=16 O=64 8.80 / 8.93, C=32 O=64 18.8 / 16.1, C=64 O=3
    26.3 / 7.97, C=O=64 35.6 / 22.3. fft against im2col: CPU time on one thread (the
    wall times of OpenBLAS's two threads swung 10-100x with the other processes' load),
    C, O in {3, 8, 16, 32, 64}, k in {5, 7, 11}, N in {2, 8}, 32x32, stride 1: this rule
    picks one within 1.2x the faster at 139 of 150 shapes (worst 2.1x: N=2, k=11, C=64,
    O=32), the former "fft for k >= 7" at 114 (worst 4.6x: N=8, k=5, C=64, O=3, where fft
    takes 32 ms and im2col 147). E.g. N=8, k=7, C=O=64: fft 225 / im2col 433 ms;
    N=2, k=7, C=O=64: fft 148 / im2col 63; N=2, k=11, C=16, O=8: fft 5.5 / im2col 21.
    """
    if function not in FUNCTIONS:
        raise InvalidValueError(
            f"choose_algorithm: unknown function {function!r}; choose one of {', '.join(FUNCTIONS)}"
        )
    kernel, s = tuple(w_shape[2:]), int_pair("conv2d", "stride", stride, 1)
    n_batch, n_in, n_out = x_shape[0], x_shape[1], w_shape[0]
    if "winograd" in applicable(kernel, s, dilation) and 2 * n_in >= n_out:
        return "winograd"
    taps = kernel[0] * kernel[1]
    if s == (1, 1) and taps >= FFT_MIN_TAPS and FFT_TAPS_PER_OUTPUT * n_out <= n_batch * taps:
        return "fft"
    return "im2col"


def _chosen(algorithm: str, x_shape, w_shape, geometry_args: tuple, function: str) -> str:
    """The algorithm to run: `auto`'s choice, or the one asked for (already checked to apply)."""
    return choose_algorithm(x_shape, w_shape, *geometry_args, function) if algorithm == "auto" else algorithm


# The dtypes, shapes and params are checked by _geometry (the one place the ops' inputs are
# checked; no numba there, so backends that trace the ops' rules instead of running them check
# with the same code), its errors naming the op: "op 'conv2d_input_grad': ...".
def _common(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The arrays in their common dtype, C-contiguous (what the numba kernels are compiled for)."""
    dtype = np.result_type(*arrays)
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


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
    x, w = float_array("conv2d", "x", x), float_array("conv2d", "w", w)
    geometry, args = plan_conv2d(x.shape, w.shape, stride, padding, dilation, algorithm)
    chosen = _chosen(algorithm, x.shape, w.shape, args, "conv2d")
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
    g, w = float_array("conv2d_input_grad", "g", g), float_array("conv2d_input_grad", "w", w)
    size, geometry, args = plan_input_grad(g.shape, w.shape, input_size, stride, padding, dilation, algorithm)
    chosen = _chosen(algorithm, (g.shape[0], w.shape[1], *size), w.shape, args, "input_grad")
    g, w = _common([g, w])
    through = transposed(geometry, size, w.shape[2:])  # a forward of the upsampled g, flipped kernel:
    if chosen == "winograd":  # whose input transform no weight gradient will ask for
        return _winograd.forward(g, flipped_transposed(w), through, keep=False)
    if chosen == "fft":
        return _fft.forward(upsampled(g, geometry.stride), flipped_transposed(w), through)
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
    x, g = float_array("conv2d_weight_grad", "x", x), float_array("conv2d_weight_grad", "g", g)
    kernel, geometry, args = plan_weight_grad(
        x.shape, g.shape, kernel_size, stride, padding, dilation, algorithm
    )
    chosen = _chosen(algorithm, x.shape, (g.shape[1], x.shape[1], *kernel), args, "weight_grad")
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
