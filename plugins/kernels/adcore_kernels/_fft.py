"""The FFT algorithm: correlation as a product of spectra, the sum over channels one batched matmul per frequency.

With real FFTs of length L (per axis) the circular correlation of a with b is
`irfft(conj(A) * B)[u] = sum over t of a[t] * b[(t + u) mod L]`. The input is transformed
unpadded; L is taken large enough that every read a convolution makes (from `-offset`
to `stride*(H'-1) + dilation*(k-1) - offset`) lands either on the input or on zeros,
never wrapping onto the input, so the padding is the zeros past the input's end and
output row r is row `(stride*r - offset) mod L` of the circular result. A dilated kernel
is the kernel with zeros between its taps; a stride-s output is every s-th row of the
stride-1 one. Cost O(N*C*L² log L + N*C*O*L²), independent of the kernel's size: the
algorithm for large kernels. numpy.fft keeps float32 as complex64.
"""

from __future__ import annotations

import numpy as np

from adcore_kernels._geometry import Geometry, upsampled


def next_fast_len(n: int) -> int:
    """The smallest 2^a 3^b 5^c >= n: lengths pocketfft transforms fastest."""
    best = 2 * n
    power5 = 1
    while power5 < best:
        power35 = power5
        while power35 < best:
            length = power35
            while length < n:
                length *= 2
            best = min(best, length)
            power35 *= 3
        power5 *= 5
    return best


def _lengths(size: tuple[int, int], reach: tuple[int, int], geometry: Geometry) -> tuple[int, int]:
    """FFT lengths (per axis) for an input of `size` correlated with something `reach` long."""
    lengths = []
    for n, extent, s, o, out in zip(size, reach, geometry.stride, geometry.offset, geometry.out):
        last_read = s * (out - 1) + extent - 1 - o
        lengths.append(next_fast_len(max(n + max(o, 0), last_read + 1, extent)))
    return tuple(lengths)


def _spectral_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(P, Q, F1, F2) @ (Q, R, F1, F2) -> (P, R, F1, F2): one matrix product per frequency, by BLAS."""
    a_f = np.ascontiguousarray(a.transpose(2, 3, 0, 1))
    b_f = np.ascontiguousarray(b.transpose(2, 3, 0, 1))
    return np.matmul(a_f, b_f).transpose(2, 3, 0, 1)


def _dilated(w: np.ndarray, dilation: tuple[int, int]) -> np.ndarray:
    if dilation == (1, 1):
        return w
    dh, dw = dilation
    out = np.zeros((*w.shape[:2], dh * (w.shape[2] - 1) + 1, dw * (w.shape[3] - 1) + 1), dtype=w.dtype)
    out[:, :, ::dh, ::dw] = w
    return out


def forward(x: np.ndarray, w: np.ndarray, geometry: Geometry) -> np.ndarray:
    kernel = _dilated(w, geometry.dilation)
    lengths = _lengths(x.shape[2:], kernel.shape[2:], geometry)
    spectrum_x = np.fft.rfft2(x, s=lengths)  # (N, C, L1, L2//2 + 1)
    spectrum_w = np.fft.rfft2(kernel, s=lengths).conj().transpose(1, 0, 2, 3)  # (C, O, ...)
    spectrum_y = _spectral_matmul(spectrum_x, spectrum_w)
    return _inverse(spectrum_y, geometry.out, geometry.stride, geometry.offset, lengths).astype(
        x.dtype, copy=False
    )


def weight_grad(x: np.ndarray, g: np.ndarray, kernel_size: tuple[int, int], geometry: Geometry) -> np.ndarray:
    dense_g = upsampled(g, geometry.stride)
    reach = tuple(d * (k - 1) + 1 for d, k in zip(geometry.dilation, kernel_size))
    lengths = _lengths(x.shape[2:], reach, geometry)
    lengths = tuple(max(length, next_fast_len(n)) for length, n in zip(lengths, dense_g.shape[2:]))
    spectrum_x = np.fft.rfft2(x, s=lengths)  # (N, C, ...)
    spectrum_g = np.fft.rfft2(dense_g, s=lengths).conj().transpose(1, 0, 2, 3)  # (O, N, ...)
    spectrum_gw = _spectral_matmul(spectrum_g, spectrum_x)  # (O, C, L1, L2//2 + 1)
    return _inverse(spectrum_gw, kernel_size, geometry.dilation, geometry.offset, lengths).astype(
        x.dtype, copy=False
    )


def _inverse(
    spectrum: np.ndarray, count: tuple[int, int], step: tuple[int, int], offset, lengths
) -> np.ndarray:
    """Rows (step*r - offset) mod L, r < count, and likewise columns, of the circular result
    irfft2(spectrum, s=lengths): the inverse along the rows first (as irfft2's), then along the
    columns of the rows picked only (the weight gradient keeps kh of L1 rows, the forward H')."""
    rows = (step[0] * np.arange(count[0]) - offset[0]) % lengths[0]
    cols = (step[1] * np.arange(count[1]) - offset[1]) % lengths[1]
    picked_rows = np.fft.ifft(spectrum, n=lengths[0], axis=-2)[:, :, rows]
    return np.fft.irfft(picked_rows, n=lengths[1], axis=-1)[:, :, :, cols]
