"""Conformance on a Dask cluster (adcore.conformance.distributed): the serial report to the bit,
dead workers' tasks run again, a task that kills every worker named, plugins that differ refused."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adcore import cli, plugins
from adcore.conformance import distributed, engine, report
from adcore.conformance.distributed import LOCAL_CLUSTER_CONFIG
from adcore.conformance.engine import Unit
from adcore.errors import DistributedError, InvalidValueError, MissingDependencyError

dask_distributed = pytest.importorskip("distributed")

OPS = ["sin", "exp", "multiply", "matmul"]
CASES = ["seed_example"]
DTYPES = ("float64", "float32")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of one 2-worker LocalCluster for the module; a task may die once and run again."""
    import dask

    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        dask_distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
    ):
        yield cluster.scheduler_address


def without_timings(result: engine.Report) -> dict:
    parsed = json.loads(report.to_json(result))
    assert parsed.pop("seconds") == result.seconds > 0
    parsed["summary"] = re.sub(r" in [0-9.]+ s", "", parsed["summary"])
    return parsed


def test_the_report_on_a_cluster_is_the_serial_report_bit_for_bit(scheduler: str) -> None:
    serial = engine.run(ops=OPS, cases=CASES, dtypes=DTYPES, jobs=1)
    units: list[Unit] = []
    on_cluster = engine.run(ops=OPS, cases=CASES, dtypes=DTYPES, scheduler=scheduler, progress=units.append)
    expected = without_timings(serial)
    assert not any("seconds" in key for key in expected)  # the timings, taken out above
    # the comparison has something to compare: every cell checked, with numbers
    assert len(expected["cells"]) == len(OPS + CASES) * len(DTYPES) * len(serial.backends) > 0
    assert all(c["checks"] > 0 for c in expected["cells"])
    assert any(isinstance((c["worst"] or {}).get("abs_error"), float) for c in expected["cells"])
    assert len(expected["vmap"]) == len(OPS + CASES) * len(DTYPES)
    assert without_timings(on_cluster) == expected
    assert sorted((u.name, u.dtype) for u in units) == sorted(
        (u.name, u.dtype) for u in engine.plan(ops=OPS, cases=CASES, dtypes=DTYPES).units
    )  # progress heard of every unit, once


def test_the_command_runs_on_the_scheduler_it_is_given(scheduler: str, tmp_path: Path) -> None:
    output = tmp_path / "report.json"
    argv = ["conformance", "--op", "sin", "--dtype", "float32", "--format", "json", "--output", str(output)]
    assert cli.main([*argv, "--scheduler", scheduler]) == 0
    on_cluster = json.loads(output.read_text())
    assert cli.main([*argv, "--jobs", "1"]) == 0
    serial = json.loads(output.read_text())
    assert on_cluster["cells"] == serial["cells"] and len(serial["cells"]) > 1


def test_a_task_that_kills_its_worker_once_is_run_again(scheduler: str, tmp_path: Path) -> None:
    def die_the_first_time(marker: str) -> str:
        if not Path(marker).exists():
            Path(marker).write_text("died once")
            os._exit(1)  # the worker process ends here, as in a segfault
        return f"ran again after: {Path(marker).read_text()}"

    marker = str(tmp_path / "marker")
    results = list(distributed.map_on_cluster(die_the_first_time, [marker], scheduler, describe=str))
    assert results == ["ran again after: died once"]


def test_a_local_clusters_workers_run_with_less_upkeep_and_their_setup_frozen(scheduler: str) -> None:
    # Dask's profiler samples the running thread every 10 ms: the full report took 99 s on
    # local:2 with it, 82 s without (161 s in one process)
    def upkeep(task: int) -> tuple[list[str], dict[str, Any], int]:
        import dask
        from distributed import get_worker

        profiling = sorted(name for name in get_worker().periodic_callbacks if name.startswith("profile"))
        return profiling, {key: dask.config.get(key) for key in LOCAL_CLUSTER_CONFIG}, gc.get_freeze_count()

    ((profiling, config, frozen),) = distributed.map_on_cluster(upkeep, [0], "local:1", describe=str)
    assert profiling == [] and config == LOCAL_CLUSTER_CONFIG
    assert frozen > 1000  # Dask's, adcore's and the plugins' objects
    # a cluster the run did not start is left as its owner set it up
    ((profiling, config, frozen),) = distributed.map_on_cluster(upkeep, [0], scheduler, describe=str)
    assert profiling and config != LOCAL_CLUSTER_CONFIG and frozen == 0


