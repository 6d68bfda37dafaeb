"""A backend with variants (Backend.variants) is checked under each as a column of its own,
`<backend>/<variant>`: every check asks adcore's API with that variant's options, and reads its
abilities off the backend those options make (Backend.for_options)."""

from __future__ import annotations

import functools
import json

import jsonschema
import numpy as np
import pytest
from throwaway_plugin import throwaway_plugin

import adcore
from adcore.conformance import abilities, engine
from adcore.conformance import report as rep
from adcore.conformance.batching import batched_calls, check_vmap
from adcore.conformance.calls import op_calls
from adcore.conformance.checks import check_dot_products, check_jacobians, check_second
from adcore.conformance.fuzz_chunks import check_fuzz
from adcore.conformance.pytest_plugin import targets
from adcore.conformance.reference import reference_for
from adcore.conformance.results import Results, Tally
from adcore.errors import UnknownBackendError
from adcore.plugins import get_registry

COLUMNS = ["twoway/forward", "twoway/reverse"]


class TwoWay(adcore.Backend):
    """Two ways to the same derivatives, chosen by `mode` as source's are: by the forward backend's
    jvp or the reverse backend's vjp. Each call records its mode and how it was made."""

    name = "twoway"
    variants = {"forward": {"mode": "forward"}, "reverse": {"mode": "reverse"}}
    calls: list[tuple[str, str]] = []  # (mode, method) of every call, reset by the fixture
    planted = 1.0  # the forward variant's tangents are multiplied by this (1: right)

    def for_options(self, options):
        return {"forward": TwoWayForward, "reverse": TwoWayReverse}[options.get("mode", "reverse")]()


class TwoWayForward(TwoWay):
    builds = "jvp"
    batches = True

    def jvp(self, f, args, tangents, *, mode="forward"):
        TwoWay.calls.append((mode, "jvp"))
        out, tangent = get_registry().backend("forward").jvp(f, args, tangents)
        return out, None if tangent is None else tangent * TwoWay.planted


class TwoWayReverse(TwoWay):
    builds = "vjp"
    batches = True

    def vjp(self, f, args, argnums, *, mode="reverse"):
        TwoWay.calls.append((mode, "vjp"))
        return get_registry().backend("reverse").vjp(f, args, argnums)


@pytest.fixture
def twoway(register_plugin):
    TwoWay.calls, TwoWay.planted = [], 1.0
    register_plugin(throwaway_plugin(backends=[TwoWay()]), "twoway")
    yield TwoWay
    TwoWay.planted = 1.0


def test_a_backend_with_variants_is_one_column_per_variant(twoway):
    assert abilities.columns(["reverse", "twoway"]) == ["reverse", *COLUMNS]
    assert abilities.columns(["twoway/reverse", "twoway", "twoway/reverse"]) == [
        "twoway/reverse",
        "twoway/forward",
    ]
    assert set(COLUMNS) <= set(engine.plan().backends) and "twoway" not in engine.plan().backends
    assert engine.plan(["twoway/forward"], ops=["sin"]).backends == ["twoway/forward"]
    with pytest.raises(UnknownBackendError, match="no variant 'sideways'.*twoway/forward, twoway/reverse"):
        engine.plan(["twoway/sideways"], ops=["sin"])
    # each column's abilities are those of the backend its options make
    assert abilities.products("twoway/forward") == ("jvp",) and abilities.products("twoway/reverse") == (
        "vjp",
    )
    assert abilities.api_options("twoway/forward") == {"backend": "twoway", "mode": "forward"}
    assert abilities.api_options("reverse") == {"backend": "reverse"}


def test_each_variant_runs_every_check_with_its_options_and_agrees(twoway):
    report = engine.run(["reverse", "twoway"], ops=["sin", "multiply"], cases=["seed_example"])
    assert report.ok, [(c.subject, c.backend, c.dtype, c.message) for c in report.failures()]
    assert report.columns == ["reverse", *COLUMNS, "vmap"]
    for column in COLUMNS:
        for subject in ("sin", "multiply", "seed_example"):
            cell = report.cell(subject, column)
            assert cell.status == "agrees" and cell.checks > 0, (subject, column, cell)
    # every call of the forward variant asked for mode="forward" and built by jvp, the reverse's
    # the other way: the options reached the backend on every path (values, Jacobians, products,
    # second derivatives as the inner backend, vmap(grad))
    assert set(twoway.calls) == {("forward", "jvp"), ("reverse", "vjp")}


