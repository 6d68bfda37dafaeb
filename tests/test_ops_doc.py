"""docs/ops.md is the registry's catalogue as `adcore rules --markdown` prints it, and says what it should."""

from __future__ import annotations

import difflib
import io
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.special
from traceable_ops import TraceableOps

import adcore
from adcore import cli, ops
from adcore.conformance import catalogue
from adcore.ops import CORE_OPS
from adcore.plugins import get_registry

OPS_MD = Path(__file__).resolve().parents[1] / "docs" / "ops.md"


def test_docs_ops_md_is_current(clean_plugins):
    out = io.StringIO()
    assert cli.rules(as_markdown=True, out=out) == 0
    expected, written = out.getvalue(), OPS_MD.read_text()
    if written != expected:
        diff = "".join(
            difflib.unified_diff(
                written.splitlines(True), expected.splitlines(True), "docs/ops.md", "registry", n=0
            )
        )
        pytest.fail(f"docs/ops.md is out of date: run `{catalogue.MARKDOWN_COMMAND}`\n{diff[:4000]}")


def test_every_op_is_in_the_catalogue_once_core_groups_first(clean_plugins):
    registry = get_registry()
    listed = catalogue.entries(registry)
    # custom_vjp/checkpoint functions earlier tests defined are ops of the running program, not listed
    user = registry.plugins.get(catalogue.USER_PLUGIN)
    catalogued = [name for name in registry.ops if user is None or name not in user.ops]
    assert sorted(e.name for e in listed) == sorted(catalogued)
    groups = list(dict.fromkeys(e.group for e in listed))
    core_groups = [g for g in groups if not g.startswith("plugin ")]
    assert groups[: len(core_groups)] == core_groups  # plugin ops come after the catalogue's modules
    assert {e.name for e in listed if e.plugin == "core"} == {spec.name for spec in CORE_OPS}
    assert "plugin kernels" in groups


def test_a_core_op_belongs_to_the_module_that_defines_it_not_one_importing_it():
    modules = catalogue.core_modules()
    assert modules["sin"] == "elementwise"
    assert modules["sum"] == "reductions"
    assert modules["matmul"] == "linalg"
    assert modules["reshape"] == "shapes"
    assert modules["softmax"] == "nn"
    assert set(modules) == {spec.name for spec in CORE_OPS}


def test_numpy_functions_are_named_by_their_public_module():
    assert catalogue.function_name(np.cumsum) == "numpy.cumsum"
    assert catalogue.function_name(np.linalg.norm) == "numpy.linalg.norm"  # __module__ numpy.linalg
    assert catalogue.function_name(np.add) == "numpy.add"  # a ufunc
    assert catalogue.function_name(scipy.special.erfc) == "scipy.special.erfc"  # a ufunc without __module__
    assert catalogue.function_name(scipy.linalg.solve_triangular) == "scipy.linalg.solve_triangular"


def test_rule_cells_say_rule_body_none_or_not_needed(register_plugin):
    # softplus_body: traceable, no rules; scaled_sin: traceable with a vjp rule; opaque_sin: neither
    # (batch: vmap's rules, which vmap runs the body for, or loops without)
    registry = register_plugin(TraceableOps(), "traceable")
    cells = {e.name: e.rules for e in catalogue.entries(registry)}
    every = {"vjp": "body", "jvp": "body", "sympy": "body", "sparsity": "body", "batch": "body"}
    assert cells["softplus_body"] == every
    assert cells["scaled_sin"] == {**every, "vjp": "rule"}
    assert cells["opaque_sin"] == {kind: "none" for kind in every}
    # no derivative flows through it, so no derivative rule is needed; vmap batches it by its flag
    assert cells["stop_gradient"] == {
        "vjp": "not needed",
        "jvp": "not needed",
        "sympy": "rule",
        "sparsity": "rule",
        "batch": "elementwise",
    }
    out = io.StringIO()
    cli.rules(as_markdown=True, out=out)
    assert "| `softplus_body` |  | body | body | body | body | body |" in out.getvalue()
    assert "## plugin traceable" in out.getvalue()


class PipeDoc:
    """An op whose doc has a pipe, which would split a markdown table's row."""

    @adcore.hookimpl
    def adcore_register_ops(self, register):
        register(adcore.OpSpec("log_abs_gamma", lambda x: x, doc="log|Gamma(x)|", numpy=(np.spacing,)))


def test_markdown_escapes_pipes_and_shows_names_kinks_and_docs(register_plugin):
    register_plugin(PipeDoc(), "pipes")
    text = io.StringIO()
    cli.rules(as_markdown=True, out=text)
    md = text.getvalue()
    assert (
        r"| `log_abs_gamma` | `numpy.spacing` | none | none | none | none | none |  | log\|Gamma(x)\| |" in md
    )
    assert "| `abs` | `numpy.absolute` | rule | rule | rule | rule |" in md
    for spec in CORE_OPS:
        for kink in spec.kinks:
            assert kink.why.replace("|", "\\|") in md, (
                f"{spec.name}'s kink {kink.why!r} is not in the catalogue"
            )


def test_numpy_functions_served_by_a_function_over_ops_are_listed(clean_plugins):
    text = io.StringIO()
    cli.rules(as_markdown=True, out=text)
    md = text.getvalue()
    for func in ops.NUMPY_FUNCTIONS:
        assert f"| `{catalogue.function_name(func)}` | `" in md


def test_an_elementwise_op_needs_no_sparsity_rule():
    """The sparsity backend takes an elementwise op's pattern from its flag: the cell says so, the
    registry says the backend supports it, and --missing does not list it."""
    registry = get_registry()
    erf = registry.op("erf")
    assert erf.elementwise and "erf" not in registry.rules["sparsity"]
    assert catalogue.rule_state(registry, erf, "sparsity") == catalogue.ELEMENTWISE
    assert registry.supports(registry.backend("sparsity"), erf)
    out = io.StringIO()
    cli.rules(missing=True, out=out)
    assert "erf" not in out.getvalue().split()
