"""Conv2d, MaxPool2d and AvgPool2d (torch.nn's) on adcore-kernels' ops conv2d, max_pool2d, avg_pool2d.

Where the kernels do less than torch, the layer composes what torch computes from adcore ops:
groups (a convolution per group, concatenated), padding='same' with an odd total (padded by
adcore.numpy.pad first, extra on the bottom/right as torch), padding_mode reflect/replicate/circular
(np.pad's reflect/edge/wrap), avg pooling's count_include_pad=False and divisor_override (a rescale
by constant counts). What they cannot do is refused by name: MaxPool2d's dilation, return_indices and
ceil_mode, AvgPool2d's ceil_mode. MaxPool2d's gradient at tied maxima is split equally among them
(adcore-kernels' convention); torch gives all of it to one of them.
"""

from __future__ import annotations

import math
from typing import Any

import adcore_kernels
import numpy as np

import adcore.numpy as anp
from adcore.errors import InvalidValueError
from adcore_nn import init
from adcore_nn.linear import check_input, float_dtype
from adcore_nn.module import Module, Parameter

__all__ = ["AvgPool2d", "Conv2d", "MaxPool2d", "conv2d"]

_NP_PAD_MODE = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pair(layer: str, name: str, value: Any) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
        raise InvalidValueError(f"{layer}: {name} must be an int or a pair of ints, got {value!r}")
    return int(pair[0]), int(pair[1])


def _pads(
    x_hw: tuple[int, int], padding: Any, kernel_size: tuple, dilation: tuple
) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) as torch pads: 'same' puts an odd extra on the bottom/right."""
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel_size)]
        return tuple((t // 2, t - t // 2) for t in totals)  # type: ignore[return-value]
    return (padding[0], padding[0]), (padding[1], padding[1])


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
) -> Any:
    """torch.nn.functional.conv2d (and Conv2d's padding_mode) for x (N, C, H, W) or (C, H, W)."""
    unbatched = x.ndim == 3
    if unbatched:
        x = anp.expand_dims(x, 0)
    kernel_size = tuple(weight.shape[2:])
    stride, dilation = _pair("conv2d", "stride", stride), _pair("conv2d", "dilation", dilation)
    if not isinstance(padding, str):
        padding = _pair("conv2d", "padding", padding)
    (top, bottom), (left, right) = _pads(tuple(x.shape[2:]), padding, kernel_size, dilation)
    if padding_mode == "zeros" and top == bottom and left == right:
        kernel_padding = (top, left)
    else:
        _check_pad_fits(padding_mode, tuple(x.shape[2:]), ((top, bottom), (left, right)))
        x = anp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), mode=_NP_PAD_MODE[padding_mode])
        kernel_padding = (0, 0)
    params = {"stride": stride, "padding": kernel_padding, "dilation": dilation}
    if groups == 1:
        y = adcore_kernels.conv2d(x, weight, **params)
    else:
        c, o = x.shape[1] // groups, weight.shape[0] // groups
        y = anp.concatenate(
            [
                adcore_kernels.conv2d(x[:, g * c : (g + 1) * c], weight[g * o : (g + 1) * o], **params)
                for g in range(groups)
            ],
            axis=1,
        )
    if bias is not None:
        y = y + anp.reshape(bias, (-1, 1, 1))
    return y[0] if unbatched else y


def _check_pad_fits(mode: str, hw: tuple, pads: tuple) -> None:
    # np.pad reflects and wraps any number of times; torch refuses, so refuse rather than differ
    for n, (a, b) in zip(hw, pads):
        if mode == "reflect" and max(a, b) >= n:
            raise InvalidValueError(
                f"Conv2d: padding_mode='reflect' needs padding < the input size, got padding {max(a, b)} for size {n}"
            )
        if mode == "circular" and max(a, b) > n:
            raise InvalidValueError(
                f"Conv2d: padding_mode='circular' needs padding <= the input size, got {max(a, b)} for size {n}"
            )


