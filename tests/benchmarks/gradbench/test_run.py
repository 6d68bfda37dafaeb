"""The runner: rows from sessions, their JSON, ratios, the table, the exit status; and one quick run of every eval."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gradbench_run as runner
import manual
import pytest
from adcore_tool.run import EVALS
from relay import Exchange, Session

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "lse.py", line 3, in gradient\n'
    "    raise ValueError\n"
    "adcore.errors.UnsupportedByBackendError: backend 'symbolic' cannot do it\n"
    "and a second line of the message\n"
)


def exchange(
    function: str,
    description: str | None = "n=10",
    nanoseconds: tuple[int, ...] = (3000, 2000),
    valid: bool | None = True,
    error: str | None = None,
    input: Any = None,
) -> Exchange:
    """An evaluate exchange: answered (timed) unless `error`; analysed valid, invalid, or not at all (None)."""
    message = {"kind": "evaluate", "module": "m", "function": function, "input": input or {"x": [1.0]}}
    if description is not None:
        message["description"] = description
    if error is not None:
        return Exchange(message, {"success": False, "error": error})
    timings = [{"name": "evaluate", "nanoseconds": ns} for ns in nanoseconds]
    response = {"success": True, "output": 1.0, "timings": timings}
    analysis = None if valid is None else {"kind": "analysis", "valid": valid}
    if valid is False:
        analysis["error"] = "Found 1 mismatches, showing 1:\nat [0]: 1.0 != 2.0"
    return Exchange(message, response, analysis)


def session(eval_name: str, *exchanges: Exchange, tool: str = "adcore-reverse", **fields: Any) -> Session:
    return Session(eval_name, tool, define={"id": 1, "success": True}, exchanges=list(exchanges), **fields)


def test_rows_pair_primal_and_gradient_per_workload_with_their_fastest_run() -> None:
    rows = runner.rows_of(
        session(
            "lse",
            exchange("primal", "n=10", (5000, 4000)),
            exchange("gradient", "n=10", (9000, 8000, 8500)),
            exchange("primal", "n=20"),
            exchange("gradient", "n=20", valid=False),
            exchange("primal", "n=40"),
            exchange("gradient", "n=40", error=TRACEBACK),
        )
    )
    assert [(row.size, row.validated) for row in rows] == [("n=10", True), ("n=20", False), ("n=40", False)]
    assert (rows[0].gradient_s, rows[0].primal_s) == (8e-6, 4e-6) and rows[0].error is None
    assert rows[1].error.startswith("Found 1 mismatches")
    assert rows[2].gradient_s is None and rows[2].primal_s == 2e-6 and rows[2].error == TRACEBACK


def test_a_row_is_not_validated_when_the_eval_never_analysed_an_answer() -> None:
    (row,) = runner.rows_of(session("gmm", exchange("objective"), exchange("jacobian", valid=None)))
    assert not row.validated and row.error == "the eval sent no analysis of this answer"


def test_hello_rows_are_named_by_their_input() -> None:
    hello = [
        exchange(function, None, (1000,), input=x)
        for function, x in (("square", 1.0), ("double", 1.0), ("square", 2.0), ("double", 4.0))
    ]
    rows = runner.rows_of(session("hello", *hello))
    assert [(row.size, row.validated) for row in rows] == [("1.0", True), ("2.0", True)]


def test_saddle_and_particle_make_one_gradient_row_per_function() -> None:
    rows = runner.rows_of(session("saddle", *(exchange(f, "w=0") for f in ("rr", "ff", "fr", "rf"))))
    assert [row.size for row in rows] == ["rr", "ff", "fr", "rf"]
    assert all(row.primal_s is None and row.gradient_s == 2e-6 for row in rows)


def test_a_timeout_marks_the_unanswered_workload_with_the_timeout() -> None:
    error = "timeout after 300 s: tool adcore-numeric did not answer evaluate gradient n=20"
    unanswered = exchange("gradient", "n=20").message | {"id": 9}
    rows = runner.rows_of(
        session(
            "lse",
            exchange("primal", "n=10"),
            exchange("gradient", "n=10"),
            exchange("primal", "n=20"),
            error=error,
            timed_out=True,
            unanswered=unanswered,
        )
    )
    assert [(row.size, row.validated, row.error) for row in rows] == [
        ("n=10", True, None),
        ("n=20", False, error),
    ]
    assert rows[1].primal_s == 2e-6


def test_a_tool_that_cannot_run_the_eval_gets_one_row_with_its_reason() -> None:
    refused = Session(
        "ode",
        "adcore-symbolic",
        define={"id": 1, "success": False, "error": "adcore-symbolic cannot run ode: why"},
    )
    (row,) = runner.rows_of(refused)
    assert (row.size, row.validated, row.note, row.error) == (
        "",
        False,
        "adcore-symbolic cannot run ode: why",
        None,
    )
    assert row.to_json() == {
        "eval": "ode",
        "tool": "adcore-symbolic",
        "size": "",
        "validated": False,
        "gradient_s": None,
        "primal_s": None,
        "note": "adcore-symbolic cannot run ode: why",
    }
    crashed = Session("ode", "adcore-reverse", error="tool adcore-reverse exited with code 1 during ode")
    (row,) = runner.rows_of(crashed)
    assert row.error == "tool adcore-reverse exited with code 1 during ode" and row.note is None


def test_json_rows_carry_error_only_when_not_validated() -> None:
    good, bad = runner.rows_of(
        session(
            "lse",
            exchange("primal"),
            exchange("gradient"),
            exchange("primal", "n=20"),
            exchange("gradient", "n=20", valid=False),
        )
    )
    assert set(good.to_json()) == {"eval", "tool", "size", "validated", "gradient_s", "primal_s"}
    assert set(bad.to_json()) == {"eval", "tool", "size", "validated", "gradient_s", "primal_s", "error"}
    json.dumps([good.to_json(), bad.to_json()])


def test_headline_is_a_tracebacks_exception_line() -> None:
    assert (
        runner.headline(TRACEBACK)
        == "adcore.errors.UnsupportedByBackendError: backend 'symbolic' cannot do it"
    )
    assert runner.headline("Found 3 mismatches, showing 3:\n...") == "Found 3 mismatches, showing 3:"
    assert runner.headline("") == ""


def row(tool: str, gradient_s: float | None, validated: bool = True, size: str = "n=10") -> Any:
    return runner.Row("lse", tool, size, validated, gradient_s=gradient_s, primal_s=1e-3)


def test_ratios_divide_an_adcore_gradient_by_each_validated_peer_at_the_same_workload() -> None:
    rows = [
        row("adcore-reverse", 4e-3),
        row("adcore-forward", 8e-3),
        row("pytorch", 2e-3),
        row("jax", 1e-3, validated=False),
        row("jax", 1e-3, size="n=20"),
        row("adcore-reverse", 3e-3, size="n=20"),
    ]
    assert runner.ratios(rows) == {
        ("lse", "n=10", "adcore-reverse"): {"pytorch": 2.0},
        ("lse", "n=10", "adcore-forward"): {"pytorch": 4.0},
        ("lse", "n=20", "adcore-reverse"): {"jax": 3.0},
    }


def rendered(rows: list[Any], notes: tuple[str, ...] = ()) -> str:
    from rich.console import Console

    console = Console(record=True, width=250, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(runner.table(rows, notes))
    return console.export_text()


def test_table_shows_peer_ratio_columns_only_for_the_peers_that_ran() -> None:
    with_peers = rendered(
        [row("adcore-reverse", 4e-3), row("pytorch", 2e-3)], ("jax: not installed (jax does not import)",)
    )
    assert "÷pytorch" in with_peers and "÷jax" not in with_peers.split("jax: not installed")[0]
    (adcore_line,) = [line for line in with_peers.splitlines() if "adcore-reverse" in line]
    assert [cell.strip() for cell in adcore_line.split("│")][4:9] == ["✓", "4 ms", "1 ms", "4", "2"]
    assert "jax: not installed" in with_peers
    alone = rendered([row("adcore-reverse", 4e-3)])
    assert "÷pytorch" not in alone


def test_summary_counts_validated_rows_per_tool() -> None:
    rows = [row("adcore-reverse", 1e-3), row("adcore-reverse", None, validated=False, size="n=20")]
    rows.append(runner.Row("ode", "adcore-symbolic", "", False, note="cannot"))
    line = runner.summary(rows, ["adcore-reverse", "adcore-symbolic"], 12.34)
    assert (
        line
        == "adcore-reverse 1/2 validated · adcore-symbolic 0/0 validated (1 eval it cannot run) · wall 12.3 s"
    )


def test_eval_arguments_add_timing_options_except_to_hello() -> None:
    assert runner.eval_arguments("hello", quick=True, min_seconds=None) == []
    quick = runner.eval_arguments("lse", quick=True, min_seconds=None)
    assert quick[-4:] == ["--min-runs", "1", "--min-seconds", "0"]
    assert runner.eval_arguments("lse", quick=False, min_seconds=None)[-1] == "0.5"
    assert runner.eval_arguments("lse", quick=False, min_seconds=2.0)[-1] == "2"


def test_the_longest_runs_start_first_and_the_rows_keep_the_table_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[str, str]] = []

    def fake_relay(eval_name: str, tool: str, arguments: list[str], **options: Any) -> Session:
        started.append((eval_name, tool))
        return session(eval_name, exchange("gradient", eval_name), tool=tool)

    monkeypatch.setattr(runner, "relay", fake_relay)
    evals = ["hello", "saddle", "lse", "particle"]
    rows = runner.run(evals, ["adcore-reverse", "adcore-forward"], quick=True, jobs=1)
    assert started[:2] == [("particle", "adcore-reverse"), ("saddle", "adcore-reverse")]
    assert sorted(started) == sorted(
        [(e, t) for e in ("hello", "lse") for t in ("adcore-reverse", "adcore-forward")]
        + [("saddle", "adcore-reverse"), ("particle", "adcore-reverse")]
    )
    assert [(row.eval, row.tool) for row in rows] == [
        ("hello", "adcore-reverse"),
        ("hello", "adcore-forward"),
        ("saddle", "adcore-reverse"),
        ("lse", "adcore-reverse"),
        ("lse", "adcore-forward"),
        ("particle", "adcore-reverse"),
    ]


def test_main_writes_json_notes_missing_peers_and_fails_when_adcore_reverse_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    ran: dict[str, Any] = {}

    def fake_run(evals: list[str], tools: list[str], **options: Any) -> list[Any]:
        ran.update(evals=evals, tools=tools, options=options)
        return [row("adcore-reverse", 4e-3), row("adcore-reverse", None, validated=False, size="n=20")]

    monkeypatch.setattr(runner, "run", fake_run)
    monkeypatch.setattr(manual, "ensure_built", lambda: None)
    monkeypatch.setattr(runner.importlib.util, "find_spec", lambda name: None)  # neither torch nor jax
    out = tmp_path / "rows.json"
    status = runner.main(["--evals", "lse", "--compare", "--quick", "--timeout", "9", "--json", str(out)])
    assert status == 1
    assert ran["tools"] == list(runner.ADCORE_TOOLS) and ran["options"]["timeout"] == 9.0
    assert [r["validated"] for r in json.loads(out.read_text())] == [True, False]
    printed = capsys.readouterr().out
    assert "pytorch: not installed (torch does not import)" in printed
    assert "jax-jacfwd: not installed (jax does not import)" in printed


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--scheduler", "local:2", "--jobs", "2"], "--scheduler and --jobs exclude each other"),
        (["--scheduler", "local:0"], "local:N needs a positive number of workers"),
        (["--scheduler", "local:two"], "local:N needs a positive number of workers"),
    ],
)
def test_scheduler_with_jobs_or_without_a_worker_count_is_a_usage_error(
    argv: list[str], says: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as exit:
        runner.parse_arguments(argv)
    assert exit.value.code == 2 and says in capsys.readouterr().err
    assert runner.parse_arguments(["--scheduler", "tcp://10.0.0.1:8786"]).scheduler == "tcp://10.0.0.1:8786"


def test_plot_draws_one_panel_per_eval(tmp_path: Path) -> None:
    rows = [row("adcore-reverse", 4e-3), row("adcore-reverse", 9e-3, size="n=20"), row("pytorch", 2e-3)]
    rows.append(runner.Row("saddle", "adcore-reverse", "rr", True, gradient_s=0.5))
    runner.plot(rows, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# every eval of EVALS whose adcore module is written (all twelve, once they are)
ADCORE_EVALS = [e for e in EVALS if (runner.HERE / "adcore_tool" / f"{e}.py").exists()]


@pytest.mark.slow
def test_quick_run_of_every_eval_validates(tmp_path: Path) -> None:
    """docs/gradbench.md's `run.py --quick`: every adcore-reverse row, and every row a tool ran, validates."""
    if missing := manual.missing_prerequisites():
        pytest.skip(f"the manual tool (the evals' validator) cannot be built: {', '.join(missing)} missing")
    out = tmp_path / "rows.json"
    command = [
        sys.executable,
        str(runner.HERE / "run.py"),
        "--quick",
        "--json",
        str(out),
        "--evals",
        *ADCORE_EVALS,
    ]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600)  # each eval × tool: 180 s
    wall_s = time.monotonic() - started
    assert out.exists(), result.stdout + result.stderr
    rows = json.loads(out.read_text())
    failed = [r for r in rows if not r["validated"] and (r["tool"] == "adcore-reverse" or "note" not in r)]
    assert not failed, "\n".join(
        f"{r['eval']} {r['size']} {r['tool']}: {r.get('error') or r.get('note')}" for r in failed
    )
    assert {r["eval"] for r in rows if r["tool"] == "adcore-reverse"} == set(ADCORE_EVALS)
    assert result.returncode == 0, result.stdout + result.stderr
    print(f"quick run of {len(ADCORE_EVALS)} evals × {len(runner.ADCORE_TOOLS)} adcore tools: {wall_s:.0f} s")
