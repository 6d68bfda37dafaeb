"""adcore_scipy.signal.convolve: SciPy's values; Jacobians in each input against the exact ones
(the convolution is linear in each), every mode (in2 larger, valid's swap) and method, the same
derivative for direct, fft and auto; complex inputs by the dot-product test and finite
differences; the symbolic rule; second order; scipy imported only when the op runs (conformance:
the full report, tests/conformance/test_engine.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.signal
from adcore_scipy import signal

import adcore
from adcore.errors import InvalidValueError

BACKENDS = ["reverse", "forward", "numeric"]
RULE_BACKENDS = ["reverse", "forward"]
RNG = np.random.default_rng(190)
SHAPES = [
    ((5,), (3,)),
    ((2,), (4,)),  # in2 larger: valid swaps the inputs
    ((3, 4), (2, 2)),
    ((2, 2), (3, 3)),
    ((2, 3, 2), (2, 1, 2)),
    ((), ()),
]


def exact_jacobian(f, x: np.ndarray) -> np.ndarray:
    """The Jacobian of a linear f: f of each unit vector."""
    columns = [np.asarray(f(e.reshape(x.shape))) for e in np.eye(x.size)]
    return np.stack(columns, axis=-1).reshape(np.shape(columns[0]) + x.shape)


def tolerance(backend: str) -> dict:
    return {"atol": 1e-7} if backend == "numeric" else {"atol": 1e-12}


def test_values_are_scipys():
    for (s1, s2), mode in zip(SHAPES, ["full", "same", "valid", "same", "full", "full"]):
        a, b = RNG.normal(size=s1), RNG.normal(size=s2)
        np.testing.assert_allclose(signal.convolve(a, b, mode), scipy.signal.convolve(a, b, mode), atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["direct", "fft", "auto"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("s1, s2", SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
def test_jacobians_are_the_exact_ones(backend, method, mode, s1, s2):
    a, b = RNG.normal(size=s1), RNG.normal(size=s2)
    if mode == "valid" and not (np.all(np.array(s1) >= s2) or np.all(np.array(s2) >= s1)):
        # SciPy refuses these shapes: a typed error naming the op, and the next call works
        with pytest.raises(InvalidValueError, match="'signal_convolve': mode 'valid' needs one input"):
            adcore.jacobian(lambda a: signal.convolve(a, b, mode=mode, method=method), backend=backend)(a)
        assert signal.convolve(a, b, mode="full").shape == tuple(np.add(s1, s2) - 1)
        return

    def f(a, b):
        return signal.convolve(a, b, mode=mode, method=method)

    ja, jb = adcore.jacobian(f, argnums=(0, 1), backend=backend)(a, b)
    exact = {"atol": 1e-7} if backend == "numeric" else {"atol": 1e-10}  # fft: rounding of the transforms
    np.testing.assert_allclose(ja, exact_jacobian(lambda a: f(a, b), a), **exact)
    np.testing.assert_allclose(jb, exact_jacobian(lambda b: f(a, b), b), **exact)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("s1, s2", SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
def test_symbolic_jacobians_are_the_exact_ones(mode, s1, s2):
    # the sympy rule builds the convolution itself (SciPy takes no object arrays): same windows
    a, b = RNG.normal(size=s1), RNG.normal(size=s2)
    if mode == "valid" and not (np.all(np.array(s1) >= s2) or np.all(np.array(s2) >= s1)):
        # SciPy refuses these shapes: a typed error naming the op, and the next call works
        with pytest.raises(InvalidValueError, match="'signal_convolve': mode 'valid' needs one input"):
            adcore.jacobian(lambda a: signal.convolve(a, b, mode=mode), backend="symbolic")(a)
        assert signal.convolve(a, b, mode="full").shape == tuple(np.add(s1, s2) - 1)
        return

    def f(a, b):
        return signal.convolve(a, b, mode=mode)

    ja, jb = adcore.jacobian(f, argnums=(0, 1), backend="symbolic")(a, b)
    np.testing.assert_allclose(ja, exact_jacobian(lambda a: f(a, b), a), atol=1e-12)
    np.testing.assert_allclose(jb, exact_jacobian(lambda b: f(a, b), b), atol=1e-12)


def test_valid_refuses_inputs_neither_of_which_fits_the_other():
    with pytest.raises(InvalidValueError, match="mode 'valid' needs one input at least as large"):
        adcore.grad(lambda a: np.sum(signal.convolve(a, np.ones((1, 4)), "valid")))(np.ones((2, 3)))


def test_a_bad_method_is_refused():
    with pytest.raises(InvalidValueError, match="method"):
        signal.convolve(np.ones(3), np.ones(2), method="winograd")


# --- complex values -------------------------------------------------------------------------------


def complex_draw(*shape):
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("which", [0, 1])
def test_complex_vjp_is_the_transpose_of_the_jvp(mode, which):
    args = [complex_draw(3, 4), complex_draw(2, 3)]
    t = complex_draw(*args[which].shape)

    def f(x):
        return signal.convolve(*(x if i == which else args[i] for i in range(2)), mode=mode)

    place = [*args]
    place[which] = t
    expected = scipy.signal.convolve(*place, mode=mode)
    _, tangent = adcore.jvp(f, (args[which],), (t,), backend="forward")
    np.testing.assert_allclose(tangent, expected, atol=1e-12)
    out, pullback = adcore.vjp(f, args[which], backend="reverse")
    u = complex_draw(*out.shape)
    (back,) = pullback(u)
    assert np.real(np.sum(u * expected)) == pytest.approx(np.real(np.sum(back * t)), abs=1e-10)


@pytest.mark.parametrize("backend", RULE_BACKENDS)
def test_holomorphic_jacobian_and_a_real_loss_of_complex_inputs(backend):
    a, b = complex_draw(4), complex_draw(3)
    got = adcore.jacobian(lambda a: signal.convolve(a, b, "same"), backend=backend, holomorphic=True)(a)
    np.testing.assert_allclose(
        got, exact_jacobian(lambda a: scipy.signal.convolve(a, b, "same"), a), atol=1e-12
    )

    def loss(a, b):
        return np.sum(np.abs(signal.convolve(a, b, "full", method="fft")) ** 2)

    got = adcore.grad(loss, argnums=(0, 1), backend=backend)(a, b)
    numeric = adcore.grad(loss, argnums=(0, 1), backend="numeric")(a, b)
    for g, n in zip(got, numeric):
        np.testing.assert_allclose(g, n, atol=1e-6)


def test_mixed_real_and_complex_inputs_give_real_cotangents_to_the_real_one():
    a, b = RNG.normal(size=5), complex_draw(3)
    ga = adcore.grad(lambda a: np.sum(np.abs(signal.convolve(a, b)) ** 2))(a)
    assert ga.dtype == np.float64
    np.testing.assert_allclose(
        ga, adcore.grad(lambda a: np.sum(np.abs(signal.convolve(a, b)) ** 2), backend="numeric")(a), atol=1e-6
    )


# --- second order, lazy scipy ---------------------------------------------------------


def test_hessian_through_the_fft_method():
    # f(x) = sum(convolve(x, x)**2) on every pair of backends against the forward-over-forward one
    x = RNG.normal(size=(3, 2))

    def f(x):
        return np.sum(signal.convolve(x, x, "same", method="fft") ** 2)

    reference = adcore.jacobian(adcore.grad(f, backend="forward"), backend="forward")(x)
    numeric = adcore.jacobian(adcore.grad(f, backend="reverse"), backend="numeric")(x)
    np.testing.assert_allclose(reference, numeric, atol=1e-6)
    got = adcore.hessian(f)(x)
    np.testing.assert_allclose(got, reference, atol=1e-10)


def test_importing_the_module_and_loading_the_registry_imports_no_scipy():
    code = (
        "import sys, adcore, adcore_scipy.signal; adcore.ops['signal_convolve']; "
        "assert not [m for m in sys.modules if m.startswith('scipy.signal')]"
    )
    env = {**os.environ, "ADCORE_BLOCK_PLUGINS": "special"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    code = (
        "import sys, adcore_scipy.signal as S; S.convolve([1.0], [2.0]); assert 'scipy.signal' in sys.modules"
    )
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode == 0
