"""Plugins load lazily: `import adcore` imports none, a call loads the plugins up to its backend (in
the load order), and anything it misses (an op, a NumPy function, a listing) loads the rest."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import adcore
from adcore import plugins
from adcore.plugins import PluginWarning, get_registry, loaded_registry


def _run(code: str) -> dict:
    """What a fresh process prints as JSON (sys.modules there is this test's subject)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


PLUGIN_MODULES = "sorted({m.split('.')[0] for m in sys.modules if m.startswith('adcore_')})"


def test_import_adcore_imports_no_plugin_and_reads_no_entry_point():
    seen = _run(
        "import sys, json, adcore\n"
        f"print(json.dumps({{'plugins': {PLUGIN_MODULES}, 'metadata': 'importlib.metadata' in sys.modules}}))"
    )
    assert seen == {"plugins": [], "metadata": False}


def test_a_first_grad_loads_the_plugins_up_to_its_backend_and_a_miss_loads_the_rest():
    seen = _run(
        "import sys, json, numpy as np, adcore\n"
        "g = float(adcore.grad(lambda x: np.sum(np.sin(x)))(np.zeros(1))[0])\n"
        f"first = {PLUGIN_MODULES}\n"
        "conformance = 'adcore.conformance' in sys.modules\n"
        "op = adcore.ops['gammaln'].name\n"  # an op of a plugin after reverse in the load order
        f"print(json.dumps({{'g': g, 'first': first, 'conformance': conformance, 'op': op,"
        f" 'after': {PLUGIN_MODULES}, 'backends': adcore.backends()}}))"
    )
    assert seen["g"] == 1.0
    assert "adcore_reverse" in seen["first"]
    assert not {"adcore_scipy", "adcore_symbolic"} & set(seen["first"])  # after reverse: not needed
    assert not seen["conformance"]
    assert seen["op"] == "gammaln" and "adcore_scipy" in seen["after"]
    assert {"reverse", "forward", "numeric", "symbolic"} <= set(seen["backends"])


def test_a_numpy_function_a_later_plugin_claims_is_found_on_a_miss(clean_plugins):
    scipy_special = pytest.importorskip("scipy.special")
    if "scipy" not in get_registry().plugins:
        pytest.skip("adcore-scipy is not installed")
    plugins.reset()
    adcore.get_backend("reverse")  # the plugins up to reverse
    assert "scipy" not in loaded_registry().plugins
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(
        adcore.grad(lambda x: np.sum(scipy_special.erf(x)))(x), 2 / np.sqrt(np.pi) * np.exp(-(x**2))
    )
    assert "scipy" in loaded_registry().plugins


def _op_plugin(op: str):
    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec(op, lambda x: 3.0 * x))

    return Plugin()


def _rules_and_backend_plugin(backend: str, ops: tuple[str, ...]):
    """A plugin whose backend is named `backend`, with vjp rules (times 3) for `ops` of others."""

    class Nothing(adcore.Backend):
        name = backend
        kinds = ()

    class Plugin:
        @adcore.hookimpl
        def adcore_register_rules(self, register):
            for op in ops:
                register("vjp", op, (lambda g, ans, x: 3.0 * g,))

        @adcore.hookimpl
        def adcore_register_backends(self, register):
            register(Nothing())

    return Plugin()


def test_a_rule_for_an_op_of_a_plugin_loaded_later_waits_for_it(register_plugin):
    with pytest.warns(PluginWarning, match="late_op"):  # alone, and all loaded at once: no late_op yet
        register_plugin(_rules_and_backend_plugin("early", ("late_op",)), "early")
    register_plugin(_op_plugin("late_op"), "late")
    plugins.reset()
    adcore.get_backend("early")  # loads the plugins up to "early", not "late"
    assert "late" not in loaded_registry().plugins and "late_op" not in loaded_registry().ops
    assert adcore.grad(lambda x: adcore.ops.late_op(x))(2.0) == 3.0  # the op misses: "late" loads
    registry = get_registry()
    assert registry.plugins["early"].rules == [("vjp", "late_op")] and not registry.plugins["early"].error


def test_a_rule_for_an_op_that_never_comes_fails_its_plugin_alone(register_plugin):
    with pytest.warns(PluginWarning, match="never_op"):  # (the fixture loads them all at once)
        register_plugin(_rules_and_backend_plugin("early", ("never_op",)), "early")
    register_plugin(_op_plugin("late_op"), "late")
    plugins.reset()
    adcore.get_backend("early")  # loaded up to "early": its rule waits for the plugins after it
    with pytest.warns(PluginWarning, match="never_op"):
        registry = get_registry()  # none brings never_op: "early" fails, as loading all at once does
    assert "never_op" in registry.plugins["early"].error
    assert "early" not in adcore.backends() and "late_op" in adcore.ops


def test_threads_missing_at_once_each_find_what_another_thread_loaded():
    # a thread that misses while another loads the last stage must look again, not report the
    # backend or op missing (the registry it then reads is the complete one)
    code = (
        "import json, threading, numpy as np, adcore\n"
        "barrier, found = threading.Barrier(8), []\n"
        "def call(i):\n"
        "    barrier.wait()\n"
        "    try:\n"
        "        name = ('reverse', 'forward', 'symbolic', 'numeric')[i % 4]\n"
        "        found.append(round(float(adcore.grad(lambda x: np.sum(np.sin(x)), backend=name)(np.zeros(1))[0]), 6))\n"
        "        found.append(adcore.ops['gammaln'].name)\n"
        "    except Exception as e:\n"
        "        found.append(repr(e))\n"
        "threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(json.dumps(sorted(map(str, found))))"
    )
    for _ in range(3):
        assert _run(code) == ["1.0"] * 8 + ["gammaln"] * 8


def test_shape_questions_on_a_traced_value_load_no_more_plugins():
    # np.shape, np.ndim, np.zeros_like, ... of a tracer are answered before any op lookup, whose
    # miss would load every remaining plugin (sympy with symbolic) inside the user's first call
    seen = _run(
        "import sys, json, numpy as np, adcore\n"
        "f = lambda x: np.sum(np.min(x, axis=0)) + np.ndim(x) * np.sum(np.zeros_like(x) + x) * np.shape(x)[0]\n"
        "g = adcore.jvp(adcore.grad(f), (np.arange(6.0).reshape(3, 2),), (np.ones((3, 2)),), backend='forward')\n"
        f"print(json.dumps({{'g': g[0].tolist(), 'plugins': {PLUGIN_MODULES}}}))"
    )
    # d/dx of sum(min over axis 0) is 1 at each column's minimum (row 0), plus 2 * 3 * 1 everywhere
    assert seen["g"] == [[7.0, 7.0], [6.0, 6.0], [6.0, 6.0]]
    assert not {"adcore_scipy", "adcore_symbolic"} & set(seen["plugins"])