def test_a_task_that_kills_every_worker_ends_the_run_naming_its_units(scheduler: str) -> None:
    def always_die(units: list[Unit]) -> None:
        os._exit(1)

    batch = [Unit("op", "sin", "float64", ("reverse",)), Unit("op", "sin", "float32", ("reverse",))]
    with pytest.raises(DistributedError) as error:
        list(distributed.map_on_cluster(always_die, [batch], scheduler))
    message = str(error.value)
    assert "sin (float64), sin (float32)" in message
    assert "adcore conformance --op sin --dtype float64 --dtype float32 --jobs 1" in message
    assert isinstance(error.value.__cause__, dask_distributed.KilledWorker)
    # the next run works
    assert engine.run(ops=["sin"], dtypes=("float64",), scheduler=scheduler).ok


def test_a_task_that_raises_raises_as_the_serial_run_would(scheduler: str) -> None:
    def raise_value_error(units: list[Unit]) -> None:
        raise ValueError("the unit's own error")

    batch = [Unit("case", "seed_example", "float32", ("reverse",), seed=3)]
    with pytest.raises(ValueError, match="the unit's own error") as error:
        list(distributed.map_on_cluster(raise_value_error, [batch], scheduler))
    assert not isinstance(error.value, DistributedError)  # not retried, not wrapped
    assert any("seed_example (float32)" in n and "--case seed_example" in n for n in error.value.__notes__)
    assert any("--seed 3" in n for n in error.value.__notes__)


class HandMade:
    """A plugin registered by hand: no distribution, so no worker has it."""


def test_a_plugin_registered_by_hand_is_refused_before_anything_is_sent(
    scheduler: str, register_plugin
) -> None:
    register_plugin(HandMade(), "handmade")
    with pytest.raises(DistributedError, match="plugin 'handmade' was registered by hand"):
        engine.run(ops=["sin"], dtypes=("float64",), scheduler=scheduler)
    plugins.unregister_plugin("handmade")
    assert engine.run(ops=["sin"], dtypes=("float64",), scheduler=scheduler).ok


def test_workers_with_other_plugins_are_refused_naming_the_plugin(
    scheduler: str, clean_plugins: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # this process blocks a plugin the workers (started before) load: their report would differ
    blocked = max(n for n, r in plugins.get_registry().plugins.items() if r.dist and n != "core")
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", blocked)
    plugins.reset()
    with pytest.raises(
        DistributedError, match=rf"plugin '{blocked}' \(.*\) is loaded on the Dask worker tcp://"
    ):
        engine.run(ops=["sin"], dtypes=("float64",), scheduler=scheduler)
    monkeypatch.delenv("ADCORE_BLOCK_PLUGINS")
    plugins.reset()
    assert engine.run(ops=["sin"], dtypes=("float64",), scheduler=scheduler).ok


def test_an_unreachable_scheduler_is_an_error_naming_its_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 0.5)
    with pytest.raises(DistributedError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:1 "):
        engine.run(ops=["sin"], dtypes=("float64",), scheduler="tcp://127.0.0.1:1")


@pytest.mark.parametrize("text", ["local:0", "local:-2", "local:", "local:x", "localhost", "", "tcp//host:1"])
def test_what_is_not_a_scheduler_is_refused(text: str) -> None:
    with pytest.raises(InvalidValueError, match="--scheduler"):
        distributed.local_workers(text)


def test_scheduler_forms() -> None:
    assert distributed.local_workers("local:3") == 3
    assert distributed.local_workers("tcp://10.0.0.1:8786") is None
    assert distributed.local_workers("scheduler-host:8786") is None


def test_jobs_and_a_scheduler_exclude_each_other() -> None:
    with pytest.raises(InvalidValueError, match="exclude each other"):
        engine.run(ops=["sin"], jobs=2, scheduler="local:1")


def test_adcore_and_a_run_without_a_scheduler_never_import_dask(tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "import adcore\n"
        "after_import = sorted(m for m in ('dask', 'distributed') if m in sys.modules)\n"
        "from adcore import cli\n"
        f"status = cli.main(['conformance', '--op', 'sin', '--dtype', 'float32', '--jobs', '1', "
        f"'--format', 'json', '--output', {str(tmp_path / 'r.json')!r}])\n"
        "print(json.dumps([after_import, status, sorted(m for m in ('dask', 'distributed') if m in sys.modules)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == [[], 0, []]


def test_without_dask_a_scheduler_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'adcore\[distributed\]'"):
        engine.run(ops=["sin"], dtypes=("float64",), scheduler="local:1")
    monkeypatch.undo()
    assert engine.run(ops=["sin"], dtypes=("float64",), jobs=1).ok
