"""Read a Python function's source: its AST (lines as in its file) and the namespace it reads."""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import inspect
import linecache
import re
import textwrap
import types
import weakref
from dataclasses import dataclass, field
from typing import Any

from adcore_source.errors import refuse


@dataclass
class Parsed:
    """fn's AST (`node`: FunctionDef or Lambda, line numbers as in `filename`) and what it reads.

    `namespace` maps every name fn reads that is not its own local to the object it denotes now:
    closure cells (by co_freevars), then fn's globals, then builtins. Names that resolve nowhere are
    absent (the function would raise NameError).
    """

    fn: Any
    name: str
    node: ast.FunctionDef | ast.Lambda
    filename: str
    first_line: int
    namespace: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Where:
    name: str
    filename: str
    first_line: int


def parsed(fn: Any) -> Parsed:
    """fn's source parsed, or SourceTransformError saying why it cannot be read."""
    code = _code_of(fn)
    where = _Where(getattr(fn, "__qualname__", repr(fn)), code.co_filename, code.co_firstlineno)
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        refuse(
            None, "a generator or coroutine function", "return a value (a list or an array) instead", where
        )
    if fn.__name__ == "<lambda>":
        node = _lambda_node(fn, code, where)
    else:
        node = _def_node(fn, code, where)
    return Parsed(
        fn=fn,
        name=fn.__name__,
        node=node,
        filename=code.co_filename,
        first_line=node.lineno,
        namespace=_namespace(fn, node),
    )


def _code_of(fn: Any) -> types.CodeType:
    where = _Where(getattr(fn, "__qualname__", type(fn).__name__), "<unknown>", 0)
    if isinstance(fn, functools.partial):
        refuse(None, "a functools.partial", "transform its .func (its bound arguments are constants)", where)
    if isinstance(fn, types.MethodType):
        refuse(None, "a bound method", "pass a plain function taking the object's data as arguments", where)
    if not isinstance(fn, types.FunctionType):
        refuse(
            None,
            f"a {type(fn).__name__} object (not a Python function)",
            "pass a plain Python function",
            where,
        )
    return fn.__code__


# inspect.findsource's test for the line a code object's source starts on
_FIRST_LINE = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def code_source_lines(code: types.CodeType) -> tuple[list[str], int]:
    """inspect.getsourcelines(code). For a function written under a made-up name whose text
    linecache holds (`<...>`: conformance's, the fuzzer's), the same lines found as inspect finds
    them, without its inspect.getmodule calls: for a code object (no __module__) they walk every
    loaded module and find none, twice a call, about 1 ms each with the plugins loaded (8 % of a
    conformance run). Any other code object goes through inspect itself. Found again, for the same
    code, while linecache holds the same lines for its file (the disk key and the parse both ask)."""
    file = code.co_filename
    linecache.checkcache(file)  # (drops the lines of a file changed on disk)
    known = _sources.get(code)
    if known is not None and known[0] is _held(file):
        return known[1]  # the same lines as when it was read: the same source
    if not (file.startswith("<") and file in linecache.cache):
        found = inspect.getsourcelines(code)
        held = _held(file)
        if held is not None and inspect.getsourcefile(code) == file:
            _sources[code] = (held, found)
        return found
    lines = linecache.getlines(file)
    if not lines:
        raise OSError("could not get source code")
    first = code.co_firstlineno - 1
    if first >= len(lines):
        raise OSError("lineno is out of bounds")
    while first > 0 and not _FIRST_LINE.match(lines[first]):
        first -= 1
    found = inspect.getblock(lines[first:]), first + 1
    _sources[code] = (lines, found)
    return found


def _held(file: str) -> list[str] | None:
    """The list of lines linecache holds for file, if it holds them."""
    entry = linecache.cache.get(file)
    return entry[2] if entry is not None and len(entry) > 2 else None


