"""The sparsity rules of the elementwise ops (adcore_sparsity/rules/elementwise.py): at every sample
and every documented kink of each op, against reverse mode's Jacobian, and by hand at the points
where a kink or a branch decides (ties, bounds, NaNs, a where condition read from a traced value)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Condition, Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, check_rule, dense_pattern

import adcore

SMOOTH = (
    "divide power square reciprocal sqrt exp expm1 log log1p sin cos tan arcsin arccos arctan arctan2 sinh "
    "cosh tanh arcsinh arccosh arctanh log2 log10 exp2 logaddexp logaddexp2 sinc hypot cbrt float_power"
).split()
LINEAR = "negative add subtract deg2rad rad2deg".split()
STEPS = "sign floor round ceil floor_divide".split()
BRANCHES = "abs maximum minimum clip where mod fmod fabs copysign heaviside fmax fmin nan_to_num".split()
OPS = SMOOTH + LINEAR + STEPS + BRANCHES + ["multiply"]


def unknown(x) -> Unknown:
    return Unknown(np.shape(x), np.asarray(x).dtype)


def patterns(name: str, *inputs, traced: tuple[int, ...] = (0, 1), **params) -> tuple[list, list]:
    """The rule's (global, local) pattern of each input, dense bool (out.size, input.size); in the
    global one the inputs at `traced` are Unknown, the others constants."""
    out = adcore.ops[name].impl(*inputs, **params)
    shown = [unknown(x) if i in traced else x for i, x in enumerate(inputs)]
    glob = RULES[name](unknown(out), *shown, **params)
    local = RULES[name](out, *inputs, **params)
    size = np.size(out)
    return (
        [dense_pattern(d, size, np.size(x)) for d, x in zip(glob, inputs)],
        [dense_pattern(d, size, np.size(x)) for d, x in zip(local, inputs)],
    )


def diagonal(*keep: bool) -> np.ndarray:
    return np.diag(np.array(keep, dtype=bool))


@pytest.mark.parametrize("name", OPS)
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


@pytest.mark.parametrize("name", [n for n in OPS if adcore.ops[n].kinks])
def test_rule_holds_at_every_kink(name):
    """Superset of reverse mode's Jacobian and of the kink's documented one; the branching ops
    keep exactly the entries the convention makes non-zero there."""
    op = adcore.ops[name]
    for kink in op.kinks:
        args = tuple(np.asarray(a, dtype=np.float64) for a in kink.inputs)
        with np.errstate(all="ignore"):
            out = op.impl(*args, **kink.params)
            local = RULES[name](out, *args, **kink.params)
            if name in BRANCHES:  # their exact claim holds at kinks too
                check_rule(name, args, dict(kink.params))
        for dep, jac, x in zip(local, kink.jacobians, args):
            nonzero = np.asarray(jac).reshape(np.size(out), np.size(x)) != 0
            pattern = dense_pattern(dep, np.size(out), np.size(x))
            assert not (nonzero & ~pattern).any(), f"{name}: misses {kink.why}"
            if name in BRANCHES:
                np.testing.assert_array_equal(pattern, nonzero, err_msg=f"{name}: {kink.why}")


@pytest.mark.parametrize(
    "name, order",
    [
        *((n, "nonlinear") for n in SMOOTH),
        *((n, "linear") for n in LINEAR + STEPS),
        ("multiply", "multilinear"),
    ]
    + [
        ("abs", "nonlinear"),
        ("maximum", "linear"),
        ("clip", "linear"),
        ("where", "linear"),
        ("mod", "linear"),
    ],
)
def test_orders(name, order):
    assert RULES[name].order == order


@pytest.mark.parametrize("name", STEPS)
def test_steps_have_no_dependency(name):
    args = (np.array([0.3, -1.7]), np.array([1.5, 2.0]))[: adcore.ops[name].nin]
    glob, local = patterns(name, *args)
    assert not any(p.any() for p in glob + local)


def test_smooth_ops_keep_dependencies_where_the_first_derivative_is_zero():
    """x * y at y = 0 and sinc at 0: the first derivative is 0 but not the second, which Hessian
    patterns build on, so even the local pattern keeps them (and sinc does not claim exact)."""
    _, (px, py) = patterns("multiply", np.array([1.0, 2.0]), np.array([0.0, 3.0]))
    np.testing.assert_array_equal(px, np.eye(2, dtype=bool))
    np.testing.assert_array_equal(py, np.eye(2, dtype=bool))
    _, (p,) = patterns("sinc", np.array([0.0, 0.5]), traced=(0,))
    np.testing.assert_array_equal(p, np.eye(2, dtype=bool))
    assert not RULES["sinc"].exact
    assert RULES["multiply"].exact


def test_a_constant_factors_zeros_are_structure():
    """x * mask: a constant's zeros shape a global pattern (only constants are readable there), and
    a non-float factor's (a mask, a count: never traced) a local one too; a float factor of a local
    pattern may be traced, so its zeros are kept; a traced comparison (Condition) decides nothing."""
    x, mask = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 1.0])
    (gx, _), (px, _) = patterns("multiply", x, mask, traced=(0,))
    np.testing.assert_array_equal(gx, diagonal(True, False, True))
    np.testing.assert_array_equal(px, np.eye(3, dtype=bool))
    (_, gx), (_, px) = patterns("multiply", mask > 0, x, traced=(1,))
    np.testing.assert_array_equal(gx, diagonal(True, False, True))
    np.testing.assert_array_equal(px, diagonal(True, False, True))
    _, (px, _) = patterns("multiply", x, np.array(0), traced=(0,))  # a count of 0
    assert not px.any()
    deps = RULES["multiply"](unknown(x), unknown(x), (mask > 0).view(Condition))
    np.testing.assert_array_equal(dense_pattern(deps[0], 3, 3), np.eye(3, dtype=bool))
    check_rule("multiply", (x, mask > 0), {})


def test_broadcasting_inputs_spread_over_the_output():
    x, y = np.ones((2, 1)), np.ones(3)
    (px, py), _ = patterns("add", x, y)
    np.testing.assert_array_equal(px, np.repeat(np.eye(2, dtype=bool), 3, axis=0))
    np.testing.assert_array_equal(py, np.tile(np.eye(3, dtype=bool), (2, 1)))


def test_maximum_keeps_the_winner_and_both_on_a_tie():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    (gx, gy), (px, py) = patterns("maximum", x, y)
    np.testing.assert_array_equal(gx, np.eye(3, dtype=bool))  # global: both inputs everywhere
    np.testing.assert_array_equal(gy, np.eye(3, dtype=bool))
    np.testing.assert_array_equal(px, diagonal(False, True, True))
    np.testing.assert_array_equal(py, diagonal(True, True, False))
    check_rule("maximum", (x, y), {})
    _, (qx, qy) = patterns("minimum", x, y)
    np.testing.assert_array_equal(qx, diagonal(True, True, False))
    np.testing.assert_array_equal(qy, diagonal(False, True, True))


def test_maximum_with_a_constant_decides_only_at_a_point():
    """relu written as maximum(x, 0): the constant 0 alone does not decide a global pattern."""
    x = np.array([-1.0, 0.0, 2.0])
    (gx, _), (px, _) = patterns("maximum", x, 0.0, traced=(0,))
    np.testing.assert_array_equal(gx, np.eye(3, dtype=bool))
    np.testing.assert_array_equal(px, diagonal(False, True, True))  # the tie at 0 gets half
    check_rule("maximum", (x, np.zeros(3)), {})


def test_fmax_passes_a_nan_to_the_other_input():
    x, y = np.array([np.nan, 1.0, np.nan]), np.array([2.0, np.nan, np.nan])
    _, (px, py) = patterns("fmax", x, y)
    np.testing.assert_array_equal(px, diagonal(False, True, True))
    np.testing.assert_array_equal(py, diagonal(True, False, True))


def test_clip_keeps_the_closed_interval():
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    (g,), (p,) = patterns("clip", x, traced=(0,), a_min=-1.0, a_max=1.0)
    assert g.sum() == 5
    np.testing.assert_array_equal(p, diagonal(False, True, True, True, False))
    _, (p,) = patterns("clip", x, traced=(0,), a_min=None, a_max=0.0)
    np.testing.assert_array_equal(p, diagonal(True, True, True, False, False))
    check_rule("clip", (x,), {"a_min": -1.0, "a_max": 1.0})


def test_clip_with_array_bounds_broadcasts_x():
    x, low = np.array([0.5]), np.array([0.0, 1.0])
    _, (p,) = patterns("clip", x, traced=(0,), a_min=low, a_max=None)
    np.testing.assert_array_equal(p, [[True], [False]])


def test_where_with_a_constant_condition_takes_one_branch_even_globally():
    c = np.array([True, False, True])
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    (gc, gx, gy), (_, px, py) = patterns("where", c, x, y, traced=(1, 2))
    assert not gc.any()
    np.testing.assert_array_equal(gx, diagonal(True, False, True))
    np.testing.assert_array_equal(gy, diagonal(False, True, False))
    np.testing.assert_array_equal(px, gx)
    np.testing.assert_array_equal(py, gy)


@pytest.mark.parametrize("hidden", ["condition", "unknown"])
def test_where_on_a_traced_comparison_keeps_both_branches_globally(hidden):
    c = np.array([True, False, True])
    shown = c.view(Condition) if hidden == "condition" else unknown(c)
    x, y = np.ones(3), np.ones(3)
    _, gx, gy = RULES["where"](unknown(x), shown, unknown(x), unknown(y))
    np.testing.assert_array_equal(dense_pattern(gx, 3, 3), np.eye(3, dtype=bool))
    np.testing.assert_array_equal(dense_pattern(gy, 3, 3), np.eye(3, dtype=bool))


def test_where_reads_a_float_condition_as_its_truthiness():
    c = np.array([0.0, 2.0, np.nan])
    _, (_, px, py) = patterns("where", c, np.ones(3), np.ones(3))
    np.testing.assert_array_equal(px, diagonal(False, True, True))
    np.testing.assert_array_equal(py, diagonal(True, False, False))


@pytest.mark.parametrize("name", ["abs", "fabs"])
def test_abs_drops_zero_at_a_point(name):
    x = np.array([-1.5, 0.0, 2.0])
    (g,), (p,) = patterns(name, x, traced=(0,))
    np.testing.assert_array_equal(g, np.eye(3, dtype=bool))
    np.testing.assert_array_equal(p, diagonal(True, False, True))
    check_rule(name, (x,), {})


def test_abs_of_a_complex_zero_keeps_it():
    """abs's rule at z = 0 is conj(z) / 1: its first derivative is 0 there, its second is not."""
    z = np.array([0.0 + 0.0j, 1.0 - 2.0j])
    (p,) = RULES["abs"](np.abs(z), z)
    np.testing.assert_array_equal(dense_pattern(p, 2, 2), np.eye(2, dtype=bool))


