"""Registry: the ops, the rule tables (kind -> op -> rule) and the backends, with who registered each."""

from __future__ import annotations

import difflib
import functools
import inspect
import sys
import types
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcore.errors import (
    MissingRuleError,
    PluginError,
    UnknownBackendError,
    UnknownOpError,
    UnknownOptimizerError,
)
from adcore.hookspecs import Joint, RuleKind
from adcore.spec import Case, OpSpec


@dataclass
class PluginRecord:
    """What one plugin is and what it registered (for `adcore plugins` and roll-back)."""

    name: str
    version: str = ""
    dist: str = ""  # the distribution that provides it ("" when registered by hand)
    hooks: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    rules: list[tuple[str, str]] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    optimizers: list[str] = field(default_factory=list)
    error: str = ""


class Registry:
    """Everything the loaded plugins registered; built once by `adcore.plugins.get_registry`."""

    def __init__(self, reserved: dict[tuple[Any, ...], str] | None = None) -> None:
        """`reserved` maps a key such as ("backend", name) to the only plugin that may claim it."""
        # kind -> its contract, declared by the backend that brings the kind (Backend.rule_kinds)
        self.kinds: dict[str, RuleKind] = {}
        self.ops: dict[str, OpSpec] = {}
        self.rules: dict[str, dict[str, Any]] = defaultdict(dict)
        self.backends: dict[str, Any] = {}
        self.numpy_ops: dict[Any, OpSpec] = {}
        # "scipy.special.erf" -> op: a function named, not imported, by its op's spec (so loading a
        # plugin imports no SciPy); it joins numpy_ops once its module is imported (numpy_op)
        self.numpy_names: dict[str, OpSpec] = {}
        # len(sys.modules) when a lookup last looked for numpy_names in vain: until a module is
        # imported, another miss cannot resolve one either (np.shape on a tracer misses every time)
        self._names_missed_at = -1
        self.cases: dict[str, Case] = {}
        self.optimizers: dict[str, Any] = {}
        self.plugins: dict[str, PluginRecord] = {}
        self._owner: dict[tuple[Any, ...], str] = {}
        self._reserved = dict(reserved or {})
        # loads the next plugins (up to the one named, else all), False when every one is loaded;
        # None once they are. Set by adcore.plugins: a lookup that misses loads more and looks again.
        self.more: Callable[[str | None], bool] | None = None

    def complete(self) -> Registry:
        """This registry with every plugin that may load loaded (to list, or to rely on all)."""
        while self._load_more(None):
            pass
        return self

    def _load_more(self, until: str | None) -> bool:
        """Whether to look again after a miss: True if plugins were left to load when it missed,
        loaded now by this call or, meanwhile, by another thread (then the stages are all in)."""
        more = self.more
        if more is None:
            return False
        more(until)
        return True

    # --- registering ------------------------------------------------------------
    def add_kind(self, name: str, kind: RuleKind, plugin: str) -> None:
        if not isinstance(name, str) or not name.isidentifier() or not isinstance(kind, RuleKind):
            raise PluginError(
                f"plugin {plugin!r} registered kind {name!r} as {kind!r}; "
                "register(name, kind) takes an identifier and an adcore.hookspecs.RuleKind"
            )
        if self.kinds.get(name) == kind:
            return  # the same contract again (a backend subclassing another): nothing to claim
        self._claim(("kind", name), plugin, f"rule kind {name!r}")
        self.kinds[name] = kind
        self.plugins[plugin].kinds.append(name)

    def add_op(self, spec: OpSpec, plugin: str) -> None:
        if not isinstance(spec, OpSpec):
            raise PluginError(f"plugin {plugin!r} registered {spec!r}; register() takes an adcore.OpSpec")
        # a NumPy function stands for one op only: a second mapping would silently lose to the first
        funcs = list(dict.fromkeys(spec.numpy))  # np.abs is np.absolute: listing both is one mapping
        names = [f for f in funcs if isinstance(f, str)]
        # a named function whose module is imported already is claimed as itself too, so a plugin
        # that lists the function object and one that names it still clash
        funcs = list(dict.fromkeys([f for f in funcs if not isinstance(f, str)] + _imported(names)))
        claims = [(("op", spec.name), f"op {spec.name!r}")]
        claims += [(("numpy", f), f"NumPy function {_numpy_name(f)} (for op {spec.name!r})") for f in funcs]
        claims += [(("numpy", n), f"the function {n} (for op {spec.name!r})") for n in names]
        for key, what in claims:  # all checked before any is taken, so a refusal leaves nothing behind
            self._check_free(key, plugin, what)
        for key, _ in claims:
            self._owner[key] = plugin
        self.ops[spec.name] = spec
        for func in funcs:
            self.numpy_ops[func] = spec
        for name in names:
            self.numpy_names[name] = spec
        self.plugins[plugin].ops.append(spec.name)

    def add_rule(self, kind: str, op: str, rule: Any, plugin: str) -> None:
        if op not in self.ops:
            raise PluginError(f"plugin {plugin!r} registered a {kind!r} rule for unknown op {op!r}")
        spec = self.ops[op]
        known = self.kinds.get(kind)
        _check_rule_fits(kind, known, spec, rule, plugin)
        self._claim(("rule", kind, op), plugin, f"the {kind!r} rule for op {op!r}")
        self.rules[kind][op] = normalized(known, spec, rule)
        self.plugins[plugin].rules.append((kind, op))

    def add_user_op(self, spec: OpSpec, rules: dict[str, Any], plugin: str = "user") -> None:
        """An op and its rules registered at run time (adcore.custom_vjp / custom_jvp) under the
        pseudo-plugin `plugin`, through the same checks as a plugin's; all or nothing."""
        self.plugins.setdefault(plugin, PluginRecord(plugin))
        for kind, rule in rules.items():
            _check_rule_fits(kind, self.kinds.get(kind), spec, rule, plugin)
        self.add_op(spec, plugin)
        for kind, rule in rules.items():
            self.add_rule(kind, spec.name, rule, plugin)

    def remove_user_op(self, name: str, plugin: str = "user") -> None:
        """Forget an op of add_user_op and its rules (its custom function was redefined or freed)."""
        record = self.plugins.get(plugin)
        if record is None or name not in record.ops:
            return
        record.ops.remove(name)
        del self.ops[name]
        self._owner.pop(("op", name), None)
        for kind, op in [r for r in record.rules if r[1] == name]:
            record.rules.remove((kind, op))
            del self.rules[kind][op]
            self._owner.pop(("rule", kind, op), None)

    def add_backend(self, backend: Any, plugin: str) -> None:
        name = getattr(backend, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"plugin {plugin!r} registered {backend!r}, which has no name")
        self._claim(("backend", name), plugin, f"backend {name!r}")
        for kind, contract in dict(getattr(backend, "rule_kinds", None) or {}).items():
            self.add_kind(kind, contract, plugin)
        self.backends[name] = backend
        self.plugins[plugin].backends.append(name)

    def add_case(self, case: Case, plugin: str) -> None:
        if not isinstance(case, Case):
            raise PluginError(f"plugin {plugin!r} registered {case!r}; register() takes an adcore.Case")
        self._claim(("case", case.name), plugin, f"case {case.name!r}")
        self.cases[case.name] = case
        self.plugins[plugin].cases.append(case.name)

    def add_optimizer(self, name: str, factory: Any, plugin: str) -> None:
        if not isinstance(name, str) or not name.isidentifier() or not callable(factory):
            raise PluginError(
                f"plugin {plugin!r} registered optimizer {name!r} as {factory!r}; "
                "register(name, factory) takes an identifier and a callable (params, **hyper)"
            )
        self._claim(("optimizer", name), plugin, f"optimizer {name!r}")
        self.optimizers[name] = factory
        self.plugins[plugin].optimizers.append(name)

    def _claim(self, key: tuple[Any, ...], plugin: str, what: str) -> None:
        self._check_free(key, plugin, what)
        self._owner[key] = plugin

    def _check_free(self, key: tuple[Any, ...], plugin: str, what: str) -> None:
        """Refuse `key` to `plugin` if another plugin holds it or it is reserved for another."""
        # Plugins load in a fixed order, so the one refused here is always the later one: it
        # collided, and it is the one rolled back and named with the switch that blocks it.
        owner, reserved_for = self._owner.get(key), self._reserved.get(key, plugin)
        if owner is not None:
            taken = f"which plugin {owner!r} already registered"
        elif reserved_for != plugin:
            taken = f"a name reserved for the first-party plugin {reserved_for!r}, loaded or not"
        else:
            return
        raise PluginError(
            f"plugin {plugin!r} registered {what}, {taken}; so {plugin!r} is not loaded. "
            f"Remove or rename it in {plugin!r}, or stop loading {plugin!r}: ADCORE_BLOCK_PLUGINS={plugin}"
        )

    def remove_plugin(self, plugin: str) -> None:
        """Undo everything `plugin` registered (it failed part-way)."""
        record = self.plugins[plugin]
        for name in record.kinds:
            del self.kinds[name]
        for name in record.ops:
            spec = self.ops.pop(name)
            self.numpy_ops = {f: op for f, op in self.numpy_ops.items() if op is not spec}
            self.numpy_names = {n: op for n, op in self.numpy_names.items() if op is not spec}
        for kind, op in record.rules:
            del self.rules[kind][op]
        for name in record.backends:
            del self.backends[name]
        for name in record.cases:
            del self.cases[name]
        for name in record.optimizers:
            del self.optimizers[name]
        self._owner = {k: v for k, v in self._owner.items() if v != plugin}
        record.kinds, record.ops, record.rules, record.backends = [], [], [], []
        record.cases, record.optimizers = [], []

    # --- looking up -------------------------------------------------------------
    def numpy_op(self, func: Any) -> OpSpec | None:
        """The op a NumPy (or SciPy) function stands for, or None. A function named by a string
        ("scipy.special.erf") is looked up once its module is imported: user code that calls it
        has imported it, so a miss resolves the names whose modules are loaded now."""
        op = self.numpy_ops.get(func)
        if op is None and self.numpy_names and len(sys.modules) != self._names_missed_at:
            self._names_missed_at = len(sys.modules)
            for name in list(self.numpy_names):
                resolved = _resolve(name)
                spec = self.numpy_names.pop(name, None) if resolved is not None else None
                if spec is not None:  # (None: another thread resolved it meanwhile)
                    self.numpy_ops.setdefault(resolved, spec)
            op = self.numpy_ops.get(func)
        if op is None and self._load_more(None):
            return self.numpy_op(func)
        return op

    def op(self, name: str) -> OpSpec:
        try:
            return self.ops[name]
        except KeyError:
            if self._load_more(None):
                return self.op(name)
            raise UnknownOpError(f"no op named {name!r}{_suggest(name, self.ops)}") from None

    def backend(self, name: str) -> Any:
        try:
            return self.backends[name]
        except KeyError:
            if self._load_more(name):  # the plugins up to `name`: a backend N is plugin N's
                return self.backend(name)
            installed = ", ".join(sorted(self.backends)) or "none"
            raise UnknownBackendError(
                f"no backend named {name!r}{_suggest(name, self.backends)}; installed backends: "
                f"{installed}. Backends come from plugins: pip install adcore-{name} if it exists."
            ) from None

    def optimizer(self, name: str) -> Any:
        try:
            return self.optimizers[name]
        except KeyError:
            if self._load_more(None):
                return self.optimizer(name)
            installed = ", ".join(sorted(self.optimizers)) or "none"
            raise UnknownOptimizerError(
                f"no optimizer named {name!r}{_suggest(name, self.optimizers)}; installed optimizers: "
                f"{installed}. Optimizers come from plugins: pip install adcore-kernels brings torch.optim's eight (momentum and Nesterov are SGD options)."
            ) from None

    def rule(self, kind: str, op: OpSpec, backend: str) -> Any:
        """The `kind` rule of `op` as a trace reads it (see `normalized`), for every trace's lookup.

        An op without one: None if the op is `traceable` (the trace then runs `op.impl` on its own
        tracers, differentiating the body); for a per-input kind, rules that raise MissingRuleError
        only at an input a derivative flows through; else the MissingRuleError, naming the
        backends that can.
        """
        rule = self.rules[kind].get(op.name)
        if rule is not None:
            return rule
        if self._load_more(None):  # a plugin not loaded yet may bring it
            return self.rule(kind, op, backend)
        if op.traceable:
            return None
        known = self.kinds.get(kind)
        if known is not None and known.per_input:
            return MissingRules(functools.partial(self.missing_rule, kind, op, backend), op)
        raise self.missing_rule(kind, op, backend)

    def missing_rule(self, kind: str, op: OpSpec, backend: str) -> MissingRuleError:
        self.complete()
        able = sorted(n for n, b in self.backends.items() if self.supports(b, op))
        return MissingRuleError(
            f"op {op.name!r} has no {kind!r} rule, so backend {backend!r} cannot differentiate it; "
            f"backends that can: {', '.join(able) or 'none'}. A plugin adds one with "
            f"register({kind!r}, {op.name!r}, rule) in its adcore_register_rules hook."
        )

    def supports(self, backend: Any, op: OpSpec) -> bool:
        """Whether `backend` can differentiate `op`: it has a rule of each kind, or the op's body."""
        return op.traceable or all(
            op.name in self.rules[kind] or (op.elementwise and self.by_flag(kind))
            for kind in getattr(backend, "kinds", ())
        )

    def exact_backend(self, builds: str) -> Any | None:
        """The backend that builds `builds` ("jvp" or "vjp") exactly and can best take an outer
        derivative (outer_priority, then reference_priority, then name), or None: chosen by what
        it can do, for custom rules and checkpoint, which differentiate user code inside a rule."""
        able = [
            b
            for b in self.backends.values()
            if getattr(b, "builds", None) == builds
            and not getattr(b, "estimates", False)
            and not getattr(b, "pattern", False)
        ]
        rank = lambda b: (-getattr(b, "outer_priority", 0), -getattr(b, "reference_priority", 0), b.name)  # noqa: E731
        return min(able, key=rank, default=None)

    def by_flag(self, kind: str) -> bool:
        """Whether an op flagged `elementwise` needs no rule of `kind` (its backend derives it)."""
        known = self.kinds.get(kind)
        return known is not None and known.elementwise_by_flag


