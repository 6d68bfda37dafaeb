"""adcore.core: bind routes to the innermost trace; levels; per-thread, exception-safe stacks; a Tracer
behaves like an ndarray and turns arithmetic and NumPy calls into ops."""

from __future__ import annotations

import copy
import inspect
import math
import operator
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from toy_trace import Box, BoxTrace

import adcore
from adcore import ops
from adcore.core import Trace, backend_of, bind, concrete, new_trace
from adcore.errors import ComplexValueError, TracerConversionError
from adcore.spec import OpSpec


def _open_levels() -> int:
    with new_trace(Trace) as probe:
        return probe.level - 1


# --- bind ----------------------------------------------------------------------------


def test_bind_on_plain_values_calls_the_impl():
    assert bind(ops.add, 1.0, 2.0) == 3.0
    np.testing.assert_array_equal(bind(ops.sum, np.ones((2, 3)), axis=0), [2.0, 2.0, 2.0])


def test_bind_on_a_tracer_calls_its_trace():
    with new_trace(BoxTrace) as trace:
        out = bind(ops.multiply, Box(trace, 2.0), 3.0)
    assert trace.op_names == ["multiply"]
    assert isinstance(out, Box)
    assert out._trace is trace
    assert out.value == 6.0


@pytest.mark.parametrize("outer_first", [True, False])
def test_bind_picks_the_innermost_level_whatever_the_argument_order(outer_first):
    with new_trace(BoxTrace) as outer, new_trace(BoxTrace) as inner:
        a, b = Box(outer, 2.0), Box(inner, 3.0)
        out = bind(ops.multiply, a, b) if outer_first else bind(ops.multiply, b, a)
    # the inner trace handles the call, then binds the outer box one level down
    assert inner.op_names == ["multiply"]
    assert outer.op_names == ["multiply"]
    assert out._trace is inner
    assert isinstance(out.value, Box)
    assert out.value._trace is outer
    assert concrete(out) == 6.0


def test_op_call_goes_through_bind():
    with new_trace(BoxTrace) as trace:
        out = ops.sin(Box(trace, 0.5))
    assert trace.op_names == ["sin"]
    assert out.value == pytest.approx(np.sin(0.5))


def test_base_trace_process_is_not_implemented():
    with new_trace(Trace) as trace:
        with pytest.raises(NotImplementedError, match="Trace"):
            bind(ops.sin, Box(trace, 1.0))


# --- levels and the stack --------------------------------------------------------------


def test_levels_count_up_from_one_and_close_in_order():
    assert _open_levels() == 0
    with new_trace(BoxTrace) as first:
        assert first.level == 1  # level 0 belongs to eager values
        with new_trace(BoxTrace) as second:
            assert second.level == 2
        assert _open_levels() == 1
    assert _open_levels() == 0


def test_new_trace_closes_when_the_body_raises():
    with pytest.raises(RuntimeError, match="body"):
        with new_trace(BoxTrace):
            raise RuntimeError("body")
    assert _open_levels() == 0


def test_trace_stacks_are_per_thread():
    seen = {}

    def other():
        seen["open"] = _open_levels()
        with new_trace(BoxTrace) as trace:
            seen["level"] = trace.level

    with new_trace(BoxTrace), new_trace(BoxTrace):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == {"open": 0, "level": 1}


def test_eight_threads_differentiate_different_functions_at_once(clean_plugins):
    # clean_plugins: the registry is rebuilt lazily, so the threads also race to load it
    x = np.linspace(0.5, 1.5, 5)
    start = threading.Barrier(8)

    def work(k: int) -> int:
        g = adcore.grad(lambda x: np.sum(x**k))
        start.wait()
        wrong = 0
        for _ in range(200):
            if not np.allclose(g(x), k * x ** (k - 1)):  # d/dx x^k = k x^(k-1)
                wrong += 1
        return wrong

    with ThreadPoolExecutor(max_workers=8) as pool:
        wrong = list(pool.map(work, range(1, 9)))
    assert wrong == [0] * 8


