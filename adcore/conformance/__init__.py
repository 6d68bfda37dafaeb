"""Conformance: every op and case, on every installed backend, against one reference.

The engine's pipeline: `calls` (what is differentiated), `reference` (what it is compared
with), `checks` (one function per check), `results` (tallies, cells, the report), `engine` (the
plan, worker processes, the run); `abilities` reads what each backend can do off its class.
`report` renders a run (table, JSON, Markdown, HTML), `cases` are the built-in composite cases
(registered by `plugin`, conformance's own part of the core plugin),
`fuzz` draws random programs (`fuzz_choices`, `random_program`), `check_grads` is
adcore.check_grads, and
`pytest_plugin` turns it all into pytest items for plugin authors.
"""

from adcore.conformance import plugin  # noqa: F401  (hands the built-in cases to the registry)
from adcore.conformance.engine import run

__all__ = ["run"]
