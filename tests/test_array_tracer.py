"""adcore.array_tracer: the NumPy surface every backend's tracer subclasses, above a core that
nothing above fills in (issue 33, item 1)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import adcore
from adcore import core
from adcore.array_tracer import ArrayTracer

ROOT = Path(__file__).resolve().parents[1]


def _tracer_classes() -> list[type]:
    from adcore_forward.dual import Dual
    from adcore_reverse.tensor import Tensor
    from adcore_sparsity.trace import SparsityTracer
    from adcore_symbolic.recording import Recorded
    from adcore_symbolic.trace import Sym

    return [Tensor, Dual, Sym, Recorded, SparsityTracer]


@pytest.mark.parametrize("cls", _tracer_classes(), ids=lambda c: c.__name__)
def test_every_first_party_tracer_is_an_array_tracer_and_an_adcore_tracer(cls):
    assert issubclass(cls, ArrayTracer)
    assert issubclass(cls, adcore.Tracer)


def test_the_core_tracer_has_no_numpy_surface():
    for name in ("__add__", "__array_ufunc__", "__array_function__", "sum", "reshape", "__float__"):
        assert name not in vars(core.Tracer), name
        assert name in vars(ArrayTracer) or hasattr(ArrayTracer, name), name


def test_a_traced_value_inside_f_is_an_adcore_tracer_with_numpy_surface():
    seen = []

    def f(x):
        seen.append(x)
        return np.sum(np.sin(x) * x)

    g = adcore.grad(f)(np.array([0.5, 1.0]))
    assert isinstance(seen[0], adcore.Tracer) and isinstance(seen[0], ArrayTracer)
    np.testing.assert_allclose(g, np.sin([0.5, 1.0]) + np.array([0.5, 1.0]) * np.cos([0.5, 1.0]))


def test_a_list_holding_traced_values_is_stacked_by_the_tracer():
    # bind hands f([a, b]) to the first tracer's `stacked`: the core names no stack op
    g = adcore.grad(lambda x: adcore.numpy.mean([x[0], 2.0 * x[1]]))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g, [0.5, 1.0])


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module binds to adcore modules (`from adcore import core`, `import adcore.ops as o`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "adcore":
            for alias in node.names:
                if (
                    importlib.util.find_spec(f"{node.module}.{alias.name}")
                    if _is_package(node.module)
                    else None
                ):
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "adcore" and alias.asname:
                    names.add(alias.asname)
    return names


def _is_package(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


def assignments_into_modules(source: str) -> list[str]:
    """`module.name = value` (or `+=`) statements writing into another adcore module's namespace."""
    tree = ast.parse(source)
    modules = _module_names(tree)
    found = []
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign)
            else []
        )
        for target in targets:
            while isinstance(target, ast.Subscript):  # core.TABLE[key] = value writes into core too
                target = target.value
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id in modules
            ):
                found.append(f"{target.value.id}.{target.attr}")
    return found


def test_the_scan_finds_a_module_attribute_set_from_outside():
    source = "from adcore import core\ncore.get_registry = lambda: None\ncore.TABLE['x'] = 1\n"
    assert assignments_into_modules(source) == ["core.get_registry", "core.TABLE"]
    assert assignments_into_modules("from adcore import core\nx = core.bind\n") == []


def test_no_module_of_adcore_or_its_plugins_fills_in_another_modules_globals():
    # a lower layer that needs something from above is handed it by a call (ops.use_registry,
    # core.def_traced_params), never by a module attribute assigned from above
    files = [*ROOT.joinpath("adcore").rglob("*.py"), *ROOT.joinpath("plugins").rglob("*.py")]
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in files
        if "tests" not in path.parts and (found := assignments_into_modules(path.read_text()))
    }
    assert offenders == {}
