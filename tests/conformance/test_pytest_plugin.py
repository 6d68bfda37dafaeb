"""The pytest plugin: conformance cells as pytest items, a parametrizer, and no cost when unused.

Each test runs pytest in a subprocess (pytester), so the registry and its plugins there are
that run's own; the throwaway plugin is registered by the conftest.py the test writes.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from adcore.conformance import pytest_plugin
from adcore.conformance.calls import checks_complex
from adcore.conformance.engine import DTYPES, Unit
from adcore.plugins import get_registry

pytest_plugins = ["pytester"]

# a plugin with three ops, each with only a VJP (so forward and symbolic lack a rule): `half`'s
# is right, `cube`'s is planted wrong (g * 2x where d x^3 / dx = 3x^2), `twice`'s raises
THROWAWAY_CONFTEST = """
import adcore
from adcore.spec import REAL, OpSpec, elementwise_samples


class Throwaway:
    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(OpSpec("half", lambda x: x / 2, samples=elementwise_samples(REAL), elementwise=True))
        register(OpSpec("cube", lambda x: x**3, samples=elementwise_samples(REAL), elementwise=True))
        register(OpSpec("twice", lambda x: x * 2, samples=elementwise_samples(REAL), elementwise=True))

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register("vjp", "half", (lambda g, ans, x: g / 2,))
        register("vjp", "cube", (lambda g, ans, x: g * 2 * x,))
        register("vjp", "twice", (lambda g, ans, x: planted_error(),))


def planted_error():
    raise RuntimeError("planted error")


adcore.plugins.register_plugin(Throwaway(), "throwaway")
"""

QUIET = ("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest")


@pytest.fixture
def pytester(pytester: pytest.Pytester, clean_plugins: None) -> pytest.Pytester:
    """pytester with no ADCORE_* switch set, so the subprocess loads every installed plugin."""
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """{'sin-reverse-float64': 'PASSED', ...} from the lines of a -v run (items or parametrized tests)."""
    verdicts = (
        re.match(r"\S+(?:::|\[)([\w-]+)\]? (PASSED|FAILED|SKIPPED|ERROR)", line) for line in result.outlines
    )
    return dict(m.groups() for m in verdicts if m)


def test_the_option_collects_one_item_per_core_op_backend_and_dtype(pytester):
    result = pytester.runpytest_subprocess(
        "--adcore-conformance=core", "--adcore-backend=reverse,forward", "--collect-only", "-q", *QUIET
    )
    collected = {line.removeprefix("adcore-conformance::") for line in result.outlines if "::" in line}
    registry = get_registry()  # this process loads the same installed plugins
    core = registry.plugins["core"]
    assert "sin-reverse-float64" in collected and "mlp_loss-forward-float32" in collected
    # the ops that accept complex values are checked in the complex dtypes too
    dtypes = {name: ("float64", "float32") for name in core.ops + core.cases}
    dtypes |= {name: DTYPES for name in core.ops if checks_complex(registry.op(name))}
    assert "sin-reverse-complex128" in collected and "sort-reverse-complex128" not in collected
    assert collected == {
        f"{name}-{b}-{d}" for name in dtypes for b in ("reverse", "forward") for d in dtypes[name]
    }


def test_the_items_run_and_pass_with_readable_ids(pytester):
    result = pytester.runpytest_subprocess(
        "--adcore-conformance=core",
        "--adcore-backend=reverse",
        "--adcore-dtype=float64",
        "-k",
        "sin- or exp-",
        "-v",
        *QUIET,
    )
    # -k matches substrings: sin- selects arcsin too, exp- logaddexp and logsumexp
    assert _outcomes(result) == {
        "arcsin-reverse-float64": "PASSED",
        "exp-reverse-float64": "PASSED",
        "logaddexp-reverse-float64": "PASSED",
        "logsumexp-reverse-float64": "PASSED",
        "sin-reverse-float64": "PASSED",
    }
    assert result.ret == pytest.ExitCode.OK


def test_a_missing_rule_skips_with_its_name_and_a_wrong_vjp_fails_naming_op_backend_and_check(pytester):
    pytester.makeconftest(THROWAWAY_CONFTEST)
    result = pytester.runpytest_subprocess(
        "--adcore-conformance=throwaway", "--adcore-dtype=float64", "-v", "-rs", *QUIET
    )
    outcomes = _outcomes(result)
    assert outcomes["half-reverse-float64"] == "PASSED"
    assert outcomes["half-forward-float64"] == "SKIPPED"
    assert outcomes["cube-reverse-float64"] == "FAILED"
    assert outcomes["cube-numeric-float64"] == "PASSED"  # numeric differentiates the impl alone
    assert outcomes["twice-reverse-float64"] == "FAILED"
    result.stdout.fnmatch_lines(["SKIPPED * forward: no 'jvp' rule for op 'half'"])
    failure = _section(result, "cube-reverse-float64")  # the title is reportinfo()'s domain
    assert "op 'cube' on backend 'reverse' in float64 disagrees with the reference" in failure
    assert any(line.split() in (["check:", "jacobian"], ["check:", "vjp"]) for line in failure.splitlines())
    assert "rerun:   adcore conformance --op cube --backend reverse --dtype float64" in failure
    assert "Traceback" not in failure and "pytest_plugin.py" not in failure
    error = _section(result, "twice-reverse-float64")
    assert "op 'twice' on backend 'reverse' in float64 raised an error" in error
    assert "RuntimeError: planted error" in error and "check:" not in error
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# writes the report of `cube` (both dtypes, every backend) in every format, beside the items
WRITE_REPORTS = """
from adcore.conformance import engine, report


