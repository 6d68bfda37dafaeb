"""One rule table of one kind, as a backend's plugin fills it from its modules (re-exported by
`adcore.extend`): the reverse backend's `vjp` table and the forward backend's `jvp` table are two
of them. Layer 3 (docs/architecture.md): it imports nothing of adcore.
"""

from __future__ import annotations

from typing import Any


class RuleTable(dict[str, Any]):
    """op name -> its rule entry (a tuple with one rule per input, one rule for a variadic op, or a
    joint rule), each op once: a second entry for an op is a mistake in the table, said at load."""

    def __init__(self, kind: str, package: str) -> None:
        super().__init__()
        self.kind, self.package = kind, package

    def add(self, op: str, entry: Any) -> None:
        """The op's entry; an op already in the table raises ValueError."""
        if op in self:
            raise ValueError(f"op {op!r} has two {self.kind} rules in {self.package}")
        self[op] = entry
