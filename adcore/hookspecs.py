"""The hook specifications: the whole plugin contract of adcore (pluggy project "adcore").

A plugin is any object or module with functions marked `@adcore.hookimpl` and named
after these specs. It is found through the "adcore" entry-point group (or registered
by hand with `adcore.plugins.register_plugin`). Hooks are called once per plugin when
adcore first needs it, in this order: kinds, ops, rules, backends, cases, optimizers. Plugins load in
stages, in the load order below: the core at once, then as far as a lookup needs (a backend N:
the plugins up to N; any other miss, or a listing: all), so `import adcore` imports none.
Each receives a `register` callback, which works only until that hook returns; what one
plugin registers is recorded under its name, and if any of it is invalid the whole plugin
is rolled back and reported, the others unaffected.

Within each hook the plugins are called in a fixed load order: the core catalogue, the
first-party plugins by name (the entry point N of a distribution adcore-N), the other entry
points by name, then those registered by hand. A name is taken by the first plugin that registers
it; a later plugin asking for it is the one rolled back (docs/conventions.md, "Plugin
clashes"). A plugin must not use adcore (`adcore.ops[...]`, `grad`, ...) at import or
inside a hook: the registry it would read is the one being built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pluggy

hookspec = pluggy.HookspecMarker("adcore")
hookimpl = pluggy.HookimplMarker("adcore")


class RegisterKind(Protocol):
    def __call__(self, name: str, kind: RuleKind) -> None: ...


class RegisterOp(Protocol):
    def __call__(self, spec: Any) -> None: ...


class RegisterRule(Protocol):
    def __call__(self, kind: str, op: str, rule: Any) -> None: ...


class RegisterBackend(Protocol):
    def __call__(self, backend: Any) -> None: ...


class RegisterCase(Protocol):
    def __call__(self, case: Any) -> None: ...


class RegisterOptimizer(Protocol):
    def __call__(self, name: str, factory: Any) -> None: ...


@dataclass(frozen=True)
class RuleKind:
    """The contract of one kind of rule, declared as data by the backend that brings the kind.

    A backend declares the kinds it brings in `Backend.rule_kinds`, {name: RuleKind}; the registry
    learns them when the backend is registered, and checks every plugin's rules of that kind then
    (they wait for it), so a backend with a new kind touches no core file. A kind has one contract:
    another backend may declare the same one (a subclass does), not a different one. Rules of a
    kind no loaded backend declares (its plugin blocked or not installed) are set aside: no loaded
    backend could read them.

    A rule receives `leading` arguments, then the op's inputs, then its params as keywords. A
    `per_input` kind has one rule per input (a tuple, None where no derivative flows); the registry
    stores those as `rules[i]`, the rule of input i or None (adcore.registry.normalized), which is
    what every backend reads; a kind with a `joint` contract also takes a `Joint` rule, stored as
    JointRules, whose `.joint` a backend calls once for all inputs. Otherwise one callable
    computes the whole result."""

    leading: tuple[str, ...]
    per_input: bool
    # an op flagged `elementwise` needs no rule of this kind: its backend derives it from the flag
    elementwise_by_flag: bool = False
    # where the kind's column goes in `adcore rules` and docs/ops.md (lowest first, ties by name)
    column: int = 100
    # what a rule receives and returns, in a line, for the catalogue and error messages
    doc: str = ""
    # what a Joint rule of this kind receives and returns; "" if the kind takes none
    joint: str = ""
    # for a kind no backend needs (a transformation's, declared by adcore_register_kinds): what an
    # op without a rule of it gets instead, which `adcore rules --missing` says
    without: str = ""


@dataclass(frozen=True)
class Joint:
    """A rule of a per-input kind given for all of an op's inputs at once: register
    `Joint(fn)` instead of one rule per input, for any op, third-party ones too.

    `fn` receives the kind's leading arguments, then every input, then the params as keywords,
    and computes every input's share in one call, as its kind's `RuleKind.joint` says (vjp:
    `(g, ans, *inputs) -> [cotangent or None per input]`; jvp: `(tangents, ans, *inputs) ->
    the output's tangent`, the inputs' tangents in a list, None where an input carries none).
    For a variadic op whose per-input rules each read all k inputs (stack, concatenate) that is
    one call instead of k, each of cost k."""

    fn: Any


@hookspec
def adcore_register_kinds(register: RegisterKind) -> None:
    """Declare rule kinds that no backend brings: call `register(name, kind)` with an
    `adcore.hookspecs.RuleKind` for each.

    A backend declares its own kinds in `Backend.rule_kinds`; a transformation that is not a
    differentiator declares its kind here (the batching plugin's "batch", which `adcore.vmap`
    reads). Called first, once per plugin; a kind has one contract, claimed by one plugin.
    """


@hookspec
def adcore_register_ops(register: RegisterOp) -> None:
    """Register ops: call `register(spec)` with an `adcore.OpSpec` for each.

    Called first, once per plugin. An op name must be unique across all plugins: a
    second plugin registering the same name is rejected, and both are named. So is a
    NumPy function in `spec.numpy` that another op already stands for.
    """


@hookspec
def adcore_register_rules(register: RegisterRule) -> None:
    """Register differentiation rules: call `register(kind, op_name, rule)`.

    Called after every plugin's ops are in, so a plugin may add rules for another
    plugin's ops. `kind` names a rule table, of a kind some backend declares in its
    `rule_kinds` ("vjp", say, which the reverse backend declares). For a per-input
    kind `rule` is a tuple with one callable, or None for "no derivative flows here",
    per input of the op; for other kinds it is one callable; for a variadic op it is one
    callable taking the input's position first, or for a kind with a joint contract a
    `Joint(fn)` computing all inputs' shares at once. What each kind's rules receive is its
    `RuleKind`. A rule whose form or signature does not fit its op is rejected, and so is
    a rule for an input the op declares not differentiable.
    """


@hookspec
def adcore_register_backends(register: RegisterBackend) -> None:
    """Register differentiators: call `register(backend)` with an `adcore.Backend` instance.

    Called after rules. The backend's `name` is what users pass as `backend=`; its `kinds`
    lists the rule kinds it needs, so a missing rule can name the backends that work. A
    backend named N belongs to the plugin N of the distribution adcore-N wherever that is
    installed (the first-party convention, read from the installed metadata), also when that
    plugin is not loaded.
    """


@hookspec
def adcore_register_cases(register: RegisterCase) -> None:
    """Register composite functions for the conformance suite: call `register(case)` with an
    `adcore.Case` for each.

    Called after backends. `adcore conformance` checks every case like an op: each installed
    backend's derivative with respect to the case's `argnums`, at each of its samples,
    against the reference. A case name must be unique across all plugins.
    """


@hookspec
def adcore_register_optimizers(register: RegisterOptimizer) -> None:
    """Register optimizers: call `register(name, factory)` for each, usually a class.

    `adcore.optimizer(name, params, **hyper)` calls `factory(params, **hyper)`; what it
    returns updates `params` in place with `.step(grads)` and saves its state with
    `.state_dict()` / `.load_state_dict(state)` (the torch.optim interface). Called last.
    A name must be unique across all plugins.
    """
