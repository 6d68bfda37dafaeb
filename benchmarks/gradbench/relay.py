"""Start a GradBench eval and a tool as subprocesses and relay their messages, as GradBench's CLI does."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from adcore_tool.backends import BACKENDS  # the adcore tools (adcore-<name>)

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"
UPSTREAM_PYTHON = UPSTREAM / "python" / "gradbench"
UPSTREAM_TOOLS = UPSTREAM_PYTHON / "gradbench" / "tools"
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}


@dataclass
class Exchange:
    """One evaluate message, the tool's response and the eval's analysis of it."""

    message: dict[str, Any]
    response: dict[str, Any]
    analysis: dict[str, Any] | None = None


@dataclass
class Session:
    """What one eval × tool run said: the define response and every evaluate exchange."""

    eval: str
    tool: str
    define: dict[str, Any] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)
    error: str | None = None  # why the run ended early (a process died, or the timeout), else None
    timed_out: bool = False
    unanswered: dict[str, Any] | None = None  # the message the tool never answered, when it did not


def tool_command(tool: str) -> list[str]:
    """The command that starts a tool: adcore-<backend>, or GradBench's own pytorch or jax."""
    if tool.startswith("adcore-"):
        backend = tool.removeprefix("adcore-")
        if backend not in BACKENDS:
            raise ValueError(f"unknown adcore backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        return [sys.executable, "-m", "adcore_tool.run", "--backend", backend]
    if tool in ("pytorch", "jax", "jax-jacfwd"):
        return [sys.executable, str(HERE / "peers" / "run.py"), tool]
    raise ValueError(f"unknown tool {tool!r}; choose adcore-<backend>, pytorch, jax or jax-jacfwd")


def environment() -> dict[str, str]:
    """The environment of every subprocess: the vendored gradbench package and adcore's tool on the path."""
    path = os.pathsep.join([str(HERE), str(UPSTREAM_PYTHON), os.environ.get("PYTHONPATH", "")])
    return os.environ | ONE_THREAD | {"PYTHONPATH": path}


def _pin_to_one_core(pid: int, core: int) -> None:
    """Pin a process to one core (set after it starts: a preexec_fn is unsafe once relay's threads run)."""
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(pid, [cores[core % len(cores)]])


class _Lines:
    """A process's stdout read on a thread, so the relay can wait for its next line with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._queue.put(line)
        except (OSError, ValueError):  # the pipe closed under the thread when the process was killed
            pass
        self._queue.put("")

    def next(self, deadline: float | None) -> str | None:
        """The next line, "" at the end of the stream, None when the deadline (time.monotonic) passes first."""
        try:
            return self._queue.get(
                timeout=None if deadline is None else max(deadline - time.monotonic(), 0.0)
            )
        except queue.Empty:
            return None


class _Ended(Exception):
    """The run ended before the eval finished; the message says why."""

    def __init__(self, reason: str, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


def relay(
    eval_name: str,
    tool: str,
    eval_args: list[str],
    log: IO[str] | None = None,
    timeout: float | None = None,
    core: int = 0,
) -> Session:
    """Run one eval against one tool; every message and response goes to `log` as GradBench's CLI writes it.

    `timeout` (seconds) bounds the whole run: when the tool, or the eval, has not answered by then,
    both processes are killed and the session is `timed_out`, with `error` saying "timeout after N s".
    A process that dies mid-run ends the session too, with its exit code and the tail of its stderr
    in `error`. relay raises for nothing the tool or the eval does. The tool runs on the `core`-th
    of this process's cores (runs side by side take different ones).
    """
    session = Session(eval=eval_name, tool=tool)
    deadline = None if timeout is None else time.monotonic() + timeout
    script = UPSTREAM_PYTHON / "gradbench" / "evals" / eval_name / "run.py"
    command = tool_command(tool)  # an unknown tool is the caller's error: raise before starting anything
    with tempfile.TemporaryFile("w+") as eval_err, tempfile.TemporaryFile("w+") as tool_err:
        pipes = dict(
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment(), cwd=UPSTREAM
        )
        eval_proc = subprocess.Popen([sys.executable, str(script), *eval_args], stderr=eval_err, **pipes)
        tool_proc = subprocess.Popen(command, stderr=tool_err, **pipes)
        _pin_to_one_core(tool_proc.pid, core)
        eval_lines, tool_lines = _Lines(eval_proc.stdout), _Lines(tool_proc.stdout)

        def died(name: str, proc: subprocess.Popen, stderr: IO[str]) -> _Ended:
            return _Ended(f"{name} exited with code {_exit_code(proc)} during {eval_name}{_tail(stderr)}")

        def send(line: str, name: str, proc: subprocess.Popen, stderr: IO[str]) -> None:
            try:
                proc.stdin.write(line)
                proc.stdin.flush()
            except OSError:  # BrokenPipeError: the process is gone
                raise died(name, proc, stderr) from None

        by_id: dict[int, Exchange] = {}
        start = time.perf_counter_ns()
        try:
            while line := eval_lines.next(deadline):
                message = _parse(line, f"eval {eval_name}")
                _log(log, start, "message", line)
                send(line, f"tool {tool}", tool_proc, tool_err)
                if message["kind"] == "end":
                    break
                answer = tool_lines.next(deadline)
                if not answer:
                    session.unanswered = message
                    if answer is None:
                        raise _Ended(
                            f"timeout after {timeout:g} s: tool {tool} did not answer {_what(message)}", True
                        )
                    raise died(f"tool {tool}", tool_proc, tool_err)
                _log(log, start, "response", answer)
                response = _parse(answer, f"tool {tool}")
                if message["kind"] == "define":
                    session.define = response
                elif message["kind"] == "evaluate":
                    by_id[message["id"]] = exchange = Exchange(message, response)
                    session.exchanges.append(exchange)
                elif message["kind"] == "analysis" and message["of"] in by_id:
                    by_id[message["of"]].analysis = message
                send(answer, f"eval {eval_name}", eval_proc, eval_err)
            if line is None:
                raise _Ended(
                    f"timeout after {timeout:g} s: eval {eval_name} did not send its next message", True
                )
            if _exit_code(eval_proc) != 0:
                raise died(f"eval {eval_name}", eval_proc, eval_err)
        except _Ended as ended:
            session.error, session.timed_out = str(ended), ended.timed_out
        finally:
            _stop(eval_proc, tool_proc, kill=session.error is not None)
    return session


def _parse(line: str, sender: str) -> dict[str, Any]:
    """One protocol line as JSON; a line that is not JSON (a stray print on stdout) ends the run."""
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        raise _Ended(f"{sender} wrote a line that is not a JSON message: {line.strip()[:200]!r}") from None


def _what(message: dict[str, Any]) -> str:
    """A message as the error names it: its kind, and for an evaluate its function and description."""
    if message["kind"] != "evaluate":
        return message["kind"]
    return " ".join(
        str(part) for part in ("evaluate", message["function"], message.get("description")) if part
    )


def _exit_code(proc: subprocess.Popen, grace: float = 10.0) -> int | None:
    """The process's exit code once it has exited (None if it is still running after `grace` seconds)."""
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        return None


def _tail(stderr: IO[str], lines: int = 15) -> str:
    """The last lines a process wrote to its stderr file, to end an error message with, or nothing."""
    stderr.flush()
    stderr.seek(0)
    text = stderr.read().rstrip()
    if not text:
        return ""
    return "; its stderr ends:\n" + "\n".join(text.splitlines()[-lines:])


def _stop(*procs: subprocess.Popen, kill: bool) -> None:
    """End the processes: close their stdin and let them exit, or kill them (a failed or timed-out run)."""
    for proc in procs:
        if kill:
            proc.kill()
        try:
            proc.stdin.close()
        except OSError:
            pass
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _log(log: IO[str] | None, start: int, kind: str, line: str) -> None:
    if log is not None:
        log.write(
            f'{{ "elapsed": {{ "nanoseconds": {time.perf_counter_ns() - start} }}, "{kind}": {line.strip()} }}\n'
        )