def test_threads_nesting_and_raising_do_not_disturb_each_other():
    x = 0.7
    start = threading.Barrier(4)

    def nested(_: int) -> float:
        start.wait()
        for _ in range(100):
            g2 = adcore.grad(adcore.grad(lambda x: np.sin(x)))(x)
        return float(g2)

    def raising(_: int) -> int:
        start.wait()
        raised = 0
        for _ in range(100):
            try:
                adcore.grad(lambda x: np.sum(np.histogram(x)[0]))(np.ones(3))
            except adcore.UnsupportedFunctionError:
                raised += 1
        return raised + _open_levels()

    with ThreadPoolExecutor(max_workers=4) as pool:
        a = pool.submit(nested, 0)
        b = pool.submit(raising, 1)
        c = pool.submit(nested, 2)
        d = pool.submit(raising, 3)
        assert a.result() == pytest.approx(-np.sin(x))  # d^2/dx^2 sin x = -sin x
        assert c.result() == pytest.approx(-np.sin(x))
        assert b.result() == 100
        assert d.result() == 100


# --- complex values on a trace (issue 15, class 2; issue 19) ----------------------------------


@pytest.mark.parametrize(
    "constant",
    [1 + 1j, np.complex128(1j), np.complex64(1j), np.array([1j, 2.0]), [1j, 2.0]],
    ids=["complex", "complex128", "complex64", "array", "list"],
)
def test_a_complex_constant_meeting_a_tracer_is_refused_naming_op_and_trace(constant):
    with new_trace(BoxTrace) as trace:
        with pytest.raises(ComplexValueError) as info:
            bind(REAL_ONLY, Box(trace, np.ones(2)), constant)
        message = str(info.value)
        assert "'real_only_for_test'" in message and "BoxTrace" in message and "accepts_complex" in message
        assert trace.calls == []  # refused before the trace did any work
        assert concrete(bind(REAL_ONLY, Box(trace, np.ones(2)), 2.0)).tolist() == [2.0, 2.0]


REAL_ONLY = OpSpec("real_only_for_test", lambda x, y: x * y, nin=2)  # accepts_complex off
TO_COMPLEX = OpSpec("to_complex_for_test", lambda x: x * (1 + 0j))  # real in, complex out, like rfft
COMPLEX_OK = OpSpec("complex_ok_for_test", lambda x, y: x * y, nin=2, accepts_complex=True)


def test_a_complex_traced_value_reaching_a_real_only_op_is_refused_naming_the_op():
    with new_trace(BoxTrace) as trace:
        z = bind(TO_COMPLEX, Box(trace, np.ones(2)))  # a complex result of real inputs is fine
        assert concrete(z).dtype == np.complex128
        with pytest.raises(ComplexValueError, match="'real_only_for_test' on the BoxTrace.*complex128"):
            bind(REAL_ONLY, z, 2.0)
        assert len(trace.calls) == 1  # the refused op never reached the trace


def test_an_op_that_accepts_complex_passes_complex_values_and_constants_to_the_trace():
    with new_trace(BoxTrace) as trace:
        out = bind(COMPLEX_OK, Box(trace, np.ones(2)), 1j)
        assert concrete(out).tolist() == [1j, 1j]


def test_complex_values_without_a_tracer_run_the_impl():
    # numeric's complex step calls f, and so the ops, on complex plain arrays
    assert bind(ops.multiply, 2.0, 1 + 1j) == 2 + 2j
    np.testing.assert_allclose(bind(ops.sin, np.array([1j])), np.sin(np.array([1j])))


def test_errors_name_a_trace_by_its_backend_attribute_its_package_or_its_class():
    class Named(Trace):
        backend = "mine"

    class Plugged(Trace):
        pass

    Plugged.__module__ = "adcore_faraway.trace"
    assert backend_of(Named()) == "backend 'mine'"
    assert backend_of(Plugged()) == "backend 'faraway'"
    assert backend_of(BoxTrace()) == "the BoxTrace transformation"


