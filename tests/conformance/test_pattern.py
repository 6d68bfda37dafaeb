"""The conformance checks of a pattern backend (adcore/conformance/pattern.py): its global and local
dependency patterns against the reference Jacobian's non-zeros, as sets, in the same report as the
other backends; never the reference itself; skipped by check_grads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
import adcore.numpy as anp
from adcore.backend import Backend
from adcore.conformance import engine, report
from adcore.conformance.abilities import exact_for, outers, patterns
from adcore.conformance.calls import CheckedCall
from adcore.conformance.fuzz_chunks import check_fuzz
from adcore.conformance.pattern import check_kink_patterns, check_patterns, nonzeros
from adcore.conformance.reference import Reference
from adcore.conformance.results import Tally
from adcore.conformance.tolerances import EXACT
from adcore.errors import UnsupportedByBackendError, ValueDependentError
from adcore.spec import Case, Sample


class TruePattern(Backend):
    """A pattern backend whose patterns are the non-zeros of reverse mode's Jacobian at the point
    (right, locally and globally, at the samples); subclasses spoil them."""

    name = "truepattern"
    pattern = True
    exact = False

    def value_and_jacobian(self, f, args, argnums, *, local=False):
        jacobians = adcore.jacobian(f, argnums=tuple(argnums), backend="reverse")(*args)
        value = f(*args)
        spoiled = [self.spoil(np.asarray(j) != 0, local) for j in jacobians]
        return value, tuple(p.astype(args[i].dtype) for i, p in zip(argnums, spoiled))

    def spoil(self, pattern: np.ndarray, local: bool) -> np.ndarray:
        return pattern

    def exact_for(self, op: str) -> bool:
        return self.exact


class MissingGlobally(TruePattern):
    """Its global pattern misses the first non-zero."""

    name = "missingglobally"

    def spoil(self, pattern, local):
        if not local and pattern.any():
            pattern = pattern.copy()
            pattern.flat[np.flatnonzero(pattern)[0]] = False
        return pattern


class ExtraLocally(TruePattern):
    """Its local pattern has an extra entry (a zero of the Jacobian); globally every entry."""

    name = "extralocally"

    def spoil(self, pattern, local):
        if not local:
            return np.ones_like(pattern)
        if (~pattern).any():
            pattern = pattern.copy()
            pattern.flat[np.flatnonzero(~pattern)[0]] = True
        return pattern


class ExtraClaimingExact(ExtraLocally):
    name = "extraclaimingexact"
    exact = True


class LocalBeyondGlobal(TruePattern):
    """Its global pattern is empty: the local one (right) holds entries it lacks."""

    name = "localbeyondglobal"

    def spoil(self, pattern, local):
        return pattern if local else np.zeros_like(pattern)


class ValueDependent(TruePattern):
    """It cannot give a global pattern (f read a traced value's numbers)."""

    name = "valuedependent"

    def spoil(self, pattern, local):
        if not local:
            raise ValueDependentError("f decides by x > 0: use local=True")
        return pattern


class WrongShape(TruePattern):
    name = "wrongshape"

    def spoil(self, pattern, local):
        return pattern.reshape(-1)


def _register(register_plugin, *backends):
    register_plugin(_plugin(backends=list(backends)), "patterns")


def _run(backend, ops=("sin", "matmul"), dtypes=("float64", "float32")):
    return engine.run(ops=list(ops), dtypes=list(dtypes), backends=[backend.name, "reverse", "forward"])


# --- the verdicts ---------------------------------------------------------------------------------


def test_a_right_pattern_backend_agrees_and_is_checked_at_every_sample(register_plugin):
    backend = TruePattern()
    _register(register_plugin, backend)
    run = _run(backend)
    for op in ("sin", "matmul"):
        cell = run.cell(op, backend.name)
        assert cell.status == "agrees", cell
        # global ⊇, local ⊇, local ⊆ global: three set checks per input and sample
        assert cell.checks >= 3 * len(adcore.ops[op].samples(np.random.default_rng(0), np.dtype("float64")))
    assert run.cell("sin", "reverse").status == "agrees"  # the others are checked as before


def test_a_global_pattern_missing_an_entry_disagrees_naming_the_input_and_the_entry(register_plugin):
    backend = MissingGlobally()
    _register(register_plugin, backend)
    cell = _run(backend, ops=["matmul"]).cell("matmul", backend.name)
    assert cell.status == "disagrees"
    assert cell.worst.check == "global pattern"
    assert cell.message.startswith("global pattern differs at sample #")
    detail = cell.worst.detail
    assert "input 0: the global pattern misses 1 entry of the Jacobian's non-zeros" in detail
    assert "at (output element, input element) (0, 0)" in detail
    assert backend.name not in detail.split("reference:")[1]  # a pattern is never the reference


def test_a_pattern_is_never_the_reference_even_alone_with_one_exact_backend(register_plugin):
    backend = TruePattern()
    _register(register_plugin, backend)
    run = engine.run(ops=["sin"], dtypes=["float64"], backends=[backend.name, "reverse"])
    reverse = run.cell("sin", "reverse")
    assert reverse.status == "agrees" and backend.name not in reverse.worst.detail


def test_an_extra_local_entry_agrees_unless_the_backend_claims_the_op_exact(register_plugin):
    loose, strict = ExtraLocally(), ExtraClaimingExact()
    _register(register_plugin, loose, strict)
    run = engine.run(
        ops=["sin"], dtypes=["float64"], backends=[loose.name, strict.name, "reverse", "forward"]
    )
    assert run.cell("sin", loose.name).status == "agrees"
    cell = run.cell("sin", strict.name)
    assert cell.status == "disagrees" and cell.worst.check == "exact pattern"
    assert "the pattern, claimed exact, has 1 entry where the Jacobian is 0" in cell.worst.detail


def test_exactness_is_not_judged_on_a_complex_dtypes_split_function(register_plugin):
    strict = ExtraClaimingExact()
    _register(register_plugin, strict)
    run = engine.run(ops=["sin"], dtypes=["complex128"], backends=[strict.name, "reverse", "forward"])
    assert run.cell("sin", strict.name).status == "agrees"


def test_exactness_is_not_judged_where_a_real_input_gives_a_complex_output(register_plugin):
    # fftn's output is split into its real and imaginary parts: the imaginary part of the zero
    # frequency is 0 whatever the input, which the op's own (complex) pattern cannot say
    strict = ExtraClaimingExact()
    _register(register_plugin, strict)
    run = engine.run(ops=["fftn"], dtypes=["float64"], backends=[strict.name, "reverse", "forward"])
    assert run.cell("fftn", strict.name).status == "agrees"


def test_a_local_entry_outside_the_global_pattern_disagrees(register_plugin):
    backend = LocalBeyondGlobal()
    _register(register_plugin, backend)
    cell = _run(backend, ops=["sin"], dtypes=["float64"]).cell("sin", backend.name)
    assert cell.status == "disagrees"
    assert cell.worst.check in ("global pattern", "local within global")
    checks = {
        c.worst.check
        for c in engine.run(ops=["sin"], dtypes=["float64"], backends=[backend.name, "reverse"]).cells
        if c.backend == backend.name
    }
    assert checks <= {"global pattern", "local within global"}


def test_a_global_pattern_the_function_cannot_have_is_declined_and_the_local_one_checked(register_plugin):
    backend = ValueDependent()
    _register(register_plugin, backend)
    cell = _run(backend, ops=["sin"], dtypes=["float64"]).cell("sin", backend.name)
    assert cell.status == "agrees" and cell.checks > 0
    assert cell.message.startswith("declined") and "ValueDependentError" in cell.message


def test_a_pattern_of_the_wrong_shape_disagrees(register_plugin):
    backend = WrongShape()
    _register(register_plugin, backend)
    cell = _run(backend, ops=["matmul"], dtypes=["float64"]).cell("matmul", backend.name)
    assert cell.status == "disagrees" and cell.worst.check == "pattern shape"


def test_a_backend_error_is_an_error_cell(register_plugin):
    class Broken(TruePattern):
        name = "brokenpattern"

        def spoil(self, pattern, local):
            raise RuntimeError("no patterns today")

    backend = Broken()
    _register(register_plugin, backend)
    cell = _run(backend, ops=["sin"], dtypes=["float64"]).cell("sin", backend.name)
    assert cell.status == "error" and "no patterns today" in cell.message


# --- kinks, cases, fuzzed programs ----------------------------------------------------------------


class EmptyAtTies(TruePattern):
    """Its local pattern is empty where its inputs tie (as a careless local rule of maximum that
    picks neither branch there); right elsewhere."""

    name = "emptyatties"

    def value_and_jacobian(self, f, args, argnums, *, local=False):
        value, jacobians = super().value_and_jacobian(f, args, argnums, local=local)
        tie = len(args) == 2 and np.shape(args[0]) == np.shape(args[1]) and np.array_equal(*args)
        if local and tie:
            jacobians = tuple(np.zeros_like(j) for j in jacobians)
        return value, jacobians


def test_at_a_kink_the_patterns_must_hold_the_conventions_non_zeros(register_plugin):
    right, wrong = TruePattern(), EmptyAtTies()
    _register(register_plugin, right, wrong)
    fn = lambda x, y: adcore.ops.maximum(x, y)  # noqa: E731
    inputs, halves = (np.asarray(1.5), np.asarray(1.5)), (np.asarray(0.5), np.asarray(0.5))
    tally = Tally()
    check_kink_patterns(tally, right.name, fn, inputs, halves, "tie")
    assert tally.worst is None and tally.checks == 4  # global and local, two inputs
    tally = Tally()
    check_kink_patterns(tally, wrong.name, fn, inputs, halves, "tie")
    assert tally.worst.check == "local pattern"
    assert "input 0: the local pattern misses 1 entry of the convention's non-zeros" in tally.worst.detail


def test_the_kinks_of_an_op_are_checked_on_a_pattern_backend(register_plugin):
    backend = EmptyAtTies()
    _register(register_plugin, backend)
    cell = _run(backend, ops=["maximum"], dtypes=["float64"]).cell("maximum", backend.name)
    assert cell.status == "disagrees" and cell.worst.check == "local pattern"
    assert cell.worst.sample.startswith("kink ties split 0.5/0.5")


def test_cases_get_the_superset_checks(register_plugin):
    backend = MissingGlobally()
    _register(register_plugin, backend)
    case = "broadcast_matmul"  # a core case, quick to check
    run = engine.run(ops=[], cases=[case], dtypes=["float64"], backends=[backend.name, "reverse", "forward"])
    assert run.cell(case, backend.name).status == "disagrees"


def test_fuzzed_programs_get_the_superset_checks(register_plugin):
    right, wrong = TruePattern(), MissingGlobally()
    _register(register_plugin, right, wrong)
    run = check_fuzz(3, [right.name, wrong.name, "reverse", "forward"], ["float64"], seed=0)
    _, cells = run.subject_and_cells()
    status = {c.backend: c.status for c in cells}
    assert status[right.name] == "agrees" and status["reverse"] == "agrees"
    assert status[wrong.name] == "disagrees"


# --- the report, the abilities, check_grads ------------------------------------------------------


def test_every_report_format_shows_the_pattern_backends_column(register_plugin):
    backend = MissingGlobally()
    _register(register_plugin, backend)
    run = _run(backend, ops=["sin"], dtypes=["float64"])
    data = json.loads(report.to_json(run))
    assert backend.name in data["backends"]
    assert any(c["backend"] == backend.name and c["status"] == "disagrees" for c in data["cells"])
    markdown = report.to_markdown(run)
    assert backend.name in markdown.splitlines()[0] or backend.name in markdown
    assert "✗ global pattern" in markdown  # the cell shows the failed check, no number
    assert f"<th>{backend.name}</th>" in report.to_html(run)


def test_abilities_read_the_pattern_flag_and_exact_for(register_plugin):
    strict = ExtraClaimingExact()
    _register(register_plugin, strict, TruePattern())
    assert patterns(strict.name) and not patterns("reverse")
    assert exact_for(strict.name, "sin") and not exact_for("truepattern", "sin")
    assert not exact_for("reverse", "sin")  # a backend without exact_for claims nothing
    assert strict.name not in outers(adcore.backends())


def test_check_grads_skips_a_pattern_backend_and_refuses_one_named_alone(register_plugin):
    backend = TruePattern()
    _register(register_plugin, backend)
    f = lambda x: adcore.numpy.sin(x) * x  # noqa: E731
    checked = adcore.check_grads(f, (np.linspace(0.1, 1.0, 3),))
    assert backend.name not in checked.checked and backend.name not in checked.skipped  # not asked for
    checked = adcore.check_grads(f, (np.linspace(0.1, 1.0, 3),), backends=[backend.name, "reverse"])
    assert "dependency patterns" in checked.skipped[backend.name] and "reverse" in checked.checked
    with pytest.raises(UnsupportedByBackendError, match="dependency patterns"):
        adcore.check_grads(f, (np.linspace(0.1, 1.0, 3),), backends=[backend.name])


def test_exactness_is_judged_at_the_references_resolution(register_plugin):
    # a true derivative of 3e-71 (stdtr far in its tail) is no zero: a diagonal pattern is exact;
    # an estimate's entries within its error are zeros
    backend = TruePattern()
    _register(register_plugin, backend)
    call = CheckedCall(lambda x: x * np.array([1.0, 1e-71]), (np.array([1.0, 2.0]),), (0,), label="#0")
    for jacobian, error, verdict in [
        (np.diag([1.0, 3e-71]), 0.0, None),
        (np.diag([1.0, 0.0]), 0.0, "exact pattern"),
        (np.diag([1.0, 1e-12]), np.full((2, 2), 1e-12), "exact pattern"),
    ]:
        tally = Tally()
        check_patterns(
            tally, backend.name, call, Reference((jacobian,), "test", (error,)), "float64", exact=True
        )
        assert (tally.worst and tally.worst.check) == verdict, tally.worst
        assert tally.checks == 4


def test_non_zeros_are_what_a_zero_would_not_agree_with():
    jacobian = np.array([[2.0, 1e-12, 0.0], [np.inf, np.nan, -3.0]])
    assert nonzeros(jacobian, EXACT["float64"]).tolist() == [[True, False, False], [True, False, True]]
    # the float32 tolerance and an estimate's error make small entries indistinguishable from 0
    assert not nonzeros(np.array([1e-4, 5.0]), EXACT["float32"])[0]
    assert not nonzeros(np.array([1e-3, 5.0]), EXACT["float64"], error=np.array([1e-3, 0.0]))[0]


@pytest.fixture(autouse=True)
def _quiet_warnings():
    with np.errstate(all="ignore"):
        yield


# --- the sparsity backend itself ------------------------------------------------------------------

REAL_OPS = ["sin", "matmul", "sum", "getitem", "maximum", "where", "cumsum", "concatenate", "solve"]


@pytest.mark.skipif("sparsity" not in adcore.backends(), reason="adcore-sparsity is not installed")
def test_the_sparsity_backend_agrees_on_a_few_ops_with_their_exactness_checked():
    run = engine.run(ops=REAL_OPS, dtypes=["float64", "float32"], backends=["sparsity", "reverse", "forward"])
    for op in REAL_OPS:
        cell = run.cell(op, "sparsity")
        assert cell.status == "agrees" and cell.checks > 0, cell
    # its claims are the backend's own (exact_for), read without naming it in the engine
    assert exact_for("sparsity", "sin") and patterns("sparsity")
    assert "sparsity" in run.backends and "sparsity" not in outers(adcore.backends())


def _branching(x):  # decides by x's numbers: no global pattern, a local one
    return anp.sum(x) if x[0] > 0 else anp.sum(x * x)


class _BranchingCase:
    @adcore.hookimpl
    def adcore_register_cases(self, register):
        samples = lambda rng, dtype: [Sample((np.array([1.0, 2.0], dtype=dtype),), {})]  # noqa: E731
        register(Case("branching_case", _branching, samples))


@pytest.mark.skipif("sparsity" not in adcore.backends(), reason="adcore-sparsity is not installed")
def test_the_sparsity_backend_declines_the_global_pattern_of_a_case_that_branches(register_plugin):
    register_plugin(_BranchingCase(), "branching")
    run = engine.run(ops=[], cases=["branching_case"], dtypes=["float64"], backends=["sparsity", "reverse"])
    cell = run.cell("branching_case", "sparsity")
    assert cell.status == "agrees" and cell.checks == 2  # the local pattern, and its value (bit for bit)
    assert "ValueDependentError" in cell.message and cell.message.startswith("declined")
