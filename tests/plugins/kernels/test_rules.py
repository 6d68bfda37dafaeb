"""The kernel ops' rules: gradients against central differences, the conformance suite over every
backend, and second derivatives through the closed set (forward over reverse, reverse over reverse)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from adcore_kernels import ops
from adcore_kernels.ops import OPS

import adcore
import adcore.numpy as anp
from adcore.conformance import abilities

KERNEL_OPS = [spec.name for spec in OPS]
STEP = 1e-6  # central differences of float64: truncation ~STEP**2, rounding ~1e-16 / STEP


def central_differences(f, x: np.ndarray) -> np.ndarray:
    """d f / d x for a scalar f, one element at a time."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = STEP
        grad[i] = (f(x + step) - f(x - step)) / (2 * STEP)
    return grad


def _loss(op, *inputs, **params):
    """sum(sin(op(*inputs))): nonlinear, so every element of the op's output matters differently."""
    return anp.sum(anp.sin(op(*inputs, **params)))


CONV_GEOMETRIES = [
    ({"padding": 1}, ("direct", "im2col", "fft", "winograd")),  # 3x3, stride 1: every algorithm
    ({"stride": 2, "padding": (1, 0), "dilation": (1, 2)}, ("direct", "im2col", "fft")),
]


@pytest.mark.parametrize(
    ("geometry", "algorithm"), [(g, a) for g, algorithms in CONV_GEOMETRIES for a in algorithms]
)
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_conv2d_gradients_of_both_inputs_match_central_differences(geometry, algorithm, backend):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 2, 5, 6)), rng.standard_normal((3, 2, 3, 3))
    params = {**geometry, "algorithm": algorithm}
    gx, gw = adcore.grad(lambda x, w: _loss(ops.conv2d, x, w, **params), argnums=(0, 1), backend=backend)(
        x, w
    )
    numeric_x = central_differences(lambda x: float(_loss(ops.conv2d, x, w, **params)), x)
    numeric_w = central_differences(lambda w: float(_loss(ops.conv2d, x, w, **params)), w)
    np.testing.assert_allclose(gx, numeric_x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, numeric_w, rtol=1e-6, atol=1e-8)


POOLS = [
    (ops.max_pool2d, {"kernel_size": 2}),
    (ops.max_pool2d, {"kernel_size": 3, "stride": 2, "padding": 1}),
    (ops.avg_pool2d, {"kernel_size": (2, 3), "stride": 1, "padding": (1, 1)}),
]


@pytest.mark.parametrize(("op", "params"), POOLS)
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_pooling_gradients_match_central_differences(op, params, backend):
    rng = np.random.default_rng(1)
    x = rng.permutation(np.arange(2 * 5 * 6, dtype=np.float64)).reshape(2, 5, 6) / 10  # distinct: no ties
    got = adcore.grad(lambda x: _loss(op, x, **params), backend=backend)(x)
    np.testing.assert_allclose(
        got, central_differences(lambda x: float(_loss(op, x, **params)), x), rtol=1e-6, atol=1e-8
    )


# every kernel op agreeing on every column in both dtypes is tests/conformance/test_engine.py's
# full report (a kernel subject may not be unsupported anywhere there); here the command itself
POOL_OPS = ["max_pool2d", "avg_pool2d"]


@pytest.mark.slow
def test_the_conformance_command_finds_the_pooling_ops_agreeing_on_every_backend():
    # as the command line runs it, in a fresh process: the plugin's numba kernels compiled or loaded there
    assert set(POOL_OPS) <= set(KERNEL_OPS)
    command = ["adcore", "conformance", *(f"--op={op}" for op in POOL_OPS), "--jobs=1", "--format=json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    report = json.loads(result.stdout)
    failures = [c for c in report["cells"] if c["status"] != "agrees"]
    assert result.returncode == 0 and report["ok"] and not failures, failures or result.stderr
    assert {c["subject"] for c in report["cells"]} == set(POOL_OPS)
    columns = abilities.columns(adcore.backends())  # a backend with variants is a column per variant
    assert len(report["cells"]) == len(POOL_OPS) * len(columns) * 2  # every column, both dtypes
    assert all(c["checks"] > 0 for c in report["cells"])


def _conv_chain(x, w):
    """A scalar through conv2d, then pooling of both kinds: second derivatives meet every rule."""
    y = anp.tanh(ops.conv2d(x, w, padding=1, algorithm="im2col"))
    return anp.sum(anp.sin(ops.max_pool2d(y, 2))) + anp.sum(
        anp.cos(ops.avg_pool2d(y, 3, stride=1, padding=1))
    )


def _flat(arrays) -> np.ndarray:
    return np.concatenate([np.ravel(a) for a in arrays])


def test_a_hessian_vector_product_through_conv2d_matches_differences_of_the_gradient():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((2, 2, 3, 3))
    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    gradient = adcore.grad(_conv_chain, argnums=(0, 1))  # reverse
    # forward over reverse: the gradient's derivative along v
    _, over_reverse = adcore.jvp(
        lambda x, w: anp.concatenate([anp.reshape(g, (g.size,)) for g in gradient(x, w)]), (x, w), (vx, vw)
    )
    # reverse over reverse: the gradient of <gradient, v>
    twice_reverse = adcore.grad(
        lambda x, w: sum(anp.sum(g * v) for g, v in zip(gradient(x, w), (vx, vw))), argnums=(0, 1)
    )(x, w)
    step = 1e-5  # central differences of the gradient along v: error ~ step**2 * (third derivative)
    differences = (
        _flat(gradient(x + step * vx, w + step * vw)) - _flat(gradient(x - step * vx, w - step * vw))
    ) / (2 * step)
    np.testing.assert_allclose(over_reverse, differences, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_flat(twice_reverse), over_reverse, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("inner", "outer"), [("forward", "forward"), ("forward", "reverse"), ("symbolic", "forward")]
)
def test_full_hessians_through_conv2d_agree_on_other_pairs_of_backends(inner, outer):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((2, 2, 3, 3))
    expected = adcore.hessian(_conv_chain, argnums=(0, 1))(x, w)  # forward over reverse
    got = adcore.hessian(_conv_chain, argnums=(0, 1), inner=inner, outer=outer)(x, w)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(got[i][j], expected[i][j], rtol=1e-9, atol=1e-11)
