"""Linear and Identity (torch.nn.Linear, torch.nn.Identity), and the input checks the layers share."""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError
from adcore_nn import init
from adcore_nn.module import Module, Parameter

__all__ = ["Identity", "Linear", "check_input", "float_dtype", "linear"]


def float_dtype(dtype: Any, layer: str) -> np.dtype:
    """The layer's parameter dtype: float32 (torch's default) or float64, anything else refused."""
    dt = np.dtype(np.float32 if dtype is None else dtype)
    if dt not in (np.float32, np.float64):
        raise InvalidInputError(f"{layer}: dtype must be float32 or float64, got {dt}")
    return dt


def check_input(layer: str, x: Any, dtype: np.dtype, ndims: tuple[int, ...] | None = None) -> None:
    """x is an array of the layer's dtype (torch refuses mixed dtypes; NumPy would silently promote)."""
    x_dtype = getattr(x, "dtype", None)
    if x_dtype is None:
        raise InvalidInputError(f"{layer}: the input must be an array, got {type(x).__name__}")
    if x_dtype != dtype:
        raise InvalidInputError(
            f"{layer}: the input has dtype {x_dtype} but the layer's parameters are {dtype}; "
            f"cast the input (x.astype(np.{dtype})) or the model (.float() / .double())"
        )
    if ndims is not None and x.ndim not in ndims:
        expected = " or ".join(f"{n}-D" for n in ndims)
        raise InvalidValueError(f"{layer}: expected a {expected} input, got shape {tuple(x.shape)}")


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """x @ weight.T + bias (torch.nn.functional.linear)."""
    y = anp.matmul(x, anp.transpose(weight))
    return y if bias is None else y + bias


class Identity(Module):
    """Returns its input; ignores its constructor's arguments, as torch's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features), torch's default initialisation.

    `dtype` defaults to float32 as torch's; `generator` (a numpy Generator) draws the initial
    values, by default adcore_nn.init's generator (`adcore_nn.manual_seed`). No `device`.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        dtype: Any = np.float32,
        *,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        dt = float_dtype(dtype, "Linear")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(np.empty((out_features, in_features), dt))
        if bias:
            self.bias = Parameter(np.empty(out_features, dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator=generator)

    def reset_parameters(self, generator: np.random.Generator | None = None) -> None:
        """torch's: weight kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(in_features), 1/sqrt(in_features))."""
        init._torch_layer_init(self.weight, self.bias, generator)

    def forward(self, input: Any) -> Any:
        check_input("Linear", input, self.weight.dtype)
        if input.ndim == 0 or input.shape[-1] != self.in_features:
            raise InvalidValueError(
                f"Linear: the input's last axis must have in_features={self.in_features} entries, "
                f"got shape {tuple(input.shape)}"
            )
        return linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
        )
