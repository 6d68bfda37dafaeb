"""The checks of adcore/conformance/checks.py: second derivatives of every op along random
directions, samples a backend declines, and what a backend's abilities decide."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse.backend import ReverseBackend
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
import adcore.numpy as anp
from adcore import cli
from adcore.conformance import engine
from adcore.conformance.abilities import outers, reference_order
from adcore.conformance.calls import CheckedCall
from adcore.conformance.checks import (
    along_directions,
    plain_value,
    second_call,
    traced_value,
    value_difference,
)
from adcore.conformance.results import Results
from adcore.errors import UnsupportedByBackendError
from adcore.spec import OpSpec, Sample, fixed_samples

GRAM_SAMPLES = fixed_samples((((3, 2),), {}), (((2, 2),), {}))


def _gram(vjp=None, jvp=None) -> tuple[OpSpec, dict, dict]:
    """gram(a) = a^T a (not elementwise), its right rules unless others are given."""
    gram = OpSpec("gram", lambda a: a.T @ a, samples=GRAM_SAMPLES)
    vjps = {"gram": vjp or (lambda g, ans, a: anp.matmul(a, g + anp.transpose(g)),)}
    jvps = {"gram": jvp or (lambda t, ans, a: _gram_jvp(t, a),)}
    return gram, vjps, jvps


def _gram_jvp(t, a):
    ta = anp.matmul(anp.swapaxes(t, -1, -2), a)  # t has a leading batch axis
    return ta + anp.swapaxes(ta, -1, -2)


def test_second_derivatives_are_checked_for_an_op_that_is_not_elementwise(register_plugin):
    # forward's rule is right at first order but not differentiable again (a frozen a)
    frozen = (lambda t, ans, a: _gram_jvp(t, adcore.ops.stop_gradient(a)),)
    gram, vjps, jvps = _gram(jvp=frozen)
    register_plugin(_plugin([gram], vjps=vjps, jvps=jvps), "grams")
    report = engine.run(ops=["gram"], dtypes=["float64"])
    forward = report.cell("gram", "forward")
    assert forward.status == "disagrees" and forward.worst.check == "second"
    assert "along random directions" in forward.worst.sample
    assert report.cell("gram", "reverse").status == "agrees"


def test_right_rules_of_an_op_that_is_not_elementwise_pass_to_second_order(register_plugin):
    gram, vjps, jvps = _gram()
    register_plugin(_plugin([gram], vjps=vjps, jvps=jvps), "grams")
    report = engine.run(ops=["gram"], dtypes=["float64"])
    assert report.cell("gram", "reverse").status == "agrees"
    assert report.cell("gram", "forward").status == "agrees"


def test_the_second_derivative_call_is_the_largest_small_one():
    def call(*shapes):
        return CheckedCall(np.add, tuple(np.ones(s) for s in shapes), tuple(range(len(shapes))))

    small, large, empty = call((2, 3)), call((4, 4)), call((0,))
    assert second_call([call(()), small, large, empty]) is small
    assert second_call([large, call((5, 5))]) is large  # none small: the smallest
    assert second_call([empty]) is None


def test_along_directions_holds_the_hessian_in_two_directions():
    a = np.array([[1.0, 2.0], [0.5, -1.0]])
    call = CheckedCall(lambda x: anp.sum(x**3), (a,), (0,))
    psi = along_directions(call, np.random.default_rng(0))
    rows = adcore.hessian(psi, argnums=(0, 1))(np.zeros(()), np.zeros(()))
    # psi(s, t) = w * sum((a + s v + t u)^3): its Hessian at 0 is 6 w sum(a * [v v, v u; u v, u u])
    rng = np.random.default_rng(0)
    v, u = rng.uniform(-1, 1, a.shape), rng.uniform(-1, 1, a.shape)
    w = rng.uniform(0.5, 1.5, ())
    expected = (
        6 * w * np.array([[np.sum(a * v * v), np.sum(a * v * u)], [np.sum(a * u * v), np.sum(a * u * u)]])
    )
    np.testing.assert_allclose(np.array([[float(h) for h in row] for row in rows]), expected)


class Declining(ReverseBackend):
    """reverse, but it says it cannot do inputs with more than three elements."""

    name = "declining"

    def vjp(self, f, args, argnums):
        if any(np.size(a) > 3 for a in args):
            raise UnsupportedByBackendError("declining: too big for me")
        return super().vjp(f, args, argnums)


def test_a_sample_the_backend_declines_is_left_out_and_said_not_failed(register_plugin):
    register_plugin(_plugin(backends=[Declining()]), "declining")
    report = engine.run(ops=["sin"], dtypes=["float64"], backends=["declining", "forward", "symbolic"])
    cell = report.cell("sin", "declining")
    assert cell.status == "agrees" and cell.checks > 0
    assert cell.message.startswith("declined") and "too big for me" in cell.message


class Refusing(ReverseBackend):
    """reverse, but it says it cannot do anything."""

    name = "refusing"

    def vjp(self, f, args, argnums):
        raise UnsupportedByBackendError("refusing: not today")


def test_a_backend_that_declines_every_sample_is_unsupported(register_plugin):
    register_plugin(_plugin(backends=[Refusing()]), "refusing")
    report = engine.run(ops=["sin"], dtypes=["float64"], backends=["refusing"])
    cell = report.cell("sin", "refusing")
    assert cell.status == "unsupported" and "declined every sample" in cell.message
    assert "not today" in cell.message


# --- values -----------------------------------------------------------------------------------


class OffByAnUlp(ReverseBackend):
    """reverse, but the value it traces is one ulp above NumPy's (its derivatives are right)."""

    name = "off_by_an_ulp"

    def vjp(self, f, args, argnums):
        out, pullback = super().vjp(f, args, argnums)
        return np.nextafter(adcore.concrete(out), np.inf), pullback


