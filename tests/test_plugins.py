"""adcore.plugins: loading built-ins, hand-registered and entry-point plugins; clashes, failures, switches."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import adcore
from adcore import plugins
from adcore.plugins import PluginWarning, get_registry

X = np.array([0.5, -1.0, 2.0])


def _op_plugin(*names: str, scale: float = 2.0):
    """A plugin registering ops `names`, each x -> scale * x, with their vjp rules."""

    class OpPlugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            for name in names:
                register(adcore.OpSpec(name, lambda x: scale * x))

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            for name in names:
                register("vjp", name, (lambda g, ans, x: scale * g,))

    return OpPlugin()


class _Raising:
    """A plugin whose backends hook raises after registering an op, a rule and a backend."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @adcore.hookimpl
    def adcore_register_ops(self, register):
        self.calls.append("ops")
        register(adcore.OpSpec("rolled_back_op", np.ediff1d, numpy=(np.ediff1d,)))

    @adcore.hookimpl
    def adcore_register_rules(self, register):
        self.calls.append("rules")
        register("vjp", "rolled_back_op", (lambda g, ans, x: g,))
        register("rolled_back_kind", "sin", (lambda x: x,))  # a rule for a core op, a kind of its own

    @adcore.hookimpl
    def adcore_register_backends(self, register):
        self.calls.append("backends")

        class Half(adcore.Backend):
            name = "rolled_back_backend"

        register(Half())
        raise RuntimeError("the backend hook broke")


# --- what loads by default -------------------------------------------------------------------


def test_core_and_reverse_load_without_failures(clean_plugins):
    registry = get_registry()
    assert "core" in registry.plugins
    assert "reverse" in registry.plugins
    assert registry.plugins["reverse"].version  # from the installed distribution's metadata
    assert "sin" in registry.plugins["core"].ops
    assert "reverse" in registry.plugins["reverse"].backends
    assert ("vjp", "sin") in registry.plugins["reverse"].rules
    assert plugins.failures() == {}


class _ForeignEntryPoint:
    """An entry point of another class than importlib.metadata's, as the importlib_metadata
    backport hands out once something (Dask) has imported it."""

    def __init__(self, ep) -> None:
        self.name, self.dist, self._ep = ep.name, ep.dist, ep

    def load(self):
        return self._ep.load()

    def __eq__(self, other) -> bool:  # like the backport's: it fails against a module
        return self._key() == other._key()

    __hash__ = object.__hash__

    def _key(self):
        return (self.name, self.dist)


def test_entry_points_of_another_class_still_load(clean_plugins, monkeypatch):
    stdlib = plugins.entry_points
    monkeypatch.setattr(
        plugins, "entry_points", lambda group: [_ForeignEntryPoint(ep) for ep in stdlib(group=group)]
    )
    plugins.reset()
    assert plugins.failures() == {}
    assert {"reverse", "forward", "numeric"} <= set(adcore.backends())


def test_registry_is_built_once_and_rebuilt_after_reset(clean_plugins):
    first = get_registry()
    assert get_registry() is first
    plugins.reset()
    assert get_registry() is not first


def test_a_plugin_may_register_rules_for_another_plugins_op(register_plugin):
    class OpsOnly:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("shared_op", lambda x: 5 * x))

    class RulesOnly:
        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "shared_op", (lambda g, ans, x: 5 * g,))

    # registered together (no registry built in between), the rules plugin loading first:
    # every plugin's ops are in before any plugin's rules
    plugins.register_plugin(RulesOnly(), "rules_first")
    try:
        register_plugin(OpsOnly(), "ops_second")
        assert plugins.failures() == {}
        assert adcore.grad(lambda x: adcore.ops.shared_op(x))(1.0) == pytest.approx(5.0)
    finally:
        plugins.unregister_plugin("rules_first")


def test_unregister_plugin_removes_its_ops(register_plugin):
    register_plugin(_op_plugin("temporary_op"), "temporary")
    assert "temporary_op" in adcore.ops
    plugins.unregister_plugin("temporary")
    assert "temporary_op" not in adcore.ops


# --- clashes -----------------------------------------------------------------------------------


def test_second_plugin_registering_the_same_op_is_rejected_naming_both(register_plugin):
    register_plugin(_op_plugin("clash_op", scale=2.0), "clash_first")
    with pytest.warns(PluginWarning, match="'clash_second'"):
        register_plugin(_op_plugin("clash_only_second", "clash_op", scale=3.0), "clash_second")
    failures = plugins.failures()
    assert set(failures) == {"clash_second"}
    assert "'clash_first'" in failures["clash_second"]
    assert "'clash_second'" in failures["clash_second"]
    assert "'clash_op'" in failures["clash_second"]
    assert "PluginError" in failures["clash_second"]
    # the first plugin's op still works; the second is rolled back entirely
    assert adcore.ops.clash_op(1.0) == 2.0
    assert adcore.grad(lambda x: adcore.ops.clash_op(x))(1.0) == pytest.approx(2.0)
    assert "clash_only_second" not in adcore.ops


