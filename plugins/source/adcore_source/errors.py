"""The typed refusal of the source transformation: what it cannot take, in which function, at which line."""

from __future__ import annotations

import ast
from typing import NoReturn, Protocol

from adcore.errors import UnsupportedFunctionError


class SourceTransformError(UnsupportedFunctionError):
    """f uses a construct the source transformation cannot take; the message names it, f and file:line."""

    def __init__(
        self, message: str, *, construct: str = "", function: str = "", filename: str = "", line: int = 0
    ):
        super().__init__(message)
        self.construct = construct
        self.function = function
        self.filename = filename
        self.line = line


class Origin(Protocol):
    """Where code comes from: a Parsed or Normalized function (its name and file)."""

    name: str
    filename: str
    first_line: int


def refuse(node: ast.AST | None, what: str, fix: str, origin: Origin) -> NoReturn:
    """Raise SourceTransformError for `what` at `node`'s line of `origin`; `fix` says the way out."""
    line = getattr(node, "lineno", None) or origin.first_line
    message = f"the source transformation cannot take {what} in {origin.name} ({origin.filename}:{line})" + (
        f": {fix}" if fix else ""
    )
    raise SourceTransformError(
        message, construct=what, function=origin.name, filename=origin.filename, line=line
    )
