"""Complex dtypes in the conformance engine: an op that accepts complex values is checked in
complex128/complex64 on its split real function (real and imaginary parts in, a complex output's
parts stacked out), so a complex rule that is wrong fails exactly its complex cells."""

from __future__ import annotations

import inspect
import json
import re

import jsonschema
import numpy as np
import pytest
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
import adcore.numpy as anp
from adcore import cli
from adcore.conformance import abilities, engine, report
from adcore.conformance.calls import checks_complex, op_calls, split_function
from adcore.spec import NONZERO, REAL, OpSpec, Sample, elementwise_samples

COMPLEX = ("complex128", "complex64")


def _modulus() -> OpSpec:
    """|z|: right for real and complex inputs, given rules right for both (a test-only op)."""
    return OpSpec(
        "modulus", np.abs, samples=elementwise_samples(NONZERO), elementwise=True, accepts_complex=True
    )


MODULUS_JVP = (lambda t, ans, z: anp.real(anp.conj(z) * t) / ans,)
MODULUS_VJP = (lambda g, ans, z: g * anp.conj(z) / ans,)
FORGOT_CONJ = (lambda g, ans, z: g * z / ans,)  # right for a real z, wrong for a complex one


def _cells(report, status: str) -> set[tuple[str, str, str]]:
    return {(c.subject, c.backend, c.dtype) for c in report.cells if c.status == status}


# --- which ops are checked in complex dtypes --------------------------------------------------


def test_an_op_that_accepts_complex_values_is_checked_in_complex_dtypes_and_one_that_does_not_is_not(
    register_plugin,
):
    cube = OpSpec("cube", lambda x: x**3, samples=elementwise_samples(REAL), elementwise=True)
    cube_rules = {"cube": (lambda g, ans, x: g * 3 * x * x,)}
    register_plugin(
        _plugin(
            [_modulus(), cube], vjps={"modulus": MODULUS_VJP, **cube_rules}, jvps={"modulus": MODULUS_JVP}
        ),
        "complexes",
    )
    work = engine.plan(ops=["modulus", "cube"])
    assert {(u.name, u.dtype) for u in work.units} == {
        *(("modulus", d) for d in engine.DTYPES),
        ("cube", "float64"),
        ("cube", "float32"),
    }
    assert work.dtypes == list(engine.DTYPES)
    result = engine.run(ops=["modulus", "cube"])
    assert result.ok
    complex_cells = {(c.subject, c.dtype): c for c in result.cells if c.dtype in COMPLEX}
    assert {subject for subject, _ in complex_cells} == {"modulus"}
    for dtype in COMPLEX:
        for backend in ("reverse", "forward", "numeric"):
            cell = next(
                c for c in result.cells if (c.subject, c.backend, c.dtype) == ("modulus", backend, dtype)
            )
            assert cell.status == "agrees" and cell.checks > 0
            assert cell.worst.sample.startswith("#") and dtype in cell.worst.sample  # the complex sample
    # the symbolic backend has no rule for the test-only op: unsupported there, as in float64
    assert result.cell("modulus", "symbolic").status == "unsupported"


def test_complex_dtypes_asked_of_ops_that_do_not_accept_complex_values_are_a_usage_error():
    with pytest.raises(ValueError, match="accepts_complex"):
        engine.plan(ops=["sort"], dtypes=["complex128"])


def test_an_op_whose_samples_have_no_float_input_is_not_checked_in_complex_dtypes(register_plugin):
    def integer_samples(rng, dtype):
        return [Sample((np.arange(3),))]

    counted = OpSpec("counted", lambda n: n * 2, samples=integer_samples, accepts_complex=True)
    register_plugin(_plugin([counted]), "integers")
    assert not checks_complex(counted)
    assert {u.dtype for u in engine.plan(ops=["counted"]).units} == {"float64", "float32"}


