"""adcore.flatten: a call over pytrees laid out flat for the engine, and results split back."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import flatten
from adcore.errors import InvalidInputError


def test_plain_arrays_are_laid_out_as_they_are():
    x, y = np.ones(2), np.zeros(3)
    flat, layout = flatten.flatten_args((x, "static", y), (0, 2))
    assert flat[0] is x and flat[1] == "static" and flat[2] is y  # nothing copied, nothing moved
    assert layout.defs is None and layout.flat_argnums((0, 2)) == (0, 2)


def test_a_pytree_argument_becomes_its_leaves_in_its_place():
    p = {"w": np.ones(2), "b": 1.5}
    flat, layout = flatten.flatten_args((np.ones(1), p, "static"), (1,))
    # argument 0 is not differentiated: as it is; argument 1's leaves in key order (b, w); the rest
    assert [np.shape(a) if not isinstance(a, str) else a for a in flat] == [(1,), (), (2,), "static"]
    assert flat[1].dtype == np.float64  # a Python float leaf is a float64 array
    assert layout.flat_argnums((1,)) == (1, 2)
    rebuilt = flatten.rebuild(layout.defs, flat)
    assert rebuilt[2] == "static" and set(rebuilt[1]) == {"b", "w"}


def test_an_argument_with_no_leaf_is_refused():
    with pytest.raises(InvalidInputError, match=r"argument 0 is \{'b': None\}, which holds no array"):
        flatten.flatten_args(({"b": None},), (0,))


def test_an_output_tree_is_one_vector_for_the_engine_and_split_back():
    call = flatten.Call({}, scalar=False)
    out = {"a": np.array([1.0, 2.0], np.float32), "b": np.array(3.0)}

    def f():
        return out

    vector = flatten.Flat.of(f, flatten.Layout(None, None, []), False)(call)
    np.testing.assert_array_equal(vector, [1.0, 2.0, 3.0])
    back = call.out.value(vector)
    assert back["a"].dtype == np.float32 and back["b"] == 3.0  # each leaf in its own dtype
    rows = call.out.rows(np.arange(6.0).reshape(3, 2), np.zeros(2))  # a Jacobian w.r.t. a leaf of shape (2,)
    assert [r.shape for r in rows] == [(2, 2), (2,)]


def test_flat_functions_are_cached_by_identity_and_go_with_their_f():
    def f(x):
        return x

    layout = flatten.Layout(None, None, [None])
    assert flatten.Flat.of(f, layout, False) is flatten.Flat.of(f, layout, False)
    gc.collect()
    before = len(flatten.Flat._cache)
    for k in range(50):
        adcore.grad(lambda p, k=k: anp.sum(p["x"] * k))({"x": np.ones(2)})
    gc.collect()
    assert len(flatten.Flat._cache) <= before + 1  # each f dropped its entry when it died
