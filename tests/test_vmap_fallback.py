"""vmap on what has no batched meaning: Python control flow on a batched value, conversions, NumPy
functions with no op. vmap runs f once per example (the loop's answer) and warns once per
function, or raises BatchedConversionError with fallback="error"; what does have a batched
meaning (comparisons, predicates, np.all/any, & | ~ of booleans) stays batched, without a warning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from vmap_reference import assert_same, looped

import adcore
import adcore.numpy as anp
from adcore import vmap
from adcore.errors import BatchedConversionError, InvalidInputError
from adcore.vmap import VmapFallbackWarning

rng = np.random.default_rng(340)
X = rng.normal(size=(5, 3))
A = rng.normal(size=(4, 3, 3))
B = rng.normal(size=(4, 3))


def quietly(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        return call()


def no_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        return call()


# --- conversions: the loop's answer -----------------------------------------------------------


def _if(x):
    if anp.sum(x) > 0:
        return x * 2.0
    return -x


def _while(x):
    while anp.max(x) < 3.0:
        x = x * 1.5 + 0.1
    return x


def _and(x):
    return x * 2.0 if (x[0] > 0 and x[1] > 0) else x


def _store(x):
    z = np.zeros(3)
    z[0] = x[1]  # NumPy calls float(x[1])
    return z * x


CONVERSIONS = {
    "if": (_if, "bool(x)"),
    "while": (_while, "bool(x)"),
    "and": (_and, "bool(x)"),
    "float": (lambda x: x * float(x[0]), "float(x)"),
    "int": (lambda x: x * int(x[0] * 10), "int(x)"),
    "math.floor": (lambda x: x * math.floor(x[0]), "math.floor(x)"),
    "round": (lambda x: x * round(float(x[1]), 1), "float(x)"),
    "item": (lambda x: x * x[2].item(), "x.item()"),
    "tolist": (lambda x: anp.array(x.tolist()[::-1]), "x.tolist()"),
    "asarray": (lambda x: np.asarray(x) * 2.0, "np.asarray(x)"),
    "store": (_store, "float(x)"),
    "argmax index": (lambda x: x[anp.argmax(x)], "np.argmax(x)"),
    "argsort index": (lambda x: x[np.argsort(x)], "np.argsort(x)"),
    "nonzero": (lambda x: anp.sum(x[np.nonzero(x > 0)]), "np.nonzero(x)"),
    "mask": (lambda x: anp.sum(x[x > 0]), "param 'index' of op 'getitem'"),
    "range": (lambda x: anp.sum(x[: int(x[0] > 0) + 1]), "int(x)"),
    "format": (lambda x: x * len(f"{x[0]:.3f}"), "format(x, '.3f')"),
    "in": (lambda x: x * (0.5 in x), "`item in x`"),
}


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_a_conversion_falls_back_to_the_loop(name):
    f, _ = CONVERSIONS[name]
    assert_same(quietly(lambda: vmap(f)(X)), looped(f, X))


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_fallback_error_names_the_conversion_and_suggests_where(name):
    f, what = CONVERSIONS[name]
    with pytest.raises(BatchedConversionError) as info:
        no_warning(lambda: vmap(f, fallback="error")(X))
    assert what in str(info.value)
    assert "anp.where" in str(info.value)
    assert_same(quietly(lambda: vmap(f)(X)), looped(f, X))  # and the next call works


def test_an_index_from_a_batched_argument_is_the_loops():
    c = np.arange(5.0) * 1.5
    rows = np.stack([c, c + 1.0, c + 2.0])
    index = np.array([0, 3, 1])
    assert_same(quietly(lambda: vmap(lambda i: c[i])(index)), c[index])
    assert_same(quietly(lambda: vmap(lambda x, i: x[i])(rows, index)), looped(lambda x, i: x[i], rows, index))
    window = lambda x, i: x[i : i + 2]  # noqa: E731
    assert_same(quietly(lambda: vmap(window)(rows, index)), looped(window, rows, index))
    grads = quietly(lambda: adcore.grad(lambda c: anp.sum(vmap(lambda i: c[i])(index)))(c))
    assert_same(grads, np.array([1.0, 1.0, 0.0, 1.0, 0.0]))


def test_the_fallback_warns_once_per_function():
    def branchy(x):
        return x if anp.sum(x) > 0 else -x

    def other(x):
        return x if float(x[0]) > 0 else -x

    with pytest.warns(VmapFallbackWarning, match=r"vmap\(.*branchy\) runs f once per batch element: bool"):
        vmap(branchy)(X)
    no_warning(lambda: vmap(branchy)(X))  # the same function again: no second warning
    no_warning(lambda: vmap(branchy, in_axes=1)(X.T))
    with pytest.warns(VmapFallbackWarning, match="other"):
        vmap(other)(X)


def test_the_fallback_warning_points_at_the_caller():
    def branchy(x):
        return x if anp.sum(x) > 0 else -x

    with pytest.warns(VmapFallbackWarning) as record:
        vmap(branchy)(X)
    assert record[0].filename == __file__


def test_grad_wrapped_functions_warn_each_for_their_own_f():
    def first(x):
        return anp.sum(x) if anp.sum(x) > 0 else -anp.sum(x)

    def second(x):
        return anp.sum(x * x) if anp.sum(x) > 0 else anp.sum(x)

    with pytest.warns(VmapFallbackWarning, match="first"):
        vmap(adcore.grad(first))(X)
    with pytest.warns(VmapFallbackWarning, match="second"):
        vmap(adcore.grad(second))(X)


def test_fallback_with_in_axes_out_axes_and_pytrees():
    def g(p, c):
        s = p["a"] * c if anp.sum(p["a"]) > 0 else p["b"]
        return {"s": s, "c": c}

    p = {"a": X, "b": X.T}
    in_axes, out_axes = ({"a": 0, "b": 1}, None), {"s": -1, "c": None}
    c = np.float64(2.0)
    got = quietly(lambda: vmap(g, in_axes=in_axes, out_axes=out_axes)(p, c))
    assert_same(got, looped(g, p, c, in_axes=in_axes, out_axes=out_axes))


def test_fallback_outputs_of_different_shapes_are_a_typed_error():
    Z = np.array([[1.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    with pytest.raises(InvalidInputError, match="example 1's result has shape"):
        quietly(lambda: vmap(np.unique)(Z))


def test_fallback_out_axes_none_for_an_output_that_differs_per_example_is_an_error():
    def g(x):
        return x if float(x[0]) > 0 else -x

    with pytest.raises(InvalidInputError, match="out_axes is None"):
        quietly(lambda: vmap(g, out_axes=None)(X))


def test_fallback_outputs_of_different_structures_are_an_error():
    def g(x):
        return (x,) if float(x[0]) > 0 else (x, x)

    Z = np.array([[1.0, 2.0], [-1.0, 2.0]])
    with pytest.raises(InvalidInputError, match="another structure"):
        quietly(lambda: vmap(g)(Z))


def test_nested_vmap_falls_back_at_the_level_that_converts():
    def inner(x, y):
        return x * y if float(y) > 0 else x - y

    outer = vmap(vmap(inner, in_axes=(None, 0)), in_axes=(0, None))
    want = looped(lambda x: looped(lambda y: inner(x, y), X[0]), X)
    assert_same(quietly(lambda: outer(X, X[0])), want)


def test_fallback_under_grad_both_ways():
    def g(x):
        return anp.sum(anp.sin(x)) if anp.sum(x) > 0 else anp.sum(x * x)

    per_example = np.stack([adcore.grad(g)(x) for x in X])
    assert_same(quietly(lambda: vmap(adcore.grad(g))(X)), per_example)
    assert_same(quietly(lambda: adcore.grad(lambda X: anp.sum(vmap(g)(X)))(X)), per_example)


# --- NumPy functions with no batched form: the loop ------------------------------------------

NO_OP = {
    "polyval": (lambda x: np.polyval(x, 0.3), (X,)),
    "unique": (lambda x: np.unique(x), (X,)),
    "histogram": (lambda x: np.histogram(x, bins=3, range=(-3, 3))[0], (X,)),
    "max initial": (lambda x: np.max(x, initial=0.5), (X,)),
    "interp": (lambda x: np.interp(0.3, np.arange(3.0), x), (X,)),
    "add out=": (lambda x: np.add(x, 1.0, out=np.zeros(3)), (X,)),
    "lstsq": (lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], (A, B)),
    "matrix_rank": (lambda a: np.linalg.matrix_rank(a), (A,)),
    "partition": (lambda x: np.partition(x, 1), (X,)),
    "clip by a batched bound": (lambda x: np.clip(x, x[0], 0.5), (X,)),
    "unwrap": (lambda x: np.unwrap(x * 4.0), (X,)),
    "array_equal": (lambda x: np.array_equal(x, -x), (X,)),
}


@pytest.mark.parametrize("name", sorted(NO_OP))
def test_numpy_functions_with_no_batched_form_give_the_loops_answer(name):
    f, args = NO_OP[name]
    assert_same(quietly(lambda: vmap(f)(*args)), looped(f, *args), exact=name != "lstsq")


def test_a_numpy_function_with_no_op_is_named_with_fallback_error():
    with pytest.raises(BatchedConversionError, match="polyval"):
        vmap(lambda x: np.polyval(x, 0.3), fallback="error")(X)


# --- batched without a loop: predicates, boolean reductions and operators ---------------------

BATCHED = {
    "greater": lambda x: x > 0.1,
    "isfinite": np.isfinite,
    "isnan": np.isnan,
    "signbit": np.signbit,
    "isclose": lambda x: np.isclose(x, x[0], rtol=0.5),
    "allclose": lambda x: np.allclose(x, x[0], atol=0.5),
    "iscomplex": np.iscomplex,
    "isreal": np.isreal,
    "all": lambda x: np.all(x > 0),
    "any axis": lambda x: np.any(anp.outer(x, x) > 0.5, axis=-1),
    "all keepdims": lambda x: np.all(anp.outer(x, x) > 0, axis=0, keepdims=True),
    "count_nonzero": lambda x: np.count_nonzero(x > 0),
    "method any": lambda x: (x > 0).any(),
    "method all": lambda x: (x < 1).all(axis=0),
    "and": lambda x: (x > -0.5) & (x < 0.5),
    "or": lambda x: (x > 0.5) | (x < -0.5),
    "xor": lambda x: (x > 0) ^ (x > 0.5),
    "not": lambda x: ~(x > 0),
    "and a plain mask": lambda x: np.array([True, False, True]) & (x > 0),
    "and a bool": lambda x: True & (x > 0),
    "logical_and": lambda x: np.logical_and(x > 0, x < 1),
    "where of a predicate": lambda x: anp.where((x > 0) & (x < 1), x, -x),
    "sum of a mask": lambda x: anp.sum(x > 0),
    "astype": lambda x: (x > 0).astype(np.float64) * x,
    "isneginf": lambda x: np.isneginf(anp.where(x > 0, -np.inf, x)),
    "max with initial": lambda x: np.max(x, initial=0.5),
    "min with initial, axis": lambda x: np.min(anp.outer(x, x), axis=-1, initial=0.0, keepdims=True),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_predicates_and_boolean_reductions_stay_batched(name):
    f = BATCHED[name]
    assert_same(no_warning(lambda: vmap(f)(X)), looped(f, X))
    assert_same(no_warning(lambda: vmap(f, in_axes=1)(X.T)), looped(f, X))
