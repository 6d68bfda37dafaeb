"""adcore.cli: `adcore example` checks every backend on the seeds' example; `adcore plugins` lists
plugins; `adcore rules` shows the rule tables; `adcore conformance` runs the suite."""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest
from adcore_reverse.vjps import VJPS

import adcore
import adcore.numpy as anp
from adcore import cli
from adcore.conformance import abilities
from adcore.conformance.progress import ProgressLines
from adcore.plugins import PluginWarning
from adcore.spec import REAL, elementwise_samples


class BrokenBackend(adcore.Backend):
    name = "broken"

    def value_and_jacobian(self, f, args, argnums):
        raise RuntimeError("no derivatives today")


class BrokenPlugin:
    @adcore.hookimpl
    def adcore_register_backends(self, register):
        register(BrokenBackend())


class BlindPatternBackend(adcore.Backend):
    """A pattern backend whose pattern misses every dependency."""

    name = "blind"
    pattern = True

    def value_and_jacobian(self, f, args, argnums):
        return f(*args), [np.zeros_like(np.asarray(args[i], dtype=float)) for i in argnums]


class BlindPatternPlugin:
    @adcore.hookimpl
    def adcore_register_backends(self, register):
        register(BlindPatternBackend())


def test_example_prints_each_backend_against_the_exact_gradient(capsys, clean_plugins):
    assert cli.main(["example"]) == 0
    out = capsys.readouterr().out
    # seed 001: df/dx1 = 1/x1 + x2 = 5.5, df/dx2 = x1 - cos(x2) at (2, 5)
    assert f"{2 - math.cos(5):.12f}" == "1.716337814537"
    for row in ("exact", "reverse", "symbolic"):
        assert re.search(rf"^. {row} +. 5\.500000000000 . 1\.716337814537 .", out, re.MULTILINE), row
    assert re.search(r"^. reverse .* ok ", out, re.MULTILINE)
    if "sparsity" in adcore.backends():  # a pattern backend: its 0/1 pattern, not a wrong derivative
        assert re.search(r"^. sparsity +. 1 +. 1 +. +. ok \(pattern\)", out, re.MULTILINE), out


def test_example_fails_when_a_pattern_backend_misses_a_non_zero_of_the_gradient(register_plugin):
    register_plugin(BlindPatternPlugin(), "blind")
    out = io.StringIO()
    assert cli.example(out) == 1
    assert re.search(r"^. blind +. 0 +. 0 +. +. WRONG \(pattern misses a non-zero\)", out.getvalue(), re.M)


def test_example_fails_when_a_backend_breaks_and_still_shows_the_others(register_plugin):
    register_plugin(BrokenPlugin(), "broken")
    out = io.StringIO()
    assert cli.example(out) == 1
    text = out.getvalue()
    assert "broken" in text and "RuntimeError: no derivatives today" in text
    assert re.search(r"^. reverse +. 5\.500000000000", text, re.MULTILINE)


def test_plugins_lists_hooks_and_registrations(capsys, clean_plugins):
    assert cli.main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    core = next(line for line in lines if line[2:].startswith("core "))
    reverse = next(line for line in lines if line[2:].startswith("reverse "))
    assert re.search(rf" ops +. {len(adcore.ops.CORE_OPS)} ", core)  # the core catalogue
    assert re.search(rf"backends, rules +. 0 +. {len(VJPS)} +. reverse ", reverse)