def test_a_plugin_registering_a_core_op_name_is_rejected_naming_core(register_plugin):
    with pytest.warns(PluginWarning):
        register_plugin(_op_plugin("sin"), "shadows_sin")
    assert "'core'" in plugins.failures()["shadows_sin"]
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sin(x)))(X), np.cos(X))


def test_a_plugin_registering_a_second_vjp_for_a_core_op_is_rejected_naming_reverse(register_plugin):
    class SecondSinRule:
        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "sin", (lambda g, ans, x: 0 * g,))

    with pytest.warns(PluginWarning):
        register_plugin(SecondSinRule(), "second_sin_rule")
    assert "'reverse'" in plugins.failures()["second_sin_rule"]
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sin(x)))(X), np.cos(X))


# --- invalid rules ---------------------------------------------------------------------------------


def test_a_rule_that_does_not_fit_the_ops_arity_is_rejected(register_plugin):
    class WrongArity:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("wrong_arity_op", lambda x: x / 2))

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "wrong_arity_op", (lambda g, x: g / 2,))  # forgot `ans`

    with pytest.warns(PluginWarning, match="'wrong_arity'"):
        register_plugin(WrongArity(), "wrong_arity")
    reason = plugins.failures()["wrong_arity"]
    assert "PluginError" in reason
    assert "'wrong_arity_op'" in reason
    assert "'vjp'" in reason
    assert "wrong_arity_op" not in adcore.ops


def test_a_rule_with_one_entry_too_many_is_rejected(register_plugin):
    class TooMany:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("too_many_op", lambda x: x))

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "too_many_op", (lambda g, ans, x: g, lambda g, ans, x: g))

    with pytest.warns(PluginWarning):
        register_plugin(TooMany(), "too_many")
    assert "2 entries" in plugins.failures()["too_many"]


def test_a_bare_callable_rule_for_a_non_variadic_op_is_rejected_at_load(register_plugin):
    # hookspecs.adcore_register_rules: a tuple, one entry per input, unless the op is variadic;
    # accepting it would only fail later, inside a backward pass.
    class Bare:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("bare_rule_op", lambda x: 2 * x))

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "bare_rule_op", lambda g, ans, x: 2 * g)

    with pytest.warns(PluginWarning):
        register_plugin(Bare(), "bare_rule")
    assert "PluginError" in plugins.failures().get("bare_rule", "")
    assert "bare_rule_op" not in adcore.ops


def test_a_rule_for_an_unknown_op_is_rejected(register_plugin):
    class Orphan:
        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "no_such_op", (lambda g, ans, x: g,))

    with pytest.warns(PluginWarning):
        register_plugin(Orphan(), "orphan")
    assert "'no_such_op'" in plugins.failures()["orphan"]


def test_an_op_without_a_vjp_rule_names_op_backend_and_fix(register_plugin):
    class NoRule:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("ruleless_op", lambda x: 2 * x))

    register_plugin(NoRule(), "no_rule")
    assert adcore.ops.ruleless_op(1.0) == 2.0  # calling it is fine
    with pytest.raises(adcore.MissingRuleError) as info:
        adcore.grad(lambda x: adcore.ops.ruleless_op(x))(1.0)
    assert isinstance(info.value, NotImplementedError)
    message = str(info.value)
    for word in ["'ruleless_op'", "'reverse'", "backends that can: numeric", "register('vjp', 'ruleless_op'"]:
        assert word in message, f"{word!r} not in {message!r}"
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X)


# --- failing plugins --------------------------------------------------------------------------------


def test_a_plugin_whose_hook_raises_is_reported_by_name_and_others_still_work(register_plugin):
    register_plugin(_op_plugin("healthy_op", scale=4.0), "healthy")
    with pytest.warns(PluginWarning, match="'raising'.*the backend hook broke"):
        register_plugin(_Raising(), "raising")
    failures = plugins.failures()
    assert set(failures) == {"raising"}
    assert "adcore_register_backends" in failures["raising"]
    assert "RuntimeError: the backend hook broke" in failures["raising"]
    assert adcore.grad(lambda x: adcore.ops.healthy_op(x))(1.0) == pytest.approx(4.0)
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sin(x)))(X), np.cos(X))


def test_a_rolled_back_plugin_leaves_nothing_registered(register_plugin):
    raising = _Raising()
    with pytest.warns(PluginWarning):
        registry = register_plugin(raising, "raising")
    assert "rolled_back_op" not in adcore.ops
    assert "rolled_back_op" not in registry.rules["vjp"]
    assert "sin" not in registry.rules["rolled_back_kind"]
    assert "rolled_back_backend" not in adcore.backends()
    assert np.ediff1d not in registry.numpy_ops
    assert not any(owner == "raising" for owner in registry._owner.values())
    record = registry.plugins["raising"]
    assert (record.ops, record.rules, record.backends) == ([], [], [])
    # np.ediff1d is unsupported again, not silently routed to the rolled-back op
    with pytest.raises(adcore.UnsupportedFunctionError, match="numpy.ediff1d"):
        adcore.grad(lambda x: np.sum(np.ediff1d(x)))(X)


