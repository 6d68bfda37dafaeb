"""adcore.dispatch: bind routes to the innermost trace; levels; per-thread, exception-safe stacks."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from toy_trace import Box, BoxTrace

import adcore
from adcore import ops
from adcore.dispatch import Trace, backend_of, bind, new_trace
from adcore.errors import ComplexValueError
from adcore.spec import OpSpec
from adcore.tracer import concrete


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
                adcore.grad(lambda x: np.sum(np.cumsum(x)))(np.ones(3))
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


# --- complex values on a trace (issue 15, class 2) ----------------------------------------


@pytest.mark.parametrize(
    "constant",
    [1 + 1j, np.complex128(1j), np.complex64(1j), np.array([1j, 2.0]), [1j, 2.0]],
    ids=["complex", "complex128", "complex64", "array", "list"],
)
def test_a_complex_constant_meeting_a_tracer_is_refused_naming_op_and_trace(constant):
    with new_trace(BoxTrace) as trace:
        with pytest.raises(ComplexValueError) as info:
            bind(ops.multiply, Box(trace, np.ones(2)), constant)
        message = str(info.value)
        assert "'multiply'" in message and "BoxTrace" in message and "numeric" in message
        assert trace.calls == []  # refused before the trace did any work
        assert concrete(bind(ops.multiply, Box(trace, np.ones(2)), 2.0)).tolist() == [2.0, 2.0]


def test_a_complex_result_of_real_inputs_is_refused():
    to_complex = OpSpec("to_complex_for_test", lambda x: x * (1 + 0j))  # like a third-party fft
    with new_trace(BoxTrace) as trace:
        with pytest.raises(ComplexValueError, match="'to_complex_for_test'.*complex result"):
            bind(to_complex, Box(trace, 1.0))


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
            bind(ops.multiply, Box(inner, 1.0), Box(outer, np.complex128(1j)))
        assert concrete(bind(ops.multiply, Box(inner, 2.0), Box(outer, 3.0))) == 6.0


def test_the_core_catalogue_is_known_to_give_real_results_so_its_results_are_not_checked():
    from adcore.dispatch import REAL_OPS

    assert ops.sin in REAL_OPS and ops.matmul in REAL_OPS
