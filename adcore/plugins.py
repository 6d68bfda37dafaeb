"""Plugin loading: the essential core catalogue, then the "adcore" entry points; once, lazily.

Switches, read when the registry is (re)built:
- ADCORE_DISABLE_PLUGIN_AUTOLOAD=1: load no entry-point plugin except those in ADCORE_PLUGINS.
- ADCORE_PLUGINS=reverse,forward: load only these entry-point plugins (an allow-list).
- ADCORE_BLOCK_PLUGINS=name,name: never load these.
- ADCORE_DEBUG=1: print pluggy's trace of every hook call to stderr.
The core op catalogue is essential: it is always loaded and cannot be blocked.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

import pluggy

from adcore import hookspecs
from adcore.errors import PluginError
from adcore.registry import PluginRecord, Registry

ENTRY_POINT_GROUP = "adcore"
ESSENTIAL = "core"
HOOKS = (
    "adcore_register_ops",
    "adcore_register_rules",
    "adcore_register_backends",
    "adcore_register_cases",
    "adcore_register_optimizers",
)

_lock = threading.Lock()
_registry: Registry | None = None
_by_hand: dict[str, Any] = {}


def get_registry() -> Registry:
    """The registry, built on first use from every plugin that may load."""
    registry = _registry
    if registry is None:
        with _lock:
            if _registry is None:
                _set(load())
            registry = _registry
    return registry


def _set(registry: Registry | None) -> None:
    global _registry
    _registry = registry


def reset() -> None:
    """Forget the loaded plugins; the next use loads them again (after changing the switches)."""
    with _lock:
        _set(None)


def register_plugin(plugin: Any, name: str) -> None:
    """Add a plugin object by hand (as tests and notebooks do); it loads with the next registry."""
    _by_hand[name] = plugin
    reset()


def unregister_plugin(name: str) -> None:
    """Remove a plugin added with `register_plugin`."""
    _by_hand.pop(name, None)
    reset()


def _names(variable: str) -> set[str]:
    return {n.strip() for n in os.environ.get(variable, "").split(",") if n.strip()}


def _wanted(name: str) -> bool:
    allow, block = _names("ADCORE_PLUGINS"), _names("ADCORE_BLOCK_PLUGINS")
    if name in block:
        return False
    if os.environ.get("ADCORE_DISABLE_PLUGIN_AUTOLOAD") == "1" or allow:
        return name in allow
    return True


def load() -> Registry:
    """Build a fresh registry: register each plugin with pluggy, then call its hooks in turn."""
    from adcore.ops import plugin as core_catalogue

    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    if os.environ.get("ADCORE_DEBUG") == "1":
        pm.trace.root.setwriter(lambda message: sys.stderr.write(message))
        pm.enable_tracing()
    registry = Registry()
    # (name, version, how to get the plugin object): entry points import their module when
    # loaded. (Not told apart by isinstance: with the importlib_metadata backport imported,
    # as Dask does, entry_points() may hand out the backport's EntryPoint class.)
    candidates: list[tuple[str, str, Callable[[], Any]]] = [
        (ESSENTIAL, _version("adcore"), lambda: core_catalogue)
    ]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if _wanted(ep.name):
            candidates.append((ep.name, ep.dist.version if ep.dist else "", ep.load))
    candidates += [
        (name, "", functools.partial(lambda obj: obj, obj))
        for name, obj in _by_hand.items()
        if name not in _names("ADCORE_BLOCK_PLUGINS")
    ]

    for name, version, get_plugin in candidates:
        if name in registry.plugins:
            warnings.warn(
                f"two adcore plugins are named {name!r}; only the first is loaded",
                PluginWarning,
                stacklevel=3,
            )
            continue
        record = registry.plugins[name] = PluginRecord(name, version)
        try:
            plugin = get_plugin()
            hash(plugin)  # pluggy keys plugins by object: a module, class or instance will do
            pm.register(plugin, name=name)
            callers = pm.get_hookcallers(plugin) or ()
            unknown = sorted(c.name for c in callers if not c.has_spec())
            if unknown:
                pm.unregister(plugin)
                raise PluginError(f"hook(s) {unknown} are not adcore hooks; known hooks: {', '.join(HOOKS)}")
            record.hooks = sorted(c.name for c in callers)
        except Exception as e:  # a plugin that cannot even load must not take the others down
            if name == ESSENTIAL:
                raise
            _fail(record, f"failed to load: {type(e).__name__}: {e}")
    for hook in HOOKS:
        for name, plugin in list(pm.list_name_plugin()):
            _call_hook(pm, registry, hook, name, plugin)
    return registry


def _call_hook(pm: pluggy.PluginManager, registry: Registry, hook: str, name: str, plugin: Any) -> None:
    """Call one plugin's hook alone, so what it registers is its own and a failure undoes only it."""
    add = {
        "adcore_register_ops": registry.add_op,
        "adcore_register_rules": registry.add_rule,
        "adcore_register_backends": registry.add_backend,
        "adcore_register_cases": registry.add_case,
        "adcore_register_optimizers": registry.add_optimizer,
    }[hook]
    others = [p for p in pm.get_plugins() if p is not plugin]
    caller = pm.subset_hook_caller(hook, remove_plugins=others)
    try:
        caller(register=lambda *args: add(*args, plugin=name))
    except Exception as e:
        if name == ESSENTIAL:
            raise
        registry.remove_plugin(name)
        pm.unregister(plugin)
        _fail(registry.plugins[name], f"{hook} failed: {type(e).__name__}: {e}")


def _fail(record: PluginRecord, reason: str) -> None:
    record.error = reason
    warnings.warn(f"adcore plugin {record.name!r} was not loaded: {reason}", PluginWarning, stacklevel=4)


class PluginWarning(UserWarning):
    """A plugin failed to load or register; the others are loaded."""


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""


def failures() -> dict[str, str]:
    """Plugins that failed to load or register, with the reason."""
    return {n: r.error for n, r in get_registry().plugins.items() if r.error}