def test_a_complex_value_of_an_outer_transformation_is_a_complex_constant_to_the_inner_one():
    with new_trace(BoxTrace) as outer, new_trace(BoxTrace) as inner:
        with pytest.raises(ComplexValueError, match="complex value .complex128. of the BoxTrace"):
            bind(REAL_ONLY, Box(inner, 1.0), Box(outer, np.complex128(1j)))
        assert concrete(bind(REAL_ONLY, Box(inner, 2.0), Box(outer, 3.0))) == 6.0


# --- the Tracer ----------------------------------------------------------------------

M = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])


@pytest.fixture
def trace():
    with new_trace(BoxTrace) as t:
        yield t


@pytest.fixture
def box(trace):
    return Box(trace, M.copy())


# --- what NumPy asks of an array -----------------------------------------------------


def test_shape_dtype_ndim_size_len(box):
    assert box.shape == (2, 3)
    assert box.dtype == np.float64
    assert box.ndim == 2
    assert box.size == 6
    assert len(box) == 2


def test_iteration_yields_rows_through_getitem(trace, box):
    rows = list(box)
    assert len(rows) == 2
    np.testing.assert_array_equal(concrete(rows[1]), M[1])
    assert trace.op_names == ["getitem", "getitem"]


def test_bool_reads_the_concrete_value(trace):
    assert bool(Box(trace, np.float64(2.5))) is True
    assert bool(Box(trace, np.float64(0.0))) is False
    assert trace.calls == []


def test_concrete_unwraps_every_level():
    with new_trace(BoxTrace) as outer, new_trace(BoxTrace) as inner:
        nested = Box(inner, Box(outer, np.float64(4.0)))
        assert concrete(nested) == 4.0
        assert concrete(5.0) == 5.0


# Each conversion to a plain number or array (its name as the message gives it, the call).
CONVERSIONS = [
    ("float(x)", float),
    ("float(x)", math.exp),
    ("int(x)", int),
    ("complex(x)", complex),
    ("operator.index(x)", operator.index),
    ("operator.index(x)", lambda b: [1.0, 2.0][b]),
    ("math.floor(x)", math.floor),
    ("math.ceil(x)", math.ceil),
    ("math.trunc(x)", math.trunc),
    ("x.item()", lambda b: b.item()),
    ("x.tolist()", lambda b: b.tolist()),
    ("x.tobytes()", lambda b: b.tobytes()),
    ("x.view()", lambda b: b.view()),
    ("np.asarray(x)", np.asarray),
    ("np.asarray(x)", np.array),
    ("np.asarray(x)", np.float32),
    ("np.asarray(x)", lambda b: np.asarray(b, dtype=float)),
    ("np.asarray(x)", lambda b: np.zeros(2).__setitem__(slice(0, 1), b)),
    ("x.astype(int64)", lambda b: b.astype(np.int64)),
    ("x.astype(bool)", lambda b: b.astype(bool)),
    ("out=z", lambda b: np.add(b, 1.0, out=np.zeros(()))),
    ("out=z", lambda b: np.zeros(()).__iadd__(b)),  # z += x on a plain array z
]


@pytest.mark.parametrize(
    ("name", "convert"), CONVERSIONS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONVERSIONS)]
)
def test_conversions_to_plain_values_are_refused_by_name(trace, name, convert):
    b = Box(trace, np.float64(2.5))
    with pytest.raises(TracerConversionError) as info:
        convert(b)
    message = str(info.value)
    assert isinstance(info.value, TypeError)
    assert name in message
    assert "BoxTrace" in message  # which transformation traces it
    assert "stop_gradient" in message and "adcore.numpy" in message  # the ways out
    assert trace.calls == []
    assert concrete(b + 1.0) == 3.5  # the next op works


def test_storing_into_a_plain_array_inside_a_trace_is_reported_as_a_conversion():
    # NumPy turns float(x)'s error into "setting an array element with a sequence"
    # (a ValueError); closing the trace gives back the typed error, chained to NumPy's.
    with pytest.raises(TracerConversionError, match=r"z\[i\] = x") as info:
        with new_trace(BoxTrace) as trace:
            np.zeros(2)[0] = Box(trace, np.float64(1.0))
    assert isinstance(info.value.__cause__, ValueError)
    with new_trace(BoxTrace) as trace:
        assert concrete(Box(trace, 1.0) * 2.0) == 2.0