# --- the one form a trace reads ----------------------------------------------------


def normalized(kind: RuleKind | None, op: OpSpec, rule: Any) -> Any:
    """A checked rule in the form every trace reads. For a per-input kind (vjp, jvp) that is
    `rules[i]`: the rule of input i, called (leading..., *inputs, **params), or None where no
    derivative flows (the inputs the op declares not differentiable included). A tuple is that
    form already (and stays a tuple, so the hot path indexes a tuple); a variadic op's one
    callable (argnum, leading..., *inputs) becomes VariadicRules. Other kinds stay one callable;
    `kind` is the kind's contract, None for a kind no plugin declares. A Joint rule becomes JointRules."""
    if rule.__class__ is Joint:
        return JointRules(rule.fn, op)
    if op.variadic and callable(rule) and (kind is None or kind.per_input):
        return VariadicRules(rule, op)
    return rule


class VariadicRules:
    """A variadic op's rule as per-input rules: `rules[i]` is the rule with the position i bound."""

    __slots__ = ("fn", "op")

    def __init__(self, fn: Callable[..., Any], op: OpSpec) -> None:
        self.fn, self.op = fn, op

    def __getitem__(self, i: int) -> Callable[..., Any] | None:
        return functools.partial(self.fn, i) if self.op.is_differentiable(i) else None

    def __repr__(self) -> str:
        return f"VariadicRules({self.fn!r})"


