"""The conformance engine: it passes right rules, names exactly the wrong ones, and says why."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_reverse.backend import ReverseBackend
from adcore_reverse.vjps import VJPS
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
import adcore.numpy as anp
from adcore.conformance import abilities, engine, tolerances
from adcore.conformance.calls import CheckedCall, checks_complex
from adcore.conformance.reference import JacobianEstimate, choose_reference
from adcore.conformance.results import Tally, compare
from adcore.errors import UnknownBackendError, UnknownOpError
from adcore.plugins import get_registry
from adcore.spec import REAL, Kink, OpSpec, elementwise_samples

CUBE_SAMPLES = elementwise_samples(REAL)


def _failing(report) -> set[tuple[str, str]]:
    return {(c.subject, c.backend) for c in report.failures()}


# --- the must-show cases --------------------------------------------------------------


def _by_subject(batch: list[engine.Unit]) -> list[list[engine.Unit]]:
    groups: dict[tuple[str, str], list[engine.Unit]] = {}
    for unit in batch:
        groups.setdefault((unit.kind, unit.name), []).append(unit)
    return list(groups.values())


def _subjects(units: list[engine.Unit]) -> list:
    return [s for s in FULL.subjects if (s.kind, s.name) == (units[0].kind, units[0].name)]


# The full report, one item per subject (its units in every dtype), so that pytest-xdist spreads
# its three CPU-minutes over the workers instead of one item running them all; `adcore conformance`
# (what CI runs first) checks the same units through the report. The plan is the full run's.
FULL = engine.plan()
FULL_GROUPS = [group for batch in engine.batches(FULL) for group in _by_subject(batch)]
# numeric differentiates stop_gradient's impl, the identity, so nothing can check it there; forward
# refuses the tangents of complex singular/eigen vectors (their phase is LAPACK's: it cannot see
# whether the loss depends on it), and source's forward mode applies forward's rules: the same
# refusal, typed, through the source column (their real dtypes agree)
REQUIRED_UNSUPPORTED = {
    ("stop_gradient", "numeric"): "cannot say that no input",
    ("eigh_packed", "forward"): "e^{i phi}",
    ("svd_packed", "forward"): "e^{i phi}",
    ("eigh_packed", "source/forward"): "complex singular or eigen",
    ("svd_packed", "source/forward"): "complex singular or eigen",
}


def test_the_full_plan_covers_every_op_in_every_dtype_it_accepts_on_every_backend():
    ops = {s.name for s in FULL.subjects if s.kind == "op"}
    user = get_registry().plugins["user"].ops if "user" in get_registry().plugins else []
    assert ops == set(adcore.ops) - set(user)  # every op but the custom_vjp/custom_jvp functions'
    assert {s.name for s in FULL.subjects if s.kind == "case"} == set(get_registry().cases)
    # every op in both real dtypes, those that accept complex values in both complex ones too
    complex_ops = {u.name for u in FULL.units if u.dtype.startswith("complex")}
    assert complex_ops == {name for name in ops if checks_complex(adcore.ops[name])}
    assert len(FULL.units) == (len(FULL.subjects) + len(complex_ops)) * 2
    assert all(u.backends == tuple(FULL.backends) for u in FULL.units)
    assert {name for name, _ in REQUIRED_UNSUPPORTED} <= ops
    # every unit is in exactly one item below
    grouped = [u for group in FULL_GROUPS for u in group]
    assert len(grouped) == len(set(grouped)) and set(grouped) == set(FULL.units)


@pytest.mark.slow
@pytest.mark.parametrize("units", FULL_GROUPS, ids=[f"{g[0].kind}-{g[0].name}" for g in FULL_GROUPS])
def test_every_subject_of_the_full_report_passes(units):
    report = engine.run(work=engine.Plan(FULL.backends, FULL.dtypes, _subjects(units), list(units)))
    assert report.ok, "\n".join(
        f"{c.subject} {c.backend} {c.dtype}: {c.message} {c.worst}" for c in report.failures()
    )
    # a cell per backend in each of the subject's dtypes, and the vmap column's, and each
    # agreeing cell compared something
    assert len(report.cells) == len(units) * len(FULL.backends) and len(report.vmap) == len(units)
    assert all(c.checks > 0 for c in report.cells if c.status == "agrees")
    unsupported = {(c.subject, c.backend): c.message for c in report.cells if c.status == "unsupported"}
    for (subject, backend), says in REQUIRED_UNSUPPORTED.items():
        if subject == units[0].name:
            assert says in unsupported.pop((subject, backend), "(agrees)"), (subject, backend)
    # adcore-kernels' ops have every rule (tests/plugins/kernels/test_rules.py runs the command on two)
    assert not (unsupported and _subjects(units)[0].plugin == "kernels"), unsupported
    # the others: ops symbolic cannot express (decompositions), without a sympy rule or refused typed
    assert {backend for _, backend in unsupported} <= {"symbolic"}
    assert all("'sympy' rule" in m or m.startswith("declined every sample") for m in unsupported.values())


class PlantedReverse(ReverseBackend):
    """The reverse backend under another name: 'reverse' is reserved for the first-party plugin."""

    name = "planted"


# one op of each family beside the elementwise one: reductions, contractions, shapes, cumulative, linalg, nn
PLANTED_OTHER_OPS = {"sum", "matmul", "einsum", "reshape", "getitem", "cumsum", "inv", "softmax"}


def test_a_planted_wrong_vjp_of_sin_fails_the_report_naming_exactly_sin_on_the_planted_backend(
    register_plugin, monkeypatch
):
    # the reverse backend again, but sin's VJP returns +sin where cos is right (source, which
    # applies the reverse backend's rules, blocked with it)
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "reverse,source")
    planted = {**VJPS, "sin": (lambda g, ans, x: g * anp.sin(x),)}
    register_plugin(_plugin(vjps=planted, backends=[PlantedReverse()]), "planted")
    # not the whole catalogue again (the test above and `adcore conformance` run that on reverse,
    # whose rules the planted backend shares but sin's): the elementwise family, where sin's
    # neighbours live (cos's VJP calls sin), one op of each other family, and every core case
    registry = get_registry()
    ops = sorted({name for name, op in registry.ops.items() if op.elementwise} | PLANTED_OTHER_OPS)
    assert {"sin", "cos", "sinc", "tan", "arcsin"} <= set(ops)
    # in one real and one complex dtype: float32's and complex64's checks are the same code at other
    # tolerances (the full report runs them)
    dtypes = ["float64", "complex128"]
    report = engine.run(ops=ops, cases=sorted(registry.plugins["core"].cases), dtypes=dtypes, jobs=2)
    assert not report.ok
    failing_ops = {(c.subject, c.backend) for c in report.failures() if c.subject in adcore.ops}
    assert failing_ops == {("sin", "planted")}
    # composite cases that call sin fail on the planted backend too, and on nothing else
    failing_cases = {c.subject for c in report.failures() if c.subject not in adcore.ops}
    assert failing_cases == {"seed_example", "broadcast_sum", "chain_100"}
    assert {c.backend for c in report.failures()} == {"planted"}
    for cell in report.failures():
        if cell.subject != "sin":
            continue
        assert cell.status == "disagrees"
        assert cell.worst.check in ("jacobian", "vjp", "second")
        # symbolic refuses complex values: there forward, corroborated, is the reference
        assert f"reference: {'forward' if 'complex' in cell.dtype else 'symbolic'}" in cell.worst.detail
        assert cell.rel_error > 0.1
    assert report.cell("sin", "forward").status == "agrees"
    # sin in each dtype it ran in (complex ones too: sin accepts complex values), 3 cases × 1 real dtype
    sin_dtypes = {c.dtype for c in report.cells if c.subject == "sin"}
    assert sin_dtypes == set(dtypes)
    assert {(c.subject, c.dtype) for c in report.failures() if c.subject == "sin"} == {
        ("sin", d) for d in sin_dtypes
    }
    assert "FAILED" in report.summary() and f"{len(sin_dtypes) + 3} disagree" in report.summary()


def test_an_op_with_only_a_vjp_is_unsupported_on_forward_not_a_failure(register_plugin):
    cube = OpSpec("cube", lambda x: x**3, samples=CUBE_SAMPLES, elementwise=True)
    register_plugin(_plugin([cube], vjps={"cube": (lambda g, ans, x: g * 3 * x * x,)}), "cubes")
    report = engine.run(ops=["cube"])
    assert report.ok
    status = {b: report.cell("cube", b).status for b in report.backends}
    # a pattern backend takes an elementwise op without a rule of its own (its elementwise pattern)
    assert all(status.pop(b) == "agrees" for b in report.backends if abilities.backend(b).pattern)
    assert status == {
        "forward": "unsupported",
        "symbolic": "unsupported",
        "reverse": "agrees",
        "numeric": "agrees",
        # source declares both kinds (its templates are the reverse and forward rules) in both modes
        "source/reverse": "unsupported",
        "source/forward": "unsupported",
    }
    assert "no 'jvp' rule for op 'cube'" in report.cell("cube", "forward").message
    assert "no 'sympy' rule" in report.cell("cube", "symbolic").message
    # with symbolic and forward missing, reverse is corroborated by numeric's estimate
    assert report.subjects[0].plugin == "cubes"


def test_a_traceable_op_without_rules_is_checked_through_its_body(register_plugin):
    # a traceable op: each backend differentiates its body, so none is unsupported
    twice_sin = OpSpec(
        "twice_sin",
        lambda x: adcore.ops.multiply(2.0, adcore.ops.sin(x)),
        samples=CUBE_SAMPLES,
        traceable=True,
    )
    register_plugin(_plugin([twice_sin]), "traceables")
    report = engine.run(ops=["twice_sin"], dtypes=["float64"])
    assert report.ok
    assert {b: report.cell("twice_sin", b).status for b in report.backends} == dict.fromkeys(
        report.backends, "agrees"
    )


def test_a_wrong_vjp_is_caught_at_every_sample_kind_and_named(register_plugin):
    cube = OpSpec("cube", lambda x: x**3, samples=CUBE_SAMPLES, elementwise=True)
    register_plugin(_plugin([cube], vjps={"cube": (lambda g, ans, x: g * 2 * x,)}), "cubes")
    report = engine.run(ops=["cube"], dtypes=["float64"])
    cell = report.cell("cube", "reverse")
    assert cell.status == "disagrees"
    # nothing exact corroborates reverse, so numeric's estimate is the reference
    assert "reference: numeric" in cell.worst.detail
    assert report.cell("cube", "numeric").status == "agrees"


def test_the_dot_product_test_catches_a_rule_only_right_for_one_hot_cotangents(register_plugin):
    # g * g equals g for the cotangent 1 that builds a scalar output's Jacobian
    sum_cubes = OpSpec(
        "sum_cubes", lambda x: np.sum(x**3), samples=elementwise_samples(REAL, shapes=[((3,),)])
    )
    register_plugin(_plugin([sum_cubes], vjps={"sum_cubes": (lambda g, ans, x: g * g * 3 * x * x,)}), "cubes")
    cell = engine.run(ops=["sum_cubes"], dtypes=["float64"]).cell("sum_cubes", "reverse")
    assert cell.status == "disagrees"
    assert cell.worst.check == "vjp"


def test_a_jvp_right_at_first_order_but_not_differentiable_again_fails_the_second_derivative(register_plugin):
    cube = OpSpec("cube", lambda x: x**3, samples=CUBE_SAMPLES, elementwise=True)
    frozen_jvp = (lambda t, ans, x: t * 3 * adcore.ops.stop_gradient(x) ** 2,)
    register_plugin(
        _plugin([cube], vjps={"cube": (lambda g, ans, x: g * 3 * x * x,)}, jvps={"cube": frozen_jvp}), "cubes"
    )
    report = engine.run(ops=["cube"], dtypes=["float64"])
    forward = report.cell("cube", "forward")
    assert forward.status == "disagrees" and forward.worst.check == "second"  # forward over forward
    assert report.cell("cube", "reverse").status == "agrees"


def test_a_backend_that_raises_is_an_error_cell_and_the_next_run_is_clean(register_plugin):
    class Broken(adcore.Backend):
        name = "broken"

        def value_and_jacobian(self, f, args, argnums):
            raise RuntimeError("no derivatives today")

    register_plugin(_plugin(backends=[Broken()]), "broken")
    report = engine.run(ops=["sin", "add"], dtypes=["float64"])
    assert _failing(report) == {("sin", "broken"), ("add", "broken")}
    cell = report.cell("sin", "broken")
    assert cell.status == "error" and "RuntimeError: no derivatives today" in cell.message
    assert report.cell("sin", "reverse").status == "agrees"
    assert engine.run(ops=["sin"], backends=["reverse"]).ok  # nothing left behind


def test_a_kink_convention_is_checked_on_rule_backends_only(monkeypatch):
    # plant a wrong convention on sin's OpSpec: sin'(0) "should" be 2
    monkeypatch.setattr(adcore.ops.sin, "kinks", (Kink(([0.0],), (np.array([[2.0]]),), why="planted"),))
    report = engine.run(ops=["sin"], dtypes=["float64"])
    exact = {"reverse", "forward", "symbolic", "source/reverse", "source/forward"}
    assert _failing(report) == {("sin", b) for b in exact}
    assert report.cell("sin", "reverse").worst.check == "kink"
    assert report.cell("sin", "numeric").status == "agrees"


def test_jobs_give_the_same_cells_as_one_process():
    one = engine.run(ops=["sin", "matmul", "max"], jobs=1)
    two = engine.run(ops=["sin", "matmul", "max"], jobs=2)
    assert [(c.subject, c.backend, c.dtype, c.status, c.checks, c.worst) for c in one.cells] == [
        (c.subject, c.backend, c.dtype, c.status, c.checks, c.worst) for c in two.cells
    ]


def test_a_plugins_subjects_are_one_batch_handed_out_first_and_the_core_ones_spread():
    # adcore_kernels' subjects share numba kernels, compiled once per process: in one batch, not
    # side by side in two processes each compiling them; a subject's float64 unit before its float32
    work = engine.plan(
        ops=["sin", "conv2d", "add", "avg_pool2d"],
        cases=["small_cnn", "seed_tape"],
        dtypes=engine.REAL_DTYPES,
    )
    batches = [[(u.name, u.dtype) for u in batch] for batch in engine.batches(work)]
    assert batches == [
        [(name, dtype) for name in ("conv2d", "avg_pool2d", "small_cnn") for dtype in ("float64", "float32")],
        [("sin", "float64"), ("sin", "float32")],
        [("add", "float64"), ("add", "float32")],
        [("seed_tape", "float64"), ("seed_tape", "float32")],
    ]


def test_progress_is_reported_once_per_unit():
    seen = []
    engine.run(ops=["sin", "cos"], backends=["reverse"], dtypes=engine.REAL_DTYPES, progress=seen.append)
    assert sorted((u.name, u.dtype) for u in seen) == [
        ("cos", "float32"),
        ("cos", "float64"),
        ("sin", "float32"),
        ("sin", "float64"),
    ]


def test_naming_ops_runs_no_cases_and_bad_names_say_what_exists():
    plan = engine.plan(ops=["sin"])
    assert [s.name for s in plan.subjects] == ["sin"]
    with pytest.raises(UnknownOpError, match="did you mean 'sin'"):
        engine.plan(ops=["sinn"])
    with pytest.raises(UnknownBackendError, match="installed backends"):
        engine.plan(backends=["revers"])
    with pytest.raises(ValueError, match="float16"):
        engine.plan(dtypes=["float16"])


# --- the reference --------------------------------------------------------------------------


J = (np.array([[1.0, 2.0]]),)
WRONG = (np.array([[1.0, 2.5]]),)


def test_symbolic_is_the_reference_when_another_backend_agrees():
    ref = choose_reference({"reverse": J, "symbolic": J, "forward": WRONG}, None)
    assert ref.source == "symbolic = reverse" and ref.jacobians is J


def test_a_wrong_symbolic_gives_way_to_the_forward_reverse_consensus():
    ref = choose_reference({"symbolic": WRONG, "reverse": J, "forward": J}, None)
    assert ref.source == "reverse = forward" and ref.jacobians is J


def test_numeric_arbitrates_when_the_exact_backends_all_differ():
    estimate = JacobianEstimate((J[0] + 1e-12,), (np.full((1, 2), 1e-11),), "numeric")
    ref = choose_reference({"symbolic": WRONG, "reverse": J}, estimate)
    assert ref.source == "reverse = numeric"


def test_numeric_is_the_reference_when_nothing_is_corroborated():
    estimate = JacobianEstimate((J[0],), (np.full((1, 2), 1e-11),), "numeric")
    ref = choose_reference({"reverse": WRONG}, estimate)
    assert ref.source.startswith("numeric") and ref.error(0) is estimate.errors[0]
    assert choose_reference({}, None) is None


# --- comparing ------------------------------------------------------------------------------


def _verdict(actual, expected, tolerance=tolerances.EXACT["float64"], **kw) -> Tally:
    tally = Tally()
    compare(tally, "#0", "jacobian", actual, np.asarray(expected, dtype=float), tolerance, **kw)
    return tally


def test_compare_passes_rounding_and_fails_a_real_difference():
    assert _verdict([1.0 + 1e-15, 2.0], [1.0, 2.0]).worst_ratio <= 1
    bad = _verdict([1.0, 2.1], [1.0, 2.0])
    assert bad.worst_ratio > 1
    assert bad.worst.detail.startswith("at (1,): got")
    assert bad.worst.abs_error == pytest.approx(0.1) and bad.worst.rel_error == pytest.approx(0.05)


def test_nan_fails_shape_mismatch_fails_equal_infinities_pass():
    assert _verdict([np.nan], [1.0]).worst_ratio > 1
    assert _verdict([1.0, 2.0], [[1.0, 2.0]]).worst.detail.startswith("shape (2,)")
    assert _verdict([np.inf], [np.inf]).worst_ratio == 0


def test_an_estimate_passes_within_its_error_and_fails_outside():
    tolerance = tolerances.ESTIMATE["float64"]
    assert _verdict([1.0 + 1e-6], [1.0], tolerance, error=1e-6).worst_ratio <= 1
    assert _verdict([1.0 + 1e-6], [1.0], tolerance, error=1e-9).worst_ratio > 1


def test_calls_keep_values_when_cast_to_float64():
    call = CheckedCall(np.sin, (np.array([0.1, 0.2], dtype=np.float32), np.array([True, False])), (0,))
    wide = call.in_float64()
    assert wide.args[0].dtype == np.float64 and wide.args[1].dtype == bool
    np.testing.assert_array_equal(wide.args[0], call.args[0])
