"""A batch rule against the loop, for the batch rules' tests: an op's samples drawn SIZE times (one batch
of SIZE examples), the batch-axis layouts to try, the inputs stacked in a layout, the op on each example
stacked, and the comparison of the two; and a plugin's batch rules registered whichever order
adcore-batching loads in, or with it blocked."""

from __future__ import annotations

from collections.abc import Iterable

import adcore_batching.plugin
import numpy as np
import pytest

import adcore
from adcore import plugins
from adcore.plugins import get_registry, loaded_registry
from adcore.registry import Registry

SIZE = 3
# where batching changes NumPy's summation order (one BLAS product or factorization of the batch)
RTOL = {"d": 1e-12, "D": 1e-12, "f": 1e-5, "F": 1e-5}


def same_params(a: dict, b: dict) -> bool:
    """Equal params, arrays among them compared by value."""
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def batches(name: str, dtype: type = np.float64) -> list:
    """(examples, params) per sample of op `name`: the sample drawn SIZE times, same shapes and params."""
    op = get_registry().ops[name]
    draws = [op.samples(np.random.default_rng(seed), np.dtype(dtype)) for seed in range(SIZE)]
    out = []
    for group in zip(*draws):
        assert all(same_params(s.params, group[0].params) for s in group)
        out.append(([tuple(np.asarray(x) for x in s.args) for s in group], dict(group[0].params)))
    return out


def cases(names: Iterable[str], dtypes: tuple) -> list:
    """(name, dtype, k) for the k-th batch of each op in each dtype it accepts, with ids like `inv-float64-0`."""
    registry = get_registry()
    return [
        pytest.param(name, dtype, k, id=f"{name}-{np.dtype(dtype).name}-{k}")
        for name in names
        for dtype in dtypes
        if np.dtype(dtype).kind != "c" or registry.ops[name].accepts_complex
        for k in range(len(batches(name, dtype)))
    ]


def layouts(examples: list) -> list[tuple]:
    """Batch axes for every input: first, second, last (as far as each example has axes), and with
    two inputs or more each left unbatched in turn."""
    ndims = [np.ndim(x) for x in examples[0]]
    out = [tuple(min(position, n) for n in ndims) for position in (0, 1)]
    out.append(tuple(ndims))
    if len(ndims) > 1:
        out += [tuple(None if i == j else 0 for i in range(len(ndims))) for j in range(len(ndims))]
    return list(dict.fromkeys(out))


def stacked(examples: list, dims: tuple) -> list:
    """The batched inputs: each example's input i stacked along dims[i]; the first example's where None."""
    return [
        examples[0][i] if d is None else np.stack([ex[i] for ex in examples], axis=d)
        for i, d in enumerate(dims)
    ]


def looped(name: str, examples: list, dims: tuple, params: dict) -> np.ndarray:
    """The op on each example (the unbatched inputs the first example's), stacked."""
    impl = get_registry().ops[name].impl
    shared = examples[0]
    return np.stack(
        [impl(*(x if d is not None else y for x, y, d in zip(ex, shared, dims)), **params) for ex in examples]
    )


def vmapped(name: str, examples: list, dims: tuple, params: dict) -> np.ndarray:
    """adcore.vmap of op `name` on the batched inputs, each input's batch axis at dims[i]."""
    op = get_registry().ops[name]
    return adcore.vmap(lambda *xs: op(*xs, **params), in_axes=dims)(*stacked(examples, dims))


def assert_same(out, expected: np.ndarray, exact: bool = True) -> None:
    """Same shape and dtype; the same bits (exact) or to rounding (RTOL of the dtype, relative to the
    largest entry)."""
    out = np.asarray(out)
    assert out.shape == expected.shape and out.dtype == expected.dtype, (out.shape, out.dtype, expected.shape)
    if exact:
        np.testing.assert_array_equal(out, expected)
    else:
        tol = RTOL[out.dtype.char]
        np.testing.assert_allclose(out, expected, rtol=tol, atol=tol * np.max(np.abs(expected), initial=0.0))


def check(name: str, examples: list, params: dict, dims: tuple, exact: bool = True) -> bool:
    """Whether op `name`'s batch rule covers the call (False: NotImplemented); asserts its value is the
    loop's if it does."""
    result = get_registry().rules["batch"][name](dims, *stacked(examples, dims), **params)
    if result is NotImplemented:
        return False
    out, out_dim = result
    assert_same(np.moveaxis(np.asarray(out), out_dim, 0), looped(name, examples, dims, params), exact)
    return True


# --- registration: the kind "batch" is adcore-batching's, a plugin's rules its own -------------------------


def batch_rules_of(registry: Registry, plugin: str) -> list[str]:
    """The ops `plugin` registered a batch rule for."""
    return [op for kind, op in registry.plugins[plugin].rules if kind == "batch"]


def registry_with_batching_loaded_after(
    plugin: str, first_stage: str, register_plugin, monkeypatch
) -> Registry:
    """The registry with adcore-batching's entry point blocked and the same plugin registered by hand (it
    loads after every entry point); asserts `plugin` loaded in the first stage (up to backend
    `first_stage`) without the kind "batch", and without error once it was declared."""
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "batching")
    register_plugin(adcore_batching.plugin, "late_batching")
    plugins.reset()
    adcore.get_backend(first_stage)
    early = loaded_registry()
    assert plugin in early.plugins and "batch" not in early.kinds and not early.plugins[plugin].error
    registry = get_registry()  # the rest, late_batching with it: the rules that waited are added
    names = list(registry.plugins)
    assert names.index(plugin) < names.index("late_batching") and "batch" in registry.kinds
    assert not registry.plugins[plugin].error
    return registry


def registry_without_batching(plugin: str, monkeypatch) -> Registry:
    """The registry with adcore-batching blocked; asserts `plugin` loaded without error and without its
    batch rules (set aside: their kind is never declared)."""
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "batching")
    plugins.reset()
    registry = get_registry()
    assert "batching" not in registry.plugins and "batch" not in registry.kinds
    assert plugin in registry.plugins and not registry.plugins[plugin].error
    assert batch_rules_of(registry, plugin) == []
    return registry
