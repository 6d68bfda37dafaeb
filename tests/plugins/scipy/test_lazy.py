"""adcore-scipy imports SciPy only when one of its ops runs: `import adcore`, loading the registry
and a gradient of np.sin import neither scipy nor sympy nor numba; a SciPy function named by a
string in an op's `numpy=` is found once the user's code has imported its module, and still
clashes with another plugin's claim on it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import special

import adcore
from adcore.registry import PluginRecord, Registry

HEAVY = ("scipy", "sympy", "numba")


def _run(script: str) -> None:
    """Run `script` in a fresh process with every installed plugin (the example adcore-special too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADCORE_")}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_import_and_registry_loading_import_no_scipy_sympy_or_numba():
    _run(
        f"""
        import sys
        import numpy as np
        import adcore
        heavy = {HEAVY!r}
        assert not [m for m in heavy if m in sys.modules], 'imported by import adcore'
        registry = adcore.plugins.get_registry()
        assert registry.plugins['scipy'].error == '' and registry.plugins['special'].error == ''
        assert 'erf' in registry.ops and 'gammaln' in registry.ops
        assert adcore.grad(np.sin)(0.5) == np.cos(0.5)
        assert adcore.grad(np.sin, backend='forward')(0.5) == np.cos(0.5)
        loaded = [m for m in heavy if m in sys.modules]
        assert not loaded, f'imported by loading the registry: {{loaded}}'
        """
    )


def test_a_scipy_ufunc_on_a_traced_value_runs_the_op_once_scipy_is_imported():
    _run(
        """
        import sys
        import numpy as np
        import adcore
        adcore.plugins.get_registry()
        import scipy.special
        # erf' = 2/sqrt(pi) exp(-x**2) (Abramowitz & Stegun 7.1.19)
        g = adcore.grad(lambda x: scipy.special.erf(x).sum())(np.array([0.0, 1.0]))
        np.testing.assert_allclose(g, 2 / np.sqrt(np.pi) * np.exp(-np.array([0.0, 1.0])), rtol=1e-15)
        assert abs(adcore.grad(scipy.special.gammaln)(1.0) + np.euler_gamma) < 1e-15  # digamma(1)
        assert abs(adcore.grad(scipy.special.psi)(1.0) - np.pi**2 / 6) < 1e-15  # psi is digamma: trigamma(1)
        """
    )


def test_the_plugins_own_functions_import_scipy_when_they_first_run():
    _run(
        """
        import sys
        import numpy as np
        import adcore
        from adcore_scipy import special
        assert 'scipy' not in sys.modules, 'import adcore_scipy.special imported scipy'
        assert adcore.grad(lambda x: special.softmax(x)[0])(np.zeros(2))[1] == -0.25  # the core's softmax: no scipy
        assert 'scipy' not in sys.modules
        assert special.erf(0.0) == 0.0
        assert 'scipy.special' in sys.modules
        """
    )


# --- the registry's named functions -----------------------------------------------------------


def _registry(*plugins: str) -> Registry:
    registry = Registry()
    for name in plugins:
        registry.plugins[name] = PluginRecord(name)
    return registry


def _op(name: str, *numpy) -> adcore.OpSpec:
    return adcore.OpSpec(name, lambda x: x, numpy=numpy)


def test_a_named_function_is_found_once_its_module_is_imported():
    registry = _registry("p")
    spec = _op("twice", "adcore_test_lazy_module.twice")
    registry.add_op(spec, plugin="p")
    assert registry.numpy_op(np.sin) is None  # a miss with the module not imported
    module = type(sys)("adcore_test_lazy_module")
    module.twice = lambda x: 2 * x
    sys.modules[module.__name__] = module
    try:
        assert registry.numpy_op(module.twice) is spec
        assert registry.numpy_names == {}  # resolved: later misses cost nothing
    finally:
        del sys.modules[module.__name__]


def test_two_plugins_naming_the_same_function_clash():
    registry = _registry("first", "second")
    registry.add_op(_op("erf_a", "adcore_test_unimported.erf"), plugin="first")
    with pytest.raises(
        adcore.PluginError, match=r"adcore_test_unimported\.erf.*'first'.*BLOCK_PLUGINS=second"
    ):
        registry.add_op(_op("erf_b", "adcore_test_unimported.erf"), plugin="second")
    assert "erf_b" not in registry.ops


@pytest.mark.parametrize("order", ["object first", "name first"])
def test_a_named_function_and_the_same_function_listed_as_an_object_clash(order):
    # with its module imported (as when another plugin imported scipy to list special.erf itself)
    registry = _registry("first", "second")
    claims = [("scipy.special.erf",), (special.erf,)]
    if order == "object first":
        claims.reverse()
    registry.add_op(_op("erf_a", *claims[0]), plugin="first")
    with pytest.raises(adcore.PluginError, match="'first'"):
        registry.add_op(_op("erf_b", *claims[1]), plugin="second")
    assert registry.numpy_op(special.erf).name == "erf_a"


def test_removing_a_plugin_forgets_its_named_functions():
    registry = _registry("p")
    registry.add_op(_op("erf_a", "adcore_test_unimported.erf", "scipy.special.erf"), plugin="p")
    registry.remove_plugin("p")
    assert registry.numpy_names == {} and registry.numpy_ops == {}
    registry.add_op(_op("erf_b", "scipy.special.erf"), plugin="p")  # free again
