"""Flatten and Unflatten (torch.nn's): reshapes of a range of axes, through adcore.numpy.reshape."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import adcore.numpy as anp
from adcore.errors import InvalidValueError
from adcore_nn.module import Module

__all__ = ["Flatten", "Unflatten", "flatten"]


def _axis(layer: str, name: str, dim: int, ndim: int) -> int:
    if not -ndim <= dim < ndim:
        raise InvalidValueError(f"{layer}: {name}={dim} is out of range for a {ndim}-D input")
    return dim % ndim


def flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """torch.flatten: axes start_dim..end_dim (inclusive) merged into one; a 0-d input becomes 1-D."""
    shape = tuple(x.shape)
    if not shape:
        return anp.reshape(x, (1,))
    start = _axis("Flatten", "start_dim", start_dim, len(shape))
    end = _axis("Flatten", "end_dim", end_dim, len(shape))
    if start > end:
        raise InvalidValueError(f"Flatten: start_dim={start_dim} comes after end_dim={end_dim}")
    return anp.reshape(x, (*shape[:start], math.prod(shape[start : end + 1]), *shape[end + 1 :]))


class Flatten(Module):
    """Merge axes start_dim..end_dim (default: all but the batch axis)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Any) -> Any:
        return flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis dim into unflattened_size (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(dim, int):
            raise InvalidValueError(
                f"Unflatten: dim must be an int (named tensors do not exist here), got {dim!r}"
            )
        if not isinstance(unflattened_size, (tuple, list)) or not all(
            isinstance(n, int) for n in unflattened_size
        ):
            raise InvalidValueError(
                f"Unflatten: unflattened_size must be a tuple or list of ints, got {unflattened_size!r}"
            )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Any) -> Any:
        shape = tuple(input.shape)
        axis = _axis("Unflatten", "dim", self.dim, len(shape))
        sizes = tuple(self.unflattened_size)
        known = math.prod(n for n in sizes if n != -1)
        if sizes.count(-1) > 1 or (
            shape[axis] != known if -1 not in sizes else known == 0 or shape[axis] % known
        ):
            raise InvalidValueError(
                f"Unflatten: unflattened_size {sizes} does not split axis {self.dim} of size {shape[axis]}"
            )
        return anp.reshape(input, (*shape[:axis], *sizes, *shape[axis + 1 :]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
