"""Sympy rules of the kernel ops: the "sympy" table the symbolic backend needs.

Each entry maps an op name to one rule:

    rule(*inputs, **params) -> the op's output

Each input is a NumPy object array of sympy expressions (a constant input comes as a
number or a NumPy array); the rule builds the output's expressions, element by element,
and sympy differentiates them. So these are for tiny shapes (every element is traced):
what the conformance suite runs, to check the other backends exactly.

- The convolutions are `adcore_kernels.reference`'s, which run on object arrays as they
  are; the algorithm makes no difference to the value.
- avg_pool2d is the reference's mean of each window (padding counted as zeros);
  avg_pool2d_grad spreads each g / (kh*kw) over its window.
- max_pool2d takes each window's maximum with the symbolic backend's `amax`, whose
  derivative splits equally among ties (docs/conventions.md); the padding is left out of
  the windows, so it never wins. max_pool2d_gather and max_pool2d_scatter weigh each
  position of a window by Piecewise((1, Eq(x, amax(window))), (0, True)) / (number of
  maxima): exactly amax's derivative, so the three agree on ties too.

sympy and the symbolic backend's functions (adcore-symbolic, this distribution's extra
"symbolic") are imported when a rule first runs, not when the table is registered; without
adcore-symbolic no plugin declares the "sympy" kind, and these rules are set aside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from adcore.extend import LazyModule
from adcore_kernels import _geometry, reference
from adcore_kernels.reference import conv2d_output_size, pair

sp = LazyModule("sympy")

Cell = tuple[int, int]


def _objects(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=object)


def _windows(
    size: tuple[int, int], kernel_size: Any, stride: Any, padding: Any
) -> Iterator[tuple[Cell, list[Cell]]]:
    """Each output position (r, q) of pooling an (H, W) input, with the input positions
    (y, z) its window covers, padding left out."""
    kernel = pair(kernel_size)
    stride = kernel if stride is None else pair(stride)
    (ph, pw), (sh, sw) = pair(padding), stride
    out = conv2d_output_size(size, kernel, stride, (ph, pw), 1)
    for r in range(out[0]):
        for q in range(out[1]):
            rows = [y for y in range(r * sh - ph, r * sh - ph + kernel[0]) if 0 <= y < size[0]]
            cols = [z for z in range(q * sw - pw, q * sw - pw + kernel[1]) if 0 <= z < size[1]]
            yield (r, q), [(y, z) for y in rows for z in cols]


def _pooled_shape(size: tuple[int, int], kernel_size: Any, stride: Any, padding: Any) -> tuple[int, int]:
    kernel = pair(kernel_size)
    return conv2d_output_size(size, kernel, kernel if stride is None else stride, padding, 1)


def _max_weights(values: list) -> list:
    """d amax(*values) / d value for each value: 1/k on each of the k maxima, 0 elsewhere."""
    from adcore_symbolic.functions import amax  # (a declared dependency: the extra "symbolic")

    top = amax(*values)
    hits = [sp.Piecewise((1, sp.Eq(v, top)), (0, True)) for v in values]
    count = sp.Add(*hits)
    return [hit / count for hit in hits]


def _pool_checked(op: str, x: Any, kernel_size: Any, stride: Any, padding: Any) -> np.ndarray:
    """x as objects, after the checks op's impl makes (this rule runs instead of the impl)."""
    x = _objects(x)
    _geometry.plan_pool(op, x.shape, kernel_size, stride, padding)
    return x


def _max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> np.ndarray:
    from adcore_symbolic.functions import amax  # imported when the rule runs: sympy is heavy

    x = _pool_checked("max_pool2d", x, kernel_size, stride, padding)
    out = np.empty(x.shape[:-2] + _pooled_shape(x.shape[-2:], kernel_size, stride, padding), dtype=object)
    for lead in np.ndindex(x.shape[:-2]):
        for cell, window in _windows(x.shape[-2:], kernel_size, stride, padding):
            out[lead + cell] = amax(*(x[lead + c] for c in window))
    return out


def _max_pool2d_linear(gather: bool) -> Callable[..., np.ndarray]:
    """max_pool2d_gather (t at the maxima) or max_pool2d_scatter (g onto the maxima)."""

    def rule(first: Any, x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> np.ndarray:
        plan = _geometry.plan_max_pool_gather if gather else _geometry.plan_max_pool_scatter
        plan(np.shape(first), np.shape(x), kernel_size, stride, padding)  # the impl's checks
        first, x = _objects(first), _objects(x)
        lead = np.broadcast_shapes(first.shape[:-2], x.shape[:-2])
        first = np.broadcast_to(first, lead + first.shape[-2:])
        x = np.broadcast_to(x, lead + x.shape[-2:])
        size = x.shape[-2:]
        out_size = _pooled_shape(size, kernel_size, stride, padding) if gather else size
        out = np.zeros(lead + out_size, dtype=object)
        for index in np.ndindex(lead):
            for cell, window in _windows(size, kernel_size, stride, padding):
                weights = _max_weights([x[index + c] for c in window])
                if gather:
                    out[index + cell] = sp.Add(*(w * first[index + c] for w, c in zip(weights, window)))
                else:
                    for w, c in zip(weights, window):
                        out[index + c] += w * first[index + cell]
        return out

    return rule


def _avg_pool2d_grad(
    g: Any, input_size: Any, kernel_size: Any, stride: Any = None, padding: Any = 0
) -> np.ndarray:
    _geometry.plan_avg_pool_grad(np.shape(g), input_size, kernel_size, stride, padding)  # the impl's checks
    g, size = _objects(g), pair(input_size)
    area = int(np.prod(pair(kernel_size)))
    out = np.zeros(g.shape[:-2] + size, dtype=object)
    for lead in np.ndindex(g.shape[:-2]):
        for cell, window in _windows(size, kernel_size, stride, padding):
            for c in window:
                out[lead + c] += g[lead + cell] / area
    return out


def _conv(reference_fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A convolution op's rule: its reference on object arrays; the algorithm does not matter."""

    def rule(a: Any, b: Any, algorithm: str = "auto", **params: Any) -> np.ndarray:
        # the impl's checks: the reference alone takes an empty or oversized kernel
        _geometry.check(reference_fn.__name__, np.shape(a), np.shape(b), algorithm=algorithm, **params)
        return reference_fn(_objects(a), _objects(b), **params)

    return rule


# fmt: off
SYMPY_RULES: dict[str, Any] = {
    "conv2d":             _conv(reference.conv2d),
    "conv2d_input_grad":  _conv(reference.conv2d_input_grad),
    "conv2d_weight_grad": _conv(reference.conv2d_weight_grad),
    "max_pool2d":         _max_pool2d,
    "max_pool2d_gather":  _max_pool2d_linear(gather=True),
    "max_pool2d_scatter": _max_pool2d_linear(gather=False),
    "avg_pool2d":         lambda x, kernel_size, stride=None, padding=0: reference.avg_pool2d(_pool_checked("avg_pool2d", x, kernel_size, stride, padding), kernel_size, stride, padding),
    "avg_pool2d_grad":    _avg_pool2d_grad,
}
# fmt: on
