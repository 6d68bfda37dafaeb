"""Embedding (torch.nn.Embedding): rows of a weight table picked by integer indices, via adcore.numpy.take.

The gradient of a row picked several times is the sum of its cotangents (take's VJP accumulates);
padding_idx's row gets a zero gradient, as torch's. max_norm (torch renormalises the weight in place
during the forward), scale_grad_by_freq, sparse gradients and _freeze are refused by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError
from adcore_nn import init
from adcore_nn.linear import float_dtype
from adcore_nn.module import Module, Parameter

__all__ = ["Embedding", "embedding"]


def _indices(input: Any, num_embeddings: int) -> np.ndarray:
    dtype = getattr(input, "dtype", None)
    if dtype is None or dtype.kind not in "iu":
        raise InvalidInputError(
            f"Embedding: the indices must be an integer array, got {dtype if dtype is not None else type(input).__name__}"
        )
    indices = np.asarray(input)
    if indices.size and (indices.min() < 0 or indices.max() >= num_embeddings):
        bad = indices[(indices < 0) | (indices >= num_embeddings)].flat[0]
        raise InvalidValueError(f"Embedding: index {bad} is out of range for num_embeddings={num_embeddings}")
    return indices


def embedding(input: Any, weight: Any, padding_idx: int | None = None) -> Any:
    """weight[input] (torch.nn.functional.embedding); padding_idx's row passes no gradient."""
    indices = _indices(input, weight.shape[0])
    out = anp.take(weight, indices, axis=0)
    if padding_idx is None:
        return out
    at_padding = (indices == padding_idx)[..., None]
    return anp.where(at_padding, anp.stop_gradient(out), out)


def _refuse(argument: str, value: Any, why: str) -> None:
    raise InvalidValueError(
        f"Embedding: {argument}={value!r} is not supported ({why}); leave it at its default"
    )


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table initialised N(0, 1), padding_idx's row zero.

    `dtype` float32 by default, `generator` draws the initial values (default: adcore_nn.init's).
    `_weight` (an array of the table's shape) is used as the table, not copied, as torch's.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: np.ndarray | None = None,
        _freeze: bool = False,
        dtype: Any = np.float32,
        *,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        if max_norm is not None:
            _refuse("max_norm", max_norm, "torch renormalises the weight in place inside the forward")
        if scale_grad_by_freq:
            _refuse("scale_grad_by_freq", scale_grad_by_freq, "gradients are not rescaled by frequency")
        if sparse:
            _refuse("sparse", sparse, "gradients are dense arrays")
        if _freeze:
            _refuse(
                "_freeze", _freeze, "adcore has no requires_grad; differentiate with respect to other leaves"
            )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise InvalidValueError("Embedding: padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(
                np.empty((num_embeddings, embedding_dim), float_dtype(dtype, "Embedding"))
            )
            self.reset_parameters(generator=generator)
        else:
            if tuple(np.shape(_weight)) != (num_embeddings, embedding_dim):
                raise InvalidValueError(
                    "Embedding: shape of _weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight)

    def reset_parameters(self, generator: np.random.Generator | None = None) -> None:
        """torch's: weight N(0, 1), then padding_idx's row zero."""
        init.normal_(self.weight, generator=generator)
        if self.padding_idx is not None:
            self.weight[self.padding_idx] = 0

    def forward(self, input: Any) -> Any:
        return embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
