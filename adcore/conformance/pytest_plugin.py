"""The pytest plugin: the conformance suite as ordinary pytest items, for adcore plugin authors.

Two ways in, both one item per (subject, backend, dtype) with ids like `sin-reverse-float64`, and
one per (subject, dtype) for the vmap column (`sin-vmap-float64`, asked for as a backend "vmap"):

- `pytest --adcore-conformance=special` adds the ops and cases that plugin `special`
  registers to the collected tests (no value, or `all`: every plugin), narrowed by
  `--adcore-backend` and `--adcore-dtype`;
- in a test module, `conformance_params("special")` parametrizes a test and
  `assert_conforms(target)` checks one target.

Agrees passes, disagrees or errs fails with the worst comparison, unsupported (a missing
rule) is a skip whose reason names the rule. pytest loads this module in every run of every
project in the environment: until the option is given or a test asks for targets, it
loads no adcore plugin and collects nothing.

An item checks its unit (its subject in its dtype, every backend at once) when it runs, in the
pytest process; `-n N` (pytest-xdist) spreads the items over N processes. With
`--adcore-scheduler ADDRESS` (or `local:N`, N Dask workers here) every selected item's unit, from
either way in, is checked on that Dask cluster before the first item runs, through the engine's
map (tasks.map_tasks) as `adcore conformance --scheduler` checks them, and the items read their
cells: the same verdicts. Not with `-n`: xdist's processes would each check every unit. Without
the option Dask is never imported.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from adcore.errors import AdcoreError, PluginError

if TYPE_CHECKING:
    from adcore.conformance.engine import Unit
    from adcore.conformance.results import Cell
    from adcore.registry import Registry

ALL = "all"
SUITE = "adcore-conformance"  # the collector's name: items are adcore-conformance::sin-reverse-float64
DTYPES = ("float64", "float32", "complex128", "complex64")  # engine.DTYPES, not imported until there is work

__all__ = ["Target", "assert_conforms", "conformance_params", "targets"]


# --- what to check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One conformance cell to check: a unit (subject, dtype, the backends checked together) and a backend."""

    unit: Unit
    backend: str

    @property
    def id(self) -> str:
        """'sin-reverse-float64'."""
        return f"{self.unit.name}-{self.backend}-{self.unit.dtype}"