def test_cases_and_random_programs_stay_real(register_plugin):
    register_plugin(_plugin([_modulus()], vjps={"modulus": MODULUS_VJP}, jvps={"modulus": MODULUS_JVP}), "c")
    work = engine.plan(ops=["modulus"], cases=["seed_example"])
    assert {u.dtype for u in work.units if u.kind == "case"} == {"float64", "float32"}
    result = engine.run(["numeric"], ops=["modulus"], fuzz=1)
    assert {c.dtype for c in result.cells if c.subject == "fuzz"} == {"float64", "float32"}


# --- a wrong complex rule ---------------------------------------------------------------------


def test_a_vjp_that_forgets_a_conj_fails_exactly_the_complex_cells_of_its_backend(register_plugin):
    register_plugin(_plugin([_modulus()], vjps={"modulus": FORGOT_CONJ}, jvps={"modulus": MODULUS_JVP}), "c")
    result = engine.run(ops=["modulus"])
    assert not result.ok
    # and on source's reverse mode, which applies the same rule
    assert _cells(result, "disagrees") == {
        ("modulus", b, d) for b in ("reverse", "source/reverse") for d in COMPLEX
    }
    assert _cells(result, "error") == set()
    for dtype in COMPLEX:
        cell = next(c for c in result.failures() if c.dtype == dtype)
        assert cell.worst.check in ("jacobian", "vjp", "second")
        assert (
            "reference: forward = numeric" in cell.worst.detail or "reference: numeric" in cell.worst.detail
        )
        assert cell.rel_error > 0.1
    assert "FAILED" in result.summary() and "4 disagree" in result.summary()  # 2 columns x 2 dtypes


def _expi() -> OpSpec:
    """exp(i x) of a real x: a complex output of a real input (as an fft's), no complex input."""
    return OpSpec("expi", lambda x: np.exp(1j * x), samples=elementwise_samples(REAL), elementwise=True)


EXPI_VJP = (lambda g, ans, x: g * 1j * ans,)  # the real part is taken where it meets the real x
EXPI_JVP = (lambda t, ans, x: t * 1j * ans,)
WRONG_IMAGINARY_PART = (lambda t, ans, x: t * anp.conj(1j * ans),)  # the real part right, the imaginary not


def test_a_complex_output_of_real_inputs_is_checked_on_both_its_parts(register_plugin):
    # a Jacobian cast to float would compare the real parts alone and pass this JVP
    register_plugin(_plugin([_expi()], vjps={"expi": EXPI_VJP}, jvps={"expi": WRONG_IMAGINARY_PART}), "e")
    result = engine.run(ops=["expi"], backends=["forward", "reverse", "numeric"])
    assert {u for u in result.dtypes} == {"float64", "float32"}  # no complex input: real dtypes only
    forward = [c for c in result.cells if c.backend == "forward"]
    assert [c.status for c in forward] == ["disagrees", "disagrees"]
    assert all(c.worst.check in ("jacobian", "jvp") and c.rel_error > 0.1 for c in forward)
    # reverse's VJP is right; its second derivative is taken by forward, whose JVP of expi is not
    reverse = {c.dtype: c for c in result.cells if c.backend == "reverse"}
    assert reverse["float32"].status == "agrees"
    assert reverse["float64"].status == "agrees" or reverse["float64"].worst.check == "second"


def test_a_right_complex_output_of_real_inputs_agrees(register_plugin):
    register_plugin(_plugin([_expi()], vjps={"expi": EXPI_VJP}, jvps={"expi": EXPI_JVP}), "e")
    result = engine.run(ops=["expi"], backends=["forward", "reverse", "numeric"])
    assert result.ok and {c.status for c in result.cells} == {"agrees"}


# --- the split real function ------------------------------------------------------------------