def test_relu_drops_zero_and_negatives_at_a_point():
    x = np.array([-1.0, 0.0, 1.0])
    (g,), (p,) = patterns("relu", x, traced=(0,))
    assert g.sum() == 3
    np.testing.assert_array_equal(p, diagonal(False, False, True))
    check_rule("relu", (x,), {})


def test_copysign_depends_on_x_only():
    x, y = np.array([0.0, 1.5, -2.0]), np.array([1.0, -1.0, -0.5])
    (gx, gy), (px, py) = patterns("copysign", x, y)
    assert gx.sum() == 3 and not gy.any() and not py.any()
    np.testing.assert_array_equal(px, diagonal(False, True, True))


def test_heaviside_depends_on_h_where_x_is_zero():
    x, h = np.array([-1.0, 0.0, 2.0]), np.array([0.5])
    (gx, gh), (px, ph) = patterns("heaviside", x, h)
    assert not gx.any() and not px.any()
    np.testing.assert_array_equal(gh, np.ones((3, 1), dtype=bool))
    np.testing.assert_array_equal(ph, [[False], [True], [False]])
    # a constant x decides the global pattern too
    (_, gh), _ = patterns("heaviside", x, h, traced=(1,))
    np.testing.assert_array_equal(gh, ph)
    check_rule("heaviside", (x, np.full(3, 0.5)), {})


