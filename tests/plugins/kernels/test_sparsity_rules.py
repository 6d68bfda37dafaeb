"""The kernel ops' sparsity rules (adcore_kernels/sparsity_rules.py): superset of reverse mode's
Jacobian at every sample, exact windows, max pooling's maxima at a point."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from adcore_kernels.ops import OPS
from adcore_kernels.sparsity_rules import SPARSITY_RULES
from adcore_sparsity.extend import Unknown
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore

KERNEL_OPS = [spec.name for spec in OPS]
# the fft (and winograd) algorithms round by eps times the output's size at every pixel, also where
# the derivative is 0 (a pixel outside the window): the convolutions compare non-zeros above that
CONVOLUTIONS = ("conv2d", "conv2d_input_grad", "conv2d_weight_grad")


def rule(name: str):
    return adcore.plugins.get_registry().rules["sparsity"][name]


def test_every_kernel_op_has_a_registered_rule():
    assert sorted(SPARSITY_RULES) == sorted(KERNEL_OPS)
    assert all(rule(name) is SPARSITY_RULES[name] for name in KERNEL_OPS)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", KERNEL_OPS)
def test_rule_holds_at_the_op_samples(name, dtype):
    atol = (1e-9 if dtype == np.float64 else 1e-4) if name in CONVOLUTIONS else 0.0
    assert check_op(name, dtype=dtype, atol=atol) > 0


def test_conv2d_with_a_constant_weight_is_its_exact_stencil():
    """A traced image through a constant 3x3 stencil with zero corners (a 5-point Laplacian): the
    pattern is the Jacobian's structure, 5 entries per interior pixel."""
    w = np.array([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]])[None, None]
    x = np.random.default_rng(5).standard_normal((1, 1, 6, 7))
    params = {"padding": 1, "algorithm": "direct"}
    deps = rule("conv2d")(Unknown((1, 1, 6, 7), np.float64), Unknown(x.shape, np.float64), w, **params)
    jac = adcore.jacobian(lambda z: adcore.ops.conv2d(z, w, **params), backend="reverse")(x)
    p = dense_pattern(deps[0], 42, 42)
    assert np.array_equal(p, np.asarray(jac).reshape(42, 42) != 0)
    assert p.sum(axis=1).max() == 5


@pytest.mark.parametrize("name", CONVOLUTIONS)
def test_both_inputs_traced_give_whole_windows(name):
    op = adcore.plugins.get_registry().ops[name]
    sample = op.samples(np.random.default_rng(0), np.dtype(np.float64))[1]  # stride 2, padding 1
    ans = op.impl(*sample.args, **sample.params)
    hidden = [Unknown(np.shape(a), np.float64) for a in sample.args]
    glob = rule(name)(Unknown(ans.shape, ans.dtype), *hidden, **sample.params)
    local = rule(name)(ans, *sample.args, **sample.params)
    for g, loc in zip(glob, local):  # random values have no zeros: the same entries
        assert (g != loc).nnz == 0 and g.nnz > 0


def test_max_pool2d_depends_at_a_point_on_each_window_maximum():
    x = np.array([[1.0, 5.0, 2.0, 2.0], [3.0, 0.0, 2.0, 2.0]])  # windows 2x2: max 5 alone, then a 4-way tie
    ans = adcore.ops.max_pool2d(x, kernel_size=2)
    (local,) = rule("max_pool2d")(ans, x, kernel_size=2)
    assert [np.flatnonzero(row).tolist() for row in local.toarray()] == [[1], [2, 3, 6, 7]]
    (glob,) = rule("max_pool2d")(Unknown(ans.shape, ans.dtype), Unknown(x.shape, x.dtype), kernel_size=2)
    assert [np.flatnonzero(row).tolist() for row in glob.toarray()] == [[0, 1, 4, 5], [2, 3, 6, 7]]


def test_max_pool_gather_and_scatter_are_transposes_at_a_point():
    rng = np.random.default_rng(6)
    x, params = rng.standard_normal((2, 5, 5)), {"kernel_size": 3, "stride": 2, "padding": 1}
    pooled = adcore.ops.max_pool2d(x, **params)
    t, g = rng.standard_normal(x.shape), rng.standard_normal(pooled.shape)
    gather, none = rule("max_pool2d_gather")(pooled, t, x, **params)
    scatter, _ = rule("max_pool2d_scatter")(x, g, x, **params)
    assert none is None  # x is not differentiated
    assert (gather != scatter.T).nnz == 0
    assert gather.nnz == pooled.size  # one maximum per window (distinct values)
    # a traced x: any entry of a window may be its maximum
    gather, _ = rule("max_pool2d_gather")(pooled, t, Unknown(x.shape, x.dtype), **params)
    assert gather.nnz == 2 * (2 + 3 + 2) ** 2  # the windows cover 2, 3, 2 rows (and columns)


def test_leading_axes_broadcast_in_gather():
    rng = np.random.default_rng(7)
    x, t = rng.standard_normal((2, 1, 4, 4)), rng.standard_normal((1, 3, 4, 4))
    out = adcore.ops.max_pool2d_gather(t, x, kernel_size=2)
    assert out.shape == (2, 3, 2, 2)
    (p, _) = rule("max_pool2d_gather")(out, t, x, kernel_size=2)
    jac = adcore.jacobian(lambda z: adcore.ops.max_pool2d_gather(z, x, kernel_size=2), backend="reverse")(t)
    assert np.array_equal(p.toarray() != 0, np.asarray(jac).reshape(out.size, t.size) != 0)


def test_avg_pool2d_grad_is_the_transpose_of_avg_pool2d():
    shape, params = (3, 5, 6), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1)}
    pooled = adcore.ops.avg_pool2d(np.zeros(shape), **params)
    (forward,) = rule("avg_pool2d")(Unknown(pooled.shape, np.float64), Unknown(shape, np.float64), **params)
    (back,) = rule("avg_pool2d_grad")(
        Unknown(shape, np.float64), Unknown(pooled.shape, np.float64), input_size=shape[1:], **params
    )
    assert (forward != back.T).nnz == 0


def test_the_rules_need_neither_the_sparsity_plugin_nor_numba():
    code = (
        "import sys, adcore_kernels.sparsity_rules; "
        "print(sorted(m for m in ('adcore_sparsity', 'numba') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_sparse_jacobian_through_a_convolution_equals_the_dense_one():
    """End to end through the sparsity backend: a 5-point stencil as conv2d, then tanh; forward
    mode's compressed Jacobian (one JVP per color) equals the dense one exactly."""
    pytest.importorskip("adcore_sparsity")
    w = np.array([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]])[None, None]

    def f(x):
        return np.tanh(adcore.ops.conv2d(x.reshape(1, 1, 8, 8), w, padding=1, algorithm="direct")).ravel()

    x = np.random.default_rng(11).standard_normal(64)
    dense = np.asarray(adcore.jacobian(f, backend="forward")(x))
    pattern = adcore.jacobian_sparsity(f)(x)
    assert np.array_equal(pattern.toarray(), dense != 0)
    sparse = adcore.jacobian(f, backend="forward", sparse=True)(x)
    assert np.array_equal(sparse.toarray(), dense)
