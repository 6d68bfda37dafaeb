"""adcore.derivatives' input checks: float16, np.matrix and masked arrays refused on every backend (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
X = np.array([0.5, 1.5, 2.5])
# longdouble is float64 on some platforms, which is differentiated
UNSUPPORTED_FLOATS = [np.float16] + ([np.longdouble] if np.dtype(np.longdouble) != np.float64 else [])


def _square_sum(x):
    return np.sum(x * x)


def _next_call_works(backend: str) -> None:
    # d/dx sum(x^2) = 2x, analytic
    np.testing.assert_allclose(adcore.grad(_square_sum, backend=backend)(X), 2 * X, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", UNSUPPORTED_FLOATS)
def test_float16_and_longdouble_are_refused_naming_the_dtype_and_argument(backend, dtype):
    for call in (
        lambda: adcore.grad(_square_sum, backend=backend)(X.astype(dtype)),
        lambda: adcore.grad(lambda d: _square_sum(d["w"]), backend=backend)({"w": X.astype(dtype)}),
    ):
        with pytest.raises(AdcoreError, match=f"argument 0.*dtype {np.dtype(dtype)}.*float32") as caught:
            call()
        assert isinstance(caught.value, TypeError)
    _next_call_works(backend)


def test_float16_is_refused_by_jvp_and_vjp():
    with pytest.raises(AdcoreError, match="dtype float16"):
        adcore.jvp(np.sin, (X.astype(np.float16),), (X.astype(np.float16),))
    with pytest.raises(AdcoreError, match="dtype float16"):
        adcore.vjp(np.sin, X.astype(np.float16))
    _next_call_works("reverse")


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: np.matrix([[0.5, 1.5, 2.5]]), "np.matrix: pass np.asarray"),
        (lambda: np.ma.array(X, mask=[0, 1, 0]), r"masked array \(np.ma\).*x.filled"),
    ],
)
def test_matrix_and_masked_arguments_are_refused_with_the_way_out(backend, make, says):
    for call in (
        lambda: adcore.grad(_square_sum, backend=backend)(make()),
        lambda: adcore.jacobian(lambda x: x * 2, backend=backend)(make()),
        lambda: adcore.grad(lambda d: _square_sum(d["w"]), backend=backend)({"w": make()}),
    ):
        with pytest.raises(AdcoreError, match=says) as caught:
            call()
        assert isinstance(caught.value, TypeError)
    _next_call_works(backend)
