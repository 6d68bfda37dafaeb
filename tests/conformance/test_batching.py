"""The vmap column of the conformance report (adcore/conformance/batching.py): each op and case
batched by adcore.vmap against a plain loop, its values and its derivatives, in every format."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
from adcore import ops
from adcore.conformance import batching, engine, report
from adcore.conformance.batching import VMAP, batched_calls, check_vmap, variants
from adcore.conformance.calls import op_calls
from adcore.extend.batching import moved_to_front
from adcore.spec import REAL, OpSpec, Sample

CUBE_VJP = (lambda g, ans, x: g * 3.0 * x * x,)
CUBE_JVP = (lambda t, ans, x: t * 3.0 * x * x,)


def _cube(name: str) -> OpSpec:
    """x ** 3, not flagged elementwise: vmap takes its batch rule, or loops over the batch."""
    draw = lambda rng, dtype: [Sample((REAL.draw(rng, shape, dtype),)) for shape in ((), (3,), (2, 3))]  # noqa: E731
    return OpSpec(name, lambda x: x**3, samples=draw)


def _cube_plugin(name: str, batch_rule=None):
    rules = {name: batch_rule} if batch_rule is not None else {}
    return _plugin([_cube(name)], vjps={name: CUBE_VJP}, jvps={name: CUBE_JVP}, batch=rules)


def _right(dims, x):
    return ops.multiply(ops.multiply(x, x), x), dims[0]


def _wrong_value(dims, x):
    """A planted wrong batch rule: x ** 3 of the batch in reverse order (each example gets another's)."""
    x = moved_to_front(x, dims[0])
    return ops.flip(ops.multiply(ops.multiply(x, x), x), axis=0), 0


def _batch_axis_assumed_first(dims, x):
    """A planted rule that is right while the batch axis is first, and says so wrongly otherwise."""
    return ops.multiply(ops.multiply(x, x), x), 0


# --- the must-show: a planted wrong batch rule is reported -----------------------------------


def test_a_planted_wrong_batch_rule_is_a_vmap_disagreement_naming_the_op_and_what_differed(register_plugin):
    register_plugin(_cube_plugin("wrong_cube", _wrong_value), "planted_batch")
    result = engine.run(ops=["wrong_cube"], backends=["reverse", "forward"], dtypes=["float64", "float32"])
    assert not result.ok
    # the backends differentiate it rightly: only the vmap column fails, in both dtypes
    assert {(c.subject, c.backend) for c in result.failures()} == {("wrong_cube", VMAP)}
    assert [c.dtype for c in result.failures()] == ["float64", "float32"]
    cell = result.cell("wrong_cube", VMAP)
    assert cell.status == "disagrees" and cell.worst.check == "vmap"
    assert cell.message.startswith("vmap differs at sample #")
    assert "got " in cell.worst.detail and "expected " in cell.worst.detail
    assert "(reference: a loop over the batch)" in cell.worst.detail
    assert cell.rel_error > 0.1  # another example's cube: off by the values' size
    assert "FAILED" in result.summary() and "; vmap: 2 disagree, 0 errors of 2 in " in result.summary()
    # every format names it
    text = report.to_markdown(result)
    assert (
        "wrong_cube`** · vmap · float64: disagrees" in text
        and "| subject | reverse | forward | vmap |" in text
    )


def test_a_rule_right_only_with_the_batch_axis_first_is_found_by_the_last_axis_batching(register_plugin):
    register_plugin(_cube_plugin("first_axis_cube", _batch_axis_assumed_first), "planted_axis")
    result = engine.run(ops=["first_axis_cube"], backends=["reverse"], dtypes=["float64"])
    cell = result.cell("first_axis_cube", VMAP)
    assert cell.status == "disagrees" and cell.worst.check == "vmap"
    assert "in_axes -1 (each argument's last axis)" in cell.worst.sample


def test_a_rule_raising_an_untyped_error_is_an_error_of_the_vmap_column(register_plugin):
    def broken(dims, x):
        raise ValueError("planted")

    register_plugin(_cube_plugin("broken_cube", broken), "planted_error")
    cell = engine.run(ops=["broken_cube"], backends=["reverse"], dtypes=["float64"]).cell("broken_cube", VMAP)
    assert (
        cell.status == "error"
        and "ValueError: planted" in cell.message
        and "vmap at sample #" in cell.message
    )


def test_the_right_rule_and_the_loop_rule_both_agree(register_plugin):
    register_plugin(_cube_plugin("right_cube", _right), "right_batch")
    register_plugin(_cube_plugin("looped_cube"), "no_batch_rule")  # no batch rule: vmap loops
    result = engine.run(ops=["right_cube", "looped_cube"], backends=["reverse"], dtypes=["float64"])
    assert result.ok, result.failures()
    assert all(result.cell(name, VMAP).checks > 0 for name in ("right_cube", "looped_cube"))


# --- the column on the catalogue's ops ----------------------------------------------------------

FEW_OPS = ["sin", "add", "matmul", "sum", "take", "concatenate", "where"]


def test_the_vmap_column_is_present_and_green_on_a_few_ops_and_a_case():
    result = engine.run(ops=FEW_OPS, cases=["mlp_loss"], backends=["reverse", "forward"], dtypes=["float64"])
    assert result.ok, [(c.subject, c.backend, c.message) for c in result.failures()]
    assert result.columns == ["reverse", "forward", VMAP]
    assert {c.subject for c in result.vmap} == {*FEW_OPS, "mlp_loss"}
    assert all(c.backend == VMAP and c.status == "agrees" and c.checks > 0 for c in result.vmap)
    assert VMAP not in {c.backend for c in result.cells}  # the backends' cells and counts are their own
    assert f"({len(FEW_OPS)} ops, 1 case × 2 backends × float64) in " in result.summary()


def test_the_report_with_its_vmap_column_validates_against_the_schema_in_every_format():
    result = engine.run(ops=["sin", "matmul"], backends=["reverse"])
    data = json.loads(report.to_json(result))
    jsonschema.validate(data, report.load_schema())
    assert {(c["subject"], c["backend"], c["dtype"]) for c in data["vmap"]} == {
        (name, VMAP, dtype) for name in ("sin", "matmul") for dtype in engine.DTYPES
    }
    assert "| subject | reverse | vmap |" in report.to_markdown(result)
    assert "<th>vmap</th>" in report.to_html(result)


# --- the checks themselves ------------------------------------------------------------------


def test_each_call_is_batched_with_the_same_label_in_further_draws():
    op = adcore.ops["add"]
    calls = op_calls(op, "float64", 0)
    groups = batched_calls(lambda seed: op_calls(op, "float64", seed), calls, 0)
    assert [g[0] for g in groups] == calls
    assert all(len(g) == batching.BATCH for g in groups)  # add's shapes are fixed: every draw matches
    assert all(len({c.label for c in g}) == 1 for g in groups)
    group = next(g for g in groups if all(np.ndim(a) for a in g[0].args))
    assert not np.array_equal(group[0].args[0], group[1].args[0])  # other values, so a mix-up shows


def test_variants_batch_along_the_first_and_last_axis_and_leave_each_array_unbatched_in_turn():
    x, y = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    calls = [op_calls(adcore.ops["add"], "float64", 0)[0]]
    group = [type(calls[0])(np.add, (x + k, y - k), (0, 1)) for k in range(3)]
    found = {how: (axes, xs, each) for how, axes, xs, each in variants(group)}
    assert list(found) == [
        "in_axes 0",
        "in_axes -1 (each argument's last axis)",
        "argument 0 not batched (in_axes None)",
        "argument 1 not batched (in_axes None)",
    ]
    axes, xs, each = found["in_axes -1 (each argument's last axis)"]
    assert axes == (-1, -1) and xs[0].shape == (2, 3, 3) and xs[1].shape == (3, 3)
    np.testing.assert_array_equal(xs[0][..., 2], x + 2)
    axes, xs, each = found["argument 0 not batched (in_axes None)"]
    shared = group[0].args[0]
    assert axes == (None, 0) and xs[0] is shared and all(e[0] is shared for e in each)


@pytest.mark.parametrize("nesting", ["reverse", "forward"])
def test_derivatives_are_batched_on_the_backends_that_nest_with_vmap_only(nesting):
    op = adcore.ops["sin"]
    calls = op_calls(op, "float64", 0)
    groups = batched_calls(lambda seed: op_calls(op, "float64", seed), calls, 0)
    supported = lambda backend: ""  # noqa: E731
    values_only = check_vmap("sin", groups, ["numeric"], "float64", supported, exact=True)  # no nesting
    with_reverse = check_vmap("sin", groups, ["numeric", nesting], "float64", supported, exact=True)
    assert values_only.status == with_reverse.status == "agrees"
    assert with_reverse.checks > values_only.checks > 0
    assert with_reverse.worst.check in ("vmap(grad)", "vmap(jacobian)")  # values bit for bit: derivatives not


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_judge_is_bit_for_bit_where_exact_and_within_the_vmap_tolerance_elsewhere(dtype):
    from adcore.conformance.results import Tally

    expected = np.array([1.0, 2.0, np.nan], dtype=dtype)
    nudged = expected.copy()
    nudged[0] = np.nextafter(nudged[0], np.inf, dtype=dtype)
    tally = Tally()
    batching.judge(tally, "s", "vmap", nudged, expected, dtype, exact=False)
    assert tally.worst_ratio <= 1.0  # one unit in the last place: rounding, allowed (nan = nan)
    batching.judge(tally, "s", "vmap", nudged, expected, dtype, exact=True)
    assert tally.worst_ratio > 1.0 and "bit for bit" in tally.worst.detail
    tally = Tally()
    batching.judge(
        tally,
        "s",
        "vmap",
        expected.astype(np.float64 if dtype == "float32" else np.float32),
        expected,
        dtype,
        exact=False,
    )
    assert tally.worst_ratio > 1.0 and "vmap gave" in tally.worst.detail  # a dtype differing is wrong