@pytest.mark.parametrize("name", ["mod", "fmod"])
def test_remainder_depends_on_the_divisor_where_the_quotient_is_not_zero(name):
    x, y = np.array([0.5, 2.5, -3.5]), np.array([1.0])
    (gx, gy), (px, py) = patterns(name, x, y)
    assert gx.sum() == 3 and gy.sum() == 3
    np.testing.assert_array_equal(px, np.eye(3, dtype=bool))
    np.testing.assert_array_equal(py, [[False], [True], [True]])
    check_rule(name, (x, np.ones(3)), {})


def test_nan_to_num_drops_what_it_replaces():
    x = np.array([0.5, np.nan, np.inf, -np.inf])
    (g,), (p,) = patterns("nan_to_num", x, traced=(0,))
    assert g.sum() == 4
    np.testing.assert_array_equal(p, diagonal(True, False, False, False))


def test_logaddexp_drops_what_underflows():
    x, y = np.array([3.0, 0.5, -np.inf]), np.array([-900.0, 0.4, 1.0])
    _, (px, py) = patterns("logaddexp", x, y)
    np.testing.assert_array_equal(px, diagonal(True, True, False))
    np.testing.assert_array_equal(py, diagonal(False, True, True))
    check_rule("logaddexp", (x[:2], y[:2]), {})


