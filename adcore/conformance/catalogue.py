"""The op catalogue as data and as markdown: each registered op, its NumPy names, rules, kinks and doc.

`adcore rules` prints it and `adcore rules --markdown > docs/ops.md` writes docs/ops.md,
which tests/test_ops_doc.py keeps current. Ops are grouped by the module of adcore/ops/
that defines them, in the catalogue's order, then by plugin.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass
from typing import Any

from adcore import ops as core_ops
from adcore.registry import Registry
from adcore.spec import OpSpec

# what the rule cells say: a rule of that kind, the op's body differentiated (traceable), no
# rule (the backends needing the kind refuse the op with MissingRuleError), or no input a
# derivative flows through
RULE, BODY, NONE, NOT_NEEDED, ELEMENTWISE = "rule", "body", "none", "not needed", "elementwise"
USER_PLUGIN = "user"  # custom_vjp / checkpoint functions: ops of the running program, not of the catalogue
MARKDOWN_COMMAND = "adcore rules --markdown > docs/ops.md"


@dataclass(frozen=True)
class OpEntry:
    """One op as the catalogue shows it."""

    name: str
    group: str
    plugin: str
    numpy_names: tuple[str, ...]
    aliases: tuple[str, ...]
    rules: dict[str, str]  # kind -> RULE, BODY, NONE, NOT_NEEDED or ELEMENTWISE
    kinks: tuple[str, ...]
    doc: str


def rule_kinds(registry: Registry) -> list[str]:
    """The rule kinds declared, registered or needed by a backend: declared ones by their `column`,
    others after."""
    found = set(registry.kinds) | set(registry.rules)
    found |= {k for b in registry.backends.values() for k in getattr(b, "kinds", ())}
    declared = registry.kinds
    return sorted(found, key=lambda k: (k not in declared, declared[k].column if k in declared else 0, k))


def backends_needing(registry: Registry, kind: str) -> list[str]:
    return sorted(n for n, b in registry.backends.items() if kind in getattr(b, "kinds", ()))


def needs_rule(op: OpSpec) -> bool:
    """An op none of whose inputs is differentiable (stop_gradient) needs no rule."""
    return op.variadic or op.differentiable != ()


def rule_state(registry: Registry, op: OpSpec, kind: str) -> str:
    if op.name in registry.rules.get(kind, {}):
        return RULE
    # a kind no backend needs is a transformation's (vmap's batch rules): every op needs one, even
    # one no derivative flows through
    if not needs_rule(op) and backends_needing(registry, kind):
        return NOT_NEEDED
    if op.elementwise and registry.by_flag(kind):
        return ELEMENTWISE
    return BODY if op.traceable else NONE


def entries(registry: Registry) -> list[OpEntry]:
    """Every op of the loaded plugins but the running program's own, grouped and in order."""
    kinds = rule_kinds(registry)
    owner = {op: r.name for r in registry.plugins.values() for op in r.ops}
    modules = core_modules()
    group_order = list(dict.fromkeys(modules.get(spec.name, "") for spec in core_ops.CORE_OPS))
    plugin_order = list(registry.plugins)
    found = []
    for name, spec in registry.ops.items():
        plugin = owner.get(name, "")
        if plugin == USER_PLUGIN:
            continue
        group = modules.get(name) if spec in core_ops.CORE_OPS else None
        found.append(
            OpEntry(
                name=name,
                group=group or f"plugin {plugin}",
                plugin=plugin,
                numpy_names=tuple(dict.fromkeys(function_name(f) for f in spec.numpy)),
                aliases=tuple(spec.aliases),
                rules={k: rule_state(registry, spec, k) for k in kinds},
                kinks=tuple(dict.fromkeys(k.why or _kink_point(k) for k in spec.kinks)),
                doc=" ".join(spec.doc.split()),
            )
        )

    def order(e: OpEntry) -> tuple:
        if e.group in group_order:
            return (group_order.index(e.group), e.name)
        plugin = plugin_order.index(e.plugin) if e.plugin in plugin_order else len(plugin_order)
        return (len(group_order) + plugin, e.name)

    return sorted(found, key=order)


def _kink_point(kink: Any) -> str:
    """A kink without a `why`, by its inputs."""
    return "at " + " ".join(repr(kink.inputs).split())


def core_modules() -> dict[str, str]:
    """op name -> the module of adcore/ops/ that defines it (not one that imports it)."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(core_ops.__path__):
        module = importlib.import_module(f"{core_ops.__name__}.{info.name}")
        imported = _imported_names(module)
        for var, value in vars(module).items():
            if isinstance(value, OpSpec) and var not in imported:
                found.setdefault(value.name, info.name)
    return found


def _imported_names(module: Any) -> set[str]:
    """The names a module's top-level import statements bind."""
    tree = ast.parse(inspect.getsource(module))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
    return names


