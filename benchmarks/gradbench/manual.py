"""Build GradBench's `manual` tool, the C++ golden implementation the evals validate against.

`python benchmarks/gradbench/manual.py` builds it; `ensure_built()` is what the runner calls first.
make rebuilds only the binaries older than their sources, so a warm call takes well under a second.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

UPSTREAM = Path(__file__).resolve().parent / "upstream"
MANUAL = UPSTREAM / "tools" / "manual"
EVALS = UPSTREAM / "python" / "gradbench" / "gradbench" / "evals"
# Debian's nlohmann-json3-dev; it is multi-header, so the include path is its directory, not a copy of the file
JSON_HPP = Path("/usr/include/nlohmann/json.hpp")
INSTALL_HINT = "apt-get install g++ make nlohmann-json3-dev"


class ManualBuildError(RuntimeError):
    """The manual tool could not be built: a missing compiler or header, or a compile error."""


def missing_prerequisites() -> list[str]:
    """What the build needs and this machine lacks (empty when it can build)."""
    missing = [program for program in ("g++", "make") if shutil.which(program) is None]
    if not JSON_HPP.is_file():
        missing.append(str(JSON_HPP))
    return missing


def validated_evals() -> list[str]:
    """The evals that validate against the manual tool (their run.py calls it), in name order."""
    return sorted(
        script.parent.name for script in EVALS.glob("*/run.py") if 'tool="manual"' in script.read_text()
    )


def build_command() -> list[str]:
    """make, in GradBench's manual tool, for this machine's portable (not -march=native) single-thread build
    of the binaries the evals validate against (not hello's: its eval checks its answers itself).

    -O1, not upstream's -O3: the binaries only validate, and on every --quick and default workload
    (76 evaluations) their outputs are byte-identical to -O3's and take as long (1.09 s for all of
    them, -O3 1.05 s), while the build, done on every clean clone (CI), takes 27 s of CPU, not 38 s."""
    flags = f"-std=c++17 -O1 -Wall -Wno-unknown-pragmas -I../../cpp -I{JSON_HPP.parent}"
    targets = [f"bin/{name}" for name in validated_evals()]
    return ["make", "-C", str(MANUAL), "-j2", "NATIVE=no", "CXX=g++", f"CXXFLAGS={flags}", *targets]


def ensure_built() -> None:
    """Build every binary of the manual tool that is missing or older than its source; raise when it cannot."""
    missing = missing_prerequisites()
    if missing:
        raise ManualBuildError(
            f"GradBench's manual tool needs {', '.join(missing)} to build; install them with `{INSTALL_HINT}`"
        )
    result = subprocess.run(build_command(), capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise ManualBuildError(
            f"building GradBench's manual tool failed (make exit {result.returncode}):\n{tail}"
        )


if __name__ == "__main__":
    ensure_built()
    print(f"GradBench's manual tool is built in {MANUAL / 'bin'}")
