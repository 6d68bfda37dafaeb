"""Property (issue 15, "Must show"): random small programs with a random escape from the trace
(a conversion to a number, a write into a plain array, a complex constant, a copy or ravel)
and random, possibly repeated argnums. Every backend gives the right derivative (numeric's
central difference of the same program, per argument) or raises an AdcoreError: never another
number."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcore
import adcore.numpy as anp

BACKENDS = ["reverse", "forward", "symbolic", "numeric"]

# Smooth steps, each a function of the running vector v.
STEPS = {
    "sin": np.sin,
    "tanh": np.tanh,
    "scale": lambda v: v * 1.3,
    "shift": lambda v: v + 0.4,
    "square": lambda v: v * v * 0.5,
    "exp": lambda v: np.exp(0.3 * v),
}


def _store(v):
    z = np.zeros(v.shape)
    z[0] = v[0]  # NumPy calls float(v[0])
    return v + z


def _store_all(v):
    z = np.zeros(v.shape)
    z[:] = v  # NumPy calls np.asarray(v)
    return z * v


def _add_into(v):
    z = np.ones(v.shape)
    z += v  # np.add(z, v, out=z)
    return z * v


# Escapes: on numbers (numeric) each is a plain function; on a trace each must be refused or
# be right. The last four have a traced meaning and must give the right derivative.
ESCAPES = {
    "float": lambda v: float(v[0]) * v,
    "item": lambda v: v[0].item() + v,
    "np.float64": lambda v: np.float64(v[0]) * v,
    "math.exp": lambda v: math.exp(v[0]) * v,
    "tolist": lambda v: np.array(v.tolist()) * v,
    "z[0] = v[0]": _store,
    "z[:] = v": _store_all,
    "z += v": _add_into,
    "complex constant": lambda v: anp.abs(v * (1 + 1j) + 2j),  # |.| >= sqrt(2): no kink to straddle
    "complex array": lambda v: np.exp(1j * v).real + v,
    "copy": lambda v: v.copy() * v,
    "deepcopy": lambda v: copy.deepcopy(v) * v,
    "ravel": lambda v: v.reshape(-1, 1).ravel() * v,
    "astype": lambda v: v.astype(v.dtype) * v,
}

ARGNUMS = [0, 1, (0, 1), (0, 0), (1, 0, 1), (0, 1, 0)]


@st.composite
def programs(draw):
    steps = draw(st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3))
    escape = draw(st.sampled_from(sorted(ESCAPES)))
    at = draw(st.integers(0, len(steps)))
    n = draw(st.integers(1, 3))
    x = np.array(draw(st.lists(st.floats(-1.5, 1.5), min_size=n, max_size=n)))
    y = draw(st.floats(0.5, 2.0))
    argnums = draw(st.sampled_from(ARGNUMS))
    program = steps[:at] + [escape] + steps[at:]

    def f(x, y):
        v = x * y
        for name in program:
            v = (ESCAPES.get(name) or STEPS[name])(v)
        return np.sum(v) * y

    return f, x, y, argnums, program


def _reference(f, x, y, argnums):
    """numeric's central difference, one argument at a time (what each position must hold)."""
    per_arg = {i: adcore.grad(f, argnums=i, backend="numeric")(x, y) for i in (0, 1)}
    return per_arg[argnums] if isinstance(argnums, int) else tuple(per_arg[i] for i in argnums)


@settings(max_examples=20, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_an_escape_gives_the_right_derivative_or_a_typed_error(case):
    f, x, y, argnums, program = case
    expected = _reference(f, x, y, argnums)
    if isinstance(argnums, int):
        expected = (expected,)
    for backend in BACKENDS:
        try:
            got = adcore.grad(f, argnums=argnums, backend=backend)(x, y)
        except adcore.AdcoreError:
            # a refusal is allowed; after it the next call works
            assert adcore.grad(np.sin, backend=backend)(0.5) == pytest.approx(np.cos(0.5), rel=1e-6)
            continue
        got = (got,) if isinstance(argnums, int) else got
        assert len(got) == len(expected), (backend, program, argnums)
        for g, e in zip(got, expected):
            message = f"{backend}: {program}, argnums={argnums}"
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=message)