class JointRules:
    """An op's Joint rule (hookspecs.Joint): `joint(leading..., *inputs)` gives every input's share
    at once; `rules[i]` is None where the op declares no derivative, else a rule that refuses to
    be called alone (a backend reading a kind with joint rules calls `.joint`)."""

    __slots__ = ("joint", "op")

    def __init__(self, joint: Callable[..., Any], op: OpSpec) -> None:
        self.joint, self.op = joint, op

    def __getitem__(self, i: int) -> Callable[..., Any] | None:
        return self._alone if self.op.is_differentiable(i) else None

    def _alone(self, *args: Any, **params: Any) -> Any:
        raise PluginError(f"op {self.op.name!r} has a joint rule: call its .joint once for all inputs")

    def __repr__(self) -> str:
        return f"JointRules({self.joint!r})"


class MissingRules:
    """The per-input rules of an op that has none of a kind: None where the op declares no
    derivative, the MissingRuleError at an input one would flow through."""

    __slots__ = ("error", "op")

    def __init__(self, error: Callable[[], MissingRuleError], op: OpSpec) -> None:
        self.error, self.op = error, op

    def __getitem__(self, i: int) -> None:
        if self.op.is_differentiable(i):
            raise self.error()
        return None


def _resolve(name: str) -> Any:
    """The function a dotted name ("scipy.special.erf") names if its module is imported, else None."""
    module, _, attr = name.rpartition(".")
    return getattr(sys.modules.get(module), attr, None)


