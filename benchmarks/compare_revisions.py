"""Before/after in one run: a benchmark script run alternately on two checkouts, figures as ratios.

Run by hand (not part of the tests):

    git worktree add /tmp/before <commit>
    python benchmarks/compare_revisions.py /tmp/before benchmarks/bench_reverse.py [more scripts] [--rounds 3]

Each script runs `rounds` times on each checkout, the two alternating (before, after, before, ...),
so a burst of load on this noisy machine lands on both sides. The "before" side runs with its
checkout's core and plugins first on PYTHONPATH (ahead of the editable install, which Python's path
finder is asked before setuptools' editable finders); the "after" side is the checkout this script
sits in. A printed row is matched by its section and label (the text before its first figure) and its
figures are paired in order; each side keeps its best figure over the rounds (every figure these scripts
print is a time or a ratio of times, where less is better). Rows whose label or count of figures
differ between the sides are left out, and so are rows whose figures are the same on both (sizes,
targets, earlier measurements).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
HERE = Path(__file__).resolve().parent


def python_path(checkout: Path) -> str:
    """The core, every first-party plugin and the example plugin of `checkout`, for PYTHONPATH."""
    roots = [checkout, *sorted((checkout / "plugins").iterdir()), checkout / "examples" / "adcore-special"]
    return os.pathsep.join(str(r) for r in roots if r.is_dir())


def run(script: str, checkout: Path | None) -> str:
    """The script's standard output, run on `checkout` (None: the one this file belongs to)."""
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = python_path(checkout)
    done = subprocess.run(
        [sys.executable, *shlex.split(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE.parent,
        check=False,
    )
    return done.stdout


def figures(output: str) -> dict[str, list[float]]:
    """{row label: its figures} for every printed row that has figures; a label is prefixed by its
    section's number (the scripts number their sections "1.", "2.", ... at the start of a line)."""
    rows, section = {}, ""
    for line in output.splitlines():
        numbered = re.match(r"(\d+)\.\s", line)
        if numbered:
            section = numbered.group(1) + "."
            continue
        found = list(NUMBER.finditer(line))
        label = " ".join(line[: found[0].start()].split()) if found else ""
        if label:
            rows.setdefault(f"{section} {label}".strip(), [float(m.group()) for m in found])
    return rows


def best(runs: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Per row and figure, the least over the rounds (rows present with the same count in every round)."""
    labels = [k for k in runs[0] if all(len(r.get(k, ())) == len(runs[0][k]) for r in runs)]
    return {k: [min(r[k][i] for r in runs) for i in range(len(runs[0][k]))] for k in labels}


def compare(script: str, before: Path, rounds: int) -> None:
    runs_before, runs_after = [], []
    for _ in range(rounds):
        runs_before.append(figures(run(script, before)))
        runs_after.append(figures(run(script, None)))
    old, new = best(runs_before), best(runs_after)
    print(f"\n{script}: after ÷ before, best of {rounds} alternating runs each (< 1 is faster)")
    for label, values in new.items():
        if label not in old or len(old[label]) != len(values) or old[label] == values:
            continue  # a row only one side prints, or constants (sizes, targets, earlier figures)
        cells = [
            f"{b:g} -> {a:g} ({a / b:.2f}x)" if b > 0 else f"{b:g} -> {a:g}"
            for b, a in zip(old[label], values)
        ]
        print(f"  {label[:44]:44}  " + "   ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout of the 'before' revision (git worktree add)")
    parser.add_argument(
        "scripts",
        nargs="+",
        help="benchmark scripts, e.g. benchmarks/bench_reverse.py; quoted with their arguments: 'benchmarks/gradbench/run.py --quick'",
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for script in args.scripts:
        compare(script, args.before.resolve(), args.rounds)


if __name__ == "__main__":
    main()
