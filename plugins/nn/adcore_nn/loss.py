"""Losses with torch.nn's names, arguments and reductions: MSELoss, NLLLoss, CrossEntropyLoss.

Written with adcore ops, so every backend differentiates them; float32 in, float32 out. Where
torch would broadcast an input against a target of another shape (with a warning) or index out
of range, these raise a typed error naming the loss: such a call is almost always a bug that
gives a plausible, wrong loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError
from adcore_nn.module import Module

REDUCTIONS = ("none", "mean", "sum")


def _reduction(loss: str, reduction: Any) -> str:
    if reduction not in REDUCTIONS:
        raise InvalidValueError(f"{loss}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def _reduced(losses: Any, reduction: str) -> Any:
    if reduction == "none":
        return losses
    return anp.sum(losses) if reduction == "sum" else anp.mean(losses)


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """mean((input - target)²) (or the sum, or each), input and target of one shape."""
    _reduction("MSELoss", reduction)
    if np.shape(input) != np.shape(target):
        raise InvalidValueError(
            f"MSELoss: input shape {np.shape(input)} and target shape {np.shape(target)} differ (torch would "
            "broadcast them, with a warning, and average the wrong pairs); reshape one to match"
        )
    return _reduced(anp.square(input - target), reduction)


def _class_targets(loss: str, input: Any, target: Any, n_classes: int, ignore_index: int) -> np.ndarray:
    """The class-index target checked against the input: an integer array of the input's shape without
    its class axis (1), every entry a class or ignore_index."""
    target = np.asarray(target)
    if target.dtype.kind not in "iu":
        raise InvalidInputError(
            f"{loss}: a class-index target must be an integer array, got {target.dtype} (for class "
            "probabilities give a float target of the input's shape to CrossEntropyLoss)"
        )
    want = np.shape(input)[:1] + np.shape(input)[2:] if np.ndim(input) > 1 else ()
    if target.shape != want:
        raise InvalidValueError(
            f"{loss}: target shape {target.shape} does not match input shape {np.shape(input)} "
            f"(expected {want}: the input without its class axis 1)"
        )
    bad = (target != ignore_index) & ((target < 0) | (target >= n_classes))
    if bad.any():
        raise InvalidValueError(
            f"{loss}: target {target[bad].ravel()[0]} is out of range for {n_classes} classes "
            f"(ignore_index={ignore_index})"
        )
    return target


def _class_weight(loss: str, weight: Any, n_classes: int, dtype: Any) -> np.ndarray | None:
    if weight is None:
        return None
    weight = np.asarray(weight)
    if weight.shape != (n_classes,):
        raise InvalidValueError(
            f"{loss}: weight must have one entry per class ({n_classes}), got shape {weight.shape}"
        )
    return weight.astype(dtype)


def _nll(loss: str, log_probs: Any, target: Any, weight: Any, ignore_index: int, reduction: str) -> Any:
    """torch's nll_loss: -w[y]·log_probs[y] per item, the mean weighted by the items' class weights."""
    unbatched = np.ndim(log_probs) == 1
    if unbatched:
        log_probs = anp.reshape(log_probs, (1, -1))
        target = np.asarray(target).reshape(1)
    n_classes, dtype = np.shape(log_probs)[1], np.dtype(log_probs.dtype)
    target = _class_targets(loss, log_probs, target, n_classes, ignore_index)
    weight = _class_weight(loss, weight, n_classes, dtype)
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    picked = anp.squeeze(anp.take_along_axis(log_probs, np.expand_dims(safe, 1), axis=1), axis=1)
    item_weight = kept.astype(dtype) if weight is None else weight[safe] * kept
    losses = -(picked * item_weight)
    if reduction == "none":
        return anp.reshape(losses, ()) if unbatched else losses
    total = anp.sum(losses)
    return total if reduction == "sum" else total / dtype.type(item_weight.sum())


def nll_loss(
    input: Any, target: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean"
) -> Any:
    """torch.nn.functional.nll_loss: input holds log-probabilities, classes on axis 1."""
    return _nll("NLLLoss", input, target, weight, ignore_index, _reduction("NLLLoss", reduction))


def cross_entropy(
    input: Any,
    target: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Any:
    """torch.nn.functional.cross_entropy: log_softmax over axis 1 (axis 0 unbatched), then the negative
    log-likelihood of class indices, or of class probabilities (a float target of the input's shape)."""
    me = "CrossEntropyLoss"
    _reduction(me, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise InvalidValueError(f"{me}: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    class_axis = 0 if np.ndim(input) == 1 else 1
    log_probs = anp.log_softmax(input, axis=class_axis)
    dtype = np.dtype(log_probs.dtype)
    n_classes = np.shape(input)[class_axis]
    if np.asarray(target).dtype.kind == "f":
        return _cross_entropy_of_probabilities(
            log_probs, target, weight, reduction, label_smoothing, class_axis
        )
    nll = _nll(me, log_probs, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    # torch's label smoothing: (1 - ε)·nll + ε/C · Σ_c −w_c·log p_c, normalised as nll is
    target = np.asarray(target)
    w = _class_weight(me, weight, n_classes, dtype)
    shape = [1] * np.ndim(input)
    shape[class_axis] = n_classes
    weighted = log_probs if w is None else log_probs * w.reshape(shape)
    kept = target != ignore_index
    smooth = -anp.sum(weighted, axis=class_axis) * kept.astype(dtype)
    if reduction == "sum":
        smooth = anp.sum(smooth)
    elif reduction == "mean":
        safe = np.where(kept, target, 0)
        norm = kept.sum() if w is None else (w[safe] * kept).sum()
        smooth = anp.sum(smooth) / dtype.type(norm)
    eps = dtype.type(label_smoothing)
    return (dtype.type(1) - eps) * nll + smooth * (eps / dtype.type(n_classes))


def _cross_entropy_of_probabilities(
    log_probs: Any, target: Any, weight: Any, reduction: str, label_smoothing: float, class_axis: int
) -> Any:
    me = "CrossEntropyLoss"
    dtype = np.dtype(log_probs.dtype)
    target = np.asarray(target)
    if target.shape != np.shape(log_probs):
        raise InvalidValueError(
            f"{me}: a class-probability target must have the input's shape {np.shape(log_probs)}, got {target.shape}"
        )
    n_classes = np.shape(log_probs)[class_axis]
    target = target.astype(dtype)
    if label_smoothing:
        eps = dtype.type(label_smoothing)
        target = target * (dtype.type(1) - eps) + eps / dtype.type(n_classes)
    w = _class_weight(me, weight, n_classes, dtype)
    if w is not None:
        shape = [1] * np.ndim(target)
        shape[class_axis] = n_classes
        target = target * w.reshape(shape)
    losses = -anp.sum(log_probs * target, axis=class_axis)
    return _reduced(losses, reduction)


class MSELoss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction("MSELoss", reduction)

    def forward(self, input: Any, target: Any) -> Any:
        return mse_loss(input, target, self.reduction)


class NLLLoss(Module):
    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__()
        self.register_buffer("weight", None if weight is None else np.asarray(weight))
        self.ignore_index, self.reduction = ignore_index, _reduction("NLLLoss", reduction)

    def forward(self, input: Any, target: Any) -> Any:
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(Module):
    def __init__(
        self,
        weight: Any = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__()
        self.register_buffer("weight", None if weight is None else np.asarray(weight))
        self.ignore_index, self.reduction = ignore_index, _reduction("CrossEntropyLoss", reduction)
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, target: Any) -> Any:
        return cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )
