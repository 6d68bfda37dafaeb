"""Plugin loading: the essential core catalogue, then the "adcore" entry points; once, lazily.

Switches, read when the registry is (re)built:
- ADCORE_DISABLE_PLUGIN_AUTOLOAD=1: load no entry-point plugin except those in ADCORE_PLUGINS.
- ADCORE_PLUGINS=reverse,forward: load only these entry-point plugins (an allow-list).
- ADCORE_BLOCK_PLUGINS=name,name: never load these.
- ADCORE_DEBUG=1: print pluggy's trace of every hook call to stderr.
The core op catalogue is essential: it is always loaded and cannot be blocked.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Any

import pluggy

from adcore import hookspecs, ops
from adcore.errors import PluginError
from adcore.plugin_candidates import (
    ESSENTIAL,
    Candidate,
    candidates,
    normalize,
    owners,
)
from adcore.registry import PluginRecord, Registry

ENTRY_POINT_GROUP = "adcore"
HOOKS = (
    "adcore_register_kinds",
    "adcore_register_ops",
    "adcore_register_rules",
    "adcore_register_backends",
    "adcore_register_cases",
    "adcore_register_optimizers",
)


class _Essential:
    """The essential plugin "core": the core op catalogue (its other parts come from above: add_builtin)."""

    @hookspecs.hookimpl
    def adcore_register_ops(self, register: hookspecs.RegisterOp) -> None:
        for spec in ops.CORE_OPS:
            register(spec)


ESSENTIAL_PLUGIN = _Essential()
# parts of the essential plugin that adcore's upper layers hand down (conformance's cases): called
# right after it in every hook, what they register is its, and, like it, they cannot be blocked
_builtins: dict[str, Any] = {}

_lock = threading.Lock()
_loading = threading.local()  # set on the thread building the registry
_registry: Registry | None = None
_by_hand: dict[str, Any] = {}


def get_registry() -> Registry:
    """The registry of every plugin that may load, loaded on first use (to list, or to rely on all)."""
    return loaded_registry().complete()


def loaded_registry() -> Registry:
    """The registry as loaded so far: at first the core only. A lookup it misses (an op, a backend,
    a NumPy function, a rule) loads more plugins, in the load order, and looks again: what a call
    needs, found without importing every plugin (a backend N loads the plugins up to N)."""
    registry = _registry
    if registry is None or getattr(_loading, "active", False):
        _refuse_reentry("used adcore (adcore.ops, grad, backends, ...)")
        with _lock:
            if _registry is None:
                _set(load())
            registry = _registry
    return registry


ops.use_registry(loaded_registry)  # the layers below read the registry (np.sin(x) -> op, adcore.ops.name)


def _refuse_reentry(what: str) -> None:
    # a plugin's import or hook runs while this thread holds _lock: waiting for it would hang forever
    if getattr(_loading, "active", False):
        raise PluginError(
            f"a plugin {what} while adcore was loading its plugins, at import or in a hook; "
            "do that when called, not while registering"
        )


def _set(registry: Registry | None) -> None:
    global _registry
    _registry = registry
    ops.use_loaded_registry(registry)  # numpy_dispatch's per-call op lookup reads it


def reset() -> None:
    """Forget the loaded plugins; the next use loads them again (after changing the switches)."""
    _refuse_reentry("registered, unregistered or reset plugins")
    with _lock:
        _set(None)


def register_plugin(plugin: Any, name: str) -> None:
    """Add a plugin object by hand (as tests and notebooks do); it loads with the next registry."""
    owner = first_party().get(name)
    if owner is not None:
        raise PluginError(
            f"{name!r} is the name of a first-party plugin (distribution {owner}); "
            "register yours under another name"
        )
    _refuse_reentry("registered, unregistered or reset plugins")  # before anything changes
    _by_hand[name] = plugin
    reset()


def add_builtin(name: str, plugin: Any) -> None:
    """Add a part of the essential core plugin from a layer above this one; the next registry has it."""
    if _builtins.get(name) is not plugin:
        _refuse_reentry("registered, unregistered or reset plugins")
        _builtins[name] = plugin
        reset()


def unregister_plugin(name: str) -> None:
    """Remove a plugin added with `register_plugin`."""
    _refuse_reentry("registered, unregistered or reset plugins")
    _by_hand.pop(name, None)
    reset()


# custom_vjp / custom_jvp functions' ops, added again to every registry built (they outlive a
# reload); `_freed` names the ops of functions since redefined or garbage-collected, appended by
# a finalizer at any moment (no lock: it may run inside load), removed at the next add
_user_ops: dict[str, tuple[Any, dict[str, Any]]] = {}
_freed: list[str] = []


def add_user_op(spec: Any, rules: dict[str, Any]) -> None:
    """Register an op and its rules from user code, now and in every registry built later."""
    if getattr(_loading, "active", False):  # defined by a plugin as it loads: added after the hooks
        _user_ops[spec.name] = (spec, rules)
        return
    get_registry()
    with _lock:
        while _freed:
            name = _freed.pop()
            _user_ops.pop(name, None)
            if _registry is not None:
                _registry.remove_user_op(name)
        if _registry is not None:
            _registry.add_user_op(spec, rules)  # its checks refuse before anything is kept
        _user_ops[spec.name] = (spec, rules)


def forget_user_op(name: str) -> None:
    """The op of add_user_op called `name` is no longer needed (safe to call from a finalizer)."""
    _freed.append(name)


def load() -> Registry:
    """A fresh registry with the core loaded; the other plugins load when a lookup misses (_Loader)."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    if os.environ.get("ADCORE_DEBUG") == "1":
        pm.trace.root.setwriter(lambda message: sys.stderr.write(message))
        pm.enable_tracing()
    refused: list[tuple[Candidate, str]] = []
    found = _entry_points(refused)
    owner_of = owners(found)
    # a backend named N means plugin N of adcore-N (first_party), also when that plugin is blocked
    registry = Registry(reserved={("backend", name): name for name in owner_of if name != ESSENTIAL})
    loader = _Loader(pm, registry, candidates(found, owner_of, refused, ESSENTIAL_PLUGIN, _by_hand), refused)
    loader.load(ESSENTIAL)
    return registry


