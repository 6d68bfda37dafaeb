"""What a function reads from outside its body, followed into the user functions it reaches: the
keys under which its generated module is cached.

A cache key must change whenever the generated text would, and never hold a stale module: so
the walk goes through the globals, closure cells, defaults and module attributes each code object
(and the code objects nested in it) names, and into every user function it finds, recursively.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import marshal
import sys
import types
from typing import Any

from adcore_source.parse import code_source_lines

# libraries whose functions are callees to resolve, not user code to follow
_LIBRARIES = frozenset({"numpy", "scipy", "adcore", "math", "cmath", "builtins", "functools", "operator"})
_CONSTANTS = (int, float, complex, bool, str, bytes, type(None))
_MISSING = object()


class Reached:
    """A function the walk reached: the object, and each outside name its code reads with its value."""

    __slots__ = ("fn", "values")

    def __init__(self, fn: Any, values: dict[str, Any]) -> None:
        self.fn, self.values = fn, values


def walk(fn: Any) -> list[Reached]:
    """fn first, then every user function reachable from its globals, closure and defaults."""
    reached: list[Reached] = []
    seen: dict[int, int] = {}
    stack = [fn]
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen[id(f)] = len(reached)
        values = _values_read(f)
        reached.append(Reached(f, values))
        stack.extend(
            v
            for v in reversed(values.values())
            if (v.__class__ is types.FunctionType or v.__class__ is functools.partial)
            and is_user_function(v)
            and id(v) not in seen
        )
    return reached


@functools.lru_cache(maxsize=4096)
def is_user_function(v: Any) -> bool:
    """A Python function of the user's (not a library's): one the transformation may follow."""
    if isinstance(v, functools.partial):
        return is_user_function(v.func)
    if not isinstance(v, types.FunctionType):
        return False
    top = (getattr(v, "__module__", None) or "").split(".")[0]
    return not (top in _LIBRARIES or top.startswith("adcore") or top in sys.stdlib_module_names)


def identity_key(reached: list[Reached]) -> tuple:
    """Equal exactly when every function reached and every value they read are the same objects."""
    return tuple((_code(r.fn), tuple((n, id(v)) for n, v in r.values.items())) for r in reached)


def structure_key(reached: list[Reached]) -> tuple:
    """Equal when the generated text would be: the same code reading the same callables and
    constants, and data of the same types (data values are bound when the module is loaded)."""
    return tuple((_code(r.fn), tuple((n, _shape(v)) for n, v in r.values.items())) for r in reached)


def source_parts(reached: list[Reached]) -> list[str]:
    """The structure key in words that survive the process (sources, qualified names): the disk key."""
    index = {id(r.fn): i for i, r in enumerate(reached)}
    parts = []
    for r in reached:
        fn = r.fn.func if isinstance(r.fn, functools.partial) else r.fn
        code = fn.__code__
        parts.append(f"function {code.co_filename}:{code.co_firstlineno} {fn.__qualname__}")
        try:
            parts.append("".join(code_source_lines(code)[0]))  # not fn: it would follow __wrapped__
        except (OSError, TypeError):
            parts.append(hashlib.sha256(marshal.dumps(code)).hexdigest())
        for name, v in r.values.items():
            parts.append(f"{name} = {_described(v, index)}")
    return parts


def _code(fn: Any) -> Any:
    return fn.func.__code__ if isinstance(fn, functools.partial) else fn.__code__


def _shape(v: Any) -> tuple:
    if type(v) in _CONSTANTS or (type(v) is tuple and all(type(x) in _CONSTANTS for x in v)):
        return ("constant", type(v), v)
    if callable(v) or isinstance(v, types.ModuleType):
        return ("object", id(v))
    return ("data", type(v))


def _described(v: Any, index: dict[int, int]) -> str:
    if id(v) in index:
        return f"function #{index[id(v)]}"
    shape = _shape(v)
    if shape[0] == "constant":
        return f"constant {type(v).__name__} {v!r}"
    if isinstance(v, types.ModuleType):
        return f"module {v.__name__}"
    if shape[0] == "data":
        return f"data {type(v).__module__}.{type(v).__qualname__}"
    op_name = getattr(v, "name", None) if type(v).__name__ == "OpSpec" else None
    name = op_name or getattr(v, "__qualname__", None) or getattr(v, "__name__", None) or repr(type(v))
    return f"callable {type(v).__module__}.{type(v).__qualname__} {getattr(v, '__module__', '')}.{name}"


@functools.lru_cache(maxsize=4096)
def _names_of(code: types.CodeType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(global or attribute names, free variable names) read by code and the code nested in it."""
    names, stack = dict.fromkeys(code.co_names), [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while stack:
        c = stack.pop()
        names.update(dict.fromkeys(c.co_names))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(names), code.co_freevars


def _values_read(f: Any) -> dict[str, Any]:
    """Each outside name f's code reads (globals, builtins, closure cells, attributes of the modules
    it reads, defaults) with its value now."""
    values: dict[str, Any] = {}
    if isinstance(f, functools.partial):
        values.update({f"<partial arg {i}>": a for i, a in enumerate(f.args)})
        values.update({f"<partial keyword {k}>": a for k, a in f.keywords.items()})
        values["<partial func>"] = f.func
        return values
    names, free = _names_of(f.__code__)
    for name, cell in zip(free, f.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: a name assigned later in the enclosing function
            values[name] = _MISSING
    g, b = f.__globals__, builtins.__dict__
    for name in names:
        v = g.get(name, _MISSING)
        if v is _MISSING:
            v = b.get(name, _MISSING)
        if v is not _MISSING:
            values[name] = v
    modules = [(n, v) for n, v in values.items() if isinstance(v, types.ModuleType)]
    while modules:  # np.sin, np.linalg.norm: what a module attribute is now (its __dict__, no hooks)
        mname, module = modules.pop()
        for name in names:
            attr = module.__dict__.get(name, _MISSING)
            if attr is not _MISSING and f"{mname}.{name}" not in values:
                values[f"{mname}.{name}"] = attr
                if isinstance(attr, types.ModuleType) and mname.count(".") < 2:
                    modules.append((f"{mname}.{name}", attr))
    for i, d in enumerate(f.__defaults__ or ()):
        values[f"<default {i}>"] = d
    for k, d in (f.__kwdefaults__ or {}).items():
        values[f"<default {k}>"] = d
    return values
