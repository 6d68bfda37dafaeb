"""adcore.spec: OpSpec validation and calling convention; sample domains and sample builders."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore import spec as S
from adcore.spec import Domain, OpSpec, Sample

RNG_SEED = 20240601


def _rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


# --- OpSpec validation -----------------------------------------------------------------


def test_defaults():
    op = OpSpec("ident", lambda x: x)
    assert op.nin == 1
    assert op.differentiable is None
    assert op.params == ()
    assert op.numpy == ()
    assert op.variadic is False
    assert op.elementwise is False


@pytest.mark.parametrize("name", ["not an identifier", "1st", "a-b", ""])
def test_name_must_be_an_identifier(name):
    with pytest.raises(ValueError, match="identifier"):
        OpSpec(name, lambda x: x)


def test_impl_must_be_callable():
    with pytest.raises(TypeError, match="'bad'.*callable"):
        OpSpec("bad", impl=3.0)


def test_differentiable_indices_must_be_inputs():
    with pytest.raises(ValueError, match=r"\[2\].*nin=2"):
        OpSpec("pick", lambda c, x: x, nin=2, differentiable=(1, 2))


def test_is_differentiable():
    every = OpSpec("mul2", np.multiply, nin=2)
    assert every.is_differentiable(0)
    assert every.is_differentiable(1)
    where_like = OpSpec("pick", lambda c, x: x, nin=2, differentiable=(1,))
    assert not where_like.is_differentiable(0)
    assert where_like.is_differentiable(1)


def test_repr():
    assert repr(OpSpec("ident", lambda x: x)) == "<op ident>"


def test_opspecs_compare_by_identity():
    a, b = OpSpec("ident", lambda x: x), OpSpec("ident", lambda x: x)
    assert a != b
    assert a == a
    assert len({a, b}) == 2  # hashable, so ops can key dicts


# --- calling an op -------------------------------------------------------------------------


def test_call_on_plain_values_runs_the_impl():
    assert adcore.ops.multiply(3.0, 4.0) == 12.0
    np.testing.assert_allclose(adcore.ops.sin(np.array([0.0, np.pi / 2])), [0.0, 1.0])


def test_params_may_come_positionally_after_the_inputs():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(adcore.ops.sum(x, 0), x.sum(axis=0))
    np.testing.assert_array_equal(adcore.ops.sum(x, 1, True), x.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(adcore.ops.sum(x, axis=1), x.sum(axis=1))


def test_too_many_positional_params_is_a_type_error():
    # InvalidInputError is an AdcoreError and a TypeError, as Python's own for a wrong call
    with pytest.raises(adcore.InvalidInputError, match="'sum'.*axis"):
        adcore.ops.sum(np.ones(3), 0, False, None, True, "extra")  # axis, keepdims, dtype, where


def test_too_few_inputs_is_a_typed_error_naming_the_op():
    with pytest.raises(adcore.InvalidInputError, match="op 'where' takes 3 input"):
        adcore.numpy.where(np.array([True, False]))  # np.where(cond) alone: np.nonzero


def test_variadic_op_takes_a_sequence_or_separate_inputs():
    a, b = np.ones((1, 2)), np.zeros((1, 2))
    np.testing.assert_array_equal(adcore.ops.concatenate([a, b]), np.concatenate([a, b]))
    np.testing.assert_array_equal(adcore.ops.concatenate((a, b), 1), np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(adcore.ops.stack(a, b), np.stack([a, b]))
    np.testing.assert_array_equal(adcore.ops.stack([a, b], axis=-1), np.stack([a, b], axis=-1))


def test_a_new_op_is_callable_and_differentiable_once_registered(register_plugin):
    cube = OpSpec("spec_cube", lambda x: x**3)

    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(cube)

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("vjp", "spec_cube", (lambda g, ans, x: g * 3 * x**2,))

    register_plugin(Plugin(), "spec_demo")
    assert cube(2.0) == 8.0
    assert adcore.grad(cube)(2.0) == pytest.approx(12.0)  # 3 x^2 at 2


# --- domains and samples ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_domain_draws_in_range_with_the_asked_shape_and_dtype(dtype):
    values = Domain(-1.0, 3.0).draw(_rng(), (50, 4), dtype)
    assert values.shape == (50, 4)
    assert values.dtype == dtype
    assert values.min() >= -1.0
    assert values.max() <= 3.0


def test_domain_away_from_zero_keeps_a_gap_and_both_signs():
    values = Domain(-2.0, 2.0, away_from_zero=0.3).draw(_rng(), (1000,), np.float64)
    assert np.abs(values).min() >= 0.3
    assert (values > 0).any()
    assert (values < 0).any()


def test_domain_draws_0d_and_empty():
    assert Domain().draw(_rng(), (), np.float64).shape == ()
    assert Domain().draw(_rng(), (0,), np.float64).shape == (0,)


@pytest.mark.parametrize(
    ("domain", "low", "high"),
    [(S.POSITIVE, 0.0, None), (S.UNIT_OPEN, -1.0, 1.0)],
    ids=["positive", "unit-open"],
)
def test_named_domains(domain, low, high):
    values = domain.draw(_rng(), (1000,), np.float64)
    assert values.min() > low
    if high is not None:
        assert values.max() < high


def test_sample_params_default_to_an_empty_dict():
    sample = Sample((np.ones(2),))
    assert sample.params == {}
    assert Sample(()).params is not sample.params


def test_unary_elementwise_samples_cover_scalar_vector_matrix_and_empty():
    samples = S.elementwise_samples(S.REAL)(_rng(), np.float64)
    assert [s.args[0].shape for s in samples] == list(S.UNARY_SHAPES)
    assert () in S.UNARY_SHAPES
    assert (0,) in S.UNARY_SHAPES


def test_binary_elementwise_samples_are_broadcasting_pairs_times_params():
    draw = S.elementwise_samples(S.REAL, S.NONZERO, params=({}, {"k": 1}))
    samples = draw(_rng(), np.float32)
    assert len(samples) == 2 * len(S.BROADCAST_SHAPES)
    assert [tuple(a.shape for a in s.args) for s in samples[::2]] == list(S.BROADCAST_SHAPES)
    assert [s.params for s in samples[:2]] == [{}, {"k": 1}]
    assert all(a.dtype == np.float32 for s in samples for a in s.args)
    assert all(np.abs(s.args[1]).min(initial=1.0) >= 0.3 for s in samples)  # NONZERO's gap


def test_broadcast_shapes_include_the_seed_example():
    assert ((2, 1), (2, 2)) in S.BROADCAST_SHAPES  # seed 001's 2x1 with 2x2


def test_fixed_samples_follow_the_given_calls():
    draw = S.fixed_samples((((2, 3),), {"axis": 0}), (((4,), (4,)), {}), domain=S.POSITIVE)
    samples = draw(_rng(), np.float64)
    assert [tuple(a.shape for a in s.args) for s in samples] == [((2, 3),), ((4,), (4,))]
    assert [s.params for s in samples] == [{"axis": 0}, {}]
    assert all((a > 0).all() for s in samples for a in s.args)


def test_sample_draws_are_reproducible_from_the_seed():
    draw = S.elementwise_samples(S.REAL)
    first, second = draw(_rng(), np.float64), draw(_rng(), np.float64)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.args[0], b.args[0])


# --- help(), pydoc, inspect.signature and IPython's `?` document each op ------------------


def test_pydoc_shows_every_ops_doc_and_signature_not_the_class(clean_plugins):
    import inspect
    import pydoc

    from adcore.plugins import get_registry

    registry = get_registry()
    assert {"conv2d", "erf", "sin"} <= set(registry.ops)  # the kernels and scipy plugins are loaded
    for name, op in registry.ops.items():
        text = pydoc.render_doc(op, renderer=pydoc.plaintext)
        assert "class OpSpec" not in text, name
        assert f"{name}{inspect.signature(op)}" in text, name
        assert op.__doc__.splitlines()[0] in text, name
        assert " ".join(op.doc.split()) in " ".join(op.__doc__.split()), name


def test_an_ops_signature_names_its_inputs_and_params_with_the_impls_defaults():
    import inspect

    import adcore.numpy as anp

    assert str(inspect.signature(anp.sin)) == "(x, /)"
    assert str(inspect.signature(anp.add)) == "(x1, x2, /)"
    assert str(inspect.signature(anp.sum)) == "(x, /, axis=None, keepdims=False, dtype=None, where=True)"
    assert str(inspect.signature(anp.concatenate)) == "(*arrays, axis=0)"
    op = OpSpec("pick", lambda c, x, *, k: x, nin=2, params=("k",), doc="pick(c, x, k): x")
    assert str(inspect.signature(op)) == "(c, x, /, k)"
    assert inspect.signature(op).bind(1, 2, k=3).arguments == {"c": 1, "x": 2, "k": 3}
    assert op.__name__ == "pick" and op.__doc__.startswith("pick(c, x, k): x\n")
    assert inspect.getdoc(OpSpec).startswith("An op: a name")  # the class keeps its own doc


def test_an_op_without_a_doc_is_documented_by_its_numpy_names():
    import adcore.numpy as anp

    assert anp.sin.__doc__.splitlines()[0] == "The adcore op sin: numpy.sin, differentiable"
    assert "Also named: true_divide" in anp.divide.__doc__


def test_an_op_on_a_class_stays_the_op_and_pickles_as_before():
    import pickle

    import adcore.numpy as anp

    class Holder:
        act = anp.tanh

    assert Holder.act is anp.tanh and Holder().act is anp.tanh
    np.testing.assert_array_equal(Holder().act(np.array([0.5])), np.tanh([0.5]))
    op = OpSpec("negate_for_pickle", np.negative, doc="negate(x): -x")
    copy = pickle.loads(pickle.dumps(op))
    assert copy.name == op.name and copy.__doc__ == op.__doc__ and str(copy.__signature__) == "(x, /)"
    np.testing.assert_array_equal(copy(np.array([1.0])), [-1.0])


def test_ipythons_help_shows_the_ops_doc_and_signature():
    oinspect = pytest.importorskip("IPython.core.oinspect")
    import adcore.numpy as anp

    info = oinspect.Inspector().info(anp.sum, "sum")
    assert info["docstring"] == anp.sum.__doc__
    assert "sum(x, /, axis=None" in (info.get("definition") or "")