def test_a_plugin_failing_in_its_ops_hook_is_not_called_again(register_plugin):
    class FailsEarly:
        def __init__(self) -> None:
            self.calls: list[str] = []

        @adcore.hookimpl
        def adcore_register_ops(self, register):
            self.calls.append("ops")
            raise ValueError("no ops today")

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            self.calls.append("rules")

    plugin = FailsEarly()
    with pytest.warns(PluginWarning):
        register_plugin(plugin, "fails_early")
    assert plugin.calls == ["ops"]
    assert "ValueError: no ops today" in plugins.failures()["fails_early"]


def test_a_hookimpl_with_the_wrong_arguments_fails_to_load_by_name(register_plugin):
    class WrongArgument:
        @adcore.hookimpl
        def adcore_register_ops(self, reg):  # the spec's argument is `register`
            pass

    with pytest.warns(PluginWarning, match="'wrong_argument'"):
        register_plugin(WrongArgument(), "wrong_argument")
    assert "failed to load" in plugins.failures()["wrong_argument"]
    assert "adcore_register_ops" in plugins.failures()["wrong_argument"]
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X)


def test_a_plugin_failing_validation_on_its_second_hook_registers_nothing(register_plugin):
    # pluggy adds a plugin's hookimpls one by one and keeps those added before one fails its
    # validation; the plugin was reported as not loaded while its ops hook still ran.
    class Half:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("half_loaded_op", lambda x: 2 * x))

        @adcore.hookimpl
        def adcore_register_rules(self, reg):  # the spec's argument is `register`
            pass

    with pytest.warns(PluginWarning, match="'half'"):
        registry = register_plugin(Half(), "half")
    assert "adcore_register_rules" in plugins.failures()["half"]
    assert "half_loaded_op" not in adcore.ops
    assert registry.plugins["half"].ops == []
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X)


def test_a_hookimpl_named_after_no_hook_is_reported_by_name(register_plugin):
    # hookspecs: a plugin's hookimpls are "named after these specs"; a misspelled one would
    # otherwise be ignored silently and the plugin would seem to load while registering nothing.
    class Misspelled:
        @adcore.hookimpl
        def adcore_register_op(self, register):  # no such hook: adcore_register_ops
            register(adcore.OpSpec("misspelled_op", lambda x: x))

    with pytest.warns(PluginWarning, match="'misspelled'"):
        register_plugin(Misspelled(), "misspelled")
    assert "adcore_register_op" in plugins.failures()["misspelled"]
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X)


def test_failures_clear_once_the_bad_plugin_is_gone(register_plugin):
    with pytest.warns(PluginWarning):
        register_plugin(_Raising(), "raising")
    assert "raising" in plugins.failures()
    plugins.unregister_plugin("raising")
    assert plugins.failures() == {}


# --- backends from plugins -----------------------------------------------------------------------------


class _ConstantBackend(adcore.Backend):
    """A toy backend: every derivative is `value`; it records the options it was given."""

    name = "constant_demo"
    kinds = ()

    def __init__(self) -> None:
        self.options: list[dict] = []

    def value_and_jacobian(self, f, args, argnums, **options):
        self.options.append(options)
        out = f(*args)
        return out, tuple(np.full(np.shape(out) + np.shape(args[i]), 7.0) for i in argnums)


def test_a_plugin_backend_is_installed_and_receives_options(register_plugin):
    backend = _ConstantBackend()

    class BackendPlugin:
        @adcore.hookimpl
        def adcore_register_backends(self, register):
            register(backend)

    register_plugin(BackendPlugin(), "constant_backend")
    assert "constant_demo" in adcore.backends()
    jac = adcore.differentiate(np.sin, backend="constant_demo", method="demo")(X.astype(np.float32))
    assert backend.options == [{"method": "demo"}]
    assert jac.shape == (3, 3)
    assert jac.dtype == np.float32  # the API casts to the argument's dtype
    np.testing.assert_array_equal(jac, 7.0)


def test_a_plugin_backend_clashing_with_reverse_is_rejected(register_plugin):
    class Impostor(adcore.Backend):
        name = "reverse"

    class ImpostorPlugin:
        @adcore.hookimpl
        def adcore_register_backends(self, register):
            register(Impostor())

    with pytest.warns(PluginWarning):
        register_plugin(ImpostorPlugin(), "impostor")
    assert "'reverse'" in plugins.failures()["impostor"]
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X)


# --- switches ---------------------------------------------------------------------------------------------


def test_disable_autoload_keeps_only_the_essential_core(clean_plugins, monkeypatch):
    monkeypatch.setenv("ADCORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reset()
    assert "sin" in adcore.ops
    assert adcore.backends() == []
    with pytest.raises(adcore.UnknownBackendError, match="installed backends: none"):
        adcore.grad(np.sin)(1.0)


def test_disable_autoload_with_an_allow_list_loads_the_listed(clean_plugins, monkeypatch):
    monkeypatch.setenv("ADCORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("ADCORE_PLUGINS", "reverse")
    plugins.reset()
    assert adcore.backends() == ["reverse"]


def test_block_plugins_blocks_reverse(clean_plugins, monkeypatch):
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "reverse")
    plugins.reset()
    assert "reverse" not in adcore.backends()
    assert "reverse" not in get_registry().plugins


def test_the_core_catalogue_cannot_be_blocked(clean_plugins, monkeypatch):
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "core")
    plugins.reset()
    assert "sin" in adcore.ops
    assert "core" in get_registry().plugins