class Conv2d(Module):
    """2-D cross-correlation, torch's signature, attributes and default initialisation.

    weight (out_channels, in_channels // groups, kh, kw); `dtype` float32 by default, `generator`
    draws the initial values (default: adcore_nn.init's). No `device`. Input (N, C, H, W) or (C, H, W).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        dtype: Any = np.float32,
        *,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        dt = float_dtype(dtype, "Conv2d")
        if groups <= 0:
            raise InvalidValueError("Conv2d: groups must be a positive integer")
        if in_channels % groups != 0:
            raise InvalidValueError("Conv2d: in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise InvalidValueError("Conv2d: out_channels must be divisible by groups")
        if padding_mode not in _NP_PAD_MODE:
            raise InvalidValueError(
                f"Conv2d: padding_mode must be one of {sorted(_NP_PAD_MODE)}, got {padding_mode!r}"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair("Conv2d", "kernel_size", kernel_size)
        self.stride = _pair("Conv2d", "stride", stride)
        self.dilation = _pair("Conv2d", "dilation", dilation)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise InvalidValueError(
                    f"Conv2d: invalid padding string {padding!r}, should be one of ['valid', 'same']"
                )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise InvalidValueError("Conv2d: padding='same' is not supported for strided convolutions")
            self.padding: Any = padding
        else:
            self.padding = _pair("Conv2d", "padding", padding)
        self.transposed = False
        self.output_padding = (0, 0)
        self.groups = groups
        self.padding_mode = padding_mode
        self.weight = Parameter(np.empty((out_channels, in_channels // groups, *self.kernel_size), dt))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator=generator)

    def reset_parameters(self, generator: np.random.Generator | None = None) -> None:
        """torch's: weight kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init._torch_layer_init(self.weight, self.bias, generator)

    def forward(self, input: Any) -> Any:
        check_input("Conv2d", input, self.weight.dtype, ndims=(3, 4))
        if input.shape[-3] != self.in_channels:
            raise InvalidValueError(
                f"Conv2d: expected an input with in_channels={self.in_channels} channels, "
                f"got shape {tuple(input.shape)}"
            )
        return conv2d(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self.padding_mode,
        )

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if isinstance(self.padding, str) or self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


def _refuse(layer: str, argument: str, value: Any) -> None:
    raise InvalidValueError(
        f"{layer}: {argument}={value!r} is not supported (adcore-kernels' pooling has no {argument}); "
        f"leave it at its default"
    )


def _pool_input(layer: str, x: Any) -> None:
    if getattr(x, "dtype", None) not in (np.float32, np.float64):
        check_input(layer, x, np.dtype(np.float32))  # names the bad type or dtype
    if x.ndim not in (3, 4):
        raise InvalidValueError(f"{layer}: expected a 3-D or 4-D input, got shape {tuple(x.shape)}")


class MaxPool2d(Module):
    """The largest value of each window; padding never wins. The gradient at k tied maxima is split
    1/k each (torch gives it to one): equal to torch's wherever a window's maximum is unique."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        if dilation not in (1, (1, 1), [1, 1]):
            _refuse("MaxPool2d", "dilation", dilation)
        if return_indices:
            _refuse("MaxPool2d", "return_indices", return_indices)
        if ceil_mode:
            _refuse("MaxPool2d", "ceil_mode", ceil_mode)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Any) -> Any:
        _pool_input("MaxPool2d", input)
        return adcore_kernels.max_pool2d(
            input, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """The mean of each window; count_include_pad and divisor_override as torch's; no ceil_mode."""

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        if ceil_mode:
            _refuse("AvgPool2d", "ceil_mode", ceil_mode)
        if divisor_override is not None and (isinstance(divisor_override, bool) or divisor_override <= 0):
            raise InvalidValueError(
                f"AvgPool2d: divisor_override must be a positive int, got {divisor_override!r}"
            )
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Any) -> Any:
        _pool_input("AvgPool2d", input)
        params = {"kernel_size": self.kernel_size, "stride": self.stride, "padding": self.padding}
        y = adcore_kernels.avg_pool2d(input, **params)
        window = math.prod(_pair("AvgPool2d", "kernel_size", self.kernel_size))
        if self.divisor_override is not None:
            return y * (window / self.divisor_override)
        if not self.count_include_pad and _pair("AvgPool2d", "padding", self.padding) != (0, 0):
            # each window's count of input (not padding) positions, from pooling ones: constants
            ones = np.ones(tuple(input.shape[-2:]), np.float64)
            count = np.asarray(adcore_kernels.avg_pool2d(ones, **params)) * window
            y = y * (window / count).astype(input.dtype)
        return y

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
