"""no_grad / enable_grad (seed 001's no_grad and has_grad, 测试用例 4 and 5).

Eager Tensors follow PyTorch's torch.no_grad; functional calls follow torch.func: a
`no_grad()` around `adcore.grad(f)(x)` does not stop it, one inside `f` does.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from adcore_reverse import Tensor, enable_grad, no_grad
from adcore_reverse.grad_mode import is_recording

import adcore
from adcore import GradientError

# seed 001: f(x1, x2) = log(x1) + x1*x2 - sin(x2) at (2, 5); df = (1/x1 + x2, x1 - cos(x2))
DF = (5.5, 2 - np.cos(5.0))


def f(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def _leaves():
    return Tensor(2.0, requires_grad=True), Tensor(5.0, requires_grad=True)


def test_case4_backward_of_a_result_computed_under_no_grad_fails_clearly():
    x1, x2 = _leaves()
    with no_grad():
        out = f(x1, x2)
    assert not out.requires_grad and out.is_leaf
    with pytest.raises(GradientError, match="no_grad"):
        out.backward()
    assert x1.grad is None and x2.grad is None


def test_no_grad_still_computes_the_value():
    x1, x2 = _leaves()
    with no_grad():
        out = f(x1, x2)
    assert float(out.value) == pytest.approx(np.log(2) + 10 - np.sin(5))


def test_case5_enable_grad_inside_no_grad_records():
    x1, x2 = _leaves()
    with no_grad():
        with enable_grad():
            out = f(x1, x2)
    out.backward()
    assert x1.grad == pytest.approx(DF[0])
    assert x2.grad == pytest.approx(DF[1])


def test_nesting_restores_each_outer_mode():
    x = Tensor(3.0, requires_grad=True)
    with no_grad():
        with enable_grad():
            with no_grad():
                assert not (x * x).requires_grad
            assert (x * x).requires_grad
        assert not (x * x).requires_grad
    assert (x * x).requires_grad


def test_no_grad_is_left_even_when_the_block_raises():
    x = Tensor(3.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="boom"):
        with no_grad():
            raise RuntimeError("boom")
    assert is_recording()
    assert (x * x).requires_grad


def test_part_of_a_graph_under_no_grad_is_a_constant():
    # y = x * stop(x): only the recorded factor contributes, dy/dx = x = 3 (not 2x)
    x = Tensor(3.0, requires_grad=True)
    with no_grad():
        c = x * 1.0
    (x * c).backward()
    assert x.grad == 3.0


def test_no_grad_as_a_decorator():
    @no_grad()
    def square(t):
        return t * t

    x = Tensor(3.0, requires_grad=True)
    assert not square(x).requires_grad
    assert (x * x).requires_grad  # the decorator's switch is off again after the call


def test_decorated_function_can_recurse():
    @no_grad()
    def power(t, n):
        return t if n == 1 else t * power(t, n - 1)

    x = Tensor(2.0, requires_grad=True)
    assert float(power(x, 4).value) == 16.0 and not power(x, 4).requires_grad
    assert is_recording()


def test_no_grad_in_one_thread_does_not_affect_another():
    inside, release = threading.Event(), threading.Event()
    seen = {}

    def other():
        with no_grad():
            t = Tensor(1.0, requires_grad=True)
            seen["other"] = (t * t).requires_grad
            inside.set()
            release.wait(timeout=10)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert inside.wait(timeout=10)
        x = Tensor(2.0, requires_grad=True)
        y = x * x  # made while the other thread sits inside no_grad
    finally:
        release.set()
        thread.join(timeout=10)
    assert seen["other"] is False
    assert y.requires_grad
    y.backward()
    assert x.grad == 4.0


def test_a_new_thread_records_even_if_started_under_no_grad():
    seen = {}

    def other():
        t = Tensor(1.0, requires_grad=True)
        seen["recording"] = (t * t).requires_grad

    with no_grad():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(timeout=10)
    assert seen["recording"] is True


def test_grad_called_inside_no_grad_still_differentiates():
    # torch.func semantics: the switch was entered before the transformation began
    with no_grad():
        g = adcore.grad(f, argnums=(0, 1))(2.0, 5.0)
    np.testing.assert_allclose(g, DF, rtol=1e-15)


def test_jacobian_called_inside_no_grad_still_differentiates():
    x = np.array([0.5, 1.0])
    with no_grad():
        jac = adcore.jacobian(np.sin)(x)
    np.testing.assert_allclose(jac, np.diag(np.cos(x)), rtol=1e-15)


def test_no_grad_inside_the_function_stops_that_part():
    # f(x) = stop(x*x) + x*x: only the recorded term contributes, so df/dx = 2x
    def g(x):
        with no_grad():
            a = x * x
        return a + x * x

    assert adcore.grad(g)(3.0) == 6.0  # not 12: the full derivative would be 4x


def test_enable_grad_inside_no_grad_inside_the_function_records():
    def g(x):
        with no_grad():
            with enable_grad():
                a = x * x
        return a

    assert adcore.grad(g)(3.0) == 6.0


def test_function_entirely_under_no_grad_has_zero_gradient():
    # the output does not depend on the input through any recorded op
    def g(x):
        with no_grad():
            return np.sin(x) * 2.0

    assert adcore.grad(g)(1.0) == 0.0


# --- issue 15, class 12: a switch exited on another thread -----------------------------------


def _exit_on_another_thread(switch):
    caught = {}

    def other():
        try:
            switch.__exit__(None, None, None)
        except GradientError as e:
            caught["error"] = e
        caught["recording_there"] = is_recording()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(timeout=10)
    return caught


def test_no_grad_exited_on_another_thread_is_a_typed_error_and_both_threads_record_after():
    switch = no_grad()
    switch.__enter__()
    assert not is_recording()
    caught = _exit_on_another_thread(switch)
    assert "entered on thread" in str(caught["error"]) and "no_grad" in str(caught["error"])
    assert caught["recording_there"] is True  # the other thread's own mode was left alone
    assert is_recording()  # and this thread is not stuck in no_grad
    x = Tensor(3.0, requires_grad=True)
    (x * x).backward()  # the next call works
    assert x.grad == 6.0


def test_a_switch_exited_on_another_thread_keeps_the_owner_threads_other_switches():
    outer = no_grad()
    outer.__enter__()
    with enable_grad():  # entered after `outer` on this thread, still open when outer ends elsewhere
        assert "error" in _exit_on_another_thread(outer)
        assert is_recording()
    assert is_recording()  # enable_grad's exit removed its own switch, outer's is gone too
    with no_grad():
        assert not is_recording()
    assert is_recording()


def test_exit_without_enter_is_a_typed_error():
    with pytest.raises(GradientError, match="without being entered"):
        no_grad().__exit__(None, None, None)
    assert is_recording()


def test_one_decorated_function_runs_under_no_grad_on_several_threads_at_once():
    barrier = threading.Barrier(4)
    seen = []

    @no_grad()
    def work():
        barrier.wait(timeout=10)  # all four threads are inside the same decorated function
        t = Tensor(1.0, requires_grad=True)
        seen.append((t * t).requires_grad)
        barrier.wait(timeout=10)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert seen == [False] * 4
    assert is_recording()


def test_the_same_switch_entered_twice_nested_exits_twice():
    switch = no_grad()
    with switch:
        with switch:
            assert not is_recording()
        assert not is_recording()
    assert is_recording()