def _imported(names: list[str]) -> list[Any]:
    """The functions of `names` whose modules are imported (none is imported here)."""
    return [f for f in map(_resolve, names) if f is not None]


def _numpy_name(func: Any) -> str:
    """numpy.hypot, numpy.linalg.norm: how a NumPy function is named in a clash."""
    name = getattr(func, "__name__", repr(func))
    if getattr(np, name, None) is func:  # np.sum's __module__ is numpy._core.fromnumeric
        return f"numpy.{name}"
    return f"{getattr(func, '__module__', None) or '?'}.{name}"


def _suggest(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


def _check_rule_fits(kind: str, known: RuleKind | None, spec: OpSpec, rule: Any, plugin: str) -> None:
    """Reject a rule whose shape or signature does not fit the op's inputs (and its kind's contract,
    `known`, when a plugin declared it)."""
    where = f"plugin {plugin!r}: the {kind!r} rule for op {spec.name!r}"
    leading = len(known.leading) if known else 0
    if rule.__class__ is Joint:
        if known is not None and not known.joint:
            raise PluginError(f"{where} is a Joint rule, which kind {kind!r} does not take")
        _check_callable(rule.fn, leading + spec.nin, where, spec.params, variadic=spec.variadic)
    elif spec.variadic:
        if not callable(rule):
            raise PluginError(f"{where} must be one callable (argnum, ...) since the op is variadic")
        _check_callable(rule, 1 + leading, where, spec.params, variadic=True)
    elif isinstance(rule, tuple) and (known is None or known.per_input):
        if len(rule) != spec.nin:
            raise PluginError(
                f"{where} has {len(rule)} entries; the op has {spec.nin} input(s), one entry each"
            )
        for i, fn in enumerate(rule):
            if fn is None:
                continue
            if not spec.is_differentiable(i):
                raise PluginError(
                    f"{where} gives a rule for input {i}, which the op declares not differentiable; "
                    "put None there"
                )
            _check_callable(fn, leading + spec.nin, where, spec.params)
    elif callable(rule) and (known is None or not known.per_input):
        _check_callable(rule, leading + spec.nin, where, spec.params)
    elif known is not None and known.per_input:
        raise PluginError(f"{where} must be a tuple with one callable (or None) per input, got {rule!r}")
    else:
        raise PluginError(f"{where} must be one callable, got {rule!r}")


def _check_callable(
    fn: Any, npositional: int, where: str, param_names: tuple[str, ...], variadic: bool = False
) -> None:
    if not callable(fn):
        raise PluginError(f"{where}: {fn!r} is not callable")
    if _fits_plainly(fn, npositional, param_names, variadic):
        return  # (the usual case, read off the code object: loading checks a thousand rules)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins without a signature cannot be checked
    params = list(sig.parameters.values())
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return
    if variadic:
        raise PluginError(f"{where} must accept the op's inputs as *args")
    # the op's params arrive as keywords, so a parameter named like one is not an input
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in param_names
    ]
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= npositional <= len(positional):
        raise PluginError(
            f"{where} takes {len(required)} positional argument(s) {str(sig)}; "
            f"it must take {npositional} (its kind's leading arguments, then the op's inputs)"
        )


def _fits_plainly(fn: Any, npositional: int, param_names: tuple[str, ...], variadic: bool) -> bool:
    """Whether a plain Python function visibly fits, as inspect.signature would find (False: ask it)."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__"):
        return False
    code = fn.__code__
    if code.co_flags & inspect.CO_VARARGS:
        return True
    if variadic:
        return False
    names = code.co_varnames[: code.co_argcount]
    first_default = len(names) - len(fn.__defaults__ or ())
    positional = [i for i, name in enumerate(names) if name not in param_names]
    required = [i for i in positional if i < first_default]
    return len(required) <= npositional <= len(positional)
