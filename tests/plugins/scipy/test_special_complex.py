"""Complex scipy.special.erf/erfc (issue 32, class 11): SciPy's complex values bit for bit under
tracing, holomorphic derivatives +-2/sqrt(pi) exp(-z^2) (A&S 7.1.19, which holds on all of C) on
every backend that takes complex values, in JAX's convention (docs/complex.md), and the symbolic
backend's typed refusal."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import adcore
import adcore.numpy as anp
from adcore.conformance import engine

Z = np.array([0.3 + 0.7j, -1.2 + 0.4j, 2.0 - 1.5j, -0.1j])
SIGN = {"erf": 1.0, "erfc": -1.0}


def _analytic(name: str, z: np.ndarray) -> np.ndarray:
    return SIGN[name] * 2 / np.sqrt(np.pi) * np.exp(-(z * z))


@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_traced_value_is_scipys_bit_for_bit(name, dtype, backend):
    z = Z.astype(dtype)
    f = getattr(ss, name)
    value, _ = adcore.vjp(f, z, backend=backend) if backend == "reverse" else (None, None)
    if backend != "reverse":
        value, _ = adcore.jvp(f, (z,), (np.ones_like(z),), backend=backend)
    assert value.dtype == dtype
    assert np.array_equal(value, f(z))


@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_holomorphic_derivative_is_the_closed_form(name, backend):
    d = adcore.jacobian(getattr(ss, name), holomorphic=True, backend=backend)(Z)
    tol = 1e-12 if backend != "numeric" else 1e-8
    np.testing.assert_allclose(np.diag(d), _analytic(name, Z), rtol=tol, atol=tol)
    assert np.count_nonzero(d - np.diag(np.diag(d))) == 0


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_gradient_of_a_real_loss_is_jaxs_convention(backend):
    # L = sum |erf(z)|^2: dL = Re(sum 2 conj(erf) erf' dz), so grad = 2 conj(erf(z)) erf'(z)
    g = adcore.grad(lambda z: anp.sum(anp.abs(ss.erf(z)) ** 2), backend=backend)(Z)
    expected = 2 * np.conj(ss.erf(Z)) * _analytic("erf", Z)
    np.testing.assert_allclose(g, expected, rtol=1e-8 if backend == "numeric" else 1e-12)


def test_complex64_derivative_stays_complex64():
    d = adcore.grad(ss.erf, holomorphic=True)(np.complex64(0.5 + 0.5j))
    assert d.dtype == np.complex64
    assert abs(d - _analytic("erf", np.complex128(0.5 + 0.5j))) < 1e-6


def test_symbolic_refuses_complex_erf_and_the_next_call_works():
    with pytest.raises(adcore.UnsupportedByBackendError):
        adcore.grad(lambda z: anp.abs(ss.erf(z)) ** 2, backend="symbolic")(0.5 + 0.5j)
    assert np.isclose(adcore.grad(ss.erf, backend="symbolic")(0.5), _analytic("erf", 0.5))


def test_conformance_checks_erf_and_erfc_in_complex_dtypes_and_they_agree():
    result = engine.run(
        ["reverse", "forward", "numeric"], ops=["erf", "erfc"], dtypes=["complex128", "complex64"]
    )
    assert result.ok
    cells = {(c.subject, c.backend, c.dtype): c.status for c in result.cells}
    assert set(cells.values()) == {"agrees"} and len(cells) == 12