class _Loader:
    """Loads the plugins of one registry in stages, always in the load order, so what a stage loads
    is what loading them all at once would: a later stage's plugins come later in the order, and a
    name clash refuses the later plugin either way. A rule registered before its op's plugin (or
    its kind's) has loaded waits for it; one whose op never comes fails its plugin at the end."""

    def __init__(
        self,
        pm: pluggy.PluginManager,
        registry: Registry,
        candidates: list[Candidate],
        refused: list[tuple[Candidate, str]],
    ) -> None:
        self.pm, self.registry, self.remaining, self.refused = pm, registry, candidates, refused
        self.waiting: list[tuple[str, str, Any, str]] = []  # (kind, op, rule, plugin)

    def more(self, until: str | None) -> bool:
        """Load the next stage (up to the plugin `until`, else all); False when all are loaded."""
        _refuse_reentry("used adcore (adcore.ops, grad, backends, ...)")
        with _lock:
            if not self.remaining:
                return False
            self.load(until)
            return True

    def load(self, until: str | None) -> None:
        names = [c.name for c in self.remaining]
        end = names.index(until) + 1 if until in names else len(names)
        stage, self.remaining = self.remaining[:end], self.remaining[end:]
        last = not self.remaining
        registry, pm = self.registry, self.pm
        _loading.active = True
        try:
            for candidate in stage:
                _register(pm, registry, candidate)
            if ESSENTIAL in names[:end]:  # refused unimported: said at once, whatever loads later
                for candidate, reason in self.refused:
                    _refuse(registry, candidate, reason)
            loading = {c.name for c in stage}
            for hook in HOOKS:
                if hook == "adcore_register_rules":
                    self._add_waiting(False)  # those whose op came with this stage, in the load order
                for name, plugin in list(pm.list_name_plugin()):
                    if name.split(".")[0] in loading:  # (core.<part>: a part of the core)
                        _call_hook(pm, registry, hook, name, plugin, self.waiting, last)
                if hook == "adcore_register_backends":
                    self._add_waiting(last)  # those whose kind a backend of this stage declared
            if last:
                self._finish()
        finally:
            _loading.active = False
        registry.more = None if last else self.more

    def _add_waiting(self, last: bool) -> None:
        """Add the waiting rules whose op and kind are in now (at the end: all, as a full load would)."""
        waiting, self.waiting = self.waiting, []
        for kind, op, rule, name in waiting:
            if name in self.registry.plugins and self.registry.plugins[name].error:
                continue  # its plugin failed meanwhile
            ready = kind in self.registry.kinds and op in self.registry.ops
            if not (ready or last):
                self.waiting.append((kind, op, rule, name))
            elif kind in self.registry.kinds:  # (a kind no loaded backend declares: set aside)
                try:
                    self.registry.add_rule(kind, op, rule, plugin=name)
                except PluginError as e:
                    self.registry.remove_plugin(name)
                    self.pm.unregister(name=name)
                    _fail(
                        self.registry.plugins[name],
                        _blockable(name, f"adcore_register_rules failed: {type(e).__name__}: {e}"),
                    )

    def _finish(self) -> None:
        registry = self.registry
        for key in [k for k, r in registry.plugins.items() if r.error.startswith("refused: ")]:
            registry.plugins[key] = registry.plugins.pop(
                key
            )  # listed after the loaded ones, as in `adcore plugins`
        # all of them, the freed ones too: the set of user ops changes only in add_user_op, so a
        # reload keeps it as it was (a finalizer runs whenever the garbage collector does)
        for spec, rules in list(_user_ops.values()):
            try:
                registry.add_user_op(spec, rules)
            except PluginError as e:  # a plugin loaded since claims its name
                _fail(registry.plugins["user"], str(e))


