"""What a later pass reads is what the op used (issue 32, class 2): params (adcore.core.frozen_params),
list constants, custom_vjp/checkpoint static arguments, the pullback's seed and a hook's gradient,
each written into after use. Oracles: the derivative by hand, noted at each test."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from adcore_reverse import Tensor

import adcore
import adcore.numpy as anp
from adcore.core import frozen_params

X = np.array([0.5, 1.5, 2.5])
G = np.array([3.0, 7.0, 1.0])
PICKED = [0.0, 10.0, 1.0]  # the pullback of G through x[[1, 1, 2]]: G[0] + G[1] at 1, G[2] at 2


def test_frozen_params_passes_scalars_and_int_tuples_as_they_are_and_copies_the_rest():
    plain = {"axis": (0, 1), "keepdims": False, "dtype": None, "index": (slice(None), 2, Ellipsis)}
    assert frozen_params(plain) is plain  # the common case costs no copy
    idx, mask, rows = np.array([1, 2]), [True, False], [0, 1]
    params = {"index": (idx, slice(None)), "where": mask, "q": np.array(0.5), "extra": {"rows": rows}}
    kept = frozen_params(params)
    idx[:], mask[0], kept_q = 0, False, kept["q"].copy()
    rows.append(2)
    params["q"][...] = 0.9
    np.testing.assert_array_equal(kept["index"][0], [1, 2])
    assert kept["where"] == [True, False] and kept["extra"] == {"rows": [0, 1]} and kept["q"] == kept_q


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic"])
def test_a_list_constant_appended_to_inside_f(backend):
    def f(x):
        weights = [1.0, 2.0, 3.0]
        y = anp.sum(x * weights)
        weights[0] = 100.0  # after the op: d/dx is still [1, 2, 3]
        return y

    np.testing.assert_allclose(adcore.grad(f, backend=backend)(X), [1.0, 2.0, 3.0])


def test_an_index_list_written_into_between_vjp_and_the_pullback():
    idx = [1, 1, 2]
    _, pullback = adcore.vjp(lambda x: anp.take(x, idx), X)
    idx[0] = 0
    idx.append(0)
    np.testing.assert_allclose(pullback(G)[0], PICKED)


def test_a_mask_written_into_before_backward():
    t = Tensor(X, requires_grad=True)
    mask = np.array([True, False, True])
    (t[mask] * np.array([2.0, 3.0])).sum().backward()  # d/dx: 2 at 0, 3 at 2
    mask[:] = True
    assert t.grad is not None
    np.testing.assert_allclose(t.grad, [2.0, 0.0, 3.0])


def test_the_seed_written_into_between_two_pullbacks_of_a_custom_vjp():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (3 * x**2 * g,))
    _, pullback = adcore.vjp(cube, X)
    g = np.ones(3)
    np.testing.assert_allclose(pullback(g)[0], 3 * X**2)
    g[:] = 2.0  # the rule's cache (by the cotangent's identity) must not answer for the old g
    np.testing.assert_allclose(pullback(g)[0], 6 * X**2)


def test_a_static_index_array_of_a_custom_vjp_written_into_before_the_pullback():
    @partial(adcore.custom_vjp, nondiff_argnums=(1,))
    def pick(x, idx):
        return x[idx]

    def bwd(idx, shape, g):
        out = np.zeros(shape)
        np.add.at(out, idx, g)
        return (out,)

    pick.defvjp(lambda x, idx: (x[idx], x.shape), bwd)
    idx = np.array([1, 1, 2])
    _, pullback = adcore.vjp(lambda x: pick(x, idx), X)
    idx[:] = 0
    np.testing.assert_allclose(pullback(G)[0], PICKED)


def test_a_static_index_list_of_a_checkpoint_written_into_before_the_pullback():
    block = adcore.checkpoint(lambda x, idx: x[idx] ** 2, static_argnums=(1,))
    idx = [1, 1, 2]
    _, pullback = adcore.vjp(lambda x: block(x, idx), X)
    idx[0] = 0
    # d/dx of sum(G * x[idx]**2): 2 x1 (G0 + G1) at 1, 2 x2 G2 at 2
    np.testing.assert_allclose(pullback(G)[0], [0.0, 2 * 1.5 * 10.0, 2 * 2.5 * 1.0])


def test_a_hooks_own_array_written_into_between_two_sweeps_through_a_custom_vjp():
    @adcore.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: (3 * x**2 * g,))
    t = Tensor(X, requires_grad=True)
    y = cube(t)
    replacement = np.ones(3)
    y.register_hook(lambda g: replacement)  # the same array each time: the rule's cache sees its identity
    out = y.sum()
    out.backward(retain_graph=True)
    np.testing.assert_allclose(t.grad, 3 * X**2)
    replacement[:] = 5.0
    t.grad = None
    out.backward()
    np.testing.assert_allclose(t.grad, 15 * X**2)
