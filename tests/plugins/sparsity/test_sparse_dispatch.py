"""adcore's sparse functions find the plugin that provides sparse derivatives by what it registered (a
pattern backend offering sparse_derivatives), not by its name, and `import adcore` loads neither it nor
SciPy; op plugins whose sparsity rules use adcore_sparsity.extend still load without it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import adcore


def test_import_adcore_loads_neither_the_sparse_provider_nor_scipy():
    code = (
        "import sys, numpy, adcore; "
        "print(sorted(m for m in ('adcore_sparsity', 'scipy') if m in sys.modules)); "
        "prep = adcore.prepare_jacobian(lambda x: x * x, numpy.ones(3)); "
        "print(isinstance(prep, adcore.PreparedJacobian), 'adcore_sparsity' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True True"]


def test_the_prepared_types_are_the_providers():
    from adcore_sparsity.prepared import PreparedHessian, PreparedJacobian

    assert adcore.PreparedJacobian is PreparedJacobian and adcore.PreparedHessian is PreparedHessian


def test_the_provider_is_found_by_what_it_offers_not_by_its_name(monkeypatch):
    backends = adcore.plugins.get_registry().backends
    real = backends["sparsity"]

    class Renamed(type(real)):
        name = "patterns-elsewhere"

    monkeypatch.delitem(backends, "sparsity")
    monkeypatch.setitem(backends, Renamed.name, Renamed())
    x = np.linspace(0.5, 1.5, 4)
    jac = adcore.jacobian(np.sin, backend="forward", sparse=True)(x)
    np.testing.assert_array_equal(jac.toarray(), np.diag(np.cos(x)))
    assert adcore.jacobian_sparsity(np.sin)(x).nnz == 4


def _registered_kinds(plugin) -> set[str]:
    kinds: set[str] = set()
    plugin.adcore_register_rules(lambda kind, op, rule: kinds.add(kind))
    return kinds


def test_op_plugins_register_sparsity_rules_only_where_adcore_sparsity_is_installed(monkeypatch):
    from adcore_kernels import plugin as kernels
    from adcore_scipy import plugin as scipy_plugin

    for plugin in (kernels, scipy_plugin):
        assert "sparsity" in _registered_kinds(plugin)
        monkeypatch.setattr(
            plugin, "find_spec", lambda name: None
        )  # as if adcore-sparsity were not installed
        # (batch rules need nothing of adcore-batching's: they are set aside where it is absent)
        assert _registered_kinds(plugin) == {"vjp", "jvp", "sympy", "batch"}