def test_the_split_function_takes_real_and_imaginary_parts_and_stacks_a_complex_outputs_parts():
    z = np.array([0.3 + 1.2j, -0.7 - 0.4j])
    g = split_function(np.exp, (z.dtype,), complex_output=True)
    out = g(z.real.copy(), z.imag.copy())
    np.testing.assert_allclose(out, np.stack([np.exp(z).real, np.exp(z).imag]), rtol=1e-15)
    # a real output is returned as it is; an input with no complex dtype passes through
    np.testing.assert_allclose(
        split_function(np.abs, (z.dtype,), complex_output=False)(z.real, z.imag), np.abs(z), rtol=1e-15
    )
    np.testing.assert_allclose(
        split_function(np.sin, (None,), complex_output=False)(z.real), np.sin(z.real), rtol=1e-15
    )


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_the_split_functions_jacobian_is_the_ops_derivative_as_a_real_linear_map(backend):
    # exp is holomorphic: d exp(z) = exp(z) dz, i.e. the real 2 x 2 matrix [[a, -b], [b, a]] for exp(z) = a + ib
    z = np.complex128(0.3 + 1.2j)
    g = split_function(adcore.ops.exp, (z.dtype,), complex_output=True)
    d_re, d_im = adcore.jacobian(g, argnums=(0, 1), backend=backend)(np.array(z.real), np.array(z.imag))
    a, b = np.exp(z).real, np.exp(z).imag
    tol = 1e-12 if backend != "numeric" else 1e-8
    np.testing.assert_allclose(np.stack([d_re, d_im], axis=1), [[a, -b], [b, a]], rtol=tol, atol=tol)


def test_complex64_stays_complex64_inside_the_split_function():
    seen = []

    def record(z):
        seen.append(np.asarray(z).dtype)
        return z * z

    parts = (np.float32(0.5), np.float32(-1.5))
    out = split_function(record, (np.dtype(np.complex64),), complex_output=True)(
        *(np.asarray(p) for p in parts)
    )
    assert seen == [np.complex64] and out.dtype == np.float32


def test_a_mixed_sample_splits_its_complex_inputs_and_keeps_the_real_and_integer_ones(register_plugin):
    def mixed(rng, dtype):
        z = NONZERO.draw(rng, (3,), dtype)
        w = NONZERO.draw(rng, (3,), dtype)
        return [Sample((z, np.linspace(0.5, 1.5, 3), w, np.arange(3)))]

    op = OpSpec(
        "mixed",
        lambda z, x, w, n: z * x + w * n,
        nin=4,
        differentiable=(0, 1),
        samples=mixed,
        accepts_complex=True,
    )
    (call,) = op_calls(op, "complex64")
    re, x, w_re, w_im, n = call.args[0], call.args[2], call.args[3], call.args[4], call.args[5]
    assert call.argnums == (0, 1, 2)  # z's two parts and the real x
    assert call.zeros == (3, 4)  # w is not differentiable: both its parts must get 0
    assert re.dtype == np.float32 and x.dtype == np.float64 and n.dtype.kind == "i"
    assert "x0: complex64 (3,)" in call.label and "x2: complex64 (3,)" in call.label
    z = call.args[0] + 1j * call.args[1]
    expected = z * x + (w_re + 1j * w_im) * n
    np.testing.assert_allclose(call.fn(*call.args), np.stack([expected.real, expected.imag]), rtol=1e-6)


# --- the report ------------------------------------------------------------------------------


