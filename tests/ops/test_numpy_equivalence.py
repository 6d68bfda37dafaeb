"""A traced call of a NumPy (or SciPy) function an op stands for returns that function's value for
the same call on plain arrays, bit for bit: same dtype, same shape, equal values (DESIGN.md). On
every op's conformance samples, float32 and float64, with its params (array q, float prepend, ...)."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
from op_cases import op_cases

import adcore
from adcore.errors import MissingRuleError

# ops whose NumPy call does not take the op's inputs then its params by name
CALLS = {
    "einsum": lambda func, args, params: func(
        params["subscripts"], *args, **{k: v for k, v in params.items() if k != "subscripts"}
    ),
}


def numpy_functions(op) -> list:
    """The op's NumPy functions, a named one ("scipy.special.erf") imported."""
    functions = []
    for f in op.numpy:
        if isinstance(f, str):
            module, _, name = f.rpartition(".")
            f = getattr(importlib.import_module(module), name)
        functions.append(f)
    return functions


def numpy_call(op, func):
    """func called as a user calls it, on the op's inputs then its params."""
    call = CALLS.get(op.name)
    if call is not None:
        return lambda *args, params: call(func, args, params)
    if op.variadic:
        return lambda *args, params: func(list(args), **params)
    return lambda *args, params: func(*args, **params)


def traced_positions(op, args) -> list[int]:
    """The inputs a user can differentiate with respect to: the float (or complex) ones."""
    return [k for k, a in enumerate(args) if np.asarray(a).dtype.kind in "fc"]


def traced_value(mode: str, call, args: tuple, position: int, params: dict):
    """call's value through adcore with args[position] traced, the rest constants."""

    def f(x):
        return call(*args[:position], x, *args[position + 1 :], params=params)

    x = args[position]
    if mode == "reverse":
        return adcore.vjp(f, x)[0]
    return adcore.jvp(f, (x,), (np.ones_like(x),))[0]


def assert_same(got, want, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's {want.shape}"
    assert np.array_equal(got, want, equal_nan=True), f"{what}: {got} != NumPy's {want}"


def cases() -> list:
    out = []
    for dtype in (np.float32, np.float64):
        for case in op_cases(dtype):
            op, sample = case.values
            if not op.numpy:
                continue
            out.append(pytest.param(op, sample, id=f"{case.id}-{np.dtype(dtype).name}"))
    return out


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("op, sample", cases())
def test_traced_call_is_numpys(op, sample, mode):
    applied = 0
    for func in numpy_functions(op):
        call = numpy_call(op, func)
        for position in traced_positions(op, sample.args):
            # the traced argument as adcore takes it: an array (a Python float is float64, not weak)
            args = sample.args[:position] + (np.asarray(sample.args[position]),) + sample.args[position + 1 :]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # np.cross of 2-vectors is deprecated, still NumPy's
                    want = call(*args, params=sample.params)
            except (TypeError, ValueError):
                continue  # this function does not take this call (np.linalg.cross of 2-vectors)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = traced_value(mode, call, sample.args, position, sample.params)
            except MissingRuleError:
                continue  # a typed refusal (no rule in betainc's a), not a value
            assert_same(got, want, f"{func.__name__} traced in input {position} on {mode}")
            applied += 1
    assert applied, f"no NumPy function of {op.name} was checked on this sample"