def test_a_wrong_variant_fails_its_column_alone_at_every_check(twoway):
    # the forward variant's tangents 10% too large: its Jacobians, jvp products and second
    # derivatives (as the inner backend) are wrong, the reverse variant's right
    twoway.planted = 1.1
    report = engine.run(["reverse", "twoway"], ops=["sin"], dtypes=["float64"])
    assert {c.backend for c in report.failures()} == {"twoway/forward"}
    forward = report.cell("sin", "twoway/forward")
    assert forward.status == "disagrees" and forward.rel_error > 0.05
    calls = op_calls(adcore.ops.sin, "float64")
    call = calls[0]
    reference = reference_for(Results(call), ["reverse", "forward"], lambda b: True)
    u, vs = np.ones(np.shape(call.fn(*call.args))), [np.ones_like(call.args[0])]
    for column, wrong in (("twoway/forward", True), ("twoway/reverse", False)):
        jacobian, product, second = Tally(), Tally(), {column: Tally()}
        check_jacobians(jacobian, column, Results(call), reference, "float64")
        check_dot_products(product, column, call, reference, "float64", u, vs)
        check_second(second, calls, abilities.columns(adcore.backends()), lambda b: "", 0)
        for tally, check in (
            (jacobian, "jacobian"),
            (product, "jvp" if wrong else "vjp"),
            (second[column], "second"),
        ):
            assert tally.checks > 0 and tally.worst.check == check
            assert (tally.worst_ratio > 1) == wrong, (column, check, tally.worst)


def test_the_vmap_column_batches_each_variants_derivatives(twoway):
    draw = functools.partial(op_calls, adcore.ops.sin, "float64")
    groups = batched_calls(draw, draw(0), 0)
    cell = check_vmap("sin", groups, COLUMNS, "float64", lambda b: "")
    assert cell.status == "agrees"
    assert set(twoway.calls) == {("forward", "jvp"), ("reverse", "vjp")}
    # vmap(grad) of each variant against its loop: only one column's calls, only its mode
    twoway.calls.clear()
    check_vmap("sin", groups, ["twoway/forward"], "float64", lambda b: "")
    assert set(twoway.calls) == {("forward", "jvp")}


def test_the_reports_show_a_column_per_variant(twoway):
    twoway.planted = 1.1
    report = engine.run(["twoway"], ops=["sin"], dtypes=["float64"])
    document = json.loads(rep.to_json(report))
    jsonschema.Draft202012Validator(rep.load_schema()).validate(document)
    assert document["backends"] == COLUMNS
    assert {c["backend"] for c in document["cells"]} == set(COLUMNS)
    markdown = rep.to_markdown(report)
    assert "| subject | twoway/forward | twoway/reverse | vmap |" in markdown
    assert "· twoway/forward · float64: disagrees" in markdown
    page = rep.to_html(report)
    assert "<th>twoway/forward</th><th>twoway/reverse</th>" in page
    assert "FAILED" in report.summary() and "× 2 backends" in report.summary()


def test_fuzz_checks_random_programs_on_each_variant(twoway):
    pytest.importorskip("hypothesis")
    subject, cells = check_fuzz(2, COLUMNS, ["float64"], seed=1).subject_and_cells()
    assert {c.backend for c in cells} == set(COLUMNS)
    assert all(c.status == "agrees" for c in cells), [(c.backend, c.message) for c in cells]
    twoway.planted = 1.1
    subject, cells = check_fuzz(2, COLUMNS, ["float64"], seed=1).subject_and_cells()
    by_column = {c.backend: c for c in cells}
    assert (
        by_column["twoway/forward"].status == "disagrees" and by_column["twoway/reverse"].status == "agrees"
    )
    assert subject.source  # the failing program, to paste into a test


def test_the_pytest_plugin_has_an_item_per_variant(twoway):
    ids = [t.id for t in targets("core", ["twoway"], ["float64"]) if t.unit.name == "sin"]
    assert ids == ["sin-twoway/forward-float64", "sin-twoway/reverse-float64"]
    ids = [t.id for t in targets("core", ["twoway/reverse", "vmap"], ["float64"]) if t.unit.name == "sin"]
    assert ids == ["sin-twoway/reverse-float64", "sin-vmap-float64"]


def test_a_variant_column_agrees_with_the_same_options_through_the_api(twoway):
    x = np.array([0.3, -1.2])
    for column in COLUMNS:
        g = adcore.grad(lambda x: np.sum(np.sin(x)), **abilities.api_options(column))(x)
        np.testing.assert_allclose(g, np.cos(x), rtol=1e-15)