def test_every_format_says_which_rows_were_checked_in_complex_dtypes(register_plugin, tmp_path):
    register_plugin(_plugin([_modulus()], vjps={"modulus": MODULUS_VJP}, jvps={"modulus": MODULUS_JVP}), "c")
    result = engine.run(ops=["modulus", "sort"], backends=["reverse", "numeric"])
    assert result.dtypes == list(engine.DTYPES)
    assert "(2 ops × 2 backends × float64/float32; 1 op also × complex128/complex64)" in result.summary()
    assert result.cell("modulus", "reverse").dtype == "float64/float32/complex128/complex64"
    assert result.cell("sort", "reverse").dtype == "float64/float32"
    data = json.loads(report.to_json(result))
    jsonschema.validate(data, report.load_schema())
    assert {c["dtype"] for c in data["cells"] if c["subject"] == "modulus"} == set(engine.DTYPES)
    markdown = report.to_markdown(result)
    assert "| modulus ℂ |" in markdown and "| sort |" in markdown and "ℂ: also checked in" in markdown
    page = report.to_html(result)
    assert 'modulus <small class="complex">ℂ</small></th>' in page and ">sort</th>" in page
    report.write(result, "table", tmp_path / "table.txt")
    table = (tmp_path / "table.txt").read_text()
    assert "modulus ℂ" in table and "ℂ: also checked in complex128/complex64" in table


def test_a_real_run_keeps_its_summary_and_marks_nothing():
    result = engine.run(ops=["sort"], backends=["reverse"])
    assert "(1 op × 1 backends × float64/float32) in" in result.summary()
    assert "ℂ" not in report.to_markdown(result)


def test_a_complex_ops_units_go_to_one_process_in_turn_float64_first(register_plugin):
    # the float64 unit's compiled derivatives and float64 references serve the others
    register_plugin(_plugin([_modulus()], vjps={"modulus": MODULUS_VJP}, jvps={"modulus": MODULUS_JVP}), "c")
    work = engine.plan(ops=["modulus", "sort"], dtypes=["complex64", "float32", "complex128", "float64"])
    batches = [[(u.name, u.dtype) for u in batch] for batch in engine.batches(work)]
    assert batches[0] == [("modulus", d) for d in engine.DTYPES]  # a plugin's subjects go first
    assert batches[1:] == [[("sort", "float64"), ("sort", "float32")]]


def test_the_cli_runs_a_complex_dtype_alone_and_refuses_it_for_an_op_without_complex_values(
    register_plugin, capsys
):
    register_plugin(_plugin([_modulus()], vjps={"modulus": MODULUS_VJP}, jvps={"modulus": MODULUS_JVP}), "c")
    assert cli.main(["conformance", "--op", "modulus", "--dtype", "complex128", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    # n/a: symbolic; then the vmap column
    assert re.search(r"^. modulus ℂ +(. +✓ +)+. +n/a +. +✓ +.$", out, re.MULTILINE)
    assert f"(1 op × {len(abilities.columns(adcore.backends()))} backends × complex128) in" in out
    with pytest.raises(SystemExit) as exit:
        cli.main(["conformance", "--op", "sort", "--dtype", "complex64"])
    assert exit.value.code == 2 and "accepts_complex" in capsys.readouterr().err


def test_the_pytest_plugins_dtypes_are_the_engines():
    from adcore.conformance import pytest_plugin

    assert pytest_plugin.DTYPES == engine.DTYPES  # a copy, so pytest loads no engine it does not use


def test_the_split_function_is_written_of_ops_and_stacks_exactly_the_complex_outputs():
    """The written function calls adcore ops alone (a source-reading backend sees through it all),
    and stacks the parts where the op's value at the sample is complex: a real input's fft too."""
    for name, dtype, stacked in [
        ("rfftn", "float64", True),
        ("sin", "float64", False),
        ("exp", "complex128", True),
        ("abs", "complex128", False),
    ]:
        call = op_calls(adcore.ops[name], dtype)[0]
        text = inspect.getsource(call.fn)
        assert ("return stack([real(out), imag(out)])" in text) == stacked, text
        assert ("add(x0_real, multiply(x0_imag, unit0))" in text) == dtype.startswith("complex"), text
        z = (
            call.args[0] + call.args[1] * np.asarray(1j, dtype)
            if dtype.startswith("complex")
            else call.args[0]
        )
        value = adcore.ops[name].impl(z)
        expected = np.stack([np.real(value), np.imag(value)]) if stacked else value
        np.testing.assert_array_equal(call.fn(*call.args), expected)
