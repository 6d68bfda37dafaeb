"""The NumPy-function cases (adcore/conformance/numpy_function_cases.py) are built-in cases the engine
checks on every backend: all agree, and symbolic's refusals of the functions that pick by value
(interp, partition, unwrap) are recorded as unsupported, not as disagreeing. Some closed forms too."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.conformance import engine
from adcore.conformance.cases import BUILTIN_CASES
from adcore.conformance.numpy_function_cases import (
    KNOTS,
    NUMPY_FUNCTION_CASES,
    lists_of_traced,
    np_einsum_sublists,
    np_interp,
    np_linspace,
    np_trapezoid,
)
from adcore.plugins import get_registry

NAMES = [case.name for case in NUMPY_FUNCTION_CASES]
PICK_BY_VALUE = {"np_interp", "np_partition", "np_unwrap"}  # symbolic has no number to pick with


def test_they_are_builtin_cases_registered_by_the_core():
    registry = get_registry()
    assert {case.name for case in NUMPY_FUNCTION_CASES} <= {case.name for case in BUILTIN_CASES}
    assert all(registry.cases[case.name] is case for case in NUMPY_FUNCTION_CASES)


def test_the_engine_passes_them_on_every_backend_with_symbolics_refusals_recorded():
    report = engine.run(ops=[], cases=NAMES, seed=1)
    assert report.ok, [(c.subject, c.backend, c.dtype, c.message) for c in report.failures()]
    for cell in report.cells:
        refuses = cell.backend == "symbolic" and cell.subject in PICK_BY_VALUE
        assert cell.status == ("unsupported" if refuses else "agrees"), (
            cell.subject,
            cell.backend,
            cell.message,
        )
    assert all("SymbolicControlFlowError" in c.message for c in report.cells if c.status == "unsupported")


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_trapezoid_einsum_linspace_and_lists_against_closed_forms(backend):
    y, x = np.array([1.0, -2.0, 0.5]), np.array([0.0, 1.0, 3.0])
    dy, dx = adcore.grad(np_trapezoid, argnums=(0, 1), backend=backend)(y, x)
    np.testing.assert_allclose(dy, [0.5, 1.5, 1.0], rtol=1e-14)  # (x1 - x0)/2, (x2 - x0)/2, (x2 - x1)/2
    np.testing.assert_allclose(dx, [-(y[0] + y[1]) / 2, (y[0] - y[2]) / 2, (y[1] + y[2]) / 2], rtol=1e-14)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
    ja = adcore.jacobian(np_einsum_sublists, backend=backend)(a, b)
    np.testing.assert_allclose(ja, np.einsum("ik,jl->ilkj", np.eye(2), b), rtol=1e-14)  # d(ab)_il / da_kj
    d_start, d_stop = adcore.jacobian(np_linspace, argnums=(0, 1), backend=backend)(1.0, 3.0)
    t = np.linspace(0.0, 1.0, 5)  # points = start + t (stop - start), step = (stop - start) / 4
    np.testing.assert_allclose(d_start, (1 - t) * 0.5 + (1 + 2 * t) * -0.25, rtol=1e-14)
    np.testing.assert_allclose(d_stop, t * 0.5 + (1 + 2 * t) * 0.25, rtol=1e-14)
    v = np.array([3.0, 4.0, 0.5])
    listed = np.array([v[0], v[1] * v[2]])
    out = np.append([listed.mean()], v) * np.linalg.norm(listed)
    np.testing.assert_array_equal(adcore.vjp(lists_of_traced, v)[0], out)


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric"])
def test_interp_slopes_are_the_intervals(backend):
    x, fp = np.array([0.5, 3.0]), np.array([0.0, 2.0, -1.0, 5.0])
    dx, dfp = adcore.jacobian(np_interp, argnums=(0, 1), backend=backend)(x, fp, KNOTS)
    np.testing.assert_allclose(np.diag(dx), [2.0, 4.0], rtol=1e-6)  # (fp[i+1] - fp[i]) / (xp[i+1] - xp[i])
    np.testing.assert_allclose(dfp, [[0.5, 0.5, 0, 0], [0, 0, 2 / 3, 1 / 3]], rtol=1e-6, atol=1e-9)