def test_a_traced_value_that_is_not_numpys_bit_for_bit_is_reported(register_plugin):
    register_plugin(_plugin(backends=[OffByAnUlp()]), "off_by_an_ulp")
    report = engine.run(ops=["sin"], dtypes=["float64", "float32"], backends=["off_by_an_ulp", "reverse"])
    for dtype in ("float64", "float32"):
        cell = next(c for c in report.cells if c.backend == "off_by_an_ulp" and c.dtype == dtype)
        assert cell.status == "disagrees" and cell.worst.check == "value", cell
        assert "untraced" in cell.worst.detail and "NumPy's value" in cell.worst.detail
    assert report.cell("sin", "reverse").status == "agrees"  # the next run, on a right backend, is clean
    assert engine.run(ops=["sin"], dtypes=["float64"], backends=["reverse"]).ok


def test_a_traced_value_of_another_dtype_or_shape_is_reported():
    assert value_difference(np.zeros(2, np.float64), np.zeros(2, np.float32)) == (
        "traced float64 (2,), untraced float32 (2,)"
    )
    assert value_difference(np.zeros(2), np.zeros((1, 2))) == "traced float64 (2,), untraced float64 (1, 2)"
    assert value_difference(np.array([np.nan, -0.0]), np.array([np.nan, 0.0])) == ""  # nan is nan; -0 == 0
    # a complex dtype's parts within an ulp (NumPy's complex loops differ in the last bit), no more
    ulp, two = np.array([np.nextafter(1.0, 2.0)]), np.array([np.nextafter(np.nextafter(1.0, 2.0), 2.0)])
    assert value_difference(ulp, np.ones(1), ulps=1) == ""
    assert value_difference(two, np.ones(1), ulps=1).startswith("at (0,): traced")
    assert value_difference(np.array([1.0, 2.0]), np.array([1.0, np.nextafter(2.0, 3.0)])).startswith(
        "at (1,): traced"
    )


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric", "symbolic", "sparsity"])
def test_every_backend_traces_the_ops_value_bit_for_bit(backend):
    # a non-contiguous x: NumPy's sums depend on the memory layout, and the copies a backend keeps
    # of x must not change the value's last bit (norm over axes (2, 0) of a transposed stack)
    x = np.moveaxis(np.random.default_rng(3).uniform(-2, 2, (2, 2, 3)), (0, 1), (2, 0))
    calls = [CheckedCall(lambda x: adcore.ops.norm(x, ord="fro", axis=(2, 0)), (x,), (0,), label="norm")]
    calls.append(CheckedCall(lambda x: anp.sum(np.cbrt(x) * x**0.37), (np.abs(x) + 0.5,), (0,), label="cbrt"))
    for call in calls:
        assert not x.flags.c_contiguous
        assert value_difference(np.asarray(traced_value(backend, Results(call))), plain_value(call)) == ""


# --- gauges: an op whose value flips sign near its samples, as LAPACK's vectors may ------------


BAND = 1e-6


def _branch_sign(x: np.ndarray) -> np.ndarray:
    """+1 or -1 by which band of width BAND sum(x) is in: a choice constant near the samples (their
    sums are mid-band) that the steps of a finite difference cross, as LAPACK's sign choices may."""
    return np.where(np.floor(np.sum(x, axis=-1, keepdims=True) / BAND) % 2 == 0, 1.0, -1.0).astype(x.dtype)


