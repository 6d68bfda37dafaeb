"""Property (issue 32, class 2): random short programs of ops with array-valued params (getitem
with integer and boolean index arrays, take, take_along_axis, repeat, sum with where=, quantile's
q, scatter_add's index), given as arrays or lists, whose params are written into (or appended to)
after the call: inside f, between `vjp` and the pullback, or before `Tensor.backward()`. The
derivative is that of the program as it ran: forward mode's Jacobian of the same program on
untouched params (forward reads each param only while the op runs), or an AdcoreError."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from adcore_reverse import Tensor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcore
import adcore.numpy as anp
from adcore.errors import AdcoreError

N = 5
OFFSETS = np.arange(N) * 0.37  # keeps quantile's inputs apart, so no tie picks a convention


def _index(rng, kind):
    idx = rng.integers(0, N, N)
    return idx if kind == "array" else idx.tolist()


def _mask(rng, kind):
    mask = rng.random(N) < 0.6
    return mask if kind == "array" else mask.tolist()


# Each step: (draw its params from rng, as arrays or lists; v -> a new v of length N with them).
STEPS = {
    "getitem": (lambda rng, kind: {"i": _index(rng, kind)}, lambda v, p: v[p["i"]] * 1.5 + v),
    "getitem_tuple": (lambda rng, kind: {"i": _index(rng, kind)}, lambda v, p: v[(p["i"],)] * v),
    "mask": (lambda rng, kind: {"m": _mask(rng, kind)}, lambda v, p: v + anp.sum(v[np.asarray(p["m"])] ** 2)),
    "take": (lambda rng, kind: {"i": _index(rng, kind)}, lambda v, p: np.take(v, p["i"]) * 0.5 + v),
    "take_along_axis": (
        lambda rng, kind: {"i": rng.integers(0, N, N)},  # NumPy takes an array only
        lambda v, p: np.take_along_axis(v, p["i"], axis=0) - v,
    ),
    "repeat": (
        lambda rng, kind: {"r": _index(rng, kind)},
        lambda v, p: v + 0.1 * anp.sum(np.repeat(v, p["r"]) ** 2),
    ),
    "sum_where": (lambda rng, kind: {"m": _mask(rng, kind)}, lambda v, p: v * np.sum(v * v, where=p["m"])),
    "quantile": (
        lambda rng, kind: {"q": rng.random(2) if kind == "array" else rng.random(2).tolist()},
        lambda v, p: v + anp.sum(np.quantile(v + OFFSETS, p["q"])),
    ),
    "scatter_add": (
        lambda rng, kind: {"i": _index(rng, kind)},
        lambda v, p: v + adcore.ops.scatter_add(np.sin(v), index=p["i"], shape=(N,)),
    ),
}


def _scramble(value):
    """Write into a param in place (a list is also appended to), as a user's later code might."""
    if isinstance(value, list):
        value.reverse()
        value.append(value[0])
        value[0] = (
            (value[0] + 1) % N if type(value[0]) is int else not value[0] if type(value[0]) is bool else 0.5
        )
    elif value.dtype == bool:
        value[...] = ~value
    elif value.dtype.kind == "i":
        value[...] = (value + 1) % N
    else:
        value[...] = 1.0 - value


def _scramble_all(params):
    for p in params:
        for value in p.values():
            _scramble(value)


def _run(program, params, v):
    for name, p in zip(program, params):
        v = STEPS[name][1](v, p)
    return v


def _expected_jacobian(program, params, x):
    """Forward mode's Jacobian of the program on untouched copies of its params."""
    kept = copy.deepcopy(params)
    return adcore.jacobian(lambda v: _run(program, kept, v), backend="forward")(x)


programs = st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3)
SETTINGS = settings(
    max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def _draw(program, seed, kind):
    rng = np.random.default_rng(seed)
    return [STEPS[name][0](rng, kind) for name in program], rng.normal(size=N) * 0.8


def _agree(found, expected):
    np.testing.assert_allclose(found, expected, rtol=1e-9, atol=1e-12)


@SETTINGS
@given(
    programs,
    st.integers(0, 2**16),
    st.sampled_from(["array", "list"]),
    st.sampled_from(["reverse", "symbolic"]),
)
def test_params_written_into_inside_f_after_the_op(program, seed, kind, backend):
    params, x = _draw(program, seed, kind)
    expected = _expected_jacobian(program, params, x)

    def f(v):
        mine = copy.deepcopy(params)  # each call its own params, as if f built them
        out = _run(program, mine, v)
        _scramble_all(mine)
        return out

    try:
        found = adcore.jacobian(f, backend=backend)(x)
    except AdcoreError:
        return
    _agree(found, expected)


@SETTINGS
@given(programs, st.integers(0, 2**16), st.sampled_from(["array", "list"]))
def test_params_written_into_between_vjp_and_the_pullback(program, seed, kind):
    params, x = _draw(program, seed, kind)
    expected = _expected_jacobian(program, params, x)
    g = np.linspace(-1.0, 2.0, N)
    out, pullback = adcore.vjp(lambda v: _run(program, params, v), x)
    _scramble_all(params)
    _agree(pullback(g)[0], g @ expected)
    _scramble_all(params)  # and again: a second pullback reads what the first did
    _agree(pullback(g)[0], g @ expected)


@SETTINGS
@given(programs, st.integers(0, 2**16), st.sampled_from(["array", "list"]))
def test_params_written_into_before_backward(program, seed, kind):
    params, x = _draw(program, seed, kind)
    expected = _expected_jacobian(program, params, x)
    g = np.linspace(-1.0, 2.0, N)
    t = Tensor(x, requires_grad=True)
    out = _run(program, params, t)
    _scramble_all(params)
    out.backward(g)
    _agree(t.grad, g @ expected)


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic", "numeric"])
def test_the_issue_example(backend):
    """grad(f)([.5, 1.5, 2.5]) gave [11, 0, 0] on reverse: f's index array, written after x[idx]."""

    def f(x):
        idx = np.array([1, 1, 2])
        y = x[idx]
        idx[:] = 0
        return anp.sum(y * np.array([3.0, 7.0, 1.0]))

    found = adcore.grad(f, backend=backend)(np.array([0.5, 1.5, 2.5]))
    np.testing.assert_allclose(found, [0.0, 10.0, 1.0], rtol=1e-7, atol=1e-8)  # d/dx of 3x1 + 7x1 + x2
