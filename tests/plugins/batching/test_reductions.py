"""The batch rules of reductions, statistics, cumulative ops, sorting, softmax and norms against a
loop: for each op's samples, drawn three times (one batch of three examples), and for longer rows
where NumPy sums pairwise, the rule on the stacked inputs (batch axis first, second, last; one
input not batched) equals the op on each example, stacked, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_batching.rules.reductions import outermost
from batch_rule_cases import SIZE, batches, check, layouts

import adcore
import adcore.numpy as anp
from adcore import ops
from adcore.plugins import get_registry

OPS = (
    "sum", "mean", "prod", "nansum", "nanmean", "average", "max", "min", "ptp", "trace",
    "var", "std", "median", "quantile", "percentile",
    "cumsum", "cumprod", "diff", "sort",
    "softmax", "log_softmax", "logsumexp", "norm",
)  # fmt: skip
# ops whose rule leaves a call to the loop, and which calls (dims, params)
LOOPS = {
    # batched weights along the axis: np.average lays them out per example
    "average": lambda examples, dims, params: (
        dims[1] is not None and examples[0][1].shape != examples[0][0].shape
    ),
    # a p-norm of a vector: NumPy takes its last power in scalar math
    "norm": lambda examples, dims, params: (
        np.ndim(examples[0][0]) == 1
        and not params.get("keepdims", False)
        and params.get("ord") not in (None, 1, 2, np.inf, -np.inf, 0)
    ),
}
# longer rows, where NumPy sums pairwise (8 at a time, then in pairs) along a contiguous run
LONG = (
    ((9,), (None, 0)),
    ((200,), (None, -1)),
    ((7, 13), (None, 0, 1, (0, 1))),
    ((4, 30, 3), (None, (0, 2), (1, 2))),
)
# the ops that sum or multiply (laid out by the rule), and those that select or run in sequence
SUMMING = (
    "sum", "mean", "prod", "nansum", "nanmean", "var", "std", "logsumexp", "softmax", "log_softmax", "norm",
)  # fmt: skip
ORDERING = ("max", "min", "ptp", "median", "cumsum", "cumprod", "sort")  # fmt: skip


def long_batches(name: str, dtype: type) -> list:
    """(examples, params) with rows long enough for NumPy's pairwise sums, each axis of LONG."""
    rng = np.random.default_rng(7)
    out = []
    for shape, axes in LONG:
        examples = [(np.asarray(rng.uniform(0.5, 1.5, shape), dtype=dtype),) for _ in range(SIZE)]
        for axis in axes:
            if name in ("softmax", "log_softmax") and axis is None:
                continue
            if name in ("cumsum", "cumprod", "sort") and isinstance(axis, tuple):
                continue
            if name == "norm":
                out.append(
                    (examples, {"axis": axis} if axis is None or np.ndim(axis) == 0 else {"axis": axis[:2]})
                )
            else:
                out.append((examples, {"axis": axis}))
    return out


@pytest.mark.parametrize("name", OPS)
def test_each_op_has_its_rule(name):
    from adcore_batching.rules.table import BATCH_RULES

    assert get_registry().rules["batch"][name] is BATCH_RULES[name]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
@pytest.mark.parametrize("name", OPS)
def test_rule_is_the_loop_on_the_samples(name, dtype):
    if np.dtype(dtype).kind == "c" and not get_registry().ops[name].accepts_complex:
        pytest.skip("the op takes real inputs only")
    covered = 0
    for examples, params in batches(name, dtype):
        for dims in layouts(examples):
            leaves = name in LOOPS and LOOPS[name](examples, dims, params)
            assert check(name, examples, params, dims) is not leaves, (params, dims)
            covered += not leaves
    assert covered > 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("name", SUMMING + ORDERING)
