"""run.py --scheduler: the rows of a Dask run equal the thread path's, a pair whose workers keep dying is a
failed row, every run holds a core of its own, and the thread path never imports Dask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradbench_run as runner
import manual
import on_dask
import pytest
from relay import Session

CHEAP_EVALS = ["hello", "det"]  # the quick workloads that take well under a second per tool
# Two tools are enough to check that Dask's rows come back in the thread path's order (by eval, then
# tool): the Dask path passes the tool's name through to relay like the thread path, and test_run's
# quick run already validates every adcore tool on these evals (all six here made 24 runs, ~14 s).
TOOLS = ["adcore-reverse", "adcore-forward"]


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One 2-worker LocalCluster for the module, as local:2 makes it; a task is given up after its second
    worker dies (Dask's default: its fourth)."""
    pytest.importorskip("distributed")
    import dask
    from distributed import LocalCluster

    with (
        dask.config.set(
            {"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}
        ),
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
    ):
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def manual_built() -> None:
    if missing := manual.missing_prerequisites():
        pytest.skip(f"the manual tool (the evals' validator) cannot be built: {', '.join(missing)} missing")
    manual.ensure_built()


def without_times(rows: list[Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.to_json().items() if k not in ("gradient_s", "primal_s")} for row in rows]


def test_rows_on_dask_equal_the_thread_paths_and_their_logs_come_back(
    scheduler: str, manual_built: None, tmp_path: Path
) -> None:
    tools = TOOLS
    threads = runner.run(CHEAP_EVALS, tools, quick=True, jobs=2)
    lines: list[str] = []
    on_dask = runner.run(
        CHEAP_EVALS, tools, quick=True, scheduler=scheduler, log_dir=tmp_path, progress=lines.append
    )
    assert without_times(on_dask) == without_times(threads)
    assert len(threads) == len(tools) * 5 and all(
        row.validated for row in threads
    )  # hello: 4 workloads, det: 1
    assert all(row.gradient_s is not None for row in on_dask)  # the times came back too
    for eval_name in CHEAP_EVALS:
        for tool in tools:
            log = [
                json.loads(line) for line in (tmp_path / eval_name / f"{tool}.jsonl").read_text().splitlines()
            ]
            assert log[0]["message"]["kind"] == "start" and any("response" in entry for entry in log)
    # each line names the core its tool ran on: one of this machine's, as the worker's own affinity has them
    cores = {int(line.rsplit(" core ", 1)[1]) for line in lines}
    assert len(lines) == len(tools) * len(CHEAP_EVALS) and cores <= os.sched_getaffinity(0)


def test_a_pair_whose_workers_keep_dying_is_a_failed_row_and_one_that_died_once_is_rerun(
    scheduler: str, manual_built: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    died_once = tmp_path / "died once"

    def dying(eval_name: str, tool: str, arguments: list[str], timeout: Any, keep_log: bool) -> Any:
        # defined here, so Dask sends it by value; it kills its worker's process as a crash would
        if tool == "always-dies" or not died_once.exists():
            died_once.touch()
            os._exit(1)
        return Session(eval_name, tool, define={"success": True}), None, "here", 0.0

    monkeypatch.setattr(on_dask, "relay_on_worker", dying)
    # one pair at a time: a worker's death counts against every pair Dask gave it, run or not yet
    ((rerun, _, _),) = on_dask.sessions(scheduler, [("hello", "dies-once", [])], 60, None)
    assert died_once.exists() and rerun.error is None and rerun.define == {"success": True}
    ((given_up, _, _),) = on_dask.sessions(scheduler, [("hello", "always-dies", [])], 60, None)
    error = given_up.error
    assert error.startswith(
        "every Dask worker that ran hello × always-dies died, and Dask stopped retrying it"
    )
    assert "KilledWorker" in error or "2 different workers" in error
    (row,) = runner.rows_of(given_up)
    assert (row.validated, row.error) == (False, error)
    monkeypatch.undo()
    ((session, _, _),) = on_dask.sessions(scheduler, [("hello", "adcore-reverse", [])], 60, None)
    assert session.error is None and len(session.exchanges) == 8  # the next run, on restarted workers, works


def test_every_run_on_a_machine_holds_a_core_no_other_run_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    monkeypatch.setattr(on_dask, "CORE_LOCKS", tmp_path)
    cores = sorted(os.sched_getaffinity(0))
    with on_dask.own_core() as first, on_dask.own_core() as second:
        assert first != second and {first, second} <= {(i, cpu) for i, cpu in enumerate(cores)}
    with on_dask.own_core() as again:  # both ended: the first core is free again
        assert again == first


class WorkerWithoutCompiler:
    """A client of a cluster whose one worker cannot build the manual tool (the parts prepare_hosts calls)."""

    def run_on_scheduler(self, function: Any, *args: Any) -> Any:
        return function(*args)

    def wait_for_workers(self, n_workers: int, timeout: float) -> None:
        pass

    def scheduler_info(self) -> dict[str, Any]:
        return {"workers": {"tcp://10.0.0.2:4000": {"host": "10.0.0.2"}}}

    def run(self, function: Any, workers: list[str], on_error: str) -> dict[str, Any]:
        return {workers[0]: manual.ManualBuildError("GradBench's manual tool needs g++ to build")}


def test_a_worker_that_cannot_build_the_manual_tool_stops_the_run_naming_it() -> None:
    with pytest.raises(on_dask.ClusterNotReadyError) as error:
        on_dask.prepare_hosts(WorkerWithoutCompiler())
    assert str(error.value).startswith(
        "the Dask worker at tcp://10.0.0.2:4000 cannot run GradBench: ManualBuildError: "
        "GradBench's manual tool needs g++ to build"
    )
    assert "PYTHONPATH=benchmarks/gradbench dask worker ADDRESS --nthreads 1" in str(error.value)


def test_without_dask_the_scheduler_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    monkeypatch.setattr(manual, "ensure_built", lambda: None)
    assert runner.main(["--evals", "hello", "--scheduler", "local:1"]) == 2
    printed = " ".join(capsys.readouterr().out.split())
    assert "--scheduler runs GradBench on Dask, which is not installed" in printed
    assert "pip install 'adcore[distributed]'" in printed


def test_a_run_without_scheduler_never_imports_dask(manual_built: None) -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('gradbench_run', {str(runner.HERE / 'run.py')!r})\n"
        "run = sys.modules['gradbench_run'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(run)\n"
        "(row, *_) = run.run(['hello'], ['adcore-reverse'], quick=True)\n"
        "print(row.validated, sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["True", "[]"], result.stdout + result.stderr
