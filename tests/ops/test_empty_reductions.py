"""max/min/ptp/argmax/argmin of an empty array or slice: an InvalidValueError that is also NumPy's
ValueError, naming the op, on every backend that traces (issue 32, class 10). The symbolic backend
gave zeros: a derivative of a function that has no value."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

TRACING = ["reverse", "forward", "symbolic"]
X = np.ones((2, 3))

CASES = [
    ("'max'", lambda a: np.max(a[:, :0], axis=1)),
    ("'max'", lambda a: np.amax(a[:0])),
    ("'max'", lambda a: a[:0].max()),
    ("'min'", lambda a: np.min(a[:0])),
    ("'ptp'", lambda a: np.ptp(a[:0], axis=0)),
]


@pytest.mark.parametrize("backend", TRACING)
@pytest.mark.parametrize(("name", "f"), CASES)
def test_a_reduction_with_no_identity_of_an_empty_slice_is_refused(backend, name, f):
    with pytest.raises(AdcoreError, match=f"op {name} of an array of shape .*no identity") as caught:
        adcore.jacobian(f, backend=backend)(X)
    assert isinstance(caught.value, ValueError)  # NumPy's error, as the plain call raises
    with pytest.raises(ValueError):
        f(X)  # the plain call: NumPy refuses too
    # the next call works: d/da max(a, axis=1) of distinct rows picks each row's largest element
    a = np.array([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]])
    np.testing.assert_array_equal(
        adcore.jacobian(lambda a: np.max(a, axis=1), backend=backend)(a)[[0, 1], [0, 1]],
        [[0, 1, 0], [0, 0, 1]],
    )


@pytest.mark.parametrize("backend", ["reverse", "forward"])
@pytest.mark.parametrize("index", [np.argmax, np.argmin, lambda a: a.argmax(), lambda a: a.argmin()])
def test_argmax_of_an_empty_traced_array_is_refused(backend, index):
    with pytest.raises(AdcoreError, match=r"np\.arg(max|min) of a traced value of shape \(0, 3\)") as caught:
        adcore.grad(lambda a: a[0, 0] * index(a[:0]), backend=backend)(X)
    assert isinstance(caught.value, ValueError)
    # the next call works: argmax of eye(2)'s row 1 is 1, the factor of a[0, 1]
    assert adcore.grad(lambda a: a[0, 1] * np.argmax(a[1]), backend=backend)(np.eye(2))[0, 1] == 1.0


def test_a_reduction_over_an_empty_axis_that_numpy_allows_still_works():
    # max over axis 1 of a (0, 3) array is an empty result, not an error, in NumPy and here
    out = adcore.jacobian(lambda a: np.max(a[:0], axis=1))(X)
    assert out.shape == (0, 2, 3)
