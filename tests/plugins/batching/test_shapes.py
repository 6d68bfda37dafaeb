"""The batch rules of the shape, rearrangement and indexing ops against a loop over the examples.

Each op's samples, drawn three times (three examples of the same shapes and params), go through
its rule with the batch axis first, second and last in each input, and with one input unbatched;
the result, its batch axis moved first, must equal np.stack of the op's impl on each example, bit
for bit and in dtype."""

from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest
from adcore_batching.rules import BATCH_RULES
from batch_rule_cases import SIZE, batches, check, layouts

import adcore
from adcore import ops
from adcore.plugins import get_registry

batch_trace = importlib.import_module("adcore.batch_trace")  # (where vmap's loop rule is)

COVERED = (
    "reshape expand_dims squeeze atleast_1d atleast_2d atleast_3d ravel broadcast_to transpose swapaxes "
    "moveaxis rollaxis astype concatenate stack flip flipud fliplr rot90 roll repeat tile pad take "
    "take_along_axis diag diagonal diagflat tril triu getitem scatter_add outer"
).split()


def _cases(names: list[str], dtype: type = np.float64) -> list:
    return [
        pytest.param(name, examples, params, id=f"{name}-{k}")
        for name in names
        for k, (examples, params) in enumerate(batches(name, dtype))
    ]


def assert_rule_is_the_loop(name: str, examples: list, params: dict) -> None:
    assert get_registry().rules["batch"][name] is BATCH_RULES[name]  # the rule check() runs
    for dims in layouts(examples):
        assert check(name, examples, params, dims), (name, dims, params)


@pytest.mark.parametrize(("name", "examples", "params"), _cases(COVERED))
def test_rule_is_the_loop(name, examples, params):
    assert_rule_is_the_loop(name, examples, params)


@pytest.mark.parametrize(
    ("name", "examples", "params"), _cases(COVERED, np.float32) + _cases(COVERED, np.complex128)
)
def test_rule_is_the_loop_in_float32_and_complex(name, examples, params):
    assert_rule_is_the_loop(name, examples, params)


def test_complex_inputs_move_as_they_are():
    x = np.arange(24.0).reshape(2, 3, 4) * (1 - 2j)
    value, dim = BATCH_RULES["swapaxes"]((1,), x, axis1=0, axis2=-1)
    np.testing.assert_array_equal(
        np.moveaxis(value, dim, 0), np.stack([np.swapaxes(x[:, i], 0, -1) for i in range(3)])
    )


# --- every kind of index, and where NumPy puts the batch axis -------------------------------------

_PARTS = (
    0,
    -1,
    slice(1, 3),
    slice(None, None, -2),
    None,
    Ellipsis,
    np.array([0, 2, 2]),
    np.array([[1], [0]]),
    [1, 0, -1],
    np.array(1),
    np.array([True, False, True]),
    np.array([True, False, True, True]),
    np.ones((4, 3), dtype=bool),
)
EXAMPLE = (4, 3, 5)


def _indices():
    """Index tuples of up to three parts that NumPy takes for an example of shape EXAMPLE."""
    probe = np.zeros(EXAMPLE)
    out = []
    for n in (1, 2, 3):
        for parts in itertools.product(_PARTS, repeat=n):
            try:
                probe[parts]
            except IndexError:
                continue
            out.append(parts)
    return out


INDICES = _indices()


def test_getitem_and_scatter_add_are_the_loop_for_every_kind_of_index():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(SIZE,) + EXAMPLE)
    assert len(INDICES) > 400
    apart = 0
    for index in INDICES:
        want = np.stack([x[index] for x in xs])
        for dim in (0, 1, 3):
            value, out_dim = BATCH_RULES["getitem"]((dim,), np.moveaxis(xs, 0, dim), index=index)
            np.testing.assert_array_equal(np.moveaxis(value, out_dim, 0), want, err_msg=str(index))
            apart += out_dim > 0
        vs = rng.normal(size=want.shape)
        want = np.stack([ops.scatter_add.impl(v, index, EXAMPLE) for v in vs])
        for dim in sorted({0, min(1, vs.ndim - 1), vs.ndim - 1}):
            value, out_dim = BATCH_RULES["scatter_add"](
                (dim,), np.moveaxis(vs, 0, dim), index=index, shape=EXAMPLE
            )
            np.testing.assert_array_equal(np.moveaxis(value, out_dim, 0), want, err_msg=str(index))
    assert apart  # some indices put the batch axis after the advanced ones


