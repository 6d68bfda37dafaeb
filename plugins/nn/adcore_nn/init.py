"""torch.nn.init's initialisations, writing in place into NumPy arrays from a `numpy.random.Generator`.

The names, signatures, formulas and bounds are torch's (torch/nn/init.py); the values differ, as the
random streams do. `generator=None` draws from this module's generator, which
`adcore_nn.manual_seed(seed)` reseeds (torch.manual_seed's analogue); pass a `np.random.Generator`
to draw from your own. Each function fills the array it is given (float32 or float64, writable) and
returns it. Draws are made in float64 and rounded to the array's dtype.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError

__all__ = [
    "calculate_gain",
    "constant_",
    "default_generator",
    "kaiming_normal_",
    "kaiming_uniform_",
    "manual_seed",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

_generator = np.random.default_rng()

_LINEAR_FNS = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the default generator of every layer's initialisation (torch.manual_seed's analogue)."""
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidInputError(f"adcore_nn.manual_seed: seed must be an int, got {type(seed).__name__}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator() -> np.random.Generator:
    """The generator that initialisations draw from when given `generator=None`."""
    return _generator


def _rng(generator: np.random.Generator | None, fn: str) -> np.random.Generator:
    if generator is None:
        return _generator
    if not isinstance(generator, np.random.Generator):
        raise InvalidInputError(
            f"adcore_nn.init.{fn}: generator must be a numpy.random.Generator or None, "
            f"got {type(generator).__name__} (np.random.default_rng(seed) makes one)"
        )
    return generator


def _target(tensor: Any, fn: str) -> np.ndarray:
    if not isinstance(tensor, np.ndarray) or tensor.dtype not in (np.float32, np.float64):
        what = (
            f"an array of dtype {tensor.dtype}" if isinstance(tensor, np.ndarray) else type(tensor).__name__
        )
        raise InvalidInputError(
            f"adcore_nn.init.{fn}: fills a float32 or float64 numpy array in place, got {what}"
        )
    if not tensor.flags.writeable:
        raise InvalidInputError(f"adcore_nn.init.{fn}: the array is read-only; pass a writable array")
    return tensor


def _fill(tensor: np.ndarray, values: Any) -> np.ndarray:
    tensor[...] = values  # rounds float64 draws to the array's dtype
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch's recommended gain for a nonlinearity (torch.nn.init.calculate_gain)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, numbers.Real):
            slope = param
        else:
            raise InvalidValueError(
                f"adcore_nn.init.calculate_gain: negative_slope {param} not a valid number"
            )
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise InvalidValueError(f"adcore_nn.init.calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: np.ndarray) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight (out, in, *kernel), as torch computes them."""
    if tensor.ndim < 2:
        raise InvalidValueError(
            "adcore_nn.init: fan in and fan out can not be computed for an array with fewer than 2 dimensions"
        )
    receptive_field_size = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field_size, tensor.shape[0] * receptive_field_size


def _calculate_correct_fan(tensor: np.ndarray, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise InvalidValueError(f"adcore_nn.init: mode {mode!r} not supported, use 'fan_in' or 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(
    tensor: np.ndarray, a: float = 0.0, b: float = 1.0, generator: np.random.Generator | None = None
) -> np.ndarray:
    """Fill tensor with draws from U(a, b)."""
    tensor = _target(tensor, "uniform_")
    return _fill(tensor, _rng(generator, "uniform_").uniform(a, b, tensor.shape))


def normal_(
    tensor: np.ndarray, mean: float = 0.0, std: float = 1.0, generator: np.random.Generator | None = None
) -> np.ndarray:
    """Fill tensor with draws from N(mean, std**2)."""
    tensor = _target(tensor, "normal_")
    return _fill(tensor, _rng(generator, "normal_").normal(mean, std, tensor.shape))


def constant_(tensor: np.ndarray, val: float) -> np.ndarray:
    """Fill tensor with val."""
    return _fill(_target(tensor, "constant_"), val)


def ones_(tensor: np.ndarray) -> np.ndarray:
    """Fill tensor with 1."""
    return _fill(_target(tensor, "ones_"), 1)


def zeros_(tensor: np.ndarray) -> np.ndarray:
    """Fill tensor with 0."""
    return _fill(_target(tensor, "zeros_"), 0)


def xavier_uniform_(
    tensor: np.ndarray, gain: float = 1.0, generator: np.random.Generator | None = None
) -> np.ndarray:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    tensor = _target(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(
    tensor: np.ndarray, gain: float = 1.0, generator: np.random.Generator | None = None
) -> np.ndarray:
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    tensor = _target(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: np.ndarray, a: float, mode: str, nonlinearity: str) -> float:
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(
    tensor: np.ndarray,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: np.random.Generator | None = None,
) -> np.ndarray:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan_mode) (He)."""
    tensor = _target(tensor, "kaiming_uniform_")
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: np.ndarray,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: np.random.Generator | None = None,
) -> np.ndarray:
    """N(0, std**2) with std = gain / sqrt(fan_mode) (He)."""
    tensor = _target(tensor, "kaiming_normal_")
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def _torch_layer_init(
    weight: np.ndarray, bias: np.ndarray | None, generator: np.random.Generator | None
) -> None:
    """Linear's and Conv's reset_parameters: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in))."""
    kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound, generator)