def test_block_plugins_blocks_a_hand_registered_plugin(register_plugin, monkeypatch):
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "blocked_by_hand")
    register_plugin(_op_plugin("blocked_op"), "blocked_by_hand")
    assert "blocked_op" not in adcore.ops


def test_debug_prints_the_hook_trace_to_stderr(clean_plugins, monkeypatch, capsys):
    monkeypatch.setenv("ADCORE_DEBUG", "1")
    plugins.reset()
    get_registry()
    err = capsys.readouterr().err
    for hook in plugins.HOOKS:
        assert hook in err
    assert "finish" in err  # pluggy's "finish <hook> --> <result>" lines


def test_no_debug_prints_nothing(clean_plugins, capsys):
    get_registry()
    assert "adcore_register_ops" not in capsys.readouterr().err


# --- third-party plugins through the real entry-point mechanism ---------------------------------------------

DEMO = """
import adcore


@adcore.hookimpl
def adcore_register_ops(register):
    register(adcore.OpSpec("cube", lambda x: x**3))


@adcore.hookimpl
def adcore_register_rules(register):
    register("vjp", "cube", (lambda g, ans, x: g * 3 * x**2,))
"""

BROKEN = """
raise ImportError("adcore_broken_demo needs a module that is not installed")
"""


@pytest.fixture
def install_dist(clean_plugins, tmp_path: Path, monkeypatch) -> Iterator[Callable[[str, str, str], None]]:
    """install_dist(entry_name, module, source): a distribution on sys.path with an "adcore" entry point."""
    modules: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(entry_name: str, module: str, source: str) -> None:
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[adcore]\n{entry_name} = {module}\n")
        modules.append(module)
        importlib.invalidate_caches()
        plugins.reset()

    yield install
    for module in modules:
        sys.modules.pop(module, None)


def test_entry_point_plugin_is_loaded(install_dist):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    assert "cube" in adcore.ops
    assert adcore.ops.cube is adcore.ops["cube"]
    assert adcore.ops.cube(2.0) == 8.0
    assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12  # 3 x^2 at x = 2
    record = get_registry().plugins["demo"]
    assert record.version == "0.1"
    assert record.ops == ["cube"]
    assert plugins.failures() == {}


def test_entry_point_plugin_works_on_arrays_and_float32(install_dist):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    x = np.array([1.0, -2.0], dtype=np.float32)
    g = adcore.grad(lambda x: np.sum(adcore.ops.cube(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 3 * x**2)


def test_entry_point_plugin_is_absent_with_autoload_disabled(install_dist, monkeypatch):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    monkeypatch.setenv("ADCORE_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reset()
    assert "cube" not in adcore.ops
    monkeypatch.setenv("ADCORE_PLUGINS", "demo")
    plugins.reset()
    assert "cube" in adcore.ops


def test_entry_point_plugin_allow_list_excludes_the_unlisted(install_dist, monkeypatch):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    monkeypatch.setenv("ADCORE_PLUGINS", "demo")
    plugins.reset()
    assert "cube" in adcore.ops
    assert "reverse" not in adcore.backends()


def test_entry_point_plugin_can_be_blocked(install_dist, monkeypatch):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "demo")
    plugins.reset()
    assert "cube" not in adcore.ops
    assert "demo" not in get_registry().plugins
    assert "reverse" in adcore.backends()


def test_block_wins_over_the_allow_list(install_dist, monkeypatch):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    monkeypatch.setenv("ADCORE_PLUGINS", "demo,reverse")
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", " demo ")
    plugins.reset()
    assert "cube" not in adcore.ops
    assert "reverse" in adcore.backends()


def test_entry_point_plugin_that_fails_to_import_is_named_and_others_work(install_dist):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    install_dist("broken", "adcore_broken_demo", BROKEN)
    with pytest.warns(PluginWarning, match="'broken'"):
        failures = plugins.failures()
    assert set(failures) == {"broken"}
    assert "failed to load" in failures["broken"]
    assert "ImportError" in failures["broken"]
    assert "not installed" in failures["broken"]
    assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sin(x)))(X), np.cos(X))


def test_entry_point_plugin_clashing_with_a_core_op_is_named(install_dist):
    install_dist(
        "clashing",
        "adcore_clashing_demo",
        """
        import adcore

        @adcore.hookimpl
        def adcore_register_ops(register):
            register(adcore.OpSpec("exp", lambda x: x))
        """,
    )
    with pytest.warns(PluginWarning, match="'clashing'"):
        failures = plugins.failures()
    assert "'core'" in failures["clashing"]
    assert "'exp'" in failures["clashing"]
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.exp(x)))(X), np.exp(X))


