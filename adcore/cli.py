"""The `adcore` command: `adcore example` and `adcore plugins`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import TextIO

import adcore
import adcore.numpy as anp
from adcore.plugins import get_registry

# seed 001 (前向模式, 反向模式): f(x1, x2) = ln(x1) + x1*x2 - sin(x2) at (2, 5)
SEED_POINT = (2.0, 5.0)
SEED_GRADIENT = (1 / 2 + 5, 2 - math.cos(5))  # (1/x1 + x2, x1 - cos(x2)) = (5.5, 1.7163378145...)


def seed_function(x1, x2):
    return anp.log(x1) + x1 * x2 - anp.sin(x2)


def example(out: TextIO | None = None) -> int:
    """Differentiate the seeds' example with every installed backend and print a table."""
    out = out or sys.stdout
    rows = []
    failed = False
    for name in adcore.backends():
        try:
            g1, g2 = adcore.grad(seed_function, argnums=(0, 1), backend=name)(*SEED_POINT)
            error = max(abs(float(g1) - SEED_GRADIENT[0]), abs(float(g2) - SEED_GRADIENT[1]))
            ok = error < 1e-6
            rows.append(
                (name, f"{float(g1):.12f}", f"{float(g2):.12f}", f"{error:.1e}", "ok" if ok else "WRONG")
            )
        except Exception as e:  # one broken backend must not hide the others
            ok = False
            rows.append((name, "-", "-", "-", f"error: {type(e).__name__}: {e}"))
        failed |= not ok
    header = ("backend", "df/dx1", "df/dx2", "max error", "status")
    exact = ("exact", f"{SEED_GRADIENT[0]:.12f}", f"{SEED_GRADIENT[1]:.12f}", "", "")
    print("f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (x1, x2) = (2, 5)", file=out)
    _print_table([header, exact, *rows], out)
    if not rows:
        print("no backend is installed: pip install -e plugins/reverse", file=out)
        return 1
    return 1 if failed else 0


def plugins(as_json: bool = False, out: TextIO | None = None) -> int:
    """List each plugin: version, hooks, what it registered, and what failed."""
    out = out or sys.stdout
    records = list(get_registry().plugins.values())
    if as_json:
        json.dump([vars(r) for r in records], out, indent=2, default=list)
        print(file=out)
        return 0
    rows = [("plugin", "version", "hooks", "ops", "rules", "backends", "status")]
    for r in records:
        hooks = ", ".join(h.removeprefix("adcore_register_") for h in r.hooks)
        rules, backends = str(len(r.rules)), ", ".join(r.backends)
        rows.append((r.name, r.version, hooks, str(len(r.ops)), rules, backends, r.error or "ok"))
    _print_table(rows, out)
    return 0


def _print_table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip(), file=out)
        if k == 0:
            print("  ".join("-" * w for w in widths), file=out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="adcore", description=adcore.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("example", help="differentiate the seeds' example with every installed backend")
    listing = commands.add_parser("plugins", help="list loaded plugins and what they registered")
    listing.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    if args.command == "example":
        return example()
    return plugins(as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
