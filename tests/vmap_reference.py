"""What `adcore.vmap(f, in_axes, out_axes)(*args)` must equal: f once per example, by a Python loop
over plain slices, the results stacked with np.stack (a reference that shares no code with vmap)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore import tree


def looped(
    f: Callable[..., Any], *args: Any, in_axes: Any = 0, out_axes: Any = 0, size: int | None = None
) -> Any:
    """stack([f(*example_i(args)) for i in range(size)]), each output's batch axis at out_axes."""
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    if size is None:
        size = next(
            np.shape(x)[a]
            for arg, ax in zip(args, axes)
            for x, a in _leaves_with_axes(arg, ax)
            if a is not None
        )
    results = [f(*(_example(arg, ax, i) for arg, ax in zip(args, axes))) for i in range(size)]
    return _stacked(results, out_axes)


def _leaves_with_axes(arg: Any, ax: Any) -> list:
    if ax is None or isinstance(ax, (int, np.integer)):
        return [(x, ax) for x in tree.leaves(arg)]
    if isinstance(ax, dict):
        return [pair for k in ax for pair in _leaves_with_axes(arg[k], ax[k])]
    return [pair for sub, sub_ax in zip(arg, ax) for pair in _leaves_with_axes(sub, sub_ax)]


def _example(arg: Any, ax: Any, i: int) -> Any:
    if ax is None:
        return arg
    if isinstance(ax, (int, np.integer)):
        return tree.map(lambda x: np.take(x, i, axis=ax), arg)
    if isinstance(ax, dict):
        return type(arg)((k, _example(arg[k], ax[k], i)) for k in arg)
    items = [_example(sub, sub_ax, i) for sub, sub_ax in zip(arg, ax)]
    return type(arg)(*items) if hasattr(arg, "_fields") else type(arg)(items)


def _stacked(results: list, out_axes: Any) -> Any:
    first = results[0]
    if out_axes is None:
        return first
    if isinstance(out_axes, int):
        return tree.map(lambda *xs: np.stack(xs, axis=out_axes), *results)
    if isinstance(out_axes, dict):
        return type(first)((k, _stacked([r[k] for r in results], out_axes[k])) for k in first)
    items = [_stacked([r[j] for r in results], ax) for j, ax in enumerate(out_axes)]
    return type(first)(*items) if hasattr(first, "_fields") else type(first)(items)


def assert_same(got: Any, want: Any, exact: bool = True) -> None:
    """Same structure, shapes and dtypes; values bit for bit (exact) or to rounding (rtol 1e-12)."""
    got_leaves, got_def = tree.flatten(got)
    want_leaves, want_def = tree.flatten(want)
    assert got_def == want_def, (got_def, want_def)
    for g, w in zip(got_leaves, want_leaves):
        assert type(g) is np.ndarray or np.ndim(g) == 0, type(g)
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        assert np.result_type(g) == np.result_type(w), (np.result_type(g), np.result_type(w))
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