def test_plugins_json_names_failures(register_plugin, capsys):
    class Clashing:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("sin", lambda x: x))

    with pytest.warns(PluginWarning, match="clashing"):
        register_plugin(Clashing(), "clashing")
    assert cli.main(["plugins", "--json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "'core'" in records["clashing"]["error"] and "'clashing'" in records["clashing"]["error"]
    assert records["clashing"]["ops"] == []


# --- adcore conformance and adcore rules ----------------------------------------------------


class OnlyVJP:
    """An op `half` with only a VJP, and a VJP for `sin`'s twin `wrong_sin` that returns +sin."""

    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(adcore.OpSpec("half", lambda x: x / 2, samples=elementwise_samples(REAL)))
        register(adcore.OpSpec("wrong_sin", np.sin, samples=elementwise_samples(REAL)))

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        register("vjp", "half", (lambda g, ans, x: g / 2,))
        register("vjp", "wrong_sin", (lambda g, ans, x: g * anp.sin(x),))


# the real dtypes alone: sin, cos, matmul, ... accept complex values, checked in complex128/complex64 too
REAL_DTYPES = ["--dtype", "float64", "--dtype", "float32"]


def test_conformance_prints_the_matrix_and_the_summary_and_exits_0(capsys, clean_plugins):
    assert cli.main(["conformance", "--op", "sin", "--op", "matmul", "--jobs", "2", *REAL_DTYPES]) == 0
    out = capsys.readouterr().out
    # one column per backend (per variant for a backend with variants, source); a pattern backend
    # (sparsity) has its own column, checked as patterns
    n = len(abilities.columns(adcore.backends()))
    assert re.search(rf"^. sin {'+. +✓ ' * (n + 1)}+.$", out, re.MULTILINE)  # then the vmap column
    assert re.search(
        rf"^PASSED: {4 * n} agree, 0 disagree, 0 errors, 0 unsupported \(2 ops × {n} backends",
        out,
        re.MULTILINE,
    )
    assert re.search(r"in \d+\.\d s$", out.strip())  # the wall time ends the run


ELEVEN_OPS = ["sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "add", "multiply", "subtract", "negative"]


def test_conformance_prints_plain_progress_lines_where_stderr_is_not_a_terminal(
    monkeypatch, capsys, clean_plugins
):
    # CI and redirects: what the run covers at once, then a line per tenth of the units (22 here),
    # the last at N/N, not a bar (the heartbeat while none finishes: tests/conformance/test_progress.py)
    monkeypatch.setattr(ProgressLines, "HEARTBEAT", float("inf"))
    argv = ["conformance", "--backend", "reverse", "--jobs", "1", *REAL_DTYPES]
    assert cli.main([*argv, *(f"--op={op}" for op in ELEVEN_OPS)]) == 0
    first, *lines = capsys.readouterr().err.strip().splitlines()
    assert first.startswith(
        "conformance: 22 units: 11 subjects x float64, float32 on backends reverse, in 1 process"
    )
    line = r"conformance: (\d+)/22 units \((\d+)%\) \d+\.\d s  \w+ \(float(64|32)\)"
    assert all(re.fullmatch(line, text) for text in lines), lines
    done = [int(re.fullmatch(line, text)[1]) for text in lines]
    assert 2 <= len(lines) <= 10 and done == sorted(done) and done[-1] == 22
    assert lines[-1].startswith("conformance: 22/22 units (100%) ")


def test_plain_progress_also_prints_after_a_silence(monkeypatch, capsys, clean_plugins):
    monkeypatch.setattr(ProgressLines, "SILENCE", 0.0)  # every unit is "a while" after the last line
    monkeypatch.setattr(ProgressLines, "HEARTBEAT", float("inf"))
    argv = ["conformance", "--backend", "reverse", "--jobs", "1", "--op", "sin", "--op", "cos", *REAL_DTYPES]
    assert cli.main(argv) == 0
    assert [line.split(" units")[0] for line in capsys.readouterr().err.strip().splitlines()[1:]] == [
        f"conformance: {k}/4" for k in range(1, 5)
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_conformance_shows_a_bar_on_a_terminal_and_no_lines(monkeypatch, clean_plugins):
    stderr = Terminal()
    monkeypatch.setattr("sys.stderr", stderr)
    argv = ["conformance", "--backend", "reverse", "--jobs", "1", "--op", "sin", "--op", "cos", *REAL_DTYPES]
    assert cli.main(argv) == 0
    shown = stderr.getvalue()
    assert "━" in shown and "/4" in shown  # rich's bar and its M/N count
    assert "units (" not in shown


def test_jobs_default_to_the_cores_this_process_may_use(monkeypatch):
    ran = []
    monkeypatch.setattr(cli, "conformance", lambda args, out=None: ran.append(args.jobs) or 0)
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert cli.main(["conformance", "--op", "sin"]) == 0
    monkeypatch.delattr(cli.os, "sched_getaffinity", raising=False)  # macOS, Windows
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 5)
    assert cli.main(["conformance", "--op", "sin"]) == 0
    assert cli.main(["conformance", "--op", "sin", "--jobs", "1"]) == 0
    assert ran == [3, 5, 1]


def test_scheduler_reaches_the_run_and_is_checked_before_it(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(
        cli, "conformance", lambda args, out=None: ran.append((args.jobs, args.scheduler)) or 0
    )
    assert cli.main(["conformance", "--op", "sin", "--scheduler", "local:2"]) == 0
    assert cli.main(["conformance", "--op", "sin", "--scheduler", "tcp://10.0.0.1:8786"]) == 0
    assert ran == [(1, "local:2"), (1, "tcp://10.0.0.1:8786")]
    for argv, says in [
        (["--scheduler", "local:2", "--jobs", "2"], "--jobs and --scheduler exclude each other"),
        (["--jobs", "1", "--scheduler", "local:1"], "--jobs and --scheduler exclude each other"),
        (["--scheduler", "local:0"], "a local cluster needs at least 1 worker"),
        (["--scheduler", "somewhere"], "is neither a Dask scheduler's address"),
    ]:
        with pytest.raises(SystemExit) as exit:
            cli.main(["conformance", "--op", "sin", *argv])
        assert exit.value.code == 2
        assert says in capsys.readouterr().err
    assert len(ran) == 2  # nothing ran


def test_an_unreachable_scheduler_exits_2_naming_it(monkeypatch, capsys):
    from adcore.conformance import distributed

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 0.5)
    with pytest.raises(SystemExit) as exit:
        cli.main(["conformance", "--op", "sin", "--dtype", "float64", "--scheduler", "tcp://127.0.0.1:1"])
    assert exit.value.code == 2
    assert "adcore: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1" in capsys.readouterr().err


def test_conformance_exits_1_naming_the_wrong_rule_and_greys_a_missing_one(register_plugin, capsys):
    register_plugin(OnlyVJP(), "onlyvjp")
    assert cli.main(["conformance", "--op", "half", "--op", "wrong_sin", "--dtype", "float64"]) == 1
    out = capsys.readouterr().out
    # forward, numeric, reverse, sparsity, symbolic: half has a VJP only (no JVP, sympy or sparsity rule);
    # then vmap, which batches it by the loop rule (vmap(grad) on reverse, the backend with its rule)
    # (source needs both: its two columns n/a)
    assert re.search(
        r"^. half +. +n/a +. +✓ +. +✓ +. +n/a +. +n/a +. +n/a +. +n/a +. +✓ +.$", out, re.MULTILINE
    )
    assert "✗ wrong_sin · reverse · float64" in out
    assert out.strip().splitlines()[-1].startswith("FAILED: 3 agree, 1 disagree, 0 errors, 10 unsupported")


@pytest.mark.parametrize(
    "fmt, check",
    [
        ("json", json.loads),
        ("markdown", lambda t: t.index("| sin |")),
        ("html", lambda t: t.index('id="heatmap"')),
    ],
)
def test_conformance_writes_each_format_to_a_file(tmp_path, capsys, clean_plugins, fmt, check):
    path = tmp_path / f"report.{fmt}"
    argv = ["conformance", "--op", "sin", "--backend", "reverse", "--format", fmt, "--output", str(path)]
    assert cli.main([*argv, *REAL_DTYPES]) == 0
    check(path.read_text())
    assert capsys.readouterr().err.strip().endswith(" s")  # the summary line goes to stderr


def test_conformance_refuses_unknown_names_as_usage_errors(capsys, clean_plugins):
    for argv, says in [
        (["--op", "sinn"], "no op named 'sinn' (did you mean 'sin'"),
        (["--op", "x"], "no op named 'x'\n"),  # the closing quote was lost (issue 15)
        (["--backend", "revers"], "did you mean 'reverse'"),
        (["--case", "nope"], "no conformance case named 'nope'"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--seed", "-1"], "--seed must be at least 0, got -1"),  # issue 15: a raw ValueError after planning
    ]:
        with pytest.raises(SystemExit) as exit:
            cli.main(["conformance", *argv])
        assert exit.value.code == 2
        assert says in capsys.readouterr().err
    assert cli.main(["conformance", "--op", "sin", "--backend", "reverse"]) == 0  # nothing left behind


def test_rules_marks_missing_rules_and_missing_lists_them(register_plugin, capsys):
    register_plugin(OnlyVJP(), "onlyvjp")
    assert cli.main(["rules"]) == 0
    table = capsys.readouterr().out
    # kinds in their declared columns' order (vjp, jvp, sympy, sparsity, batch), then the op's NumPy
    # names, kinks and doc
    assert re.search(r"^. half +. onlyvjp +. ✓ +. ✗ +. ✗ +. ✗ +. ✗ +│", table, re.MULTILINE)
    # batch rules are vmap's, which every op needs, one no derivative flows through too: by its flag here
    assert re.search(
        r"^. stop_gradient +. core +. not needed +. not needed +. ✓ +. ✓ +. elementwise +│",
        table,
        re.MULTILINE,
    )
    assert re.search(
        r"^. sin +. core +. ✓ +. ✓ +. ✓ +. ✓ +. elementwise +. numpy.sin +│", table, re.MULTILINE
    )
    assert cli.main(["rules", "--missing"]) == 0
    missing = capsys.readouterr().out
    assert re.search(r"^. half +. jvp +. forward, source +.$", missing, re.MULTILINE)
    assert re.search(r"^. wrong_sin +. sympy +. symbolic +.$", missing, re.MULTILINE)
    # no batch rule (and not flagged elementwise): no backend needs one, vmap loops over the batch instead
    for name in ("half", "wrong_sin"):
        assert re.search(rf"^. {name} +. batch +. vmap runs it once per batch element", missing, re.MULTILINE)
    assert "sin " not in missing.replace("wrong_sin", "")


def test_conformance_refuses_an_output_it_cannot_write_before_running(
    tmp_path, capsys, clean_plugins, monkeypatch
):
    # issue 15: the report used to fail to open only after the whole run
    ran = []
    monkeypatch.setattr(cli, "conformance", lambda args, out=None: ran.append(args) or 0)
    missing = tmp_path / "no_such_dir" / "report.json"
    for output, says in [
        (
            missing,
            f"the directory {missing.parent} does not exist; create it first (mkdir -p {missing.parent})",
        ),
        (tmp_path, "is a directory; give a file name"),
    ]:
        with pytest.raises(SystemExit) as exit:
            cli.main(["conformance", "--op", "sin", "--format", "json", "--output", str(output)])
        assert exit.value.code == 2
        assert says in capsys.readouterr().err
    assert not ran and not missing.parent.exists()  # refused before the run, nothing created
    good = tmp_path / "report.json"
    assert cli.main(["conformance", "--op", "sin", "--format", "json", "--output", str(good)]) == 0
    assert len(ran) == 1 and ran[0].output == str(good)  # the next call runs
