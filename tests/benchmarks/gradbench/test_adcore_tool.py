"""adcore's GradBench tool, in process: JSON conversion, the define answer, evaluate's success and failure."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from adcore_tool import backends, saddle
from adcore_tool import run as tool


def test_to_json_turns_arrays_and_numpy_scalars_into_plain_values() -> None:
    value = {
        "x": np.arange(3.0),
        "nested": [(np.float64(1.5), np.int64(2))],
        "matrix": np.eye(2),
        "s": "kept",
    }
    converted = tool.to_json(value)
    assert converted == {
        "x": [0.0, 1.0, 2.0],
        "nested": [[1.5, 2]],
        "matrix": [[1.0, 0.0], [0.0, 1.0]],
        "s": "kept",
    }
    assert type(converted["nested"][0][0]) is float and type(converted["nested"][0][1]) is int
    json.dumps(converted)  # nothing NumPy left


@pytest.fixture
def fake_eval(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """An eval module `adcore_tool.fake` that the symbolic backend cannot run."""
    module = types.ModuleType("adcore_tool.fake")
    module.UNSUPPORTED = {"symbolic": "its loop runs a data-dependent number of times"}
    module.prepare = lambda input, backend: (np.asarray(input["x"]), backend)
    module.primal = lambda prepared: float(np.sum(prepared[0] ** 2))

    def fails(prepared: tuple) -> None:
        raise ValueError("the fake eval's failure")

    module.gradient = fails
    monkeypatch.setitem(sys.modules, "adcore_tool.fake", module)
    monkeypatch.setattr(tool, "EVALS", (*tool.EVALS, "fake"))
    return module


def test_define_names_the_backend_the_eval_and_the_reason_it_cannot(fake_eval: types.ModuleType) -> None:
    answer = tool.define("fake", "symbolic")
    assert answer["success"] is False
    assert (
        answer["error"] == "adcore-symbolic cannot run fake: its loop runs a data-dependent number of times"
    )
    assert tool.define("fake", "reverse") == {"success": True}


def test_define_refuses_an_eval_adcore_has_no_module_for() -> None:
    answer = tool.define("no-such-eval", "reverse")
    assert answer["success"] is False and "no-such-eval" in answer["error"]


def test_evaluate_times_the_function_and_answers_its_output(fake_eval: types.ModuleType) -> None:
    message = {
        "module": "fake",
        "function": "primal",
        "input": {"x": [1.0, 2.0], "min_runs": 3, "min_seconds": 0},
    }
    answer = tool.evaluate(message, "reverse")
    assert answer["success"] is True and answer["output"] == 5.0
    assert [timing["name"] for timing in answer["timings"]] == ["evaluate"] * 3


def test_evaluate_answers_a_failure_with_its_traceback(fake_eval: types.ModuleType) -> None:
    message = {
        "module": "fake",
        "function": "gradient",
        "input": {"x": [1.0], "min_runs": 1, "min_seconds": 0},
    }
    answer = tool.evaluate(message, "reverse")
    assert answer["success"] is False
    assert (
        answer["error"].startswith("Traceback") and "ValueError: the fake eval's failure" in answer["error"]
    )


def test_hello_doubles_with_every_backend() -> None:
    for backend in backends.BACKENDS:
        answer = tool.evaluate({"module": "hello", "function": "double", "input": 3.0}, backend)
        assert answer["success"] is True and answer["output"] == pytest.approx(6.0), backend


def test_each_tool_asks_adcore_for_its_backend_with_its_options() -> None:
    assert backends.options("reverse") == {"backend": "reverse"}
    assert backends.options("source") == {"backend": "source"}
    assert backends.options("source-compiled") == {"backend": "source", "compile": True}
    backends.options("source-compiled")["compile"] = False  # a copy: the table is not changed
    assert backends.BACKENDS["source-compiled"]["compile"] is True


@pytest.mark.parametrize(
    ("tool", "outer", "inner"),
    [
        ("reverse", {"backend": "reverse"}, {"backend": "forward"}),
        ("forward", {"backend": "reverse"}, {"backend": "forward"}),
        ("numeric", {"backend": "numeric"}, {"backend": "numeric"}),
        ("source", {"backend": "source", "mode": "reverse"}, {"backend": "source", "mode": "forward"}),
        (
            "source-compiled",
            {"backend": "source", "compile": True, "mode": "reverse"},
            {"backend": "source", "compile": True, "mode": "forward"},
        ),
    ],
)
def test_saddles_letters_pick_the_backends_or_the_source_backends_modes(
    monkeypatch: pytest.MonkeyPatch, tool: str, outer: dict, inner: dict
) -> None:
    asked = []
    monkeypatch.setattr(saddle.adcore, "value_and_grad", lambda f, **options: asked.append(options))
    for value_and_gradient in saddle.modes("rf", tool):
        value_and_gradient(lambda x: x)
    assert asked == [outer, inner]
