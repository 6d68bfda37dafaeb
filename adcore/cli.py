"""The `adcore` command: conformance, plugins, rules and example."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import adcore
import adcore.numpy as anp
from adcore.errors import DistributedError, InvalidValueError, MissingDependencyError
from adcore.plugins import get_registry

# seed 001 (前向模式, 反向模式): f(x1, x2) = ln(x1) + x1*x2 - sin(x2) at (2, 5)
SEED_POINT = (2.0, 5.0)
SEED_GRADIENT = (1 / 2 + 5, 2 - math.cos(5))  # (1/x1 + x2, x1 - cos(x2)) = (5.5, 1.7163378145...)
FORMATS = ("table", "json", "markdown", "html")


def seed_function(x1, x2):
    return anp.log(x1) + x1 * x2 - anp.sin(x2)


def _console(out: TextIO | None):
    """A rich console on `out` (stdout); as wide as the terminal, or 160 columns in a file or pipe."""
    from rich.console import Console

    terminal = (out or sys.stdout).isatty()
    return Console(file=out, width=None if terminal else 160, highlight=False)


def _table(*columns: str, title: str | None = None):
    from rich.table import Table

    table = Table(*columns, title=title, title_justify="left", header_style="bold")
    return table


def conformance(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the conformance suite; exit status 1 if any cell disagrees or errs."""
    from adcore.conformance import engine, progress, report

    console = _console(out)
    # the plan main() made while checking the names, else made here: once per run either way
    work = getattr(args, "work", None) or engine.plan(
        args.backend, args.op, args.case, args.dtype or engine.DTYPES, args.seed
    )
    scheduler = getattr(args, "scheduler", None)
    with progress.shown(work, args.jobs, scheduler) as advance:
        result = engine.run(work=work, fuzz=args.fuzz, jobs=args.jobs, scheduler=scheduler, progress=advance)
    report.write(result, args.format, args.output, console=console)
    if args.output or args.format != "table":
        print(result.summary(), file=sys.stderr)
    return 0 if result.ok else 1


def usable_cores() -> int:
    """How many cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def example(out: TextIO | None = None) -> int:
    """Differentiate the seeds' example with every installed backend and print a table; a pattern
    backend's row is its 0/1 dependency pattern, checked to hold every non-zero of the gradient."""
    table = _table("backend", "df/dx1", "df/dx2", "max error", "status", title=_EXAMPLE_TITLE)
    table.add_row("exact", f"{SEED_GRADIENT[0]:.12f}", f"{SEED_GRADIENT[1]:.12f}", "", "")
    failed = False
    for name in adcore.backends():
        try:
            g1, g2 = adcore.grad(seed_function, argnums=(0, 1), backend=name)(*SEED_POINT)
            if get_registry().backend(name).pattern:
                ok = all(float(g) != 0 for g, e in zip((g1, g2), SEED_GRADIENT) if e != 0)
                status = "[green]ok (pattern)[/]" if ok else "[red]WRONG (pattern misses a non-zero)[/]"
                table.add_row(name, f"{float(g1):.0f}", f"{float(g2):.0f}", "", status)
                failed |= not ok
                continue
            error = max(abs(float(g1) - SEED_GRADIENT[0]), abs(float(g2) - SEED_GRADIENT[1]))
            ok = error < 1e-6
            status = "[green]ok[/]" if ok else "[red]WRONG[/]"
            table.add_row(name, f"{float(g1):.12f}", f"{float(g2):.12f}", f"{error:.1e}", status)
        except Exception as e:  # one broken backend must not hide the others
            ok = False
            table.add_row(name, "-", "-", "-", f"[red]error: {type(e).__name__}: {_escape(str(e))}[/]")
        failed |= not ok
    console = _console(out)
    console.print(table)
    if not adcore.backends():
        console.print("no backend is installed: pip install -e plugins/reverse")
        return 1
    return 1 if failed else 0


_EXAMPLE_TITLE = "f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (x1, x2) = (2, 5)"


def plugins(as_json: bool = False, out: TextIO | None = None) -> int:
    """List each plugin: version, hooks, what it registered, and what failed."""
    from adcore.conformance import plugin  # noqa: F401  (the built-in cases, listed as the core's)

    records = list(get_registry().plugins.values())
    if as_json:
        out = out or sys.stdout
        json.dump([vars(r) for r in records], out, indent=2, default=list)
        print(file=out)
        return 0
    table = _table("plugin", "version", "hooks", "ops", "rules", "backends", "cases", "optimizers", "status")
    for r in records:
        hooks = ", ".join(h.removeprefix("adcore_register_") for h in r.hooks)
        status = f"[red]{_escape(r.error)}[/]" if r.error else "[green]ok[/]"
        table.add_row(
            r.name,
            r.version,
            hooks,
            str(len(r.ops)),
            str(len(r.rules)),
            ", ".join(r.backends),
            str(len(r.cases)),
            str(len(r.optimizers)),
            status,
        )
    _console(out).print(table)
    return 0