def test_rule_sums_as_the_loop_along_long_rows(name, dtype):
    """NumPy sums a contiguous run pairwise; a batch whose examples interleave (batch axis not
    first) would sum each in another order, so the rule lays the batch out example by example."""
    if np.dtype(dtype).kind == "c" and not get_registry().ops[name].accepts_complex:
        pytest.skip("the op takes real inputs only")
    for examples, params in long_batches(name, dtype):
        for dims in layouts(examples):
            assert check(name, examples, params, dims), (params, dims)


def test_an_interleaved_batch_sums_otherwise_without_the_layout():
    """Why the rules copy: the same sums over an interleaved batch differ in the last bits."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, SIZE))  # batch axis last: each example strided
    expected = np.stack([np.sum(x[:, i]) for i in range(SIZE)])
    assert not np.array_equal(np.sum(np.moveaxis(x, 1, 0), axis=1), expected)
    assert np.array_equal(np.sum(outermost(np.moveaxis(x, 1, 0)), axis=1), expected)


def test_outermost_keeps_each_examples_layout():
    """The batch axis outermost in memory, each example's axes in the order of their strides."""
    batch_inner = np.moveaxis(np.arange(36.0).reshape(4, 3, SIZE), 2, 0)  # examples (4, 3), C order
    laid = outermost(batch_inner)
    assert np.array_equal(laid, batch_inner) and laid.flags.c_contiguous
    transposed = np.transpose(np.arange(36.0).reshape(3, 4, SIZE), (2, 1, 0))  # examples (4, 3), F order
    laid = outermost(transposed)
    assert np.array_equal(laid, transposed)
    assert laid.strides[0] > laid.strides[2] > laid.strides[1]
    batch_outer = np.ones((SIZE, 2, 3)).transpose(0, 2, 1)
    assert outermost(batch_outer) is batch_outer


# --- the defaults vmap leaves out, and the calls left to the loop --------------------------------

DEFAULTS = {
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "nansum": np.nansum, "nanmean": np.nanmean,
    "max": np.max, "min": np.min, "ptp": np.ptp, "var": np.var, "std": np.std, "median": np.median,
    "cumsum": np.cumsum, "cumprod": np.cumprod, "diff": np.diff, "sort": np.sort, "trace": np.trace,
    "norm": np.linalg.norm, "logsumexp": None, "softmax": None, "log_softmax": None,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DEFAULTS))
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_rule_fills_in_the_ops_default_axis(name, dim):
    """vmap passes only the params a call gave: a rule called with none is the op's defaults
    on each example, not on the batch (sum's axis None would sum the batch axis away)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 1.5, (SIZE, 3, 4))
    op = get_registry().ops[name]
    expected = np.stack([op.impl(e) for e in x])
    out, out_dim = get_registry().rules["batch"][name]((dim,), np.moveaxis(x, 0, dim))
    np.testing.assert_array_equal(np.moveaxis(np.asarray(out), out_dim, 0), expected)
    if DEFAULTS[name] is not None:
        np.testing.assert_array_equal(expected, np.stack([DEFAULTS[name](e) for e in x]).astype(x.dtype))


@pytest.mark.parametrize("name", OPS)
def test_an_empty_batch_gives_an_empty_result_or_the_loop(name):
    """No example to learn a shape from: a rule gives the empty batch of the op's result shape,
    or leaves it to the loop (which refuses a batch of size 0, typed)."""
    rule = get_registry().rules["batch"][name]
    for examples, params in batches(name):
        dims = tuple(0 for _ in examples[0])
        inputs = [np.empty((0, *np.shape(x)), dtype=np.asarray(x).dtype) for x in examples[0]]
        result = rule(dims, *inputs, **params)
        if result is NotImplemented:
            assert name in ("median", "quantile", "percentile") or LOOPS[name](examples, dims, params)
            continue
        out, out_dim = result
        one = get_registry().ops[name].impl(*examples[0], **params)
        assert np.moveaxis(np.asarray(out), out_dim, 0).shape == (0, *np.shape(one))


AXIS_CALLS = {
    "sum": {}, "mean": {}, "prod": {}, "nansum": {}, "nanmean": {}, "max": {}, "min": {}, "ptp": {},
    "var": {}, "std": {}, "median": {}, "quantile": {"q": 0.5}, "percentile": {"q": 50.0},
    "cumsum": {}, "cumprod": {}, "diff": {}, "sort": {}, "softmax": {}, "log_softmax": {},
    "logsumexp": {},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(AXIS_CALLS))
@pytest.mark.parametrize("axis", [-3, 2, (0, -3)])
def test_an_axis_no_example_has_is_the_loops_error(name, axis):
    """Shifted past the batch axis, axis -3 of a 2-d example would name the batch axis: a
    plausible wrong number; the rule leaves it to the loop, which raises NumPy's error."""
    x = np.random.default_rng(9).standard_normal((SIZE, 2, 3))
    rule = get_registry().rules["batch"][name]
    assert rule((0,), x, axis=axis, **AXIS_CALLS[name]) is NotImplemented
    op = get_registry().ops[name]
    with pytest.raises((ValueError, TypeError)):
        adcore.vmap(lambda e: op(e, axis=axis, **AXIS_CALLS[name]))(x)