# --- fair loading: the plugin that collides is the one rolled back (issue 15, class 10) ------------------
# install_dist puts its distributions first on sys.path, so entry_points() yields them before the
# first-party plugins: the order in which a collider used to win.

FAKE_REVERSE = """
import numpy as np
import adcore


class FakeReverse(adcore.Backend):
    name = "reverse"
    kinds = ()

    def value_and_jacobian(self, f, args, argnums):
        out = f(*args)
        return out, tuple(np.zeros(np.shape(out) + np.shape(args[i])) for i in argnums)


@adcore.hookimpl
def adcore_register_backends(register):
    register(FakeReverse())
"""


def _assert_reverse_is_the_real_one() -> None:
    record = get_registry().plugins["reverse"]
    assert (record.error, record.dist, record.backends) == ("", "adcore-reverse", ["reverse"])
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X)  # d/dx sum x^2 = 2x


def _assert_rolled_back_and_named(name: str, *words: str) -> None:
    reason = plugins.failures()[name]
    for word in (f"ADCORE_BLOCK_PLUGINS={name}", *words):  # the switch that blocks *it*
        assert word in reason, f"{word!r} not in {reason!r}"


def test_a_third_party_backend_named_reverse_loading_first_is_the_one_rolled_back(install_dist):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)  # an innocent bystander
    install_dist("aaa_fake", "adcore_fake_reverse", FAKE_REVERSE)
    with pytest.warns(PluginWarning, match="'aaa_fake'") as caught:
        _assert_reverse_is_the_real_one()
    assert not any("'reverse' was not loaded" in str(w.message) for w in caught)
    assert set(plugins.failures()) == {"aaa_fake"}
    _assert_rolled_back_and_named("aaa_fake", "backend 'reverse'", "'reverse'")
    assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12  # the bystander: 3 x^2 at 2


def test_a_backend_named_after_a_first_party_plugin_is_refused_even_when_that_plugin_is_blocked(
    install_dist, monkeypatch
):
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "reverse")
    install_dist("aaa_fake", "adcore_fake_reverse", FAKE_REVERSE)
    with pytest.warns(PluginWarning, match="'aaa_fake'"):
        assert "reverse" not in adcore.backends()
    _assert_rolled_back_and_named("aaa_fake", "reserved for the first-party plugin 'reverse'")
    with pytest.raises(adcore.UnknownBackendError):
        adcore.grad(np.sin)(1.0)
    assert adcore.grad(np.sin, backend="forward")(0.0) == pytest.approx(1.0)  # cos 0


def test_a_third_party_vjp_rule_for_a_core_op_loading_first_leaves_reverse_loaded(install_dist):
    install_dist(
        "aaa_sin_rule",
        "adcore_sin_rule_demo",
        """
        import adcore

        @adcore.hookimpl
        def adcore_register_rules(register):
            register("vjp", "sin", (lambda g, ans, x: 0 * g,))
        """,
    )
    with pytest.warns(PluginWarning, match="'aaa_sin_rule'"):
        _assert_reverse_is_the_real_one()
    assert set(plugins.failures()) == {"aaa_sin_rule"}
    _assert_rolled_back_and_named("aaa_sin_rule", "'vjp' rule for op 'sin'", "'reverse'")
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sin(x)))(X), np.cos(X))


def test_a_third_party_optimizer_named_adam_leaves_kernels_loaded(install_dist):
    install_dist(
        "aaa_adam",
        "adcore_adam_demo",
        """
        import adcore

        @adcore.hookimpl
        def adcore_register_optimizers(register):
            register("adam", lambda params, **hyper: None)
        """,
    )
    with pytest.warns(PluginWarning, match="'aaa_adam'"):
        kernels = get_registry().plugins["kernels"]
    assert kernels.error == ""
    assert "adam" in kernels.optimizers and "conv2d" in kernels.ops
    _assert_rolled_back_and_named("aaa_adam", "optimizer 'adam'", "'kernels'")
    w = np.array([1.0, -2.0])
    adcore.optimizer("adam", [w], lr=0.1).step([np.array([3.0, -4.0])])
    np.testing.assert_allclose(w, [0.9, -1.9])  # Adam's first step is lr * sign(g) (bias-corrected)


def _nextafter_plugin(scale: float):
    """An op mapped to np.nextafter (x, one float step towards y: d/dx = 1, d/dy = 0, for all the
    test needs); `scale` != 1 makes its value and derivative wrong on purpose."""

    class NextAfter:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(
                adcore.OpSpec(
                    f"nextafter_x{int(scale)}",
                    lambda x, y: scale * np.nextafter(x, y),
                    nin=2,
                    numpy=(np.nextafter,),
                )
            )

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", f"nextafter_x{int(scale)}", (lambda g, ans, x, y: g * scale, None))

    return NextAfter()