def first_party() -> dict[str, str]:
    """The first-party plugin names installed, each with the only distribution that may provide it."""
    return owners(_entry_points([]))


def entry_points(group: str) -> Any:
    """importlib.metadata.entry_points, imported on first use: it costs 10 ms, not for `import adcore`."""
    from importlib import metadata

    return metadata.entry_points(group=group)


def distributions() -> Any:
    from importlib import metadata

    return metadata.distributions()


def _entry_points(refused: list[tuple[Candidate, str]]) -> list[Any]:
    """The "adcore" entry points; a distribution whose entry_points.txt cannot be parsed is refused."""
    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # one malformed file would otherwise take every plugin, and adcore, down
        pass
    found, seen = [], set()
    for dist in distributions():
        name = normalize(getattr(dist, "name", None) or "")
        if name in seen:  # as entry_points() does: the first on sys.path of each name
            continue
        seen.add(name)
        try:
            found += dist.entry_points.select(group=ENTRY_POINT_GROUP)
        except Exception as e:
            if f"[{ENTRY_POINT_GROUP}]" in (dist.read_text("entry_points.txt") or ""):
                candidate = Candidate("entry_points.txt", dist.version or "", name, lambda: None)
                refused.append(
                    (
                        candidate,
                        f"it cannot be read ({type(e).__name__}: {e}). Fix or uninstall it: pip uninstall {name}",
                    )
                )
    return found


