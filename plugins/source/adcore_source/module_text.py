"""The generated module as text, and the text loaded as a module.

The text: a docstring saying what it is, the imports of what it binds (modules, importable
functions, adcore ops, runtime helpers), f's constants as literals, a comment naming what only the
loader can bind (closure values, data), then the functions, ast.unparse'd with the emitters'
comment markers (`Expr(Constant("# ..."))`) turned into comment lines. Loading executes the text
from its file (or, with no writable cache, registers it with linecache) so tracebacks show it.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import hashlib
import inspect
import itertools
import keyword
import linecache
import math
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from adcore_source import disk_cache

_CONSTANTS = (int, float, complex, bool, str, type(None))
_MARKER = "__adcore_source_comment_{}__"
_MARKER_LINE = re.compile(r"^(\s*)__adcore_source_comment_(\d+)__$", re.M)
_POSITIONAL = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.VAR_POSITIONAL,
)


class Text:
    """A generated module's text, its entry functions, and how to bind what its imports cannot:
    `injected` maps a module name to (index of the function reached, the name it reads), `fixed` to
    an object (helpers that are not importable: only good in this process)."""

    def __init__(
        self,
        text: str,
        entry: list[str],
        functions: list[str],
        injected: dict[str, tuple[int, str]],
        fixed: dict,
    ):
        self.text, self.entry, self.functions, self.injected, self.fixed = (
            text,
            entry,
            functions,
            injected,
            fixed,
        )
        self.path: Path | None = None
        self.keep: Any = None  # what the cache key's ids are the ids of, alive while the text is cached
        self.reproducible = not fixed  # everything it binds is in its text or found again by reads.walk

    def meta(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "functions": self.functions,
            "injected": {k: list(v) for k, v in self.injected.items()},
        }

    @classmethod
    def from_disk(cls, stored: tuple[Path, str, dict[str, Any]] | None) -> Text | None:
        if stored is None:
            return None
        path, text, meta = stored
        try:
            injected = {k: (int(i), str(n)) for k, (i, n) in meta["injected"].items()}
            t = cls(text, [str(e) for e in meta["entry"]], [str(f) for f in meta["functions"]], injected, {})
        except (KeyError, TypeError, ValueError):
            return None
        t.path = path
        return t


def assembled(ctx: Any, fn: Any, mode: str, active: tuple[int, ...], reached: list) -> Text:
    """The module text of ctx's generated functions (ctx: generate.Context) for fn."""
    used = set().union(*(free_names(d) for d in ctx.defs))
    found = {id(v): (i, name) for i, r in reversed(list(enumerate(reached))) for name, v in r.values.items()}
    imports, literals, injected, fixed = [], [], {}, {}
    for name in sorted(used & set(ctx.objects)):
        obj = ctx.objects[name]
        line = import_line(name, obj)
        if line is not None:
            imports.append(line)
        elif _is_literal(obj):
            literals.append(f"{name} = {obj!r}")
        elif id(obj) in found:
            injected[name] = found[id(obj)]
        else:
            fixed[name] = obj
    root = ctx.targets[0][3]
    parts = [_header(fn, mode, active, root), *_import_block(imports)]
    if literals:
        parts += ["", *literals]
    if injected or fixed:
        names = ", ".join(sorted([*injected, *fixed]))
        parts += [
            "",
            f"# bound by adcore-source when it loads this module (values of the function's): {names}",
        ]
    body = "\n\n\n".join(_unparsed(d) for d in ctx.defs)
    functions = [d.name for d in ctx.defs]
    return Text("\n".join(parts) + "\n\n\n" + body + "\n", list(root), functions, injected, fixed)