def test_two_plugins_mapping_the_same_numpy_function_is_a_clash(register_plugin):
    register_plugin(_nextafter_plugin(1.0), "nextafter_first")
    with pytest.warns(PluginWarning, match="'nextafter_second'"):
        register_plugin(_nextafter_plugin(10.0), "nextafter_second")
    assert set(plugins.failures()) == {"nextafter_second"}
    _assert_rolled_back_and_named("nextafter_second", "numpy.nextafter", "'nextafter_first'")
    assert "nextafter_x10" not in adcore.ops
    assert adcore.grad(lambda x: np.nextafter(x, 4.0))(3.0) == 1.0  # the first plugin's op, not 10


def test_which_third_party_plugin_wins_a_clash_does_not_depend_on_the_entry_point_order(
    install_dist, monkeypatch
):
    install_dist("zzz_clash", "adcore_zzz_demo", DEMO)
    install_dist("aaa_clash", "adcore_aaa_demo", DEMO)
    stdlib = plugins.entry_points
    for order in (list, lambda eps: list(reversed(list(eps)))):
        monkeypatch.setattr(plugins, "entry_points", lambda group, order=order: order(stdlib(group=group)))
        plugins.reset()
        with pytest.warns(PluginWarning, match="'zzz_clash'"):
            assert get_registry().plugins["aaa_clash"].ops == ["cube"]
        assert set(plugins.failures()) == {"zzz_clash"}
        _assert_rolled_back_and_named("zzz_clash", "op 'cube'", "'aaa_clash'")


def _sparsity_jacobian_is_diagonal() -> None:
    jac = adcore.jacobian(lambda x: np.sin(x), backend="sparsity")(X)  # the 0/1 pattern of diag(cos x)
    np.testing.assert_array_equal(jac, np.eye(3))


def _kernels_adam_steps() -> None:
    w = np.array([1.0, -2.0])
    adcore.optimizer("adam", [w], lr=0.1).step([np.array([3.0, -4.0])])
    np.testing.assert_allclose(w, [0.9, -1.9])  # Adam's first step is lr * sign(g) (bias-corrected)


def _nn_batch_norm_case() -> None:
    case = get_registry().cases["nn_batch_norm_cross_entropy"]  # BatchNorm1d then CrossEntropyLoss
    x = np.arange(12.0).reshape(4, 3)
    g = adcore.grad(case.fn, argnums=2)(x, np.zeros(3), np.zeros(3))  # logits = bias = 0: uniform softmax
    np.testing.assert_allclose(g, np.full(3, 1 / 3) - np.array([1, 1, 2]) / 4, rtol=1e-12)  # labels 0,2,1,2


def _scipy_erf() -> None:
    import scipy.special

    assert adcore.grad(scipy.special.erf)(0.5) == pytest.approx(2 / np.sqrt(np.pi) * np.exp(-0.25))


def _special_erfcx() -> None:
    import scipy.special

    erfcx = scipy.special.erfcx(0.5)
    assert adcore.grad(scipy.special.erfcx)(0.5) == pytest.approx(2 * 0.5 * erfcx - 2 / np.sqrt(np.pi))


def _batching_matmul() -> None:
    # adcore-batching declares the rule kind vmap reads
    A, B = np.arange(24.0).reshape(2, 3, 4), np.arange(8.0).reshape(4, 2)
    assert plugins.get_registry().plugins["batching"].kinds == ["batch"]
    np.testing.assert_allclose(adcore.vmap(lambda a: a @ B)(A), A @ B)


def _source_recurrence() -> None:
    # adcore-source differentiates f from its source: d/dx of sin(sin(x)) is cos(sin x) cos x
    def f(x):
        for _ in range(2):
            x = np.sin(x)
        return x

    assert adcore.grad(f, backend="source")(0.5) == pytest.approx(
        np.cos(np.sin(0.5)) * np.cos(0.5), rel=1e-12
    )


# every first-party plugin, with a call that needs it and an analytic answer
FIRST_PARTY_CHECKS = {
    "reverse": lambda: np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x))(X), 2 * X),
    "forward": lambda: assert_cos(adcore.grad(np.sin, backend="forward")(0.5)),
    "numeric": lambda: assert_cos(adcore.grad(np.sin, backend="numeric")(0.5), rel=1e-7),
    "symbolic": lambda: assert_cos(adcore.grad(np.sin, backend="symbolic")(0.5)),
    "sparsity": _sparsity_jacobian_is_diagonal,
    "kernels": _kernels_adam_steps,
    "nn": _nn_batch_norm_case,
    "scipy": _scipy_erf,
    "special": _special_erfcx,  # the example plugin, examples/adcore-special
    "batching": _batching_matmul,
    "source": _source_recurrence,
}


def assert_cos(value: float, rel: float = 1e-12) -> None:
    assert value == pytest.approx(np.cos(0.5), rel=rel)


IMPOSTOR = """
raise RuntimeError("an impostor's module must never be imported")
"""


def test_every_installed_first_party_plugin_is_found_by_its_distribution_and_checked_here(clean_plugins):
    # no list in adcore: the plugin N of the distribution adcore-N owns N (and the core is adcore's)
    expected = {name: f"adcore-{name}" for name in FIRST_PARTY_CHECKS} | {"core": "adcore"}
    assert plugins.first_party() == expected


