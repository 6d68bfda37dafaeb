"""The scipy plugin's sparsity rules (adcore_scipy/sparsity_rules.py), and the elementwise pattern
its elementwise ops get from their OpSpec flag, against reverse mode's Jacobian at the samples."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from adcore_scipy.sparsity_rules import SPARSITY_RULES
from adcore_sparsity.extend import Unknown, broadcast, elementwise
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore
from adcore.errors import MissingRuleError

REGISTRY = adcore.plugins.get_registry()
# scipy.signal.convolve's fft method rounds by eps times the output's size everywhere, also where
# the derivative is 0 (outside the window): compare the non-zeros above that noise
NOISY = {"signal_convolve": 1e-9}
ELEMENTWISE = sorted(
    name
    for name, op in REGISTRY.ops.items()
    if op.elementwise and "adcore_scipy" in (getattr(op.impl, "__module__", "") or "")
)


def rule(name: str):
    return REGISTRY.rules["sparsity"][name]


def test_the_rules_are_registered_and_cover_the_non_elementwise_ops():
    assert all(rule(name) is SPARSITY_RULES[name] for name in SPARSITY_RULES)
    ops = {"spd_inverse", "expm", "sqrtm", "solve_sylvester", "solve_banded", "signal_convolve", "odeint"}
    assert ops <= set(SPARSITY_RULES)
    assert REGISTRY.ops["multivariate_normal_logpdf"].traceable  # its body is traced: no rule


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(SPARSITY_RULES))
def test_rule_holds_at_the_op_samples(name, dtype):
    if name == "odeint" and dtype == np.float32:
        pytest.skip("odeint solves in float64 whatever the dtype; its reverse Jacobians take 15 s a dtype")
    atol = NOISY.get(name, 0.0) * (1e5 if dtype == np.float32 else 1)
    assert check_op(name, dtype=dtype, atol=atol) > 0


def _jacobian(op, sample, argnum: int, backend: str) -> np.ndarray:
    def call(*xs):
        return op(*xs, **sample.params)

    return np.asarray(adcore.jacobian(call, argnums=argnum, backend=backend)(*sample.args))


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_ops_are_their_elementwise_pattern(name):
    """Exact where reverse mode differentiates; a superset of a finite difference where its rule
    refuses an argument (betainc's a, jv's order, ...)."""
    op = REGISTRY.ops[name]
    pattern = rule(name) if name in SPARSITY_RULES else elementwise("nonlinear")
    for sample in op.samples(np.random.default_rng(0), np.dtype(np.float64)):
        ans = op.impl(*sample.args, **sample.params)
        local = pattern(ans, *sample.args, **sample.params)
        for i, a in enumerate(sample.args):
            if np.asarray(a).dtype.kind != "f":
                continue
            try:
                jac, refused = _jacobian(op, sample, i, "reverse"), False
            except MissingRuleError:
                jac, refused = _jacobian(op, sample, i, "numeric"), True
            nonzero = np.asarray(jac).reshape(np.size(ans), np.size(a)) != 0
            got = dense_pattern(local[i], np.size(ans), np.size(a))
            assert not (nonzero & ~got).any(), (name, i, sample.params)
            assert refused or np.array_equal(got, nonzero), (name, i, sample.params)


def test_xlogy_y_does_not_reach_the_output_where_x_is_zero():
    x, y = np.array([0.0, 2.0, 0.0, -1.0]), np.array([0.5, 1.5, 3.0, 2.0])
    for name in ("xlogy", "xlog1py"):
        ans = REGISTRY.ops[name].impl(x, y)
        px, py = rule(name)(ans, x, y)
        jac = adcore.jacobian(lambda v, n=name: REGISTRY.ops[n](x, v), backend="reverse")(y)
        assert np.array_equal(py.toarray() != 0, np.asarray(jac) != 0)
        assert np.flatnonzero(py.diagonal()).tolist() == [1, 3] and px.nnz == 4
        _, py = rule(name)(Unknown((4,), np.float64), Unknown((4,), np.float64), Unknown((4,), np.float64))
        assert py.nnz == 4  # globally x may be anything


@pytest.mark.parametrize(
    ("bands", "full"), [((1, 1), True), ((1, 0), False), ((0, 2), False), ((0, 0), False)]
)
def test_solve_banded_patterns(bands, full):
    low, up = bands
    n = 5
    ab = np.random.default_rng(8).uniform(-1, 1, (low + up + 1, n))
    ab[up] += low + up + 2
    b = np.random.default_rng(9).uniform(-1, 1, (n, 2))
    x = REGISTRY.ops["solve_banded"].impl(ab, b, l_and_u=bands)
    pab, pb = rule("solve_banded")(
        Unknown(x.shape, np.float64),
        Unknown(ab.shape, np.float64),
        Unknown(b.shape, np.float64),
        l_and_u=bands,
    )
    for i, (arg, p) in enumerate(((ab, pab), (b, pb))):
        jac = adcore.jacobian(
            lambda *xs: REGISTRY.ops["solve_banded"](*xs, l_and_u=bands), argnums=i, backend="reverse"
        )(ab, b)
        assert np.array_equal(p.toarray() != 0, np.asarray(jac).reshape(x.size, arg.size) != 0)
    rows = pb.toarray().reshape(n, 2, n, 2)[:, 0, :, 0] != 0  # x[:, 0] against b[:, 0]
    if full:
        assert rows.all()
    elif up == 0:
        assert np.array_equal(rows, np.tri(n, dtype=bool) if low else np.eye(n, dtype=bool))
    else:
        assert np.array_equal(rows, np.tri(n, dtype=bool).T)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_signal_convolve_with_a_constant_2d_stencil_is_its_band(mode):
    stencil = np.array([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]])
    image = np.random.default_rng(10).standard_normal((6, 5))
    params = {"mode": mode, "method": "direct"}
    out = REGISTRY.ops["signal_convolve"].impl(image, stencil, **params)
    deps = rule("signal_convolve")(
        Unknown(out.shape, np.float64), Unknown(image.shape, np.float64), stencil, **params
    )
    jac = adcore.jacobian(lambda z: REGISTRY.ops["signal_convolve"](z, stencil, **params), backend="reverse")(
        image
    )
    assert np.array_equal(deps[0].toarray() != 0, np.asarray(jac).reshape(out.size, image.size) != 0)
    assert deps[0].toarray().astype(bool).sum(axis=1).max() == 5


def test_odeint_first_row_is_y0_and_later_rows_read_their_own_time():
    (p_y0, p_t, p_theta) = rule("odeint")(
        Unknown((4, 2), np.float64),
        Unknown((2,), np.float64),
        Unknown((4,), np.float64),
        Unknown((3,), np.float64),
    )
    assert np.array_equal(p_y0.toarray()[:2], np.eye(2)) and p_y0.toarray()[2:].all()
    assert not p_theta.toarray()[:2].any() and p_theta.toarray()[2:].all()
    t_rows = p_t.toarray()[::2] != 0  # one row per time (both components read the same)
    assert [np.flatnonzero(r).tolist() for r in t_rows] == [[], [0, 1], [0, 2], [0, 3]]
    assert not rule("odeint").exact


def test_large_inputs_are_dense_without_building_a_pattern():
    """A tridiagonal system of 10^4 rows: DENSE for both (a full band's inverse is full), at once."""
    n = 10**4
    deps = rule("solve_banded")(
        Unknown((n,), np.float64), Unknown((3, n), np.float64), Unknown((n,), np.float64), l_and_u=(1, 1)
    )
    assert deps == ("dense", "dense")
    assert rule("expm")(Unknown((1000, 1000), np.float64), Unknown((1000, 1000), np.float64)) == ("dense",)


def test_the_rules_need_no_sparsity_plugin():
    code = "import sys, adcore_scipy.sparsity_rules; print('adcore_sparsity' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_broadcast_is_what_the_elementwise_ops_get():
    assert np.array_equal(broadcast((3,), (2, 3)).toarray(), np.tile(np.eye(3), (2, 1)))