def test_trace_and_average_refuse_an_axis_no_example_has():
    x = np.ones((SIZE, 2, 2))
    assert get_registry().rules["batch"]["trace"]((0,), x, axis1=-3, axis2=1) is NotImplemented
    assert get_registry().rules["batch"]["average"]((0, None), x, np.ones(2), axis=-3) is NotImplemented


def test_quantile_batch_axis_follows_qs_axes():
    x = np.random.default_rng(2).standard_normal((SIZE, 5, 4))
    q = np.array([0.1, 0.5, 0.9])
    out, out_dim = get_registry().rules["batch"]["quantile"]((0,), x, q=q, axis=0)
    assert out_dim == 1 and out.shape == (3, SIZE, 4)
    np.testing.assert_array_equal(np.moveaxis(out, 1, 0), np.stack([np.quantile(e, q, axis=0) for e in x]))


def test_norm_without_axis_on_a_matrix_is_its_matrix_norm():
    """norm(x, ord) of a 2-d example with no axis is a matrix norm: the batch's is over axes (1, 2)."""
    x = np.random.default_rng(3).standard_normal((SIZE, 3, 4))
    rule = get_registry().rules["batch"]["norm"]
    for ord in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        out, _ = rule((0,), x, ord=ord)
        np.testing.assert_array_equal(out, np.stack([np.linalg.norm(e, ord) for e in x]))
    out, _ = rule((0,), x, ord=2, keepdims=True)
    assert out.shape == (SIZE, 1, 1)


def test_norm_left_to_the_loop_where_the_example_refuses_it():
    rule = get_registry().rules["batch"]["norm"]
    assert rule((0,), np.ones((SIZE, 2, 2, 2)), ord=1) is NotImplemented
    with pytest.raises(adcore.InvalidValueError, match="does not name 1 or 2 axes"):
        rule((0,), np.ones((SIZE, 2, 2)), axis=2)  # the example has axes 0 and 1 only


def test_average_weights_along_the_axis():
    """Unbatched weights of a's shape along the axis are np.average's to lay out; batched ones
    are the loop's; weights of a's whole shape broadcast over the batch."""
    rng = np.random.default_rng(4)
    a, w = rng.standard_normal((SIZE, 2, 3)), rng.uniform(0.5, 1.5, (SIZE, 3))
    rule = get_registry().rules["batch"]["average"]
    out, _ = rule((0, None), a, w[0], axis=1)
    np.testing.assert_array_equal(out, np.stack([np.average(e, axis=1, weights=w[0]) for e in a]))
    assert rule((0, 0), a, w, axis=1) is NotImplemented
    assert rule((0, None), a, w[0]) is NotImplemented  # no axis: the loop raises NumPy's TypeError