@pytest.mark.parametrize("name", sorted(FIRST_PARTY_CHECKS))
def test_an_entry_point_claiming_a_first_party_name_from_another_distribution_is_refused(install_dist, name):
    install_dist(name, "adcore_impostor", IMPOSTOR)
    with pytest.warns(PluginWarning, match="adcore-impostor"):
        record = get_registry().plugins[name]
    assert (record.error, record.dist) == ("", f"adcore-{name}")  # the real one loaded
    assert "adcore_impostor" not in sys.modules  # refused by name, never imported
    (key,) = plugins.failures()
    assert key == f"{name} (adcore-impostor)"
    reason = plugins.failures()[key]
    for word in ("first-party", f"adcore-{name}", "adcore-impostor", "pip uninstall adcore-impostor"):
        assert word in reason, f"{word!r} not in {reason!r}"
    FIRST_PARTY_CHECKS[name]()  # the real plugin's numbers
    FIRST_PARTY_CHECKS[name]()  # and again: the next call works too
    assert_cos(adcore.grad(np.sin)(0.5))


@pytest.mark.parametrize("name", sorted(FIRST_PARTY_CHECKS))
def test_a_backend_named_after_a_first_party_plugin_is_reserved_for_it(register_plugin, monkeypatch, name):
    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", name)  # reserved also while its owner is not loaded
    with pytest.warns(PluginWarning, match="'aaa_fake'"):
        registry = register_plugin(_backend_plugin(name), "aaa_fake")
    assert name not in registry.backends
    _assert_rolled_back_and_named("aaa_fake", f"reserved for the first-party plugin {name!r}")
    monkeypatch.delenv("ADCORE_BLOCK_PLUGINS")
    plugins.reset()
    with pytest.warns(PluginWarning, match="'aaa_fake'"):
        assert set(plugins.failures()) == {"aaa_fake"}
    FIRST_PARTY_CHECKS[name]()


def _backend_plugin(name: str):
    """A plugin registering a backend `name` whose derivatives are all zero (wrong on purpose)."""

    class Zeros(adcore.Backend):
        kinds = ()

        def value_and_jacobian(self, f, args, argnums):
            out = f(*args)
            return out, tuple(np.zeros(np.shape(out) + np.shape(args[i])) for i in argnums)

    Zeros.name = name

    class Plugin:
        @adcore.hookimpl
        def adcore_register_backends(self, register):
            register(Zeros())

    return Plugin()


def test_a_third_party_distribution_named_after_its_plugin_owns_that_name_too(install_dist):
    # the convention that makes the first-party names data holds for anyone: adcore-cubes owns "cubes"
    install_dist("cubes", "adcore_cubes", DEMO)
    install_dist("cubes", "aaa_cubes_impostor", IMPOSTOR)
    with pytest.warns(PluginWarning, match="aaa-cubes-impostor"):
        assert plugins.first_party()["cubes"] == "adcore-cubes"
        assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12  # 3 x^2 at x = 2
    (key,) = plugins.failures()
    assert (
        key == "cubes (aaa-cubes-impostor)" and "pip uninstall aaa-cubes-impostor" in plugins.failures()[key]
    )
    assert "aaa_cubes_impostor" not in sys.modules


@pytest.mark.parametrize("name", sorted(FIRST_PARTY_CHECKS))
def test_a_plugin_registered_by_hand_under_any_first_party_name_is_refused(clean_plugins, name):
    with pytest.raises(adcore.PluginError, match=f"adcore-{name}"):
        plugins.register_plugin(_op_plugin("hand_op"), name)
    assert "hand_op" not in adcore.ops
    FIRST_PARTY_CHECKS[name]()


def test_a_plugin_registered_by_hand_under_a_first_party_name_is_refused(clean_plugins):
    with pytest.raises(adcore.PluginError, match="first-party") as info:
        plugins.register_plugin(_op_plugin("hand_reverse_op"), "reverse")
    assert isinstance(info.value, RuntimeError)
    _assert_reverse_is_the_real_one()
    assert "hand_reverse_op" not in adcore.ops


# --- a plugin cannot end the process ------------------------------------------------------------------------


def test_a_plugin_calling_sys_exit_at_import_is_contained_and_reported(install_dist, capsys):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    install_dist("exits", "adcore_exit_demo", "import sys\nsys.exit(3)\n")
    with pytest.warns(PluginWarning, match="'exits'.*SystemExit"):
        _assert_reverse_is_the_real_one()  # reaching this line: the process survived
    assert set(plugins.failures()) == {"exits"}
    _assert_rolled_back_and_named("exits", "failed to load", "SystemExit")
    assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12
    from adcore import cli

    assert cli.plugins(as_json=True) == 0
    listed = {r["name"]: r["error"] for r in json.loads(capsys.readouterr().out)}
    assert "SystemExit" in listed["exits"] and listed["demo"] == ""