def targets(
    plugins: str | Iterable[str] = ALL,
    backends: Sequence[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    seed: int = 0,
) -> list[Target]:
    """Every (subject, backend, dtype) of the ops and cases the named plugins register.

    `plugins` is a name, a comma-separated list, a sequence of names, or "all"; `backends`
    None means every installed backend. Unknown names raise KeyError or ValueError."""
    from adcore.conformance import engine
    from adcore.conformance.batching import VMAP
    from adcore.plugins import get_registry

    registry = get_registry()
    ops, cases = _subjects(registry, _names(plugins))
    # the vmap column, checked with every unit, is asked for as a backend named VMAP
    others = None if not backends else [b for b in backends if b != VMAP]
    work = engine.plan(others or None, ops, cases, list(dtypes), seed)  # (vmap alone: every backend)
    columns = ([] if others == [] else list(work.backends)) + (
        [VMAP] if not backends or VMAP in backends else []
    )
    return [Target(unit, backend) for unit in work.units for backend in columns]


def _names(plugins: str | Iterable[str]) -> list[str]:
    if isinstance(plugins, str):
        plugins = plugins.split(",")
    return [name.strip() for name in plugins if name.strip()]


def _subjects(registry: Registry, names: list[str]) -> tuple[list[str], list[str]]:
    """(ops, cases) registered by the named plugins, sorted; a plugin that failed to load is an error."""
    every = ALL in names or not names
    records = list(registry.plugins.values()) if every else [_plugin(registry, n) for n in names]
    broken = [f"{r.name!r}: {r.error}" for r in records if r.error]
    if broken:
        raise PluginError(f"adcore plugin(s) failed to load, so they cannot be checked: {'; '.join(broken)}")
    ops = sorted({op for r in records for op in r.ops})
    cases = sorted({case for r in records for case in r.cases})
    if not every and not ops and not cases:
        raise ValueError(
            f"adcore plugin(s) {', '.join(map(repr, names))} register no ops or cases; to check a "
            f"backend plugin, check every plugin's ops on that backend: --adcore-conformance=all "
            f"--adcore-backend=NAME, or conformance_params('all', backends=['NAME'])"
        )
    return ops, cases


def _plugin(registry: Registry, name: str) -> Any:
    if name not in registry.plugins:
        known = ", ".join(sorted(registry.plugins))
        raise KeyError(f"no adcore plugin named {name!r}; loaded plugins: {known} (or {ALL!r})")
    return registry.plugins[name]


# --- checking a target ------------------------------------------------------------------------

# cells per unit, per registry: every backend of a unit is checked in one go, and a registry
# rebuilt (a plugin registered by hand) forgets the cells of the old one
_cells: weakref.WeakKeyDictionary[Registry, dict[Unit, dict[str, Cell] | Exception]] = (
    weakref.WeakKeyDictionary()
)


def cell_of(target: Target) -> Cell:
    """The verdict on one target, from its unit's cells (computed once for all its backends)."""
    from adcore.conformance import engine
    from adcore.plugins import get_registry

    cells = _cells.setdefault(get_registry(), {})
    if target.unit not in cells:
        cells[target.unit] = {c.backend: c for c in engine.check_unit(target.unit)}
    found = cells[target.unit]
    if isinstance(found, Exception):  # checking the unit on a Dask worker raised it
        raise found.with_traceback(None)  # (each item of the unit raises it afresh, as if checked here)
    return found[target.backend]


def check_on_cluster(units: Iterable[Unit], scheduler: str) -> int:
    """Check the units not checked yet on the Dask cluster at `scheduler` (or `local:N`), a subject's
    units in one task, and keep their cells (or the exception one raised) for cell_of; how many."""
    from adcore.conformance import engine
    from adcore.plugins import get_registry

    cells = _cells.setdefault(get_registry(), {})
    by_subject: dict[tuple[str, str], list[Unit]] = {}
    for unit in dict.fromkeys(u for u in units if u not in cells):
        by_subject.setdefault((unit.kind, unit.name), []).append(unit)
    tasks = list(by_subject.values())
    for done in engine.map_tasks(_check_each, tasks, scheduler=scheduler):
        cells.update(done)
    return sum(len(task) for task in tasks)


def _check_each(units: list[Unit]) -> dict[Unit, dict[str, Cell] | Exception]:
    """Each unit's cells by backend, as engine.check_units makes them, or the exception it raised."""
    from adcore.conformance import engine

    found: dict[Unit, dict[str, Cell] | Exception] = {}
    for unit in units:
        try:
            ((_, unit_cells),) = engine.check_units([unit])
            found[unit] = {c.backend: c for c in unit_cells}
        except Exception as e:  # that unit's items raise it; the others' are checked
            found[unit] = e
    return found


def assert_conforms(target: Target) -> None:
    """Pass if the target agrees with the reference; skip if its backend lacks a rule; else fail."""
    cell = cell_of(target)
    if cell.status == "unsupported":
        pytest.skip(f"{cell.backend}: {cell.message}")
    if cell.failed:
        pytest.fail(explain(target, cell), pytrace=False)


def explain(target: Target, cell: Cell) -> str:
    """A failed cell in a few lines: what, on which backend and dtype, the worst comparison, how to rerun."""
    unit = target.unit
    what = "disagrees with the reference" if cell.status == "disagrees" else "raised an error"
    lines = [f"{unit.kind} {unit.name!r} on backend {cell.backend!r} in {cell.dtype} {what}"]
    if cell.status == "disagrees" and cell.worst is not None:
        worst = cell.worst
        lines += [f"  check:   {worst.check}", f"  sample:  {worst.sample}"]
        if worst.error_text():  # the same relative error as every report (Worst.figure)
            lines.append(f"  error:   {worst.error_text()}, the worst of {cell.checks} comparisons")
        lines.append(f"  worst:   {worst.detail}")
    lines.append(f"  message: {cell.message}")
    flag = "--op" if unit.kind == "op" else "--case"
    backend = "" if cell.backend == "vmap" else f" --backend {cell.backend}"  # (its column runs with any)
    lines.append(f"  rerun:   adcore conformance {flag} {unit.name}{backend} --dtype {cell.dtype}")
    return "\n".join(lines)


def conformance_params(
    plugin: str | Iterable[str] = ALL,
    backends: Sequence[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    seed: int = 0,
) -> list[Any]:
    """pytest.param(target, id='erf-reverse-float64') for each target of `plugin`: for parametrize."""
    return [pytest.param(t, id=t.id) for t in targets(plugin, backends, dtypes, seed)]


# --- the command-line option ------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("adcore", "adcore conformance")
    group.addoption(
        "--adcore-conformance",
        nargs="?",
        const=ALL,
        default=None,
        metavar="PLUGINS",
        help="also run adcore's conformance suite over the ops and cases these plugins register "
        "(comma-separated; no value or 'all': every plugin). Write it with '=' or after the paths.",
    )
    group.addoption(
        "--adcore-backend",
        action="append",
        default=[],
        metavar="NAMES",
        help="with --adcore-conformance: only these backends (repeatable or comma-separated)",
    )
    group.addoption(
        "--adcore-dtype",
        action="append",
        default=[],
        metavar="DTYPES",
        help="with --adcore-conformance: only these dtypes (float64, float32, complex128, complex64)",
    )
    group.addoption(
        "--adcore-scheduler",
        default=None,
        metavar="ADDRESS",
        help="check every selected conformance item's unit on this Dask cluster (a scheduler's "
        "address, or local:N for N worker processes here) before the items run; needs "
        "adcore[distributed]; not with -n",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("adcore_conformance") is not None:
        config.addinivalue_line("markers", "adcore_conformance: an item of adcore's conformance suite")
    scheduler = config.getoption("adcore_scheduler")
    if scheduler is not None:
        from adcore.conformance.distributed import local_workers  # (no Dask in it until it runs)

        try:
            local_workers(scheduler)
        except AdcoreError as e:
            raise pytest.UsageError(f"--adcore-scheduler: {e}") from e
        if config.getoption("numprocesses", None):  # pytest-xdist's -n
            raise pytest.UsageError(
                "--adcore-scheduler checks every conformance unit on Dask before the items run; -n "
                "would have each of its processes check them all: give one of them (-n0 turns xdist off)"
            )


@pytest.hookimpl(tryfirst=True)  # before the items run (the default loop runs after this one)
def pytest_runtestloop(session: pytest.Session) -> None:
    config = session.config
    scheduler = config.getoption("adcore_scheduler")
    if scheduler is None or config.option.collectonly:
        return
    if session.testsfailed and not config.option.continue_on_collection_errors:
        return  # pytest stops for the collection errors
    units = [t.unit for t in _collected_targets(session.items)]
    if not units:
        return
    start = time.perf_counter()
    try:
        checked = check_on_cluster(units, scheduler)
    except AdcoreError as e:  # no Dask, no cluster, workers that keep dying, other plugins there
        pytest.exit(f"--adcore-scheduler: {e}", returncode=pytest.ExitCode.INTERRUPTED)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"adcore conformance: {checked} units checked on the Dask cluster at {scheduler} "
            f"in {time.perf_counter() - start:.1f} s"
        )


def _collected_targets(items: Iterable[pytest.Item]) -> list[Target]:
    """The targets of the items: conformance items, and tests parametrized with conformance_params."""
    found = []
    for item in items:
        if isinstance(item, ConformanceItem):
            found.append(item.target)
        elif (callspec := getattr(item, "callspec", None)) is not None:
            found += [value for value in callspec.params.values() if isinstance(value, Target)]
    return found


def pytest_report_header(config: pytest.Config) -> str | None:
    plugins = config.getoption("adcore_conformance")
    if plugins is None:
        return None
    backends = ",".join(_listed(config, "adcore_backend")) or ALL
    dtypes = ",".join(_listed(config, "adcore_dtype")) or ",".join(DTYPES)
    return f"adcore conformance: plugins {plugins}; backends {backends}; dtypes {dtypes}"


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect and --lf filter the items
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if config.getoption("adcore_conformance") is None:
        return
    suite = ConformanceSuite.from_parent(session, name=SUITE, nodeid=SUITE)
    # genitems reports the suite like any collector: a collection error if its plugins cannot load
    items.extend(session.genitems(suite))


def _listed(config: pytest.Config, option: str) -> list[str]:
    return [name.strip() for value in config.getoption(option) for name in value.split(",") if name.strip()]


class ConformanceSuite(pytest.Collector):
    """The conformance items asked for on the command line."""

    def collect(self) -> list[pytest.Item]:
        config = self.config
        plugins = config.getoption("adcore_conformance")
        try:
            found = targets(
                plugins,
                _listed(config, "adcore_backend") or None,
                _listed(config, "adcore_dtype") or DTYPES,
            )
        except (KeyError, ValueError, PluginError) as e:
            message = str(e.args[0]) if e.args else str(e)
            if any(os.path.exists(name) for name in _names(plugins)):
                message += f"\n(a bare --adcore-conformance takes the next argument as plugin names: write --adcore-conformance={ALL})"
            raise self.CollectError(f"--adcore-conformance: {message}") from e
        return [ConformanceItem.from_parent(self, name=t.id, target=t) for t in found]


class ConformanceItem(pytest.Item):
    """One conformance cell: a subject on a backend in a dtype."""

    def __init__(self, *, target: Target, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.add_marker("adcore_conformance")

    def runtest(self) -> None:
        assert_conforms(self.target)  # pytest.fail(pytrace=False): the report is explain()'s text alone

    def reportinfo(self) -> tuple[str, int | None, str]:
        return SUITE, None, self.name
