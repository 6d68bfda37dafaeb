"""The functions the engine hands to backends, written as Python source: one positional parameter
per argument, the op or function called with them by name.

A backend that reads f's source (Backend.variants' source transformation) differentiates what it
reads, as it would a user's function: `def sin_call(x0): return op(x0)` is the op called as a user
calls it, where a closure over `*args` would be a construct to refuse. The text is registered with
linecache under a name of its own, so inspect.getsource finds it; its globals are `namespace`.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable, Sequence
from typing import Any

_numbers = itertools.count()


def written(name: str, parameters: Sequence[str], body: Sequence[str], namespace: dict[str, Any]) -> Callable:
    """`def name(parameters): body` (its lines, the last a return) with `namespace` as its globals."""
    text = f"def {name}({', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in body)
    filename = f"<adcore conformance #{next(_numbers)}: {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = dict(namespace)
    exec(compile(text, filename, "exec"), scope)  # noqa: S102 (text written here from names alone)
    return scope[name]


def identifier(text: str) -> str:
    """`text` as a Python name: other characters as _ (an op's name may hold dots)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return name if name and not name[0].isdigit() else f"_{name}"


def call_text(
    callee: str, arguments: Sequence[str], params: dict[str, Any], namespace: dict[str, Any]
) -> str:
    """`callee(a, b, axis=axis_param)`: each param bound in `namespace` (constant) under its name
    and `_param` (`_param_2`, ... where that name holds another value)."""
    keywords = []
    for key, value in params.items():
        keywords.append(f"{key}={constant(namespace, f'{key}_param', value)}")
    return f"{callee}({', '.join([*arguments, *keywords])})"


def constant(namespace: dict[str, Any], name: str, value: Any) -> str:
    """The name `value` is bound to in `namespace`: `name`, or `name_2`, ... where that holds another."""
    bound, n = name, 1
    while bound in namespace and namespace[bound] is not value:
        n += 1
        bound = f"{name}_{n}"
    namespace[bound] = value
    return bound