class _Exits:
    """A plugin whose hook raises `error` (a BaseException) after registering an op."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(adcore.OpSpec("exiting_op", lambda x: x))
        raise self.error


class _Custom(BaseException):
    pass


@pytest.mark.parametrize("error", [SystemExit(0), GeneratorExit(), _Custom("not an Exception")])
def test_a_plugin_hook_raising_a_base_exception_is_contained_and_rolled_back(register_plugin, error):
    register_plugin(_op_plugin("innocent_op", scale=3.0), "innocent")
    with pytest.warns(PluginWarning, match="'exiting'"):
        register_plugin(_Exits(error), "exiting")
    assert set(plugins.failures()) == {"exiting"}
    _assert_rolled_back_and_named("exiting", "adcore_register_ops", type(error).__name__)
    assert "exiting_op" not in adcore.ops
    assert adcore.grad(lambda x: adcore.ops.innocent_op(x))(1.0) == pytest.approx(3.0)
    _assert_reverse_is_the_real_one()


def test_keyboard_interrupt_in_a_hook_still_interrupts_and_the_next_load_works(clean_plugins):
    plugins.register_plugin(_Exits(KeyboardInterrupt()), "interrupting")
    try:
        with pytest.raises(KeyboardInterrupt):
            get_registry()
    finally:
        plugins.unregister_plugin("interrupting")
    assert plugins.failures() == {}
    assert "exiting_op" not in adcore.ops
    _assert_reverse_is_the_real_one()


def test_a_register_callback_kept_and_called_after_its_hook_rolls_the_caller_back(register_plugin):
    class Late:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            self.register = register

        @adcore.hookimpl
        def adcore_register_backends(self, register):
            self.register(adcore.OpSpec("late_op", lambda x: x))  # would claim the name out of turn

    with pytest.warns(PluginWarning, match="'late'"):
        register_plugin(Late(), "late")
    _assert_rolled_back_and_named("late", "after", "adcore_register_ops")
    assert "late_op" not in adcore.ops


@pytest.mark.parametrize(
    "use",
    [
        lambda: adcore.backends(),
        lambda: adcore.ops["sin"],
        lambda: plugins.register_plugin(object(), "nested"),
    ],
    ids=["backends", "ops", "register_plugin"],
)
def test_a_plugin_using_adcore_while_it_loads_is_rolled_back_instead_of_hanging(register_plugin, use):
    class Reentrant:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            use()  # used to wait forever for the lock its own loading holds

    with pytest.warns(PluginWarning, match="'reentrant'"):
        register_plugin(Reentrant(), "reentrant")
    _assert_rolled_back_and_named("reentrant", "PluginError", "while adcore was loading")
    assert "nested" not in get_registry().plugins
    _assert_reverse_is_the_real_one()
    plugins.reset()  # the refused nested registration left nothing behind for a later registry
    assert "nested" not in get_registry().plugins


def test_an_entry_point_using_adcore_at_import_is_contained(install_dist):
    install_dist("eager", "adcore_eager_demo", "import adcore\nadcore.grad(adcore.ops.sin)(0.0)\n")
    with pytest.warns(PluginWarning, match="'eager'"):
        _assert_reverse_is_the_real_one()
    _assert_rolled_back_and_named("eager", "failed to load", "while adcore was loading")


def test_two_distributions_with_an_entry_point_of_the_same_name_load_the_first_by_distribution(install_dist):
    install_dist("twin", "adcore_twin_b", DEMO)
    install_dist("twin", "adcore_twin_a", DEMO)
    plugins.register_plugin(_op_plugin("hand_twin_op"), "twin")
    try:
        with pytest.warns(PluginWarning, match="adcore-twin"):  # both refusals
            assert get_registry().plugins["twin"].dist == "adcore-twin-a"
        assert set(plugins.failures()) == {"twin (adcore-twin-b)", "twin (by hand)"}
        assert "pip uninstall adcore-twin-b" in plugins.failures()["twin (adcore-twin-b)"]
        assert "adcore_twin_b" not in sys.modules  # refused before its import
        assert "hand_twin_op" not in adcore.ops
        assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12  # 3 x^2 at 2
    finally:
        plugins.unregister_plugin("twin")


def test_a_distribution_with_a_malformed_entry_points_file_is_refused_and_the_others_load(
    install_dist, tmp_path
):
    install_dist("demo", "adcore_thirdparty_demo", DEMO)
    info = tmp_path / "adcore_malformed-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adcore_malformed\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[adcore]\nthis line has no equals sign\n")
    importlib.invalidate_caches()
    plugins.reset()
    with pytest.warns(PluginWarning, match="adcore-malformed"):
        _assert_reverse_is_the_real_one()  # importlib.metadata's TypeError used to end every load
    assert set(plugins.failures()) == {"entry_points.txt (adcore-malformed)"}
    assert "pip uninstall adcore-malformed" in plugins.failures()["entry_points.txt (adcore-malformed)"]
    assert adcore.grad(lambda x: adcore.ops.cube(x))(2.0) == 12  # 3 x^2 at 2