def test_an_unrelated_value_error_leaves_the_trace_as_raised():
    with pytest.raises(ValueError, match="mine"):
        with new_trace(BoxTrace):
            raise ValueError("mine")


# --- the rest of the ndarray surface: implemented where an op means it, refused by name ----


def test_round_is_the_round_op_with_derivative_zero(trace):
    out = round(Box(trace, np.array([1.26, -0.7])), 1)
    assert trace.calls == [("round", {"decimals": 1})]
    np.testing.assert_array_equal(concrete(out), [1.3, -0.7])
    assert concrete(round(Box(trace, np.float64(2.6)))) == 3.0
    assert concrete(Box(trace, np.float64(2.6)).round()) == 3.0


def test_copy_deepcopy_and_same_dtype_astype_are_the_value_itself(trace, box):
    # a traced value is immutable, so it is its own copy
    assert box.copy() is box
    assert np.copy(box) is box
    assert copy.copy(box) is box
    assert copy.deepcopy([box])[0] is box
    assert box.astype(np.float64) is box
    assert trace.calls == []


@pytest.mark.parametrize(
    "flat", [lambda b: b.ravel(), lambda b: b.flatten(), np.ravel], ids=["ravel", "flatten", "np.ravel"]
)
def test_ravel_and_flatten_are_reshape_minus_one(trace, box, flat):
    out = flat(box)
    assert trace.calls == [("reshape", {"shape": (-1,)})]
    np.testing.assert_array_equal(concrete(out), M.ravel())


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (
            lambda b: Box(b._trace, M * 1j).astype(np.float32),
            ComplexValueError,
            ["astype(float32)", "x.real"],
        ),
        (lambda b: b.ravel("F"), adcore.UnsupportedFunctionError, ["order='F'", "x.T.reshape(-1)"]),
        (lambda b: b.__setitem__(0, 1.0), adcore.UnsupportedFunctionError, ["x[...] = v", "scatter_add"]),
        (lambda b: b.__delitem__(0), adcore.UnsupportedFunctionError, ["del x", "x[mask]"]),
        (lambda b: b.fill(0.0), adcore.UnsupportedFunctionError, ["x.fill()", "in place"]),
        (lambda b: b.sort(), adcore.UnsupportedFunctionError, ["x.sort()", "in place"]),
        (lambda b: b.compress([True]), adcore.UnsupportedFunctionError, ["x.compress()", "OpSpec"]),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else "",
)
def test_methods_with_no_traced_meaning_are_refused_with_the_way_out(trace, box, call, error, words):
    with pytest.raises(error) as info:
        call(box)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert trace.calls == []
    np.testing.assert_array_equal(concrete(box * 1.0), M)  # the next op works


def test_ndarray_methods_exist_as_on_an_ndarray_and_other_names_do_not(box):
    assert hasattr(box, "sort") and hasattr(box, "cumsum")
    with pytest.raises(AttributeError, match="no_such_thing"):
        box.no_such_thing  # noqa: B018


def test_len_of_a_0d_tracer_is_a_typed_type_error(trace):
    with pytest.raises(adcore.UnsupportedFunctionError, match="0-d"):
        len(Box(trace, np.float64(1.0)))
    with pytest.raises(TypeError, match="0-d"):
        list(Box(trace, np.float64(1.0)))


def test_membership_and_format_read_the_number_without_a_derivative(trace, box):
    assert 5.0 in box and 7.0 not in box  # as for an ndarray: (x == v).any()
    assert f"{Box(trace, np.float64(2.5)):.2f}" == "2.50"
    assert f"{box}" == repr(box)
    assert trace.calls == []


def test_repr_names_the_class_and_value(trace):
    assert repr(Box(trace, 1.5)) == "Box(1.5)"