def test_a_global_pattern_never_reads_its_unknowns():
    """Every rule answers with Unknown inputs and output (a global pattern): nothing to read."""
    for name in OPS:
        nin = adcore.ops[name].nin
        shown = [Unknown((2, 3), np.float64) for _ in range(nin)]
        if name == "where":
            shown[0] = Unknown((2, 3), np.bool_)
        deps = RULES[name](Unknown((2, 3), np.float64), *shown)
        assert len(deps) == nin


def test_large_elementwise_patterns_are_sparse_diagonals():
    # built as sparse diagonals, never dense n x n (their time: benchmarks/bench_sparsity_rules.py)
    n = 200_000
    x = Unknown((n,), np.float64)
    (sine,) = RULES["sin"](x, x)
    times_x, times_scalar = RULES["multiply"](x, x, Unknown((1,), np.float64))
    upper, lower = RULES["maximum"](np.ones(n), np.linspace(-1, 1, n), np.zeros(n))
    for pattern in (sine, times_x, upper, lower):
        coo = pattern.tocoo()
        assert pattern.shape == (n, n) and np.array_equal(coo.row, coo.col)
    assert sine.nnz == times_x.nnz == n and upper.nnz + lower.nnz == n  # maximum: one side each
    assert times_scalar.shape == (n, 1) and times_scalar.nnz == n


# programs of the branching ops, on inputs with ties and zeros (rounded to halves): through the
# sparsity backend, the global and local patterns hold reverse mode's non-zeros, local within global
BRANCHING_PROGRAMS = {
    "maximum-tie": lambda v: np.maximum(v, v[::-1]) * v,
    "clip-bounds": lambda v: np.clip(v, -0.5, 0.5) + np.abs(v) ** 2,
    "where-compare": lambda v: np.where(v > 0, v**2, np.sin(v)) * v[0],
    "relu-max": lambda v: adcore.ops.relu(v) + np.max(np.reshape(v, (2, 3)), axis=1).repeat(3),
    "fmin-mod": lambda v: np.fmin(v, 0.0) + np.mod(v, 1.5 + v[::-1] ** 2),
    "median-ptp": lambda v: np.median(np.reshape(v, (3, 2)), axis=0).sum() * v + np.ptp(v),
    "heaviside": lambda v: np.heaviside(v, v**2 + 1.0) + np.copysign(v, v[::-1]),
    "masked-sum": lambda v: v * np.sum(np.reshape(v, (2, 3)) ** 2, where=np.array([True, False, True])),
}


@pytest.mark.parametrize("name", sorted(BRANCHING_PROGRAMS))
@pytest.mark.parametrize("seed", range(4))
def test_programs_of_branching_ops_hold_the_jacobian(name, seed):
    from adcore_sparsity import SparsityBackend

    f, backend = BRANCHING_PROGRAMS[name], SparsityBackend()
    v = np.round(np.random.default_rng(seed).uniform(-1.5, 1.5, 6) * 2) / 2  # ties and zeros
    nonzero = np.abs(np.asarray(adcore.jacobian(f, backend="reverse")(v)).reshape(-1, 6)) > 0
    glob = backend.jacobian_pattern(f, (v,), 0).toarray()
    local = backend.jacobian_pattern(f, (v,), 0, local=True).toarray()
    assert not (nonzero & ~local).any(), f"local misses {np.argwhere(nonzero & ~local)[:4]}"
    assert not (nonzero & ~glob).any(), f"global misses {np.argwhere(nonzero & ~glob)[:4]}"
    assert not (local & ~glob).any(), "local has entries global lacks"


@pytest.mark.parametrize("name", sorted(BRANCHING_PROGRAMS))
def test_hessian_patterns_of_branching_programs_hold_the_hessian(name):
    """The rules' orders: kinks and branches add no second derivative of their own (they are
    linear), the smooth ops around them do."""
    from adcore_sparsity import SparsityBackend

    backend = SparsityBackend()

    def g(v):
        return np.sum(BRANCHING_PROGRAMS[name](v))

    for seed in range(3):
        v = np.round(np.random.default_rng(seed).uniform(-1.5, 1.5, 6) * 2) / 2
        nonzero = np.abs(np.asarray(adcore.hessian(g)(v))) > 0
        for local in (False, True):
            pattern = backend.hessian_pattern(g, (v,), 0, local=local).toarray()
            assert not (nonzero & ~pattern).any(), (
                f"local={local} misses {np.argwhere(nonzero & ~pattern)[:4]}"
            )