def rules(missing: bool = False, as_markdown: bool = False, out: TextIO | None = None) -> int:
    """The op catalogue: each op's NumPy names, rules per kind, kinks and doc (docs/ops.md, with
    `as_markdown`); with `missing`, only the (op, kind) pairs without a rule, and what that costs:
    the backends that cannot differentiate the op, or for a kind no backend needs (vmap's batch
    rules) what the op gets instead (RuleKind.without: the loop over the batch)."""
    from adcore.conformance import catalogue

    registry = get_registry()
    if as_markdown:
        (out or sys.stdout).write(catalogue.markdown(registry))
        return 0
    kinds = catalogue.rule_kinds(registry)
    needs = {k: catalogue.backends_needing(registry, k) for k in kinds}
    listed = catalogue.entries(registry)
    console = _console(out)
    if missing:
        table = _table("op", "kind", "so these backends cannot differentiate it (or what it gets instead)")
        instead = {k: getattr(registry.kinds.get(k), "without", "") for k in kinds}
        for entry in listed:
            for kind in kinds:
                if entry.rules[kind] == catalogue.NONE:
                    says = ", ".join(needs[kind]) or instead[kind] or "(no installed backend needs it)"
                    table.add_row(entry.name, kind, says)
        console.print(table if table.row_count else "every op has a rule of every kind")
        return 0
    for group in dict.fromkeys(e.group for e in listed):
        kind_columns = (f"{k}\n({', '.join(needs[k]) or '-'})" for k in kinds)
        table = _table("op", "plugin", *kind_columns, "NumPy names", "kinks", "behaviour", title=group)
        for e in listed:
            if e.group == group:
                names = ", ".join(e.numpy_names + tuple(f"anp.{a}" for a in e.aliases))
                marks = (_MARKS[e.rules[k]] for k in kinds)
                notes = (_escape(names), _escape("; ".join(e.kinks)), _escape(e.doc))
                table.add_row(e.name, e.plugin, *marks, *notes)
        console.print(table)
    return 0


_MARKS = {
    "rule": "[green]✓[/]",
    "body": "[green]body[/]",
    "none": "[red]✗[/]",
    "not needed": "[dim]not needed[/]",
    "elementwise": "[green]elementwise[/]",
}


def _unwritable(path: str) -> str | None:
    """Why a report cannot be written to `path`, or None."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        return f"--output {path} is a directory; give a file name, e.g. {target / 'report.html'}"
    if not folder.is_dir():
        return f"--output {path}: the directory {folder} does not exist; create it first (mkdir -p {folder})"
    if not os.access(target if target.exists() else folder, os.W_OK):
        return f"--output {path}: no permission to write {target if target.exists() else 'in ' + str(folder)}"
    return None


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="adcore", description=adcore.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("conformance", help="check every op and case on every installed backend")
    check.add_argument(
        "--backend",
        action="append",
        help="only this backend (repeatable); a backend with variants is one column each, NAME/VARIANT "
        "names one of them",
    )
    check.add_argument("--op", action="append", help="only this op (repeatable; then no cases unless --case)")
    check.add_argument("--case", action="append", help="only this composite case (repeatable)")
    check.add_argument(
        "--dtype",
        action="append",
        choices=("float64", "float32", "complex128", "complex64"),
        help="only this dtype (complex ones: the ops that accept complex values)",
    )
    check.add_argument("--fuzz", type=int, default=0, metavar="N", help="also check N random programs")
    check.add_argument("--format", choices=FORMATS, default="table")
    check.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    check.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help=f"check in N processes (default: the cores this process may use, here {usable_cores()}; "
        "1 checks in this process)",
    )
    check.add_argument(
        "--scheduler",
        metavar="ADDRESS|local:N",
        help="check on a Dask cluster instead of --jobs: the scheduler at ADDRESS (tcp://HOST:PORT), or "
        "local:N to start N worker processes here for the run; the same report, bit for bit "
        "(pip install 'adcore[distributed]')",
    )
    check.add_argument("--seed", type=int, default=0, help="seed of the samples and programs")

    commands.add_parser("example", help="differentiate the seeds' example with every installed backend")
    listing = commands.add_parser("plugins", help="list loaded plugins and what they registered")
    listing.add_argument("--json", action="store_true", help="print JSON")
    table = commands.add_parser("rules", help="every op: NumPy names, rules per kind, kinks, doc")
    table.add_argument("--missing", action="store_true", help="list only the missing ones")
    table.add_argument("--markdown", action="store_true", help="print the catalogue as docs/ops.md")

    args = parser.parse_args(argv)
    if args.command == "conformance":
        if (args.jobs is not None and args.jobs < 1) or args.fuzz < 0:
            parser.error("--jobs must be at least 1 and --fuzz at least 0")
        if args.scheduler is not None:
            if args.jobs is not None:
                parser.error("--jobs and --scheduler exclude each other: the cluster's workers are the jobs")
            from adcore.conformance.distributed import local_workers

            try:
                local_workers(args.scheduler)
            except InvalidValueError as e:
                parser.error(str(e))
        args.jobs = 1 if args.scheduler is not None else args.jobs or usable_cores()
        if args.seed < 0:  # NumPy's generators take seeds >= 0; found out after the planning otherwise
            parser.error(f"--seed must be at least 0, got {args.seed}")
        if args.output and (problem := _unwritable(args.output)):  # before a run of minutes, not after
            parser.error(problem)
        from adcore.conformance import engine

        try:  # an unknown op, backend, case or dtype is a usage error; the plan is the run's
            args.work = engine.plan(args.backend, args.op, args.case, args.dtype or engine.DTYPES, args.seed)
        except (KeyError, ValueError) as e:
            # the message itself, not str(e): a plain KeyError quotes it, and stripping those
            # quotes also ate the closing quote of "no op named 'x'"
            parser.error(str(e.args[0]) if e.args else str(e))
        try:
            return conformance(args)
        # --fuzz without hypothesis; --scheduler's cluster unreachable, failing or with other plugins
        except (MissingDependencyError, DistributedError) as e:
            parser.exit(2, f"adcore: error: {e}\n")
    if args.command == "example":
        return example()
    if args.command == "rules":
        return rules(missing=args.missing, as_markdown=args.markdown)
    return plugins(as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