def load(text: Text, reached: list) -> dict[str, Any]:
    """The module's namespace after executing text, what it reads bound from `reached`."""
    path = text.path
    if path is None:  # no cache directory: a name linecache serves the text under
        digest = hashlib.sha256(text.text.encode()).hexdigest()[:12]
        path = Path(f"<adcore-source {text.entry[0]} {digest}>")
        lines = text.text.splitlines(keepends=True)
        linecache.cache[str(path)] = (len(text.text), None, lines, str(path))
    bindings = {**text.fixed, **{name: reached[i].values[n] for name, (i, n) in text.injected.items()}}
    name = (
        path.stem if text.path is not None else f"generated_{text.entry[0]}"
    )  # as importing the file names it
    namespace: dict[str, Any] = {"__name__": name, "__file__": str(path)}
    namespace.update(bindings)
    exec(_compiled(text.text, str(path), text.path is not None), namespace)
    namespace.update(bindings)  # the very objects the function reads, whatever its imports found
    return namespace


@functools.lru_cache(maxsize=256)  # (as many as generate keeps texts)
def _compiled(text: str, filename: str, on_disk: bool) -> types.CodeType:
    """text compiled (a pure function of the text and its file name): a module is loaded again for
    every new set of values it binds (data read by f, a function written anew with the same text);
    a module on disk keeps its code beside it (read back only for the same text and file name)."""
    code = disk_cache.load_code(Path(filename), text) if on_disk else None
    if code is None:
        code = compile(text, filename, "exec")
        if on_disk:
            disk_cache.store_code(Path(filename), text, code)
    return code


def clear_compiled() -> None:
    _compiled.cache_clear()


def stem_of(fn: Any, mode: str) -> str:
    return f"{identifier(getattr(fn, '__name__', 'f'))}_{mode}"


def _header(fn: Any, mode: str, active: tuple[int, ...], root: tuple[str, ...]) -> str:
    code = fn.__code__
    params = [
        p.name
        for p in inspect.signature(fn, follow_wrapped=False).parameters.values()
        if p.kind in _POSITIONAL
    ]
    wrt = ", ".join(params[i] if i < len(params) else f"argument {i}" for i in active)
    if mode == "forward":
        what = f"{root[0]}(<f's arguments>, <a tangent for each of {wrt}>) -> (out, tangent of out)"
    else:
        what = f"{root[0]}(<f's arguments>) -> (out, saved)\n{root[1]}(saved, <adjoint of out>) -> the adjoints of {wrt}"
    return (
        f'"""{mode.capitalize()}-mode derivative of {fn.__qualname__} ({code.co_filename}:{code.co_firstlineno})\n'
        f"with respect to {wrt}.\n\n{what}.\n\nGenerated by adcore-source from the function's source; edit freely.\n"
        '"""\n'
    )


