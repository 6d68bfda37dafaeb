"""A plain ValueError raised by f's own code (NumPy's max of an empty array, int('a')) comes out as a
typed InvalidValueError (still a ValueError) naming the backend and saying it came from f, with the
original as its cause; adcore's own typed errors pass unchanged (issue 32, class 10)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError, InvalidValueError

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]


def _max(x):
    return np.max(x)


def _bad_int(x):
    return np.sum(x) * int("a")


@pytest.mark.parametrize("backend", ["forward", "numeric"])
def test_numpys_error_on_an_empty_input_is_typed_naming_the_backend_and_f(backend):
    with pytest.raises(
        InvalidValueError, match=rf"backend '{backend}': f raised ValueError: zero-size array"
    ) as caught:
        adcore.grad(_max, backend=backend)(np.zeros(0))
    assert isinstance(caught.value, ValueError)
    assert "came from f's own code" in str(caught.value)
    assert type(caught.value.__cause__) is ValueError  # NumPy's own, kept as the cause
    # the next call works: d max / dx at the single largest entry
    np.testing.assert_allclose(adcore.grad(_max, backend=backend)(np.array([1.0, 3.0, 2.0])), [0.0, 1.0, 0.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_fs_own_value_error_is_typed_on_every_backend(backend):
    with pytest.raises(
        InvalidValueError, match=rf"backend '{backend}': f raised ValueError: invalid literal"
    ):
        adcore.grad(_bad_int, backend=backend)(np.ones(2))
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(x * x), backend=backend)(np.ones(2)), [2.0, 2.0])


@pytest.mark.parametrize("backend", ["reverse", "symbolic"])
def test_adcores_own_typed_error_passes_unchanged(backend):
    # the traced max of an empty array is adcore's refusal, naming the op: not re-wrapped as f's
    with pytest.raises(AdcoreError, match=r"^op 'max' of an array of shape \(0,\)"):
        adcore.grad(_max, backend=backend)(np.zeros(0))


@pytest.mark.parametrize(
    "call",
    [
        lambda: adcore.vjp(_max, np.zeros(0), backend="numeric"),
        lambda: adcore.jvp(_max, (np.zeros(0),), (np.zeros(0),), backend="numeric"),
        lambda: adcore.vjp(_bad_int, np.ones(2)),
        lambda: adcore.jvp(_bad_int, (np.ones(2),), (np.ones(2),)),
    ],
    ids=["vjp-numeric", "jvp-numeric", "vjp-reverse", "jvp-forward"],
)
def test_jvp_and_vjp_type_fs_own_value_error_too(call):
    with pytest.raises(InvalidValueError, match=r"backend '\w+': f raised ValueError") as caught:
        call()
    assert type(caught.value.__cause__) is ValueError
    out, pullback = adcore.vjp(lambda x: np.sum(x * x), np.ones(2))  # the next call works
    np.testing.assert_allclose(pullback(1.0)[0], [2.0, 2.0])