def test_scatter_add_broadcasts_values_to_the_region():
    vs = np.arange(3.0).reshape(3, 1)  # one value per example, for a region of shape (2,)
    index = (np.array([0, 0]),)
    value, dim = BATCH_RULES["scatter_add"]((0,), vs, index=index, shape=(2,))
    np.testing.assert_array_equal(value, np.stack([ops.scatter_add.impl(v, index, (2,)) for v in vs]))


def test_a_boolean_scalar_index_is_left_to_the_loop():
    assert BATCH_RULES["getitem"]((0,), np.zeros((2, 3)), index=(True,)) is NotImplemented
    assert BATCH_RULES["getitem"]((0,), np.zeros((2, 3)), index=(np.array(False), 0)) is NotImplemented


# --- params one example refuses: the loop takes them (and raises the op's error) -------------------


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("transpose", {"axes": (2, 0)}),  # 2 is no axis of a 2-d example (it is of the batch)
        ("swapaxes", {"axis1": -3, "axis2": 0}),
        ("moveaxis", {"source": 2, "destination": 0}),
        ("expand_dims", {"axis": 4}),
        ("squeeze", {"axis": 0}),  # a length-2 axis
        ("reshape", {"shape": (5,)}),
        ("broadcast_to", {"shape": (3,)}),
        ("ravel", {"order": "K"}),
        ("flip", {"axis": -3}),
        ("flip", {"axis": (0, 0)}),
        ("rot90", {"axes": (1, -1)}),
        ("rot90", {"axes": (0, 1, 2)}),
        ("roll", {"shift": 1, "axis": 2}),
        ("repeat", {"repeats": 2, "axis": -3}),
        ("tile", {"reps": (2, -1)}),
        ("pad", {"pad_width": -1}),
        ("pad", {"pad_width": ((1, 1), (1, 1), (1, 1))}),
        ("take", {"indices": 0, "axis": 2}),
        ("take_along_axis", {"indices": np.zeros((1,), dtype=int), "axis": 0}),
        ("diagonal", {"axis1": 1, "axis2": -1}),
        ("diag", {"k": 0}),  # of a 3-d example: not NumPy's
    ],
)
def test_params_one_example_refuses_are_left_to_the_loop(name, params):
    x = np.zeros((4, 2, 3))  # 4 examples of shape (2, 3)
    if name == "diag":
        x = np.zeros((4, 2, 3, 2))
    assert BATCH_RULES[name]((0,), x, **params) is NotImplemented


def test_a_one_dimensional_example_is_not_flipped_left_to_right():
    assert BATCH_RULES["fliplr"]((0,), np.zeros((4, 3))) is NotImplemented
    assert BATCH_RULES["flipud"]((0,), np.zeros(4)) is NotImplemented


def test_concatenate_of_examples_of_different_ranks_is_left_to_the_loop():
    assert BATCH_RULES["concatenate"]((0, None), np.zeros((2, 3)), np.zeros((2, 3)), axis=0) is NotImplemented
    assert BATCH_RULES["stack"]((0, 0), np.zeros((2, 3)), np.zeros((2, 4)), axis=0) is NotImplemented


def test_concatenate_broadcasts_an_unbatched_input_over_the_batch():
    xs, c = np.arange(6.0).reshape(3, 2), np.array([-1.0])
    value, dim = BATCH_RULES["concatenate"]((0, None), xs, c, axis=0)
    np.testing.assert_array_equal(value, [[0, 1, -1], [2, 3, -1], [4, 5, -1]])
    assert dim == 0


# --- through adcore.vmap, and under a derivative -------------------------------------------------


def _no_loop(op, *args):
    raise AssertionError(f"op {op.name!r} ran once per example")


def test_vmap_of_shape_ops_is_the_loop(monkeypatch):
    monkeypatch.setattr(batch_trace, "looped", _no_loop)  # every op here has its rule

    def f(x):
        y = ops.transpose(ops.reshape(x, shape=(3, 2)), axes=None)
        return ops.concatenate(
            ops.expand_dims(y, axis=0), ops.broadcast_to(ops.expand_dims(y, axis=0), shape=(1, 2, 3)), axis=0
        )

    xs = np.random.default_rng(0).normal(size=(6, 5))
    np.testing.assert_array_equal(adcore.vmap(f, in_axes=1)(xs), np.stack([f(xs[:, i]) for i in range(5)]))


