"""Issue 35 item 3: what the source transformation cannot take is a typed refusal, never a wrong
derivative. Each function below uses one such construct; grad in both modes and derivative_source
raise SourceTransformError (an adcore UnsupportedFunctionError) whose message names the construct
and the file:line it is on, and the next call with a good function works."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import adcore_source
import numpy as np
import pytest
from adcore_source.errors import SourceTransformError

import adcore
from adcore.errors import UnsupportedFunctionError

X = np.array([0.5, 1.5, 2.5])
FILE = Path(__file__).name


def line_of(fn, marker: str) -> int:
    """The line of `fn`'s source that holds `marker` (the first one)."""
    lines, first = inspect.getsourcelines(fn)
    (hit,) = [i for i, text in enumerate(lines) if marker in text][:1]
    return first + hit


def squares(v):
    for e in v:
        yield e * e


def sum_of_generated(x):
    total = 0.0
    for s in squares(x):
        total = total + s
    return total


def generator_itself(x):
    yield np.sum(x)


def with_eval(x):
    y = eval("np.sin(x)")
    return np.sum(y)


def with_exec(x):
    scope = {"x": x}
    exec("y = x * 2", scope)
    return np.sum(scope["y"])


def with_file_scale(x):
    handle = open(__file__)
    scale = len(handle.readline())
    return scale * np.sum(x)


class RunningMean:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def add(self, v):
        self.total = self.total + v
        self.count += 1
        return self.total / self.count


def running_mean(x):
    stats = RunningMean()
    for v in x:
        m = stats.add(v)
    return m


def with_local_class(x):
    class Box:
        value = 0.0

    Box.value = np.sum(x)
    return Box.value


CALLS = 0


def counting(x):
    global CALLS
    CALLS = CALLS + 1
    return np.sum(x) * CALLS


def nonlocal_write(x):
    count = 0

    def bump(v):
        nonlocal count
        count = count + 1
        return v * count

    return np.sum(bump(x))


def guarded_log(x):
    try:
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def quiet_log(x):
    with np.errstate(divide="ignore"):
        y = np.log(x)
    return np.sum(y)


def to_float(x):
    s = float(np.sum(x))
    return s * x[0]


def item_of(x):
    s = np.sum(x * x).item()
    return s * x[0]


def stored_lambda(x):
    ops = {"scale": lambda v: v * np.sum(x)}
    return np.sum(ops["scale"](x))


def scaler(a):
    return lambda v: v * a


def returned_lambda(x):
    g = scaler(np.sum(x))
    return np.sum(g(x))


# (function, the construct's words in the message, where: [(function holding the line, marker)], any
# one of them: a generator function is named by its yield or its def line, a callee's construct by
# its line or by the call's)
REFUSED = {
    "generator called": (
        sum_of_generated,
        r"generator|yield",
        [(squares, "yield"), (squares, "def squares"), (sum_of_generated, "in squares(")],
    ),
    "generator itself": (
        generator_itself,
        r"generator|yield",
        [(generator_itself, "yield"), (generator_itself, "def generator_itself")],
    ),
    "eval": (with_eval, r"\beval\b", [(with_eval, 'eval("')]),
    "exec": (with_exec, r"\bexec\b", [(with_exec, 'exec("')]),
    "open": (with_file_scale, r"\bopen\b|I/O|file", [(with_file_scale, "open(__file__)")]),
    "mutable object": (
        running_mean,
        r"class|method|object|attribute|RunningMean",
        [(running_mean, "RunningMean()"), (running_mean, "stats.add"), (RunningMean.add, "self.total =")],
    ),
    "local class": (with_local_class, r"class", [(with_local_class, "class Box")]),
    "global write": (counting, r"global", [(counting, "global CALLS"), (counting, "CALLS = CALLS")]),
    "nonlocal write": (
        nonlocal_write,
        r"nonlocal",
        [(nonlocal_write, "nonlocal count"), (nonlocal_write, "count = count")],
    ),
    "try": (guarded_log, r"\btry\b", [(guarded_log, "try:")]),
    "with": (quiet_log, r"\bwith\b", [(quiet_log, "with np.errstate")]),
    "float of active": (to_float, r"float", [(to_float, "float(np")]),
    "item of active": (item_of, r"item", [(item_of, ".item()")]),
    "stored lambda": (stored_lambda, r"lambda", [(stored_lambda, "lambda v")]),
    "returned lambda": (returned_lambda, r"lambda", [(scaler, "lambda v"), (returned_lambda, "scaler(")]),
}


def good(x):
    y = np.sin(x) * x
    return np.sum(y * y)


def assert_names_construct_and_line(error: SourceTransformError, words: str, where: list) -> None:
    message = str(error)
    assert isinstance(error, UnsupportedFunctionError)
    assert re.search(words, message, re.I), f"the message does not name the construct ({words}): {message}"
    lines = [f"{FILE}:{line_of(fn, marker)}" for fn, marker in where]
    assert any(re.search(rf"{re.escape(line)}\b", message) for line in lines), (
        f"the message names none of {lines}: {message}"
    )


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_refused_with_the_construct_and_its_line_then_a_good_function_works(case, mode):
    f, words, where = REFUSED[case]
    with pytest.raises(SourceTransformError) as refused:
        adcore.grad(f, backend="source", mode=mode)(X.copy())
    assert_names_construct_and_line(refused.value, words, where)
    g = adcore.grad(good, backend="source", mode=mode)(X.copy())
    np.testing.assert_allclose(g, adcore.grad(good)(X), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_derivative_source_refuses_alike(case, mode):
    f, words, where = REFUSED[case]
    with pytest.raises(SourceTransformError) as refused:
        adcore_source.derivative_source(f, mode=mode)
    assert_names_construct_and_line(refused.value, words, where)
    assert "def " in adcore_source.derivative_source(good, mode=mode)


def test_a_refused_function_is_refused_again_not_cached_as_good():
    for _ in range(2):
        with pytest.raises(SourceTransformError):
            adcore.grad(with_eval, backend="source")(X.copy())