# --- arithmetic becomes ops ------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "op", "expected"),
    [
        (lambda b: b + 1.0, "add", M + 1.0),
        (lambda b: 1.0 + b, "add", 1.0 + M),
        (lambda b: b - 1.0, "subtract", M - 1.0),
        (lambda b: 1.0 - b, "subtract", 1.0 - M),
        (lambda b: b * 2.0, "multiply", M * 2.0),
        (lambda b: 2.0 * b, "multiply", 2.0 * M),
        (lambda b: b / 2.0, "divide", M / 2.0),
        (lambda b: 2.0 / b, "divide", 2.0 / M),
        (lambda b: b**2, "power", M**2),
        (lambda b: 2.0**b, "power", 2.0**M),
        (lambda b: b // 0.7, "floor_divide", M // 0.7),
        (lambda b: 2.0 // b, "floor_divide", 2.0 // M),
        (lambda b: b % 0.7, "mod", M % 0.7),
        (lambda b: 2.0 % b, "mod", 2.0 % M),
        (lambda b: -b, "negative", -M),
        (lambda b: abs(b), "abs", np.abs(M)),
        (lambda b: b @ np.ones((3, 2)), "matmul", M @ np.ones((3, 2))),
        (lambda b: np.ones((4, 2)) @ b, "matmul", np.ones((4, 2)) @ M),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_operators_become_ops_with_operands_in_order(trace, box, expr, op, expected):
    out = expr(box)
    assert trace.op_names == [op]
    np.testing.assert_allclose(concrete(out), expected)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [(lambda b: divmod(b, 0.7), divmod(M, 0.7)), (lambda b: divmod(2.0, b), divmod(2.0, M))],
)
def test_divmod_is_floor_divide_and_mod(trace, box, expr, expected):
    quotient, remainder = expr(box)
    assert trace.op_names == ["floor_divide", "mod"]
    np.testing.assert_array_equal(concrete(quotient), expected[0])
    np.testing.assert_array_equal(concrete(remainder), expected[1])


def test_unary_plus_is_the_tracer_itself(trace, box):
    assert +box is box
    assert trace.calls == []


# --- indexing and methods ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "op", "expected"),
    [
        (lambda b: b[1:], "getitem", M[1:]),
        (lambda b: b[:, 0], "getitem", M[:, 0]),
        (lambda b: b.T, "transpose", M.T),
        (lambda b: b.transpose(), "transpose", M.T),
        (lambda b: b.transpose(1, 0), "transpose", M.T),
        (lambda b: b.transpose((1, 0)), "transpose", M.T),
        (lambda b: b.reshape(3, 2), "reshape", M.reshape(3, 2)),
        (lambda b: b.reshape((3, 2)), "reshape", M.reshape(3, 2)),
        (lambda b: b.reshape(-1), "reshape", M.reshape(-1)),
        (lambda b: b.sum(), "sum", M.sum()),
        (lambda b: b.sum(axis=0), "sum", M.sum(axis=0)),
        (lambda b: b.mean(axis=1, keepdims=True), "mean", M.mean(axis=1, keepdims=True)),
        (lambda b: b.prod(), "prod", M.prod()),
        (lambda b: b.max(axis=0), "max", M.max(axis=0)),
        (lambda b: b.min(), "min", M.min()),
        (lambda b: b.clip(-1.0, 1.0), "clip", M.clip(-1.0, 1.0)),
        (lambda b: b.dot(np.ones(3)), "dot", M @ np.ones(3)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_indexing_and_methods_become_ops(trace, box, expr, op, expected):
    out = expr(box)
    assert trace.op_names == [op]
    np.testing.assert_allclose(concrete(out), expected)


def test_squeeze_method(trace):
    out = Box(trace, np.ones((1, 3, 1))).squeeze(axis=0)
    assert trace.op_names == ["squeeze"]
    assert concrete(out).shape == (3, 1)


# --- comparisons have no derivative: plain boolean arrays --------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (lambda b: b > 0, M > 0),
        (lambda b: b >= 1.0, M >= 1.0),
        (lambda b: b < 0, M < 0),
        (lambda b: b <= 1.0, M <= 1.0),
        (lambda b: b == 1.0, M == 1.0),
        (lambda b: b != 1.0, M != 1.0),
        (lambda b: 0 < b, 0 < M),
        (lambda b: b > b.T.T, M > M),
    ],
)
def test_operator_comparisons_give_plain_bool_arrays(trace, box, expr, expected):
    out = expr(box)
    assert type(out) is np.ndarray
    assert out.dtype == bool
    np.testing.assert_array_equal(out, expected)
    assert "greater" not in trace.op_names


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (lambda b: np.zeros((2, 3)) < b, np.zeros((2, 3)) < M),
        (lambda b: np.zeros((2, 3)) == b, np.zeros((2, 3)) == M),
        (lambda b: np.greater(b, 0), M > 0),
        (lambda b: np.less_equal(b, 1.0), M <= 1.0),
        (lambda b: np.logical_and(b, b > 0), M > 0),
        (lambda b: np.isfinite(b), np.isfinite(M)),
        (lambda b: np.signbit(b), np.signbit(M)),
    ],
    ids=["array-lt-tracer", "array-eq-tracer", "greater", "less_equal", "logical_and", "isfinite", "signbit"],
)
def test_numpy_predicates_on_tracers_give_plain_bool_arrays(box, expr, expected):
    out = expr(box)
    assert type(out) is np.ndarray
    assert out.dtype == bool
    np.testing.assert_array_equal(out, expected)