# modules a function with no usable __module__ (a ufunc) may be found in, in this order
_HOMES = ("numpy", "numpy.linalg", "scipy.special", "scipy.linalg", "scipy.stats", "scipy.signal")


def function_name(func: Any) -> str:
    """numpy.cumsum, numpy.linalg.norm, scipy.special.erfc: a function by its public module."""
    if isinstance(func, str):  # named, not imported, by its spec (the Registry's numpy_names)
        return func
    name = getattr(func, "__name__", None)
    if name is None:
        return repr(func)
    module = getattr(func, "__module__", None) or ""
    parts = module.split(".") if module else []
    candidates = [".".join(parts[:i]) for i in range(1, len(parts) + 1)] + list(_HOMES)
    for home in candidates:
        if any(p.startswith("_") for p in home.split(".")):
            continue
        loaded = sys.modules.get(home)
        if loaded is not None and getattr(loaded, name, None) is func:
            return f"{home}.{name}"
    return f"{module or '?'}.{name}"


def composed_functions() -> list[tuple[str, str]]:
    """(NumPy name, what serves it) for the NumPy functions a tracer answers with a Python function
    over ops rather than one op (np.linalg.eigh's namedtuple, matrix_rank's int)."""
    served = ((function_name(f), _served_by(fn)) for f, fn in core_ops.NUMPY_FUNCTIONS.items())
    return sorted(served)


def _served_by(fn: Any) -> str:
    doc = " ".join((inspect.getdoc(fn) or "").split("\n\n")[0].split())
    where = f"`{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}`"
    return f"{where}: {doc}" if doc else where


# --- markdown ---------------------------------------------------------------------------


def markdown(registry: Registry) -> str:
    """docs/ops.md: one table per group of ops."""
    kinds = rule_kinds(registry)
    listed = entries(registry)
    lines = [
        "# Ops",
        "",
        f"Generated from the registry by `{MARKDOWN_COMMAND}`; tests/test_ops_doc.py checks it is",
        "current. Every op the installed plugins register: the NumPy functions it stands for on a",
        "traced value, its other names in `adcore.numpy` (aliases), its rules per kind, its kinks",
        "(docs/conventions.md) and what its doc says, degenerate points included.",
        "",
        "Rule cells: **rule**, the kind's rule; **body**, no rule, the backend differentiates the",
        "op's impl (written with adcore ops); **none**, no rule, so the backends that need the",
        "kind refuse the op with MissingRuleError (conformance counts it as unsupported; for",
        "batch, which no backend needs, vmap runs the op once per batch element instead);",
        "**not needed**, no input a derivative flows through; **elementwise**, no rule, the",
        "kind's backend derives it from the op's elementwise flag (sparsity: the elementwise pattern).",
        "",
        "Backends per rule kind: "
        + "; ".join(f"{k}: {', '.join(backends_needing(registry, k)) or '-'}" for k in kinds)
        + ". The numeric backend needs no rules.",
        "",
        f"{len(listed)} ops: "
        + ", ".join(
            f"{g} {sum(e.group == g for e in listed)}" for g in dict.fromkeys(e.group for e in listed)
        )
        + ".",
    ]
    header = ["op", "NumPy names", *kinds, "kinks", "behaviour"]
    for group in dict.fromkeys(e.group for e in listed):
        lines += ["", f"## {group}", "", _row(header), _row(["---"] * len(header))]
        for e in listed:
            if e.group == group:
                lines.append(_row(_cells(e, kinds)))
    composed = composed_functions()
    if composed:
        lines += ["", "## NumPy functions served by a function over ops", ""]
        lines += ["Their results are not one op's output (a namedtuple, a plain int); the function calls"]
        lines += ["the ops above, whose rules differentiate it.", ""]
        lines += [_row(["NumPy name", "served by"]), _row(["---"] * 2)]
        lines += [_row([f"`{name}`", by]) for name, by in composed]
    return "\n".join(lines) + "\n"


def _cells(e: OpEntry, kinds: list[str]) -> list[str]:
    names = ", ".join(f"`{n}`" for n in e.numpy_names)
    if e.aliases:
        names += ("; " if names else "") + "aliases " + ", ".join(f"`{a}`" for a in e.aliases)
    return [f"`{e.name}`", names, *(e.rules[k] for k in kinds), "; ".join(e.kinks), e.doc]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
