"""The full conformance report on a 2-worker Dask LocalCluster against one process, on this machine.

Run by hand (not part of the tests), with adcore[distributed] installed:

    python benchmarks/bench_conformance_dask.py            # about 3 minutes on two cores
    python benchmarks/bench_conformance_dask.py --op sin   # any `adcore conformance` options narrow both runs

Each run is the command itself, a process of its own, timed wall to wall (start-up, the plugins'
imports, the cluster's start and its workers' imports included): `adcore conformance --jobs 1`,
the anchor, then `adcore conformance --scheduler local:2`. One run each, since a run is minutes
long; the load average is printed beside them, since the machine may be shared. The target (issue
37): the cluster's wall time <= 0.6x the serial one. Then the two JSON reports are compared: they
must be equal but for their timings (the report's `seconds`, and the summary line's "in N s").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET = 0.6  # the cluster's wall time over the serial one
RUNS = {"--jobs 1": ["--jobs", "1"], "--scheduler local:2": ["--scheduler", "local:2"]}
ANCHOR = "--jobs 1"
ADCORE = shutil.which("adcore") or sys.exit("no `adcore` command on PATH: pip install -e '.[distributed]'")


def run(options: list[str], extra: list[str], output: Path) -> tuple[float, int]:
    """Wall seconds and exit status of one `adcore conformance` writing its JSON report to `output`."""
    command = [ADCORE, "conformance", *extra, *options, "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--output", str(output)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    seconds = time.perf_counter() - start
    if not output.exists():  # a failing cell exits 1 with a report; no report is the run failing
        sys.exit(
            f"{' '.join(command)} wrote no report (exit {done.returncode}):\n{done.stderr.decode()[-2000:]}"
        )
    return seconds, done.returncode


def untimed(path: Path) -> dict[str, Any]:
    """The JSON report without its timings."""
    report = json.loads(path.read_text(encoding="utf-8"))
    report.pop("seconds")
    report["summary"] = re.sub(r" in [\d.]+ s\b", "", report["summary"])
    return report


def first_difference(a: Any, b: Any, where: str = "report") -> str:
    """Where two JSON values first differ, or ""."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if (
                found := first_difference(a.get(key), b.get(key), f"{where}.{key}")
            ) or key not in a.keys() & b.keys():
                return found or f"{where}.{key}: only in one report"
        return ""
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            cell = (
                " ".join(str(x.get(k)) for k in ("subject", "backend", "dtype"))
                if isinstance(x, dict)
                else ""
            )
            if found := first_difference(x, y, f"{where}[{i}{': ' + cell if cell else ''}]"):
                return found
        return "" if len(a) == len(b) else f"{where}: {len(a)} entries against {len(b)}"
    return "" if a == b else f"{where}: {a!r} against {b!r}"


def main(extra: list[str]) -> None:
    print(f"adcore conformance {' '.join(extra)} on {os.cpu_count()} cores; load average before: {_load()}")
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for name, options in RUNS.items():
            path = Path(folder) / f"{name.split()[-1].replace(':', '')}.json"
            results[name] = (*run(options, extra, path), path)
        load = _load()
        anchor = results[ANCHOR][0]
        print(f"\n  {'run':24} {'wall s':>8} {'exit':>5} {'÷ serial':>9} {'target':>10}")
        for name, (seconds, status, _) in results.items():
            ratio = seconds / anchor
            target = "-" if name == ANCHOR else f"<= {TARGET} {'ok' if ratio <= TARGET else 'MISS'}"
            print(f"  {name:24} {seconds:8.1f} {status:5d} {ratio:9.2f} {target:>10}")
        print(f"\nload average after: {load}")
        reports = [untimed(path) for _, _, path in results.values()]
        difference = first_difference(*reports)
        print(f"JSON reports equal except timings: {'yes' if not difference else 'NO, ' + difference}")
        if difference:
            sys.exit(1)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main(sys.argv[1:])