def test_diff_left_to_the_loop_with_a_traced_end():
    rule = get_registry().rules["batch"]["diff"]
    x = np.ones((SIZE, 4))

    def f(end):
        assert rule((0,), x, prepend=end) is NotImplemented
        return anp.sum(end)

    adcore.grad(f)(np.ones(4))


# --- through adcore.vmap, and under an outer transformation -------------------------------------

FUNCTIONS = {
    "sum": lambda x: anp.sum(x),
    "mean_axis": lambda x: anp.mean(x, axis=0, keepdims=True),
    "var_ddof": lambda x: anp.var(x, axis=-1, ddof=1),
    "std": lambda x: anp.std(x),
    "logsumexp": lambda x: anp.logsumexp(x, axis=1),
    "softmax": lambda x: anp.softmax(x),
    "norm": lambda x: anp.linalg.norm(x),
    "norm_nuc": lambda x: anp.linalg.norm(x, "nuc"),
    "cumsum": lambda x: anp.cumsum(x),
    "sort": lambda x: anp.sort(x, axis=None),
    "median": lambda x: anp.median(x, axis=0),
    "quantile": lambda x: anp.quantile(x, [0.25, 0.75], axis=1),
    "average": lambda x: anp.average(x, axis=1, weights=np.arange(1.0, 31.0)),
    "trace": lambda x: anp.trace(x[:, :3]),
    "masked_sum": lambda x: anp.sum(x, axis=1, where=np.arange(30) % 3 > 0),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("in_axes", [0, 1, -1])
def test_vmap_is_the_loop(name, in_axes):
    f = FUNCTIONS[name]
    x = np.random.default_rng(5).standard_normal((4, 30, SIZE))
    x = np.moveaxis(x, -1, in_axes)
    examples = [np.take(x, i, axis=in_axes) for i in range(SIZE)]
    np.testing.assert_array_equal(adcore.vmap(f, in_axes=in_axes)(x), np.stack([f(e) for e in examples]))


@pytest.mark.parametrize(
    "name", ["sum", "var_ddof", "std", "logsumexp", "softmax", "norm", "median", "average"]
)
def test_grad_of_vmap_is_the_loops_grad(name):
    """Under an outer derivative the rules run on its values: the same gradient as a loop's."""
    f = FUNCTIONS[name]
    x = np.random.default_rng(6).standard_normal((SIZE, 4, 30))

    def batched(x):
        return anp.sum(adcore.vmap(f)(x) ** 2)

    def looped(x):
        return sum(anp.sum(f(x[i]) ** 2) for i in range(SIZE))

    np.testing.assert_allclose(adcore.grad(batched)(x), adcore.grad(looped)(x), rtol=1e-12, atol=1e-14)


def test_vmap_of_grad_is_the_loops_grad():
    def loss(w, x):
        return anp.logsumexp(x @ w) + anp.linalg.norm(w) + anp.var(x @ w)

    rng = np.random.default_rng(7)
    w, xs = rng.standard_normal(5), rng.standard_normal((SIZE, 4, 5))
    out = adcore.vmap(adcore.grad(loss), in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(out, np.stack([adcore.grad(loss)(w, x) for x in xs]), rtol=1e-13)


def test_rules_run_on_the_ops_of_an_outer_transformation():
    """ops, not NumPy: a rule's result on a traced batch is traced, with the op's own derivative
    (norm's is 0 at x = 0, where the square root of a dot's is not)."""
    x = np.random.default_rng(8).standard_normal((SIZE, 5))
    x[1] = 0.0

    def f(x):
        out, _ = get_registry().rules["batch"]["norm"]((0,), x)
        return ops.sum(out)

    expected = np.stack([adcore.grad(lambda e: anp.linalg.norm(e))(e) for e in x])
    assert np.all(expected[1] == 0)
    np.testing.assert_allclose(adcore.grad(f)(x), expected, rtol=1e-14)
