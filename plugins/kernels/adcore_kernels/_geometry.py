"""Where a convolution reads its input: the one description every algorithm's kernels take.

Output pixel (r, q) and kernel tap (i, j) read the *unpadded* input at row
`r*stride_h + i*dilation_h - offset_h` and column `q*stride_w + j*dilation_w - offset_w`;
a read outside the input is a zero. A forward convolution has offset = padding; the
input gradient at stride 1 is such a convolution too, of the cotangent, with offset
`dilation*(k-1) - padding` (negative when the padding is wider than the kernel: a crop).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Geometry(NamedTuple):
    out: tuple[int, int]  # (H', W'): the output's spatial size
    stride: tuple[int, int]
    offset: tuple[int, int]
    dilation: tuple[int, int]

    def ints(self) -> tuple[int, ...]:
        """out_h, out_w, stride_h, stride_w, offset_h, offset_w, dilation_h, dilation_w: the kernels' arguments."""
        return (*self.out, *self.stride, *self.offset, *self.dilation)


def transposed(geometry: Geometry, input_size: tuple[int, int], kernel_size: tuple[int, int]) -> Geometry:
    """The stride-1 convolution of the stride-upsampled cotangent with the flipped kernel that is the input gradient."""
    offset = tuple(d * (k - 1) - p for d, k, p in zip(geometry.dilation, kernel_size, geometry.offset))
    return Geometry(tuple(input_size), (1, 1), offset, geometry.dilation)


def flipped_transposed(w: np.ndarray) -> np.ndarray:
    """w (O, C, kh, kw) rotated by 180° in space with O and C swapped: (C, O, kh, kw), contiguous."""
    return np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))


def upsampled(g: np.ndarray, stride: tuple[int, int]) -> np.ndarray:
    """g with stride-1 zeros between its pixels: (..., s_h*(H'-1)+1, s_w*(W'-1)+1); g itself at stride 1."""
    if stride == (1, 1):
        return g
    sh, sw = stride
    out = np.zeros((*g.shape[:-2], sh * (g.shape[-2] - 1) + 1, sw * (g.shape[-1] - 1) + 1), dtype=g.dtype)
    out[..., ::sh, ::sw] = g
    return out
