"""A traced value's `device` and `__array_namespace__` (issue 32, class 10).

NumPy 2 arrays have `.device == "cpu"`, and a traced value says the same. `__array_namespace__`
is refused with an error naming adcore.numpy: it holds the differentiable NumPy functions but is
not a complete array-API namespace, so claiming it would send array-API code into gaps.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError

BACKENDS = ["reverse", "forward", "symbolic"]
X = np.array([0.5, 1.5, 2.5])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_traced_value_is_on_the_cpu_as_a_numpy_array(backend):
    seen = []

    def f(x):
        seen.append(x.device)
        return np.sum(x * x)

    g = adcore.grad(f, backend=backend)(X)
    assert seen == [X.device] == ["cpu"]
    np.testing.assert_allclose(g, 2 * X)  # d/dx sum(x^2) = 2x


@pytest.mark.parametrize("backend", BACKENDS)
def test_array_namespace_is_refused_naming_adcore_numpy(backend):
    with pytest.raises(
        AdcoreError, match=r"__array_namespace__\(\) on a traced value.*adcore\.numpy"
    ) as caught:
        adcore.grad(lambda x: np.sum(x.__array_namespace__().sin(x)), backend=backend)(X)
    assert isinstance(caught.value, TypeError)
    np.testing.assert_allclose(adcore.grad(lambda x: np.sum(np.sin(x)), backend=backend)(X), np.cos(X))
