"""Conformance: every op and case, on every installed backend, against one reference.

`engine` runs the checks, `results` holds what they found, `report` renders it (table, JSON,
Markdown, HTML), `cases` are the built-in composite cases, `fuzz` draws random programs,
and `pytest_plugin` turns it all into pytest items for plugin authors.
"""

from adcore.conformance.engine import run

__all__ = ["run"]