def test_write_reports():
    result = engine.run(ops=["cube"])
    for format in report.FORMATS:
        report.write(result, format, f"report.{format}")
"""


def test_a_failing_cell_shows_one_relative_error_in_every_report_and_the_pytest_item(pytester):
    pytester.makeconftest(THROWAWAY_CONFTEST)
    pytester.makepyfile(test_write_reports=WRITE_REPORTS)
    result = pytester.runpytest_subprocess(
        "--adcore-conformance=throwaway", "-k", "write_reports or cube-reverse", "-v", *QUIET
    )
    assert _outcomes(result)["cube-reverse-float64"] == "FAILED"
    read = {
        f: (pytester.path / f"report.{f}").read_text(encoding="utf-8")
        for f in ("table", "json", "markdown", "html")
    }
    # JSON: the table merges the dtypes into the cell furthest out of tolerance
    cells = [
        c for c in json.loads(read["json"])["cells"] if c["subject"] == "cube" and c["backend"] == "reverse"
    ]
    worst = max(cells, key=lambda c: c["worst"]["rel_error"] / c["worst"]["tolerance"])
    figure = f"{worst['worst']['rel_error']:.1e}"  # e.g. 1.4e-02
    judged = f"rel {figure} > tol {worst['worst']['tolerance']:.1e}"
    # the table's cell, and the failure detail under it
    header = next(line for line in read["table"].splitlines() if line.startswith("┃ subject"))
    row = next(line for line in read["table"].splitlines() if line.startswith("│ cube "))
    column = [c.strip() for c in header.strip("┃").split("┃")].index("reverse")
    assert [c.strip() for c in row.strip("│").split("│")][column] == f"✗ {figure}"
    detail = read["table"].split(f"cube · reverse · {worst['dtype']}: disagrees")[1]
    assert f"error: {judged}" in detail.split("✗")[0]
    # Markdown and HTML: the same cell text and the same error line
    assert f"| ✗ {figure} |" in read["markdown"] and f"error: `{judged}" in read["markdown"]
    assert f'">✗ {figure}</a></td>' in read["html"] and f"<dd>{html.escape(judged)}" in read["html"]
    # the pytest item of that dtype
    item = _section(result, f"cube-reverse-{worst['dtype']}")
    assert f"error:   {judged}" in item


def _section(result: pytest.RunResult, title: str) -> str:
    """The text of one failure's report, from its ___ title ___ line to the next ___ or === line."""
    text = result.stdout.str()
    start = text.index(f" {title} ")
    end = re.compile(r"\n(___|===)").search(text, start)
    return text[start : end.start() if end else None]