def test_a_tracer_is_hashable(box):
    assert {box: 1}[box] == 1


# --- NumPy's protocols ---------------------------------------------------------------------


def test_numpy_ufunc_becomes_its_op(trace, box):
    out = np.sin(box)
    assert trace.op_names == ["sin"]
    np.testing.assert_allclose(concrete(out), np.sin(M))


def test_numpy_function_becomes_its_op_with_params(trace, box):
    out = np.sum(box, axis=0, keepdims=True)
    assert trace.calls == [("sum", {"axis": 0, "keepdims": True})]
    np.testing.assert_allclose(concrete(out), M.sum(axis=0, keepdims=True))


def test_numpy_positional_params_are_sorted_into_params(trace, box):
    np.sum(box, 1)
    assert trace.calls == [("sum", {"axis": 1})]


def test_numpy_variadic_function_takes_the_sequence_as_inputs(trace, box):
    out = np.concatenate([box, np.zeros((1, 3))], axis=0)
    assert trace.calls == [("concatenate", {"axis": 0})]
    assert concrete(out).shape == (3, 3)


@pytest.mark.parametrize(
    ("func", "args", "kwargs"),
    [
        (np.concatenate, ([1, 2],), {}),
        (np.concatenate, ([1, 2], 0), {}),
        (np.concatenate, ([1, 2],), {"axis": 0, "dtype": float}),
        (np.stack, ([1, 2],), {"axis": 1}),
        (np.sum, (1,), {"keepdims": True, "axis": 0}),
        (np.sum, (1, 0, None), {"keepdims": True}),
        (np.reshape, (1, (2, 3)), {}),
        (np.reshape, (1,), {"shape": (2, 3)}),
        (np.where, (True, 1, 2), {}),
        (np.einsum, ("i->", 1), {"optimize": True}),
    ],
)
def test_numpy_calls_bind_as_their_signature_binds_them(func, args, kwargs):
    from adcore.numpy_dispatch import _bound_arguments

    expected = inspect.signature(func).bind(*args, **kwargs).arguments
    assert list(_bound_arguments(func, args, kwargs).items()) == list(expected.items())