def import_line(name: str, obj: Any) -> tuple[str, str | None, str] | None:
    """(module, attribute or None, name): the import that binds `name` to obj, if obj can be found
    again by its module and name."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__, None, name
    if type(obj).__name__ == "OpSpec":  # an adcore op: adcore.ops.<its name>
        ops = sys.modules.get("adcore.ops")
        if ops is not None and getattr(ops, obj.name, None) is obj and obj.name.isidentifier():
            return "adcore.ops", obj.name, name
        return None
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or not qualname.isidentifier():
        return None
    found = sys.modules.get(module)
    if found is None or module == "__main__" or getattr(found, qualname, None) is not obj:
        return None
    return module, qualname, name


def _import_block(imports: list[tuple[str, str | None, str]]) -> list[str]:
    """The import lines as isort writes them: standard library, then the rest; `import` lines before
    `from` lines; one `from` line per module, its names constants, classes, then the others."""
    sections: list[list[str]] = [[], []]
    modules = sorted({(m, a is not None) for m, a, _ in imports}, key=lambda k: (k[1], k[0].lower()))
    for module, is_from in modules:
        section = sections[0 if module.split(".")[0] in sys.stdlib_module_names else 1]
        if not is_from:
            section += [
                _alias(f"import {module}", module, n)
                for m, a, n in sorted(imports)
                if m == module and a is None
            ]
            continue
        names = sorted({(a, n) for m, a, n in imports if m == module and a is not None}, key=_isort_order)
        section.append(f"from {module} import " + ", ".join(_alias(a, a, n) for a, n in names))
    return [*sections[0], *([""] if all(sections) else []), *sections[1]]


def _alias(text: str, attr: str, name: str) -> str:
    return text if attr.rsplit(".", 1)[-1] == name and "." not in attr else f"{text} as {name}"


def _isort_order(item: tuple[str, str]) -> tuple[int, str, str]:
    name, alias = item  # (the alias last: one name imported twice is in one order, not the set's)
    return (0 if name.isupper() and len(name) > 1 else 1 if name[0].isupper() else 2, name, alias)


def _is_literal(obj: Any) -> bool:
    if type(obj) is float or type(obj) is complex:
        return all(math.isfinite(p) for p in (obj.real, obj.imag))
    if type(obj) is tuple:
        return all(_is_literal(x) for x in obj)
    return type(obj) in _CONSTANTS


def _unparsed(fn: ast.FunctionDef) -> str:
    """fn as source, each comment marker a comment line."""
    comments: list[str] = []
    fn = _marked(fn, comments)
    text = ast.unparse(ast.fix_missing_locations(fn))
    return _MARKER_LINE.sub(lambda m: m.group(1) + comments[int(m.group(2))], text)


def _marked(fn: ast.FunctionDef, comments: list[str]) -> ast.FunctionDef:
    """A copy of fn whose comment markers are numbered placeholders (names on lines of their own)."""
    fn = copy.deepcopy(fn)
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not (isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt)):
                continue
            only_comments = True
            for s in stmts:
                text = _comment_of(s)
                if text is None:
                    only_comments = False
                    continue
                s.value = ast.Name(_MARKER.format(len(comments)), ast.Load())
                comments.append(text)
            if only_comments:  # a block of comments alone is no block
                stmts.append(ast.Pass())
    return fn


def _comment_of(s: ast.stmt) -> str | None:
    """The comment a marker statement `Expr(Constant("# ..."))` stands for, else None."""
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
        text = s.value.value
        if text.startswith("#") and "\n" not in text:
            return text
    return None


# --- names ------------------------------------------------------------------------------------


def identifier(name: str) -> str:
    """name made a Python identifier (`<lambda>` -> `lambda_`)."""
    out = re.sub(r"\W", "_", name).strip("_") or "f"
    if out[0].isdigit():
        out = f"f_{out}"
    return f"{out}_" if keyword.iskeyword(out) or out == "lambda" else out


def candidates(name: str) -> Iterator[str]:
    yield name
    for k in itertools.count(2):
        yield f"{name}_{k}"


def name_of(obj: Any) -> str:
    if type(obj).__name__ == "OpSpec":
        return obj.name
    return getattr(obj, "__name__", None) or type(obj).__name__.lower()


def is_builtin(name: str) -> bool:
    return name in builtins.__dict__


def builtin(name: str) -> Any:
    return builtins.__dict__.get(name)


def identifiers(norm: Any) -> set[str]:
    """Every name a Normalized function uses: parameters, locals, globals, lifted functions."""
    names = {*norm.params, *norm.kwonly, *norm.namespace, *getattr(norm, "lifted", {})}
    if norm.vararg:
        names.add(norm.vararg)
    for stmt in norm.body:
        names.update(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name))
    return names


def locals_of(fn: ast.FunctionDef) -> set[str]:
    a = fn.args
    names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    names.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not fn:
            names.add(node.name)
    return names


def free_names(fn: ast.FunctionDef) -> set[str]:
    """The names fn reads that it does not bind: module-level ones or builtins."""
    loads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - locals_of(fn)


def rename_globals(fn: ast.FunctionDef, renames: dict[str, str], locals_: set[str]) -> None:
    if not renames:
        return
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in renames and node.id not in locals_:
            node.id = renames[node.id]