def _register(pm: pluggy.PluginManager, registry: Registry, candidate: Candidate) -> None:
    """Import one plugin and register it with pluggy; a failure is its own, reported by name."""
    name = candidate.name
    record = registry.plugins[name] = PluginRecord(name, candidate.version, candidate.dist)
    try:
        plugin = candidate.get()
        hash(plugin)  # pluggy keys plugins by object: a module, class or instance will do
        pm.register(plugin, name=name)
        callers = pm.get_hookcallers(plugin) or ()
        unknown = sorted(c.name for c in callers if not c.has_spec())
        if unknown:
            raise PluginError(f"hook(s) {unknown} are not adcore hooks; known hooks: {', '.join(HOOKS)}")
        record.hooks = sorted(c.name for c in callers)
        if name == ESSENTIAL:  # its parts from above, called right after it (pluggy keeps the order)
            for part, obj in _builtins.items():
                pm.register(obj, name=f"{ESSENTIAL}.{part}")
                record.hooks = sorted({*record.hooks, *(c.name for c in pm.get_hookcallers(obj) or ())})
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # sys.exit() in a plugin must not end the user's process either
        if name == ESSENTIAL:
            raise
        if pm.has_plugin(name):  # pluggy keeps what it registered before a hookimpl failed validation
            pm.unregister(name=name)
        _fail(record, _blockable(name, f"failed to load: {type(e).__name__}: {e}"))


def _call_hook(
    pm: pluggy.PluginManager,
    registry: Registry,
    hook: str,
    name: str,
    plugin: Any,
    waiting: list[tuple[str, str, Any, str]],
    last: bool,
) -> None:
    """Call one plugin's hook alone, so what it registers is its own and a failure undoes only it.
    A rule waits (in `waiting`) for its kind, which a backend declares, and, until the `last`
    stage, for its op."""
    name = ESSENTIAL if name.startswith(f"{ESSENTIAL}.") else name  # a part of the core is the core
    add = {
        "adcore_register_kinds": registry.add_kind,
        "adcore_register_ops": registry.add_op,
        "adcore_register_rules": registry.add_rule,
        "adcore_register_backends": registry.add_backend,
        "adcore_register_cases": registry.add_case,
        "adcore_register_optimizers": registry.add_optimizer,
    }[hook]
    open_ = [True]

    def register(*args: Any) -> None:
        # a callback kept and called later would claim names out of the load order
        if not open_[0]:
            raise PluginError(
                f"plugin {name!r} called the register() of {hook} after that hook returned; "
                "call it only inside the hook"
            )
        if hook == "adcore_register_rules" and len(args) == 3:
            kind, op, _ = args
            if kind not in registry.kinds or (not last and op not in registry.ops):
                waiting.append((*args, name))  # its kind's backend, or its op, is not registered yet
                return
        add(*args, plugin=name)

    others = [p for p in pm.get_plugins() if p is not plugin]
    caller = pm.subset_hook_caller(hook, remove_plugins=others)
    try:
        caller(register=register)
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        if name == ESSENTIAL:
            raise
        registry.remove_plugin(name)
        pm.unregister(plugin)
        _fail(registry.plugins[name], _blockable(name, f"{hook} failed: {type(e).__name__}: {e}"))
    finally:
        open_[0] = False


def _refuse(registry: Registry, candidate: Candidate, reason: str) -> None:
    """Record a plugin that is not even imported, under "name (distribution)"."""
    key = f"{candidate.name} ({candidate.dist or 'by hand'})"
    record = registry.plugins[key] = PluginRecord(key, candidate.version, candidate.dist)
    _fail(record, f"refused: {reason}")


def _blockable(name: str, reason: str) -> str:
    switch = f"ADCORE_BLOCK_PLUGINS={name}"
    return reason if switch in reason else f"{reason}. To stop loading it: {switch}"


def _fail(record: PluginRecord, reason: str) -> None:
    record.error = reason
    warnings.warn(f"adcore plugin {record.name!r} was not loaded: {reason}", PluginWarning, stacklevel=4)


class PluginWarning(UserWarning):
    """A plugin failed to load or register; the others are loaded."""


def failures() -> dict[str, str]:
    """Plugins that failed to load or register, with the reason."""
    return {n: r.error for n, r in get_registry().plugins.items() if r.error}
