"""Start a GradBench eval and a tool as subprocesses and relay their messages, as GradBench's CLI does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"
UPSTREAM_PYTHON = UPSTREAM / "python" / "gradbench"
UPSTREAM_TOOLS = UPSTREAM_PYTHON / "gradbench" / "tools"
ADCORE_BACKENDS = ("reverse", "forward", "symbolic", "numeric")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


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


def tool_command(tool: str) -> list[str]:
    """The command that starts a tool: adcore-<backend>, or GradBench's own pytorch or jax."""
    if tool.startswith("adcore-"):
        backend = tool.removeprefix("adcore-")
        if backend not in ADCORE_BACKENDS:
            raise ValueError(f"unknown adcore backend {backend!r}; choose one of {', '.join(ADCORE_BACKENDS)}")
        return [sys.executable, "-m", "adcore_tool.run", "--backend", backend]
    if tool in ("pytorch", "jax", "jax-jacfwd"):
        return [sys.executable, str(HERE / "peers" / "run.py"), tool]
    raise ValueError(f"unknown tool {tool!r}; choose adcore-<backend>, pytorch, jax or jax-jacfwd")


def environment() -> dict[str, str]:
    """The environment of every subprocess: the vendored gradbench package and adcore's tool on the path."""
    path = os.pathsep.join([str(HERE), str(UPSTREAM_PYTHON), os.environ.get("PYTHONPATH", "")])
    return os.environ | ONE_THREAD | {"PYTHONPATH": path}


def _pin_to_one_core() -> None:
    os.sched_setaffinity(0, [min(os.sched_getaffinity(0))])


def relay(eval_name: str, tool: str, eval_args: list[str], log: IO[str] | None = None) -> Session:
    """Run one eval against one tool; every message and response goes to `log` as GradBench's CLI writes it."""
    env = environment()
    script = UPSTREAM_PYTHON / "gradbench" / "evals" / eval_name / "run.py"
    pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=UPSTREAM)
    eval_proc = subprocess.Popen([sys.executable, str(script), *eval_args], **pipes)
    tool_proc = subprocess.Popen(tool_command(tool), preexec_fn=_pin_to_one_core, **pipes)
    session = Session(eval=eval_name, tool=tool)
    by_id: dict[int, Exchange] = {}
    start = time.perf_counter_ns()
    try:
        for line in eval_proc.stdout:
            message = json.loads(line)
            _log(log, start, "message", line)
            tool_proc.stdin.write(line)
            tool_proc.stdin.flush()
            answer = tool_proc.stdout.readline()
            if not answer:
                raise RuntimeError(f"tool {tool} exited during {eval_name} (exit code {tool_proc.wait()})")
            _log(log, start, "response", answer)
            response = json.loads(answer)
            if message["kind"] == "define":
                session.define = response
            elif message["kind"] == "evaluate":
                by_id[message["id"]] = exchange = Exchange(message, response)
                session.exchanges.append(exchange)
            elif message["kind"] == "analysis" and message["of"] in by_id:
                by_id[message["of"]].analysis = message
            if message["kind"] != "end":
                eval_proc.stdin.write(answer)
                eval_proc.stdin.flush()
    finally:
        for proc in (eval_proc, tool_proc):
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return session


def _log(log: IO[str] | None, start: int, kind: str, line: str) -> None:
    if log is not None:
        log.write(f'{{ "elapsed": {{ "nanoseconds": {time.perf_counter_ns() - start} }}, "{kind}": {line.strip()} }}\n')