def test_vmap_of_rearrangements_is_the_loop(monkeypatch):
    monkeypatch.setattr(batch_trace, "looped", _no_loop)

    def f(x):
        y = ops.tril(ops.pad(ops.roll(x, shift=1, axis=0), pad_width=((1, 0), (0, 2)), mode="reflect"), k=-1)
        z = ops.take(ops.tile(ops.flip(y, axis=1), reps=(1, 2)), indices=np.array([0, 3, 3]), axis=-1)
        return ops.concatenate(ops.diag(ops.diagonal(z)), ops.rot90(z, k=3)[:, :3], axis=0)

    xs = np.random.default_rng(2).normal(size=(3, 4, 5))
    np.testing.assert_array_equal(adcore.vmap(f, in_axes=2)(xs), np.stack([f(xs[..., i]) for i in range(5)]))


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_vmap_of_grad_through_shape_ops_is_the_loop(backend):
    def f(x):
        y = ops.swapaxes(ops.reshape(x, shape=(2, 3)), axis1=0, axis2=1)
        z = ops.stack(y, ops.reshape(ops.ravel(y, order="F"), shape=(3, 2)), axis=-1)
        return ops.sum(z**2 * np.arange(12.0).reshape(3, 2, 2))

    g = adcore.grad(f, backend=backend)
    xs = np.random.default_rng(1).normal(size=(4, 6))
    np.testing.assert_allclose(adcore.vmap(g)(xs), np.stack([g(x) for x in xs]), rtol=1e-14)


def _moves(x):
    """Rearrangements and indexing of one (4, 3) example, the batch axis put after advanced axes."""
    y = ops.pad(ops.tril(x, k=1), pad_width=((0, 1), (2, 0)), constant_values=0.5)  # (5, 5)
    y = ops.take_along_axis(y, indices=np.array([[4, 0, 1, 1, 2]]), axis=0)  # (1, 5)
    z = x[np.array([0, 3]), :, None][:, np.array([2, 0])]  # (2, 2, 1)
    w = x[np.array([1, 1]), None, np.array([0, 2])]  # advanced indices apart: (2, 1)
    s = ops.scatter_add(w, index=(np.array([0, 0]), slice(None)), shape=(3, 1))
    return ops.concatenate(ops.ravel(y), ops.ravel(z), ops.ravel(s), ops.diagflat(x[0, :2]).ravel(), axis=0)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_grad_of_vmap_through_rearrangements_is_the_loops(backend, monkeypatch):
    monkeypatch.setattr(batch_trace, "looped", _no_loop)  # the rules run on the backend's values
    weights = np.arange(1.0, 17.0)

    def batched(xs):
        return ops.sum(adcore.vmap(_moves, in_axes=1)(xs) ** 2 * weights)

    def looped_f(xs):
        return ops.sum(ops.stack(*[_moves(xs[:, i]) for i in range(xs.shape[1])], axis=0) ** 2 * weights)

    xs = np.random.default_rng(4).normal(size=(4, 5, 3))
    want = adcore.grad(looped_f, backend=backend)(xs)
    np.testing.assert_allclose(adcore.grad(batched, backend=backend)(xs), want, rtol=1e-14)


def test_nested_vmap_through_rearrangements_is_the_loop(monkeypatch):
    monkeypatch.setattr(batch_trace, "looped", _no_loop)
    xs = np.random.default_rng(5).normal(size=(2, 4, 3, 3))
    got = adcore.vmap(adcore.vmap(_moves, in_axes=2), in_axes=0)(xs)
    want = np.stack([np.stack([_moves(xs[i, :, :, j]) for j in range(3)]) for i in range(2)])
    np.testing.assert_array_equal(got, want)


def test_concatenate_and_stack_of_raveled_and_unbatched_inputs():
    xs, c = np.arange(12.0).reshape(2, 3, 2), np.array([[7.0, 8.0]])
    value, dim = BATCH_RULES["concatenate"]((0, None), xs, c, axis=None)
    np.testing.assert_array_equal(value, np.stack([np.concatenate([x, c], axis=None) for x in xs]))
    value, dim = BATCH_RULES["stack"]((None, 1), c[0], xs[:, 0].T, axis=-1)
    np.testing.assert_array_equal(
        np.moveaxis(value, dim, 0), np.stack([np.stack([c[0], x[0]], axis=-1) for x in xs])
    )
