"""The kernel ops' batch rules (adcore_kernels.batch_rules) against a loop: each op's samples drawn three
times (a batch of three examples), the rule on the stacked inputs (batch axis first, second, last; one
input not batched) against the op on each example, stacked; the same through adcore.vmap, under grad;
and the rules' registration whichever order adcore-batching loads in, or when it is blocked."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_kernels import ops
from adcore_kernels.ops import OPS
from batch_rule_cases import (
    assert_same,
    batch_rules_of,
    batches,
    cases,
    check,
    layouts,
    looped,
    registry_with_batching_loaded_after,
    registry_without_batching,
    vmapped,
)

import adcore
import adcore.numpy as anp
from adcore.plugins import get_registry

KERNEL_OPS = [spec.name for spec in OPS]
CONVOLUTIONS = {"conv2d", "conv2d_input_grad", "conv2d_weight_grad"}


def exact(name: str, params: dict) -> bool:
    """Bit for bit where each example is computed as alone (pooling, each plane on its own; the direct
    convolution's loops); to rounding where the batch makes a BLAS product or an FFT's matmul larger
    (im2col, fft, winograd: one GEMM of the whole batch sums in another order)."""
    return name not in CONVOLUTIONS or params.get("algorithm") == "direct"


CASES = cases(KERNEL_OPS, (np.float64, np.float32))


@pytest.mark.parametrize(("name", "dtype", "k"), CASES)
def test_rule_matches_the_loop(name: str, dtype: type, k: int) -> None:
    examples, params = batches(name, dtype)[k]
    covered = [check(name, examples, params, dims, exact(name, params)) for dims in layouts(examples)]
    # a convolution of two batched inputs is a grouped one, which the kernels do not compute: the loop's
    assert covered == [name not in CONVOLUTIONS or None in dims for dims in layouts(examples)]


@pytest.mark.parametrize(("name", "dtype", "k"), CASES)
def test_vmap_of_the_op_matches_the_loop(name: str, dtype: type, k: int) -> None:
    examples, params = batches(name, dtype)[k]
    for dims in layouts(examples):
        assert_same(
            vmapped(name, examples, dims, params), looped(name, examples, dims, params), exact(name, params)
        )


def test_the_rules_run_each_example_by_the_algorithm_auto_picks_for_it(monkeypatch) -> None:
    # auto picks by N and the channel counts: for one example (C = 1, O = 3) im2col, for a batch of 8
    # folded into C (C = 8: 2 * C >= O) winograd; pinned to the example's, the batch runs im2col as the loop
    from adcore_kernels import _winograd, conv

    ran = []
    for name, fn in conv._WEIGHT_GRAD.items():
        monkeypatch.setitem(conv._WEIGHT_GRAD, name, lambda *a, name=name, fn=fn: ran.append(name) or fn(*a))
    monkeypatch.setattr(
        _winograd, "weight_grad", lambda *a, fn=_winograd.weight_grad: ran.append("winograd") or fn(*a)
    )
    rng = np.random.default_rng(0)
    xs, g = rng.standard_normal((8, 1, 1, 6, 6)), rng.standard_normal((1, 3, 6, 6))
    params = {"kernel_size": (3, 3), "padding": 1}
    out = adcore.vmap(lambda x: ops.conv2d_weight_grad(x, g, **params))(xs)
    assert ran == ["im2col"] and conv.choose_algorithm((1, 8, 6, 6), (3, 8, 3, 3), padding=1) == "winograd"
    expected = np.stack([ops.conv2d_weight_grad.impl(x, g, **params) for x in xs])
    assert ran[1:] == ["im2col"] * 8
    assert_same(out, expected, exact("conv2d_weight_grad", params))


def _small_cnn(w, x, target):
    """A conv-pool-conv network's squared error on one image x (1, 2, 8, 8): every kernel op's rule runs
    in its gradient (the pools' linear maps, both convolution gradients)."""
    h = anp.tanh(ops.conv2d(x, w[0], padding=1))
    h = ops.max_pool2d(h, kernel_size=2) + ops.avg_pool2d(h, kernel_size=2)
    y = ops.conv2d(h, w[1], stride=2, algorithm="direct")
    return anp.sum((y - target) ** 2)


def _cnn_data(rng: np.random.Generator) -> tuple:
    w = [rng.standard_normal((3, 2, 3, 3)), rng.standard_normal((2, 3, 2, 2))]
    return w, rng.standard_normal((4, 1, 2, 8, 8)), rng.standard_normal((4, 1, 2, 2, 2))


def test_per_example_gradients_of_a_small_cnn_match_a_loop_of_grad() -> None:
    w, xs, targets = _cnn_data(np.random.default_rng(1))
    batched = adcore.vmap(adcore.grad(_small_cnn), in_axes=(None, 0, 0))(w, xs, targets)
    loop = [adcore.grad(_small_cnn)(w, x, t) for x, t in zip(xs, targets)]
    for i in range(2):
        expected = np.stack([g[i] for g in loop])
        np.testing.assert_allclose(batched[i], expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected)))


def test_grad_of_a_vmapped_loss_matches_the_summed_loop() -> None:
    w, xs, targets = _cnn_data(np.random.default_rng(2))
    total = adcore.grad(lambda w: anp.sum(adcore.vmap(_small_cnn, in_axes=(None, 0, 0))(w, xs, targets)))(w)
    loop = [adcore.grad(_small_cnn)(w, x, t) for x, t in zip(xs, targets)]
    for i in range(2):
        expected = sum(g[i] for g in loop)
        np.testing.assert_allclose(total[i], expected, rtol=1e-12, atol=1e-12 * np.max(np.abs(expected)))


# --- registration: the kind is adcore-batching's, the rules this plugin's own -----------------------------


def test_the_plugin_registers_a_batch_rule_for_each_of_its_ops(clean_plugins) -> None:
    registry = get_registry()
    assert sorted(batch_rules_of(registry, "kernels")) == sorted(KERNEL_OPS)
    assert all(registry.rules["batch"][name] for name in KERNEL_OPS)


def test_its_batch_rules_wait_for_adcore_batching_loading_after_it(register_plugin, monkeypatch) -> None:
    # the first stage, up to reverse, loads kernels; the kind "batch" is declared in the rest
    registry = registry_with_batching_loaded_after("kernels", "reverse", register_plugin, monkeypatch)
    assert sorted(batch_rules_of(registry, "kernels")) == sorted(KERNEL_OPS)
    x, w = np.ones((2, 1, 1, 3, 3)), np.ones((1, 1, 2, 2))
    np.testing.assert_array_equal(adcore.vmap(lambda x: ops.conv2d(x, w))(x), np.full((2, 1, 1, 2, 2), 4.0))


def test_its_batch_rules_are_set_aside_when_adcore_batching_is_blocked(clean_plugins, monkeypatch) -> None:
    registry = registry_without_batching("kernels", monkeypatch)
    assert not set(registry.rules["batch"]) & set(KERNEL_OPS)
    rng = np.random.default_rng(3)
    xs, w = rng.standard_normal((2, 1, 1, 4, 4)), rng.standard_normal((2, 1, 3, 3))
    expected = np.stack([ops.conv2d.impl(x, w) for x in xs])  # vmap still right: the loop rule
    np.testing.assert_array_equal(adcore.vmap(lambda x: ops.conv2d(x, w))(xs), expected)
