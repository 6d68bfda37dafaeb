"""The core names no plugin: no module of adcore/ imports a first-party plugin or names one, or its
backend, in code (issue 33: backends declare what they need and can do as data; the core reads it).

What counts as naming one in code, decided here:
- an import of a first-party plugin's module (adcore_reverse, ...);
- a string that *is* such a name: a backend's ("reverse", "forward", "numeric", "symbolic",
  "sparsity"), a module's ("adcore_reverse", "adcore_reverse.vjps") or a distribution's
  ("adcore-reverse"). That is a name the code compares, looks up or imports by.
Prose may name them: docstrings, comments, and sentences in strings (an error message saying
`pip install adcore-sparsity`, a string with a space in it), as the docs do. "scipy" alone is the
library's name, not the plugin's. `ALLOWED` lists the names kept in code, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from adcore import plugins
from adcore.plugins import get_registry

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "adcore"
# the first-party plugins as shipped (also checked where one is not installed), with their backends
SHIPPED = {"forward", "kernels", "numeric", "reverse", "scipy", "sparsity", "symbolic"}
SHIPPED_BACKENDS = {"forward", "numeric", "reverse", "sparsity", "symbolic"}

# (file under adcore/, name): why the name stays in code
ALLOWED = {
    # the public functions' documented defaults, the user's contract as in JAX and autograd (grad is
    # reverse mode, jvp forward mode, a Hessian forward-over-reverse); a missing one is a typed
    # UnknownBackendError listing what is installed. They name the backend the user gets by default,
    # not plugin code the core runs.
    ("api.py", "reverse"): "grad/vjp/jacobian/hessian's default backend",
    ("api.py", "forward"): "jvp's default backend, hessian's default outer",
    ("sparse.py", "reverse"): "prepare_jacobian's default backend, as jacobian's",
    # NumPy's own word: np.fft's norm="forward", not the backend
    ("ops/fft.py", "forward"): "np.fft's norm='forward'",
    # NumPy's own word: np.moveaxis's `source` parameter, not the backend
    ("ops/rearrangements.py", "source"): "np.moveaxis's source=",
}


def first_party_names() -> tuple[set[str], set[str]]:
    """(bare names, module/distribution names) a core module must not use in code."""
    installed = set(plugins.first_party()) - {plugins.ESSENTIAL}
    registry = get_registry()
    backends = {b for name in installed if name in registry.plugins for b in registry.plugins[name].backends}
    names = SHIPPED | installed
    qualified = {f"adcore{sep}{name}" for name in names for sep in "_-"}
    return SHIPPED_BACKENDS | backends, qualified


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def names_in_code(source: str, bare: set[str], qualified: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every first-party name the module's code uses (see the module docstring)."""

    def is_qualified(text: str) -> bool:
        return text.split(".")[0] in qualified

    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if is_qualified(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and is_qualified(node.module):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if " " not in text and (text in bare or is_qualified(text)):
                found.append((node.lineno, text))
    return found


def test_no_core_module_names_a_first_party_plugin_or_backend_in_code():
    bare, qualified = first_party_names()
    found = []
    for path in sorted(CORE.rglob("*.py")):
        where = path.relative_to(CORE).as_posix()
        for line, name in names_in_code(path.read_text(), bare, qualified):
            if (where, name) not in ALLOWED:
                found.append(f"adcore/{where}:{line}: {name!r}")
    assert not found, "the core names a first-party plugin or backend in code:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "planted",
    [
        'backend = "reverse"',
        "from adcore_symbolic.functions import amax",
        "import adcore_forward.dual",
        'module = importlib.import_module("adcore_symbolic.functions")',
        'owner = {"numeric": "adcore-numeric"}',
        'def f(backend="symbolic"): ...',
    ],
)
def test_the_check_finds_a_planted_name(planted):
    bare, qualified = first_party_names()
    source = f'"""A module that mentions reverse mode and adcore_reverse in prose only."""\n{planted}\n'
    assert names_in_code(source, bare, qualified), planted


def test_prose_may_name_them():
    bare, qualified = first_party_names()
    source = (
        '"""Reverse mode: the reverse backend (adcore_reverse)."""\n'
        "# backend='reverse' is the default\n"
        "def f():\n"
        '    """Calls forward."""\n'
        '    raise ValueError("pip install adcore-sparsity for sparse Jacobians")\n'
        'SCIPY_MODULE = "scipy"  # the library\n'
    )
    assert names_in_code(source, bare, qualified) == []