def _flip_gauge(value, centre, x):
    dots = anp.sum(value * centre, axis=-1, keepdims=True)
    one = np.ones((), value.dtype)
    return anp.where(dots < 0, -one, one) * value


def _flips(gauge) -> tuple[OpSpec, dict, dict]:
    """flips(x) = x * a sign that jumps between bands of sum(x): rules that hold the sign fixed."""
    samples = fixed_samples((((3,),), {}), (((2, 3),), {}))
    mid_band = samples

    def draw(rng, dtype):  # each sample's sum moved to the middle of its band
        out = []
        for sample in mid_band(rng, dtype):
            x = sample.args[0]
            total = np.sum(x, axis=-1, keepdims=True)
            x = x + ((np.floor(total / BAND) + 0.5) * BAND - total) / x.shape[-1]
            out.append(Sample((x.astype(dtype),), {}))
        return out

    op = OpSpec("flips", lambda x: x * _branch_sign(x), samples=draw, gauge=gauge)
    sign = lambda x: _branch_sign(adcore.concrete(x))  # noqa: E731
    vjps = {"flips": (lambda g, ans, x: g * sign(x),)}
    jvps = {"flips": (lambda t, ans, x: t * sign(x),)}
    return op, vjps, jvps


def test_an_op_with_a_gauge_is_differenced_on_its_samples_branch(register_plugin):
    op, vjps, jvps = _flips(_flip_gauge)
    register_plugin(_plugin([op], vjps=vjps, jvps=jvps), "flips")
    report = engine.run(
        ops=["flips"], dtypes=["float64", "float32"], backends=["numeric", "reverse", "forward"]
    )
    assert report.ok, [c.message for c in report.failures()]
    assert report.cell("flips", "numeric").checks > 0


def test_a_random_program_aligns_such_an_op_to_its_value_at_the_programs_inputs(register_plugin):
    from adcore.conformance.random_program import Line, RandomProgram

    op, vjps, jvps = _flips(_flip_gauge)
    register_plugin(_plugin([op], vjps=vjps, jvps=jvps), "flips")
    x = op.samples(np.random.default_rng(0), np.dtype("float64"))[0].args[0]
    program = RandomProgram((x,), (Line("flips", (0,)),))
    np.testing.assert_array_equal(program(x), op.impl(x))  # the value itself, bit for bit
    moved = x + np.array([BAND, 0.0, 0.0])  # into the next band: the impl flips, the program does not
    np.testing.assert_array_equal(op.impl(moved), -moved * _branch_sign(x))
    np.testing.assert_array_equal(program(moved), moved * _branch_sign(x))


def test_without_its_gauge_the_same_op_is_not_passed_by_numeric(register_plugin):
    # the negative control: the differences cross the bands, so numeric's estimate is not the
    # rules' derivative (disagrees, or numeric declines it as unreliable)
    op, vjps, jvps = _flips(None)
    register_plugin(_plugin([op], vjps=vjps, jvps=jvps), "flips")
    report = engine.run(ops=["flips"], dtypes=["float64"], backends=["numeric", "reverse", "forward"])
    numeric = report.cell("flips", "numeric")
    assert numeric.status != "agrees" or numeric.message.startswith("declined"), numeric


# --- abilities --------------------------------------------------------------------------------


def test_the_first_party_backends_abilities_order_the_reference_and_the_outer():
    assert reference_order(["forward", "reverse", "symbolic"]) == ["symbolic", "reverse", "forward"]
    assert outers(adcore.backends()) == ["forward", "reverse"]


class Preferred(ReverseBackend):
    """reverse under another name, ranked first as the reference."""

    name = "preferred"
    reference_priority = 100


def test_a_backend_that_ranks_itself_first_is_the_reference_when_corroborated(register_plugin):
    register_plugin(_plugin(backends=[Preferred()]), "preferred")
    report = engine.run(ops=["sin"], dtypes=["float64"], backends=["preferred"])
    cell = report.cell("sin", "preferred")
    assert cell.status == "agrees"
    assert "(reference: preferred = " in cell.worst.detail


# --- the command ------------------------------------------------------------------------------


def test_the_command_plans_a_run_once(monkeypatch, capsys):
    plans = []
    real = engine.plan
    monkeypatch.setattr(engine, "plan", lambda *a, **k: plans.append(a) or real(*a, **k))
    assert cli.main(["conformance", "--op", "sin", "--backend", "reverse", "--dtype", "float64"]) == 0
    assert len(plans) == 1


@pytest.fixture(autouse=True)
def _quiet_warnings():
    with np.errstate(all="ignore"):
        yield