@pytest.mark.parametrize(
    ("func", "args", "kwargs"),
    [
        (np.concatenate, (), {}),  # a required parameter missing
        (np.concatenate, ([1],), {"arrays": [1]}),  # positional-only given by name
        (np.sum, (1, 0), {"axis": 0}),  # given twice
        (np.sum, (1,), {"axes": 0}),  # no such parameter
        (np.where, (1, 2, 3, 4), {}),  # too many
    ],
)
def test_numpy_calls_that_do_not_bind_raise_as_bind_does(func, args, kwargs):
    from adcore.numpy_dispatch import _bound_arguments

    with pytest.raises(TypeError):
        _bound_arguments(func, args, kwargs)


@pytest.mark.parametrize("func", [np.shape, np.ndim, np.size], ids=lambda f: f.__name__)
def test_shape_functions_answer_from_the_concrete_value(trace, box, func):
    assert func(box) == func(M)
    assert trace.calls == []


@pytest.mark.parametrize(
    ("func", "value"),
    [(np.zeros_like, 0.0), (np.ones_like, 1.0), (lambda b: np.full_like(b, 7.0), 7.0)],
    ids=["zeros_like", "ones_like", "full_like"],
)
def test_like_functions_give_plain_constant_arrays(trace, box, func, value):
    out = func(box)
    assert type(out) is np.ndarray
    assert out.shape == (2, 3)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, value)
    assert trace.calls == []


def _unsupported_message(call) -> str:
    with pytest.raises(adcore.UnsupportedFunctionError) as info:
        call()
    assert isinstance(info.value, TypeError)
    return str(info.value)


def test_unsupported_numpy_function_is_named(box):
    message = _unsupported_message(lambda: np.histogram(box))
    assert "numpy.histogram" in message
    assert "OpSpec" in message  # says how to register one


def test_unsupported_ufunc_keyword_is_named(box):
    message = _unsupported_message(lambda: np.sin(box, dtype=np.float64))
    assert "numpy.sin" in message
    assert "dtype" in message


def test_unsupported_ufunc_method_is_named(box):
    message = _unsupported_message(lambda: np.add.reduceat(box, [0, 2]))
    assert "numpy.add.reduceat" in message


def test_unsupported_ufunc_is_named(box):
    message = _unsupported_message(lambda: np.nextafter(box, 2.0))
    assert "numpy.nextafter" in message


def test_unsupported_numpy_keyword_names_the_op_and_its_params(box):
    message = _unsupported_message(lambda: np.sum(box, initial=1.0))
    assert "initial" in message
    assert "'sum'" in message
    assert "axis" in message


def test_real_imag_itemsize_nbytes_and_mT_as_for_a_real_ndarray(trace, box):
    assert box.real is box and box.conj() is box  # a real traced value is its own real part
    assert type(box.imag) is np.ndarray and box.imag.shape == (2, 3) and not box.imag.any()
    assert (box.itemsize, box.nbytes) == (M.itemsize, M.nbytes)
    assert trace.calls == []
    np.testing.assert_array_equal(concrete(box.mT), M.mT)
    assert trace.calls == [("transpose", {"axes": (1, 0)})]


def test_real_imag_conj_and_astype_of_a_complex_traced_value_are_ops(trace):
    z = Box(trace, M * (1 + 2j))
    parts = [
        z.real,
        z.imag,
        z.conj(),
        z.conjugate(),
        np.real(z),
        np.imag(z),
        np.conj(z),
        z.astype(np.complex64),
    ]
    assert trace.op_names == ["real", "imag", "conj", "conj", "real", "imag", "conj", "astype"]
    for part, value in zip(
        parts, [M, 2 * M, M * (1 - 2j), M * (1 - 2j), M, 2 * M, M * (1 - 2j), M * (1 + 2j)]
    ):
        np.testing.assert_allclose(concrete(part), value, rtol=1e-6)
    assert concrete(parts[-1]).dtype == np.complex64


def test_flat_and_mT_of_a_vector_are_refused_by_name(trace):
    v = Box(trace, np.ones(3))
    with pytest.raises(adcore.UnsupportedFunctionError, match=r"x\.flat.*ravel"):
        v.flat  # noqa: B018
    with pytest.raises(adcore.UnsupportedFunctionError, match=r"x\.mT of a 1-d"):
        v.mT  # noqa: B018
