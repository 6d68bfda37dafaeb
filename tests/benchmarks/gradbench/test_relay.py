"""relay: hello against every adcore backend as GradBench's CLI runs it, its log, and tools that crash or hang."""

from __future__ import annotations

import io
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
import relay
from adcore_tool.backends import BACKENDS  # every adcore tool: adcore-source and adcore-source-compiled too


@pytest.mark.parametrize("backend", BACKENDS)
def test_hello_validates_with_every_backend_and_logs_as_gradbench_does(backend: str) -> None:
    log = io.StringIO()
    session = relay.relay("hello", f"adcore-{backend}", [], log=log, timeout=120)
    assert session.error is None and session.define == {"id": 1, "success": True}
    assert [exchange.message["function"] for exchange in session.exchanges] == ["square", "double"] * 4
    assert all(exchange.analysis["valid"] for exchange in session.exchanges)
    entries = [json.loads(line) for line in log.getvalue().splitlines()]
    assert all(set(entry) in ({"elapsed", "message"}, {"elapsed", "response"}) for entry in entries)
    assert all(set(entry["elapsed"]) == {"nanoseconds"} for entry in entries)
    assert [next(iter(set(entry) - {"elapsed"})) for entry in entries] == ["message", "response"] * (
        len(entries) // 2
    )
    times = [entry["elapsed"]["nanoseconds"] for entry in entries]
    assert times == sorted(times) and all(isinstance(t, int) for t in times)
    assert entries[1]["response"] == {"id": 0, "tool": f"adcore-{backend}"}


FAKE_TOOL = """
import json, sys, time
for line in sys.stdin:
    message = json.loads(line)
    if message["kind"] == "evaluate":
        {on_evaluate}
    print(json.dumps({{"id": message["id"], "success": True}}), flush=True)
"""


def fake_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_evaluate: str) -> None:
    """Make relay start, as the tool named `fake`, a script that answers start and define, then does `on_evaluate`."""
    script = tmp_path / "fake_tool.py"
    script.write_text(textwrap.dedent(FAKE_TOOL).format(on_evaluate=on_evaluate))
    real = relay.tool_command
    monkeypatch.setattr(
        relay, "tool_command", lambda tool: [sys.executable, str(script)] if tool == "fake" else real(tool)
    )


def test_a_tool_that_dies_mid_run_ends_the_session_naming_it_with_its_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path, monkeypatch, 'print("segfault, as it were", file=sys.stderr); sys.exit(3)')
    session = relay.relay("hello", "fake", [], timeout=60)
    # ended by the exit, not by the timeout (timed_out and the message say which)
    assert session.define["success"] is True and session.exchanges == [] and not session.timed_out
    assert session.error.startswith("tool fake exited with code 3 during hello")
    assert session.error.endswith("segfault, as it were")
    assert session.unanswered["function"] == "square"


def test_a_tool_that_does_not_answer_in_time_is_killed_and_the_session_says_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    fake_tool(
        tmp_path,
        monkeypatch,
        f"open({str(pid_file)!r}, 'w').write(str(__import__('os').getpid())); time.sleep(600)",
    )
    session = relay.relay("hello", "fake", [], timeout=3)
    # killed and reaped, not waited for: its process is gone (what a bound on the wall time stood for)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    assert session.timed_out is True
    assert session.error == "timeout after 3 s: tool fake did not answer evaluate square"
    assert session.unanswered["kind"] == "evaluate"


def test_a_tool_writing_something_else_than_json_on_stdout_ends_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path, monkeypatch, 'print("debug: here", flush=True); continue')
    session = relay.relay("hello", "fake", [], timeout=60)
    assert session.error == "tool fake wrote a line that is not a JSON message: 'debug: here'"


def test_an_unknown_tool_is_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        relay.relay("hello", "nope", [])
