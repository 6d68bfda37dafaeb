"""Run GradBench's evals against adcore's backends (and, with --compare, PyTorch and JAX), and say how each did.

    python benchmarks/gradbench/run.py --quick
    python benchmarks/gradbench/run.py --evals lse gmm --compare --json results.json --plot results.png
    python benchmarks/gradbench/run.py --quick --scheduler local:2    # on Dask: a cluster's ADDRESS, or local:N

Each eval × tool runs as GradBench's CLI runs it (relay.py: two subprocesses, the tool on one core);
the eval validates every answer against GradBench's C++ `manual` tool, built first (manual.py).
One row per eval × tool × workload: validated or not, the gradient's time and the primal's (the
minimum of the tool's timed runs). Exit status 1 when an adcore-reverse row did not validate.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import queue
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _path in (HERE, HERE / "upstream" / "python" / "gradbench"):  # relay and the tool; GradBench's package
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import manual  # noqa: E402
import on_dask  # noqa: E402 (Dask itself is imported only when a run uses it)
import workloads  # noqa: E402
from adcore_tool.backends import BACKENDS  # noqa: E402
from adcore_tool.run import EVALS  # noqa: E402
from relay import UPSTREAM_PYTHON, Exchange, Session, relay  # noqa: E402

from adcore.errors import MissingDependencyError  # noqa: E402

ADCORE_TOOLS = tuple(f"adcore-{name}" for name in BACKENDS)  # adcore_tool.backends' tools
PEERS = {
    "pytorch": "torch",
    "jax": "jax",
    "jax-jacfwd": "jax",
}  # --compare's tools, each with what it imports
RATIO_PEERS = ("pytorch", "jax")  # the peers an adcore tool's gradient time is divided by
NOTE_WIDTH = 160  # the table shows an error's headline up to this many characters; --json keeps it whole
# (primal, gradient) function names per eval; the evals absent here send only gradients, one per function
PRIMAL_AND_GRADIENT = {
    "hello": ("square", "double"),
    "lse": ("primal", "gradient"),
    "llsq": ("primal", "gradient"),
    "det": ("primal", "gradient"),
    "ode": ("primal", "gradient"),
    "gmm": ("objective", "jacobian"),
    "lstm": ("objective", "jacobian"),
    "ba": ("objective", "jacobian"),
    "ht": ("objective", "jacobian"),
    "kmeans": ("cost", "dir"),
}


@dataclass
class Row:
    """One eval × tool × workload: did every answer validate, and how long the gradient and primal took."""

    eval: str
    tool: str
    size: str
    validated: bool
    gradient_s: float | None = None
    primal_s: float | None = None
    error: str | None = None  # why it did not validate (the full text; the table shows its headline)
    note: str | None = None  # why the tool cannot run the eval at all (its define answer)

    def to_json(self) -> dict[str, Any]:
        """The row as --json writes it: error only when not validated, note only for a cannot-run row."""
        fields = asdict(self)
        for optional in ("error", "note"):
            if fields[optional] is None:
                del fields[optional]
        return fields


# ---- rows from sessions ---------------------------------------------------------------------------


def headline(error: str) -> str:
    """An error's first informative line: a traceback's exception line, else the error's first line."""
    lines = [line for line in error.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback"):
        last_frame = max((i for i, line in enumerate(lines) if line.startswith(" ")), default=0)
        return lines[min(last_frame + 1, len(lines) - 1)]
    return lines[0]


def best_seconds(response: dict[str, Any]) -> float | None:
    """The minimum of the response's "evaluate" timings, in seconds (None when it has none)."""
    runs = [t["nanoseconds"] for t in response.get("timings") or [] if t.get("name") == "evaluate"]
    return min(runs) / 1e9 if runs else None


def _failure(exchange: Exchange, session: Session) -> str | None:
    """Why one exchange does not count as validated, or None when it does."""
    if not exchange.response.get("success"):
        return exchange.response.get("error") or "the tool answered success: false without an error"
    if exchange.analysis is None:
        return session.error or "the eval sent no analysis of this answer"
    if not exchange.analysis.get("valid"):
        return exchange.analysis.get("error") or "the eval found the answer invalid"
    return None


def _workload(message: dict[str, Any]) -> str:
    """The evaluate message's description; hello sends none, so its input."""
    return str(message["description"]) if "description" in message else json.dumps(message["input"])


def _grouped(session: Session) -> list[tuple[str, dict[str, Exchange]]]:
    """The session's exchanges (and the message left unanswered) as (workload, {role: exchange}), in order sent."""
    exchanges = list(session.exchanges)
    if session.unanswered is not None and session.unanswered.get("kind") == "evaluate":
        exchanges.append(Exchange(session.unanswered, {"success": False, "error": session.error}))
    roles = PRIMAL_AND_GRADIENT.get(session.eval)
    groups: list[tuple[str, dict[str, Exchange]]] = []
    for exchange in exchanges:
        function = exchange.message["function"]
        if roles is None:  # saddle, particle: every function is a gradient, the workload is its name
            groups.append((function, {"gradient": exchange}))
            continue
        role = "primal" if function == roles[0] else "gradient"
        last = groups[-1][1] if groups else None
        joins = (
            role == "gradient"
            and last is not None
            and "gradient" not in last
            and last["primal"].message.get("description") == exchange.message.get("description")
        )
        if joins:
            last["gradient"] = exchange
        else:
            groups.append((_workload(exchange.message), {role: exchange}))
    return groups


def rows_of(session: Session) -> list[Row]:
    """The rows one eval × tool session makes: one per workload, or one saying why the tool could not run."""
    eval_name, tool = session.eval, session.tool
    if not session.define.get("success"):
        if session.define:  # the tool said it cannot (the adcore tool's define error says why)
            reason = headline(session.define.get("error") or "the tool declined without a reason")
            return [Row(eval_name, tool, "", False, note=reason)]
        return [Row(eval_name, tool, "", False, error=session.error or "the tool never answered define")]
    rows = []
    for size, roles in _grouped(session):
        failures = [_failure(exchange, session) for exchange in roles.values()]
        if eval_name in PRIMAL_AND_GRADIENT:
            for missing in {"primal", "gradient"} - roles.keys():
                failures.append(session.error or f"the eval sent no {missing} for this workload")
        error = next((failure for failure in failures if failure is not None), None)
        rows.append(
            Row(
                eval_name,
                tool,
                size,
                validated=error is None,
                gradient_s=best_seconds(roles["gradient"].response) if "gradient" in roles else None,
                primal_s=best_seconds(roles["primal"].response) if "primal" in roles else None,
                error=error,
            )
        )
    if not rows:
        rows.append(
            Row(eval_name, tool, "", False, error=session.error or "the eval sent nothing to evaluate")
        )
    return rows


def ratios(rows: Iterable[Row]) -> dict[tuple[str, str, str], dict[str, float]]:
    """For each adcore row (eval, size, tool): its gradient time over each validated peer's, where both ran."""
    rows = list(rows)
    peer_times = {
        (row.eval, row.size, row.tool): row.gradient_s
        for row in rows
        if row.tool in RATIO_PEERS and row.validated and row.gradient_s
    }
    result: dict[tuple[str, str, str], dict[str, float]] = {}
    for row in rows:
        if row.tool.startswith("adcore-") and row.gradient_s is not None:
            result[row.eval, row.size, row.tool] = {
                peer: row.gradient_s / peer_time
                for peer in RATIO_PEERS
                if (peer_time := peer_times.get((row.eval, row.size, peer)))
            }
    return result


def ordered(rows: Iterable[Row], tools: Sequence[str]) -> list[Row]:
    """Rows by eval (in the order run), then workload (in the order sent), then tool (in the order given)."""
    rows = list(rows)
    evals = list(dict.fromkeys(row.eval for row in rows))
    sizes = list(dict.fromkeys((row.eval, row.size) for row in rows))
    rank = {tool: i for i, tool in enumerate(tools)}
    return sorted(
        rows, key=lambda r: (evals.index(r.eval), sizes.index((r.eval, r.size)), rank.get(r.tool, len(rank)))
    )


# ---- output -----------------------------------------------------------------------------------------


def seconds(value: float | None) -> str:
    """A duration as people read it: 12.3 µs, 4.56 ms, 1.23 s; blank when unknown."""
    if value is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def table(rows: Sequence[Row], notes: Sequence[str] = ()) -> Any:
    """The rows as a rich Table (the imports stay here: only printing needs rich)."""
    from rich.table import Table

    peers_ran = [peer for peer in RATIO_PEERS if any(row.tool == peer for row in rows)]
    by_row = ratios(rows)
    grid = Table(title="adcore on GradBench", caption="\n".join(notes) or None, caption_justify="left")
    for name in ("eval", "workload", "tool", "valid", "gradient", "primal", "grad÷primal"):
        grid.add_column(name, justify="right" if name in ("gradient", "primal", "grad÷primal") else "left")
    for peer in peers_ran:
        grid.add_column(f"÷{peer}", justify="right")
    grid.add_column("note", overflow="fold")
    previous_eval = None
    for row in rows:
        if previous_eval is not None and row.eval != previous_eval:
            grid.add_section()
        previous_eval = row.eval
        per = f"{row.gradient_s / row.primal_s:.3g}" if row.gradient_s and row.primal_s else ""
        peer_ratios = by_row.get((row.eval, row.size, row.tool), {})
        mark = "[green]✓[/]" if row.validated else ("[yellow]–[/]" if row.note else "[red]✗[/]")
        note = f"cannot: {row.note}" if row.note else headline(row.error or "")
        note = note if len(note) <= NOTE_WIDTH else note[: NOTE_WIDTH - 1] + "…"
        cells = [row.eval, row.size, row.tool, mark, seconds(row.gradient_s), seconds(row.primal_s), per]
        cells += [f"{peer_ratios[peer]:.3g}" if peer in peer_ratios else "" for peer in peers_ran]
        grid.add_row(*cells, note)
    return grid


def summary(rows: Sequence[Row], tools: Sequence[str], wall_s: float) -> str:
    """One line: rows validated per tool (cannot-run rows counted apart), and the whole run's wall time."""
    parts = []
    for tool in tools:
        own = [row for row in rows if row.tool == tool]
        if not own:
            continue
        cannot = sum(1 for row in own if row.note)
        ran = len(own) - cannot
        part = f"{tool} {sum(row.validated for row in own)}/{ran} validated"
        parts.append(part + (f" ({cannot} eval{'s' * (cannot != 1)} it cannot run)" if cannot else ""))
    return " · ".join(parts) + f" · wall {wall_s:.1f} s"


def plot(rows: Sequence[Row], path: Path) -> None:
    """One panel per eval: gradient time against workload (in the order sent), one line per tool, log y."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [row for row in rows if row.gradient_s is not None and row.validated]
    evals = list(dict.fromkeys(row.eval for row in timed))
    tools = list(dict.fromkeys(row.tool for row in rows))
    colour = {tool: f"C{i % 10}" for i, tool in enumerate(tools)}  # one colour per tool in every panel
    if not evals:
        return
    columns = min(3, len(evals))
    lines = -(-len(evals) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(5 * columns, 3.6 * lines), squeeze=False)
    for panel, eval_name in zip(axes.flat, evals, strict=False):
        own = [row for row in timed if row.eval == eval_name]
        sizes = list(dict.fromkeys(row.size for row in rows if row.eval == eval_name and row.size))
        for tool in dict.fromkeys(row.tool for row in own):
            points = [(sizes.index(row.size), row.gradient_s) for row in own if row.tool == tool]
            panel.plot(*zip(*points, strict=True), marker="o", label=tool, color=colour[tool])
        panel.set_title(eval_name)
        panel.set_yscale("log")
        panel.set_ylabel("gradient time (s)")
        panel.set_xticks(range(len(sizes)), sizes, rotation=30, ha="right", fontsize=8)
        panel.legend(fontsize=7)
        panel.grid(True, which="both", alpha=0.3)
    for panel in list(axes.flat)[len(evals) :]:
        panel.set_visible(False)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ---- running ----------------------------------------------------------------------------------------


def eval_arguments(eval_name: str, quick: bool, min_seconds: float | None) -> list[str]:
    """The eval's command-line options: its workloads, and the timing options for the evals that take them."""
    sizes = (workloads.QUICK if quick else workloads.DEFAULT)[eval_name]
    script = UPSTREAM_PYTHON / "gradbench" / "evals" / eval_name / "run.py"
    if "--min-runs" not in script.read_text():  # hello times nothing
        return list(sizes)
    seconds_ = min_seconds if min_seconds is not None else (0.0 if quick else 0.5)
    return [*sizes, "--min-runs", "1", "--min-seconds", f"{seconds_:g}"]


def unavailable(tool: str) -> str | None:
    """Why a peer tool cannot run here ("not installed: ..."), or None when it can."""
    module = PEERS.get(tool)
    if module is not None and importlib.util.find_spec(module) is None:
        return f"{tool}: not installed ({module} does not import)"
    if module is not None and not (HERE / "peers" / "run.py").exists():
        return f"{tool}: not installed (benchmarks/gradbench/peers/run.py is absent)"
    return None


def run(
    evals: Sequence[str],
    tools: Sequence[str],
    quick: bool = False,
    min_seconds: float | None = None,
    timeout: float | None = 180.0,
    log_dir: Path | None = None,
    progress: Any = None,
    jobs: int = 1,
    scheduler: str | None = None,
) -> list[Row]:
    """Every eval against every tool, `jobs` at a time (each on its own core) or on the Dask `scheduler`'s
    workers (an address, or local:N); the rows, in table order."""
    pairs = [
        (eval_name, tool)
        for eval_name in evals
        for tool in tools
        if not quick or tool in workloads.QUICK_TOOLS.get(eval_name, tools)
    ]
    longest = {eval_name: rank for rank, eval_name in enumerate(workloads.LONGEST_FIRST)}
    start_order = sorted(pairs, key=lambda pair: longest.get(pair[0], len(longest)))  # rows: in pairs' order

    def rows_reported(session: Session, seconds: float, where: str = "") -> list[Row]:
        made = rows_of(session)
        if progress is not None:
            good = sum(row.validated for row in made)
            on = f" on {where}" if where else ""
            progress(f"{session.eval} × {session.tool}: {good}/{len(made)} validated, {seconds:.1f} s{on}")
        return made

    if scheduler is not None:
        arguments = [(e, t, eval_arguments(e, quick, min_seconds)) for e, t in start_order]
        by_pair = {
            (session.eval, session.tool): rows_reported(session, seconds, where)
            for session, where, seconds in on_dask.sessions(scheduler, arguments, timeout, log_dir)
        }
        return ordered([row for pair in pairs for row in by_pair[pair]], tools)
    free_cores = queue.SimpleQueue()
    for core in range(jobs):
        free_cores.put(core)

    def run_one(eval_name: str, tool: str) -> list[Row]:
        started = time.perf_counter()
        core = free_cores.get()
        log = None
        try:
            if log_dir is not None:
                (log_dir / eval_name).mkdir(parents=True, exist_ok=True)
                log = open(log_dir / eval_name / f"{tool}.jsonl", "w")  # noqa: SIM115 (closed below)
            arguments = eval_arguments(eval_name, quick, min_seconds)
            session = relay(eval_name, tool, arguments, log=log, timeout=timeout, core=core)
        finally:
            free_cores.put(core)
            if log is not None:
                log.close()
        return rows_reported(session, time.perf_counter() - started)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        by_pair = dict(zip(start_order, pool.map(lambda pair: run_one(*pair), start_order), strict=True))
    return ordered([row for pair in pairs for row in by_pair[pair]], tools)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", nargs="+", default=list(EVALS), choices=EVALS, metavar="EVAL")
    parser.add_argument("--tools", nargs="+", default=list(ADCORE_TOOLS), metavar="TOOL")
    parser.add_argument("--compare", action="store_true", help="also run pytorch, jax and jax-jacfwd")
    parser.add_argument("--quick", action="store_true", help="the smallest workloads, each run once")
    parser.add_argument(
        "--min-seconds", type=float, help="time each function for at least this (0.5; quick 0)"
    )
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per eval × tool (180)")
    parser.add_argument(
        "--jobs", type=int, help="eval × tool runs side by side, each on its own core (1; quick: the cores)"
    )
    parser.add_argument(
        "--scheduler",
        type=on_dask.scheduler_address,
        metavar="ADDRESS",
        help="run on this Dask scheduler's workers, or on a new LocalCluster of N workers (local:N)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the rows as JSON")
    parser.add_argument("--log-dir", type=Path, metavar="DIR", help="one GradBench log per eval × tool")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="gradient time per workload, per eval")
    args = parser.parse_args(argv)
    if args.scheduler is not None and args.jobs is not None:
        parser.error("--scheduler and --jobs exclude each other: on Dask, each worker runs one eval × tool")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from rich.console import Console
    from rich.markup import escape

    args = parse_arguments(argv)
    console = Console(width=None if sys.stdout.isatty() else 180)
    tools, notes = list(args.tools), []
    if args.compare:
        tools += [peer for peer in PEERS if peer not in tools]
    for tool in list(tools):
        if (reason := unavailable(tool)) is not None:
            tools.remove(tool)
            notes.append(reason)
    jobs = args.jobs or (len(os.sched_getaffinity(0)) if args.quick else 1)
    if args.quick:
        notes.append("--quick times one run of each function: first-call costs (JAX's compilation) are in it")
        notes.append("--quick runs saddle and particle on the backends their functions name (r, f)")
    if args.scheduler is not None:
        notes.append(
            f"on Dask ({args.scheduler}): one run per worker, each tool on its own core of its machine"
        )
    elif jobs > 1:
        notes.append(f"{jobs} runs side by side, each tool on its own core: times are not for comparison")
    try:
        manual.ensure_built()
        started = time.perf_counter()
        rows = run(
            args.evals,
            tools,
            quick=args.quick,
            min_seconds=args.min_seconds,
            timeout=args.timeout,
            log_dir=args.log_dir,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            jobs=jobs,
            scheduler=args.scheduler,
        )
    except (manual.ManualBuildError, MissingDependencyError, on_dask.ClusterNotReadyError) as error:
        console.print(f"[red]{escape(str(error))}[/]")  # escaped: adcore[distributed] is not markup
        return 2
    wall_s = time.perf_counter() - started
    console.print(table(rows, notes))
    console.print(summary(rows, tools, wall_s))
    if args.json is not None:
        args.json.write_text(json.dumps([row.to_json() for row in rows], indent=1) + "\n")
    if args.plot is not None:
        plot(rows, args.plot)
    return 1 if any(row.tool == "adcore-reverse" and not row.validated for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