def test_the_parametrizer_checks_a_plugin_from_an_ordinary_test_module(pytester):
    pytester.makeconftest(THROWAWAY_CONFTEST)
    pytester.makepyfile(
        test_conformance="""
        import pytest
        from adcore.conformance.pytest_plugin import assert_conforms, conformance_params

        @pytest.mark.parametrize("target", conformance_params("throwaway", backends=["reverse", "forward"], dtypes=["float64"]))
        def test_conformance(target):
            assert_conforms(target)
        """
    )
    result = pytester.runpytest_subprocess("-v", "-rs", *QUIET)
    assert _outcomes(result) == {
        "cube-reverse-float64": "FAILED",
        "cube-forward-float64": "SKIPPED",
        "half-reverse-float64": "PASSED",
        "half-forward-float64": "SKIPPED",
        "twice-reverse-float64": "FAILED",
        "twice-forward-float64": "SKIPPED",
    }
    failure = _section(result, "test_conformance[cube-reverse-float64]")
    assert "op 'cube' on backend 'reverse' in float64 disagrees with the reference" in failure
    result.stdout.fnmatch_lines(["SKIPPED * forward: no 'jvp' rule for op 'cube'"])


def test_an_unknown_plugin_is_a_collection_error_listing_the_loaded_ones(pytester):
    result = pytester.runpytest_subprocess("--adcore-conformance=nosuch", *QUIET)
    result.stdout.fnmatch_lines(
        ["--adcore-conformance: no adcore plugin named 'nosuch'; loaded plugins: *core, *"]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_plugin_that_failed_to_load_is_a_collection_error_naming_it(pytester):
    pytester.makeconftest(
        """
        import adcore

        class Broken:
            @adcore.hookimpl
            def adcore_register_ops(self, register):
                raise ImportError("scipy is missing")

        adcore.plugins.register_plugin(Broken(), "broken")
        """
    )
    result = pytester.runpytest_subprocess("--adcore-conformance=broken", "-W", "ignore", *QUIET)
    result.stdout.fnmatch_lines(
        ["*plugin(s) failed to load*'broken': *ImportError: scipy is missing*ADCORE_BLOCK_PLUGINS=broken"]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_without_the_option_nothing_is_collected_and_the_registry_is_not_loaded(pytester):
    pytester.makepyfile(
        test_plain="""
        import sys
        import adcore.plugins

        def test_plain(request):
            assert request.config.pluginmanager.has_plugin("adcore")  # loaded through its entry point
            assert adcore.plugins._registry is None
            assert "adcore_symbolic" not in sys.modules
            assert "dask" not in sys.modules and "distributed" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-v", *QUIET)
    result.assert_outcomes(passed=1)
    assert "adcore-conformance" not in result.stdout.str()


# a plugin op with a batch rule planted wrong (it drops the batch: every example gets example 0's)
BATCH_CONFTEST = """
import adcore
from adcore.spec import REAL, OpSpec, elementwise_samples


class Batched:
    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(OpSpec("first_only", lambda x: x * 3.0, samples=elementwise_samples(REAL)))

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register("vjp", "first_only", (lambda g, ans, x: g * 3.0,))
        register("batch", "first_only", lambda dims, x: (adcore.numpy.broadcast_to(
            adcore.numpy.moveaxis(x, dims[0], 0)[:1] * 3.0, adcore.numpy.moveaxis(x, dims[0], 0).shape), 0))


adcore.plugins.register_plugin(Batched(), "batched")
"""


def test_the_vmap_column_is_an_item_per_subject_and_dtype_and_a_wrong_batch_rule_fails(pytester):
    pytester.makeconftest(BATCH_CONFTEST)
    result = pytester.runpytest_subprocess(
        "--adcore-conformance=batched,core",
        "--adcore-backend=vmap",
        "--adcore-dtype=float64",
        "-v",
        "-k",
        "first_only or sin-vmap",
        *QUIET,
    )
    outcomes = _outcomes(result)
    assert (outcomes["first_only-vmap-float64"], outcomes["sin-vmap-float64"]) == ("FAILED", "PASSED")
    assert not [item for item in outcomes if "-vmap-" not in item]  # only the vmap column was asked for
    failure = _section(result, "first_only-vmap-float64")
    assert "op 'first_only' on backend 'vmap' in float64 disagrees with the reference" in failure
    assert "rerun:   adcore conformance --op first_only --dtype float64" in failure


# --- the units checked on a Dask cluster first (--adcore-scheduler) ----------------------------------

# in the pytest process, checking a unit raises: the items' cells must come from the cluster
NO_CHECKS_HERE = """
from adcore.conformance import engine


def refuse(unit):
    raise AssertionError(f"{unit.name} was checked in the pytest process")


engine.check_unit = refuse
"""


def test_the_scheduler_option_checks_every_selected_unit_on_dask_and_the_items_read_their_cells(
    pytester, cluster_address
):
    selection = ("--adcore-conformance=core", "--adcore-backend=reverse,forward", "--adcore-dtype=float64")
    here = pytester.runpytest_subprocess(*selection, "-k", "sin- or sort-", "-v", *QUIET)
    pytester.makeconftest(NO_CHECKS_HERE)
    pytester.makepyfile(
        test_params="""
        import pytest
        from adcore.conformance.pytest_plugin import assert_conforms, conformance_params

        @pytest.mark.parametrize("target", conformance_params("core", backends=["numeric"], dtypes=["float32"]))
        def test_param(target):
            assert_conforms(target)
        """
    )
    result = pytester.runpytest_subprocess(
        *selection,
        f"--adcore-scheduler={cluster_address}",
        "-k",
        "(sin- or sort-) and not param or param and tanh- and not arctanh",
        "-v",
        *QUIET,
    )
    outcomes = _outcomes(result)
    assert outcomes.pop("tanh-numeric-float32") == "PASSED"  # a parametrized test's target too
    assert outcomes == _outcomes(here)  # the same verdicts as checked in the pytest process
    assert set(outcomes) == {
        f"{op}-{b}-float64" for op in ("sin", "arcsin", "sort") for b in ("reverse", "forward")
    }
    result.stdout.fnmatch_lines(
        [f"adcore conformance: 4 units checked on the Dask cluster at {cluster_address} in *"]
    )
    assert result.ret == pytest.ExitCode.OK


def test_the_scheduler_option_is_a_usage_error_with_a_bad_address_or_with_xdist(pytester):
    result = pytester.runpytest_subprocess("--adcore-scheduler=local:0", *QUIET)
    result.stderr.fnmatch_lines(
        ["*--adcore-scheduler: --scheduler local:0: a local cluster needs at least 1 worker*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest_subprocess("--adcore-scheduler=local:2", "-n", "2", *QUIET)
    result.stderr.fnmatch_lines(
        ["*--adcore-scheduler checks every conformance unit on Dask*give one of them*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_unit_that_raised_on_a_worker_raises_in_each_of_its_items_and_the_others_read_their_cells(
    clean_plugins,
):
    units = [
        Unit("case", "no_such_case", "float64", ("numeric",)),
        Unit("op", "sin", "float64", ("numeric",)),
    ]
    found = pytest_plugin._check_each(units)  # what a worker sends back
    assert isinstance(found[units[0]], KeyError) and found[units[1]]["numeric"].status == "agrees"
    pytest_plugin._cells[get_registry()] = found
    for _ in range(2):
        with pytest.raises(KeyError, match="no_such_case"):
            pytest_plugin.cell_of(pytest_plugin.Target(units[0], "numeric"))
    assert pytest_plugin.cell_of(pytest_plugin.Target(units[1], "numeric")) is found[units[1]]["numeric"]