# code object -> (the lines linecache held for its file, its source lines then): found again while
# linecache holds the same list (a file changed on disk, or text registered anew, is a new list)
_sources: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _source_lines(fn: Any, where: _Where) -> tuple[list[str], int]:
    try:  # fn's own code: getsourcelines(fn) would follow __wrapped__ (functools.wraps) to another function
        return code_source_lines(fn.__code__)
    except (OSError, TypeError) as e:
        refuse(None, "a function whose source is not available", f"define it in a file ({e})", where)


def _def_node(fn: Any, code: types.CodeType, where: _Where) -> ast.FunctionDef:
    lines, first = _source_lines(fn, where)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    node = tree.body[0]
    if isinstance(node, ast.AsyncFunctionDef):
        refuse(node, "an async function", "make it a plain def", where)
    if not isinstance(node, ast.FunctionDef) or node.name != code.co_name:
        refuse(None, "a function whose source could not be located", "define it with def in a file", where)
    node.decorator_list = []  # already applied: fn is what they returned
    return node


def _lambda_node(fn: Any, code: types.CodeType, where: _Where) -> ast.Lambda:
    """The lambda whose body holds fn's instructions (column positions tell lambdas on one line apart)."""
    text = "".join(linecache.getlines(code.co_filename, fn.__globals__))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = None
    if tree is None:
        refuse(None, "a lambda whose source is not available", "define it in a file", where)
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    spots = [
        p
        for i in dis.get_instructions(code)
        if (p := i.positions) is not None
        and p.lineno is not None
        and p.col_offset is not None
        and (p.lineno, p.col_offset) != (p.end_lineno, p.end_col_offset)  # RESUME, RETURN_VALUE: no span
    ]
    fits = [lam for lam in lambdas if all(_inside(p, lam.body) for p in spots)]
    if spots:
        fits = [
            lam
            for lam in fits
            if not any(_encloses(lam.body, other.body) for other in fits if other is not lam)
        ]
    else:
        fits = lambdas
    if len(fits) != 1:
        refuse(
            None,
            "a lambda that cannot be told apart from another on its line",
            "put it on a line of its own",
            where,
        )
    return fits[0]


def _inside(p: dis.Positions, node: ast.expr) -> bool:
    start = (p.lineno, p.col_offset)
    end = (p.end_lineno, p.end_col_offset)
    return (node.lineno, node.col_offset) <= start and end <= (node.end_lineno, node.end_col_offset)


def _encloses(outer: ast.expr, inner: ast.expr) -> bool:
    """True when `inner` lies strictly within `outer` (then the innermost fit is fn's lambda)."""
    o = ((outer.lineno, outer.col_offset), (outer.end_lineno, outer.end_col_offset))
    i = ((inner.lineno, inner.col_offset), (inner.end_lineno, inner.end_col_offset))
    return o[0] <= i[0] and i[1] <= o[1] and o != i


def local_names(node: ast.FunctionDef | ast.Lambda) -> set[str]:
    """The names bound in node's own scope: parameters, assignment and loop targets, nested def names."""
    args = node.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    body = node.body if isinstance(node, ast.FunctionDef) else [node.body]
    for stmt in body:
        for sub in _same_scope_walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(sub.name)
            elif isinstance(sub, ast.Import | ast.ImportFrom):
                names |= {(a.asname or a.name).split(".")[0] for a in sub.names}
    return names


def _same_scope_walk(node: ast.AST):
    """ast.walk that does not enter nested scopes (defs, lambdas, comprehensions) beyond their header."""
    yield node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
        return
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        yield from _same_scope_walk(node.generators[0].iter)
        return
    for child in ast.iter_child_nodes(node):
        yield from _same_scope_walk(child)


def _namespace(fn: Any, node: ast.FunctionDef | ast.Lambda) -> dict[str, Any]:
    own = local_names(node)
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
    builtin = fn.__globals__.get("__builtins__", builtins)
    builtin = builtin if isinstance(builtin, dict) else vars(builtin)
    namespace: dict[str, Any] = {}
    for name in sorted(read):
        if name in cells:
            try:
                namespace[name] = cells[name].cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                continue
        elif name in fn.__globals__:
            namespace[name] = fn.__globals__[name]
        elif name in builtin:
            namespace[name] = builtin[name]
    return namespace
