"""Escapes from the trace on every backend (issue 15, classes 1, 2 and the Tracer items of 12):
each is refused with a typed error naming the backend, or gives the right derivative."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import ComplexValueError, TracerConversionError

RULE_BACKENDS = ["reverse", "forward", "symbolic"]  # the backends that trace f
X = 0.7


def _store(x):
    z = np.zeros(2)
    z[0] = x  # NumPy calls float(x): the issue's `z = np.zeros(2); z[0] = x[0]`
    return np.sum(z) * x


def _store_element(x):
    z = np.zeros(2)
    z[0] = x[0]
    return np.sum(z * x)


def _add_into(x):
    z = np.ones(())
    z += x  # a write into a plain array: np.add(z, x, out=z)
    return z * x


# f, its argument, and a word the message must hold (the conversion it names).
CONVERSIONS = {
    "float": (lambda x: float(x) * x, X, "float(x)"),
    "int": (lambda x: int(x) * x, 2.7, "int(x)"),
    "complex": (lambda x: abs(complex(x)) * x, X, "complex(x)"),
    "item": (lambda x: x.item() * x, X, "x.item()"),
    "np.float64": (lambda x: np.float64(x) * x, X, "np.float64(x)"),
    "math.exp": (lambda x: math.exp(x) * x, X, "math.exp"),
    "math.sin": (lambda x: math.sin(x) * x, X, "float(x)"),
    "math.floor": (lambda x: math.floor(x) * x, 2.7, "math.floor"),
    "range": (lambda x: sum(range(x)) * x, 3.0, "operator.index"),
    "tolist": (lambda x: np.sum(np.array(x.tolist()) * x), np.array([X, 0.2]), "x.tolist()"),
    "asarray": (lambda x: np.sum(np.asarray(x) * x), np.array([X, 0.2]), "np.asarray"),
    "z[0] = x": (_store, X, "z[i] = x"),
    "z[0] = x[0]": (_store_element, np.array([X, 0.2]), "z[i] = x"),
    "z += x": (_add_into, X, "z += x"),
}


def _check_next_call_works(backend):
    assert adcore.grad(lambda x: x * x, backend=backend)(X) == pytest.approx(2 * X)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_conversions_are_refused_naming_the_conversion_and_backend(backend, name):
    f, x, word = CONVERSIONS[name]
    with pytest.raises(TracerConversionError) as info:
        adcore.grad(f, backend=backend)(x)
    message = str(info.value)
    assert isinstance(info.value, TypeError)
    assert word in message and f"backend '{backend}'" in message, message
    assert "stop_gradient" in message and "adcore.numpy" in message
    _check_next_call_works(backend)


@pytest.mark.parametrize("name", [n for n in CONVERSIONS if n != "range"])  # range(0-d array) fails in NumPy
def test_numeric_runs_f_on_numbers_so_conversions_are_right_there(name):
    f, x, _ = CONVERSIONS[name]
    truth = adcore.grad(lambda x: _plain_twin(name, x))(x)  # the same function without the escape
    np.testing.assert_allclose(adcore.grad(f, backend="numeric")(x), truth, rtol=1e-6)


def _plain_twin(name, x):
    """The traced-safe version of CONVERSIONS[name]: the converted value as a constant."""
    if name in ("int", "math.floor"):
        return np.floor(adcore.concrete(x)) * x
    if name == "math.exp":
        return np.exp(x) * x
    if name == "math.sin":
        return np.sin(x) * x
    if name == "z[0] = x[0]":
        return x[0] * x[0]
    if name == "z += x":
        return (1.0 + x) * x
    if name in ("tolist", "asarray"):
        return np.sum(x * x)
    return x * x


def test_the_issue_example_float_times_x_is_refused_not_0_7():
    # today grad(lambda x: float(x) * x)(0.7) returned 0.7; the truth is 1.4
    with pytest.raises(TracerConversionError, match="float"):
        adcore.grad(lambda x: float(x) * x)(X)
    assert adcore.grad(lambda x: adcore.ops.stop_gradient(x) * x)(X) == pytest.approx(X)  # a cut on purpose


def test_an_eager_tensor_refuses_conversions_and_keeps_working():
    from adcore_reverse import Tensor

    t = Tensor(X, requires_grad=True)
    with pytest.raises(TracerConversionError, match="backend 'reverse'"):
        float(t)
    with pytest.raises(TracerConversionError, match="x.item"):
        t.item()
    (t * t).backward()
    assert t.grad == pytest.approx(2 * X)


def test_a_conversion_inside_a_nested_derivative_is_refused():
    with pytest.raises(TracerConversionError):
        adcore.hessian(lambda x: float(x) * x**3)(X)
    assert adcore.hessian(lambda x: x**3)(X) == pytest.approx(6 * X)


@pytest.mark.parametrize("backend", RULE_BACKENDS + ["numeric"])
def test_comparisons_bool_len_and_shape_queries_stay_allowed(backend):
    def f(x):
        assert len(x) == 2 and x.shape == (2,) and x.ndim == 1 and x.dtype == np.float64
        return np.sum(x * x) if backend == "symbolic" or bool(x[0] > 0) else -np.sum(x)

    np.testing.assert_allclose(adcore.grad(f, backend=backend)(np.array([X, 0.2])), [2 * X, 0.4], rtol=1e-6)


# --- class 2: complex values inside f (issue 19: carried through, JAX's convention) ----------

# f and its derivative at X: real functions with complex values inside (docs/complex.md)
COMPLEX = {
    "abs(x * (1 + 1j))": (lambda x: anp.abs(x * (1 + 1j)), math.sqrt(2)),  # issue 15's 0.0 on reverse
    "complex128 array": (lambda x: anp.sum(anp.abs(x * np.array([1j, 1.0]))), 2.0),
    "np.exp(1j * x)": (lambda x: np.exp(1j * x).real, -math.sin(X)),
    "x + 0j": (lambda x: anp.abs(x + 0j), 1.0),
    "astype(complex)": (lambda x: anp.abs(x.astype(np.complex128)), 1.0),
}


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
@pytest.mark.parametrize("name", list(COMPLEX))
def test_complex_values_inside_f_are_differentiated_right(backend, name):
    f, truth = COMPLEX[name]
    assert adcore.grad(f, backend=backend)(X) == pytest.approx(truth, rel=1e-6)


# a complex value reaching an op whose rules are for real inputs only
REAL_ONLY = {
    "maximum(x * 1j, 0)": (lambda x: anp.abs(anp.maximum(x * 1j, 0.0)), "maximum"),
    "sign(x + 1j)": (lambda x: anp.abs(anp.sign(x + 1j)), "sign"),
    "ptp(x * 1j)": (lambda x: anp.ptp(anp.stack([x, 2 * x]) * 1j), "ptp"),
}


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("name", list(REAL_ONLY))
def test_a_complex_value_reaching_a_real_only_op_is_refused_naming_op_and_backend(backend, name):
    f, op = REAL_ONLY[name]
    with pytest.raises(ComplexValueError) as info:
        adcore.grad(f, backend=backend)(X)
    assert f"op {op!r} on backend '{backend}'" in str(info.value)
    _check_next_call_works(backend)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: anp.abs(anp.sqrt(x.astype(np.complex128))),
        lambda x: anp.abs(anp.sum(x, dtype=np.complex128)),
    ],
    ids=["astype(complex)", "sum(dtype=complex)"],
)
def test_symbolic_refuses_a_cast_of_a_real_value_to_complex(f):
    # its symbols are real: sqrt(x + 0j) at x < 0 would be sqrt of a real negative number, nan
    with pytest.raises(adcore.UnsupportedByBackendError, match="symbolic.*complex"):
        adcore.grad(f, backend="symbolic")(-X)
    assert adcore.grad(f, backend="reverse")(-X) == pytest.approx(
        adcore.grad(f, backend="numeric")(-X), rel=1e-6
    )


def test_numeric_differentiates_through_complex_values_and_its_complex_step_works():
    # |x (1 + i)| = sqrt(2) x, so the derivative is sqrt(2)
    assert adcore.grad(COMPLEX["abs(x * (1 + 1j))"][0], backend="numeric")(X) == pytest.approx(math.sqrt(2))
    # the complex step calls f with complex x and traces nothing: d sin = cos
    g = adcore.grad(lambda x: np.sin(x) * x, backend="numeric", method="complex")(X)
    assert g == pytest.approx(np.cos(X) * X + np.sin(X), rel=1e-12)


# --- class 12: the ndarray methods of a tracer, right or refused by name ---------------------

V = np.array([X, -0.2, 1.5])

# f, and its gradient at V by hand
RIGHT = {
    "x.copy()": (lambda x: np.sum(x.copy() * x), 2 * V),
    "np.copy(x)": (lambda x: np.sum(np.copy(x) * x), 2 * V),
    "copy.deepcopy": (lambda x: np.sum(copy.deepcopy(x) * x), 2 * V),
    "x.ravel()": (lambda x: np.sum(x.reshape(3, 1).ravel() ** 2), 2 * V),
    "x.flatten()": (lambda x: np.sum(x.reshape(1, 3).flatten() ** 2), 2 * V),
    "astype(same)": (lambda x: np.sum(x.astype(np.float64) * x), 2 * V),
    "round(x)": (lambda x: round(x[0]) * x[0] + x[1], np.array([1.0, 1.0, 0.0])),  # round' = 0
    "x.round(1)": (lambda x: np.sum(x.round(1) * x), V.round(1)),
    "x.real": (lambda x: np.sum(x.real * x), 2 * V),
}


@pytest.mark.parametrize("backend", RULE_BACKENDS + ["numeric"])
@pytest.mark.parametrize("name", list(RIGHT))
def test_methods_with_a_differentiable_meaning_give_the_right_derivative(backend, name):
    f, truth = RIGHT[name]
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(V), truth, rtol=1e-6, atol=1e-9)


def _set_item(x):
    x[0] = 1.0
    return np.sum(x)


REFUSED = {
    "x[0] = v": (_set_item, adcore.UnsupportedFunctionError, "scatter_add"),
    "astype(int)": (lambda x: np.sum(x.astype(int) * x), TracerConversionError, "astype(int64)"),
    "x.sort()": (lambda x: (x.sort(), np.sum(x))[1], adcore.UnsupportedFunctionError, "in place"),
    "x.fill(0)": (lambda x: (x.fill(0.0), np.sum(x))[1], adcore.UnsupportedFunctionError, "in place"),
    "x.compress()": (lambda x: np.sum(x.compress([True])), adcore.UnsupportedFunctionError, "x.compress()"),
}


@pytest.mark.parametrize("backend", RULE_BACKENDS)
@pytest.mark.parametrize("name", list(REFUSED))
def test_methods_with_no_traced_meaning_are_refused_with_the_way_out(backend, name):
    f, error, words = REFUSED[name]
    with pytest.raises(error) as info:
        adcore.grad(f, backend=backend)(V)
    assert words in str(info.value) and f"backend '{backend}'" in str(info.value), str(info.value)
    _check_next_call_works(backend)


def test_a_complex_eager_tensor_inside_f_reaching_a_real_only_op_is_refused():
    from adcore_reverse import Tensor

    with pytest.raises(ComplexValueError, match="op 'maximum' on backend 'reverse'"):
        adcore.grad(lambda x: anp.maximum(x * Tensor(np.array(1j)), 0.0))(X)
    _check_next_call_works("reverse")


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_storing_through_flat_is_loud_though_untyped(backend):
    # NumPy's flat iterator drops float(x)'s TracerConversionError and raises its own
    # ValueError, with no context to give the typed one back (docs/conventions.md)
    def f(x):
        z = np.zeros(2)
        z.flat[0] = x
        return np.sum(z) * x

    with pytest.raises(ValueError, match="setting single item"):
        adcore.grad(f, backend=backend)(X)
    _check_next_call_works(backend)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_a_scipy_function_converting_a_traced_value_names_itself_and_adcore_scipy(backend):
    scipy_special = pytest.importorskip("scipy.special")  # adcore-scipy's dependency
    with pytest.raises(TracerConversionError) as info:
        adcore.grad(lambda x: scipy_special.logsumexp(x), backend=backend)(np.ones(3))
    message = str(info.value)
    assert "scipy.special._logsumexp.logsumexp converted it" in message and "adcore_scipy.special" in message
    # a plain np.asarray says nothing of SciPy; the next call works
    with pytest.raises(TracerConversionError) as info:
        adcore.grad(lambda x: np.asarray(x).sum(), backend=backend)(np.ones(3))
    assert "SciPy" not in str(info.value)
    assert adcore.grad(lambda x: scipy_special.erf(x).sum(), backend=backend)(np.zeros(2)) == pytest.approx(
        [2 / np.sqrt(np.pi)] * 2
    )
