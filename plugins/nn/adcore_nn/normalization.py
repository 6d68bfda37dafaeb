"""BatchNorm1d, BatchNorm2d and LayerNorm with torch.nn's signatures, buffers and state_dict keys.

Train mode normalises with the batch's biased variance and updates `running_var` with the
unbiased one, as torch. The running statistics are updated once per module call, in place, with
the concrete values behind any tracers (torch updates them under no_grad). Where that update
cannot be right it is refused (UnsupportedByBackendError): a backend that evaluates f several
times for one derivative (numeric's finite differences) would update the statistics once per
evaluation, and under adcore.vmap one call holds many examples (torch.func refuses it too).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

import adcore
import adcore.numpy as anp
from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError, UnsupportedByBackendError
from adcore_nn import evaluation
from adcore_nn.linear import check_input, float_dtype
from adcore_nn.module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "batch_norm", "layer_norm"]


def _normalise(x: Any, mean: Any, var: Any, eps: float) -> Any:
    return (x - mean) / anp.sqrt(var + eps)


def batch_norm(x: Any, mean: Any, var: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """(x - mean) / sqrt(var + eps) * weight + bias over channel axis 1 (mean, var, weight, bias: (C,))."""
    shape = (1, -1) + (1,) * (np.ndim(x) - 2)
    y = _normalise(x, anp.reshape(mean, shape), anp.reshape(var, shape), eps)
    if weight is not None:
        y = y * anp.reshape(weight, shape)
    if bias is not None:
        y = y + anp.reshape(bias, shape)
    return y


def layer_norm(
    x: Any, normalized_shape: tuple[int, ...], weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> Any:
    """Normalise over the last len(normalized_shape) axes with the biased variance, then scale and shift."""
    axes = tuple(range(np.ndim(x) - len(normalized_shape), np.ndim(x)))
    mean = anp.mean(x, axis=axes, keepdims=True)
    var = anp.mean(anp.square(x - mean), axis=axes, keepdims=True)
    y = _normalise(x, mean, var, eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


class _BatchNorm(Module):
    _ndims: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        dtype: Any = np.float32,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if (
            isinstance(num_features, bool)
            or not isinstance(num_features, numbers.Integral)
            or num_features < 1
        ):
            raise InvalidInputError(f"{name}: num_features must be a positive int, got {num_features!r}")
        dt = float_dtype(dtype, name)
        self.num_features = int(num_features)
        self._param_dtype = dt
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(np.ones(num_features, dt))
            if bias:
                self.bias = Parameter(np.zeros(num_features, dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dt))
            self.register_buffer("running_var", np.ones(num_features, dt))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean[...] = 0
            self.running_var[...] = 1
            self.num_batches_tracked[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            self.weight[...] = 1
        if self.bias is not None:
            self.bias[...] = 0

    def _dtype(self) -> np.dtype:
        for array in (self.weight, self.running_mean):
            if array is not None:
                return np.dtype(array.dtype)
        return self._param_dtype

    def forward(self, input: Any) -> Any:
        name = type(self).__name__
        check_input(name, input, self._dtype(), self._ndims)
        if input.shape[1] != self.num_features:
            raise InvalidValueError(
                f"{name}: expected {self.num_features} channels on axis 1, got shape {tuple(input.shape)}"
            )
        use_batch_stats = self.training or self.running_mean is None
        if not use_batch_stats:
            return batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, self.eps)
        axes = (0,) + tuple(range(2, input.ndim))
        count = int(np.prod([input.shape[a] for a in axes]))
        if count <= 1:
            raise InvalidValueError(
                f"{name}: expected more than 1 value per channel when training, got input shape "
                f"{tuple(input.shape)} (torch's rule: the batch variance of one value is 0)"
            )
        shape = (1, -1) + (1,) * (input.ndim - 2)
        mean = anp.mean(input, axis=axes)
        var = anp.mean(anp.square(input - anp.reshape(mean, shape)), axis=axes)
        if self.training and self.track_running_stats and not evaluation.recomputed():
            self._refuse_where_wrong(input)
            self._update_running_stats(mean, var, count)
        return batch_norm(input, mean, var, self.weight, self.bias, self.eps)

    def _refuse_where_wrong(self, input: Any) -> None:
        name = type(self).__name__
        backend = evaluation.repeats_f()
        if backend is not None:
            raise UnsupportedByBackendError(
                f"{name}: backend {backend!r} evaluates the function several times for one derivative, "
                "so the running statistics would be updated once per evaluation; call model.eval() "
                "(or build the layer with track_running_stats=False), or use backend='reverse'"
            )
        if evaluation.batched(input):
            raise UnsupportedByBackendError(
                f"{name}: adcore.vmap cannot update the running statistics (one call holds many "
                "examples; torch.func refuses it too); call model.eval() or build the layer with "
                "track_running_stats=False"
            )

    def _update_running_stats(self, mean: Any, var: Any, count: int) -> None:
        """torch's no_grad update, in place (so the user's model sees it from a rebuilt copy)."""
        dt = self.running_mean.dtype
        try:
            mean, var = np.asarray(adcore.concrete(mean), dt), np.asarray(adcore.concrete(var), dt)
        except AdcoreError as error:  # symbolic traces f with symbols: no numbers to update with
            raise UnsupportedByBackendError(
                f"{type(self).__name__}: the batch statistics have no numbers under this derivative, so "
                "the running statistics cannot be updated; call model.eval() (or build the layer with "
                "track_running_stats=False), or use backend='reverse'"
            ) from error
        nbt = self.num_batches_tracked
        np.add(nbt, 1, out=nbt)
        factor = 1.0 / float(nbt) if self.momentum is None else self.momentum
        unbiased = var * dt.type(count / (count - 1))
        self.running_mean[...] = (1 - factor) * self.running_mean + factor * mean
        self.running_var[...] = (1 - factor) * self.running_var + factor * unbiased

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """torch.nn.BatchNorm1d over (N, C) or (N, C, L); `dtype` float32 by default, no `device`."""

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """torch.nn.BatchNorm2d over (N, C, H, W); `dtype` float32 by default, no `device`."""

    _ndims = (4,)


class LayerNorm(Module):
    """torch.nn.LayerNorm: normalise over the trailing `normalized_shape` axes (biased variance)."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: Any = np.float32,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        if any(n < 0 for n in self.normalized_shape):
            raise InvalidValueError(
                f"LayerNorm: normalized_shape must hold non-negative sizes, got {self.normalized_shape}"
            )
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dt = float_dtype(dtype, "LayerNorm")
        self._param_dtype = dt
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dt))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            self.weight[...] = 1
        if self.bias is not None:
            self.bias[...] = 0

    def forward(self, input: Any) -> Any:
        dt = self.weight.dtype if self.weight is not None else getattr(input, "dtype", self._param_dtype)
        check_input("LayerNorm", input, dt)
        k = len(self.normalized_shape)
        if tuple(input.shape[input.ndim - k :]) != self.normalized_shape or input.ndim < k:
            raise InvalidValueError(
                f"LayerNorm: the input's trailing axes must be normalized_shape={self.normalized_shape}, "
                f"got shape {tuple(input.shape)}"
            )
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )
