"""The GradBench benchmark's modules on the path: relay, manual, adcore_tool, the vendored gradbench package,
and the runner (benchmarks/gradbench/run.py) as the module `gradbench_run`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

GRADBENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "gradbench"

for path in (GRADBENCH, GRADBENCH / "upstream" / "python" / "gradbench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

if "gradbench_run" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("gradbench_run", GRADBENCH / "run.py")
    _runner = importlib.util.module_from_spec(_spec)
    sys.modules["gradbench_run"] = _runner
    _spec.loader.exec_module(_runner)
