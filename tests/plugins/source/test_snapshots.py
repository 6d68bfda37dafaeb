"""Issue 35 item 4: the generated source is readable. derivative_source of a few small functions, in
both modes, equals the stored text in snapshots/ (after a change to the generator, look at the diff
and run REGENERATE), and reads as the issue asks: adjoints and tangents named after f's variables
(bx, dx), a `# file:line` comment pointing into f, one statement per line, nothing for an inactive
value, no statement assigning a zero adjoint, no dead code.

The functions come first in this file: the comments name their lines, so moving them changes the
snapshots.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import os
import re
from pathlib import Path

import adcore_source
import numpy as np
import pytest

import adcore


def recurrence(x, a, b):
    for _ in range(1000):
        x = np.sin(x) * a + x * b
    return x


def straight_line(x, w):
    z = x * w
    y = np.tanh(z)
    unused = np.cos(x)  # noqa: F841 (dead code: the generated source leaves it out)
    loss = np.sum(y * y) + 0.5 * np.sum(w * w)
    return loss


def running_sum(x):
    s = np.zeros_like(x)
    s[0] = x[0]
    for i in range(1, len(x)):
        s[i] = s[i - 1] + x[i] * x[i]
    return np.sum(s)


def smoothed(x, alpha):
    level = x[0]
    total = 0.0
    for v in x:
        if v > level:
            level = alpha * v + (1.0 - alpha) * level
        else:
            level = level * 0.5
        total = total + level
    return total


HERE = Path(__file__).resolve().parent
SNAPSHOTS = HERE / "snapshots"
REGENERATE = "ADCORE_REGENERATE_SNAPSHOTS=1 python -m pytest -n0 tests/plugins/source/test_snapshots.py"
MODES = ("reverse", "forward")
# (function, argnums, its active variables, its inactive ones: no adjoint or tangent of those)
CASES = {
    "recurrence": (recurrence, 0, ["x"], ["a", "b"]),
    "straight_line": (straight_line, 0, ["x", "z", "y"], ["w"]),
    "running_sum": (running_sum, 0, ["x", "s"], []),
    "smoothed": (smoothed, 1, ["alpha", "level", "total"], ["x", "v"]),
}
PREFIX = {"reverse": "b", "forward": "d"}


def generated(name: str, mode: str) -> str:
    f, argnums, _, _ = CASES[name]
    return adcore_source.derivative_source(f, mode=mode, argnums=argnums)


def portable(text: str) -> str:
    """The text with this checkout's directory left out (the comments name f's file)."""
    return text.replace(str(HERE) + os.sep, "")


def identifiers(text: str) -> set[str]:
    """The names the generated code binds and reads (its docstring and comments left out)."""
    tree = ast.parse(text)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return names | {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CASES)
def test_derivative_source_equals_the_snapshot(name, mode):
    text = portable(generated(name, mode))
    path = SNAPSHOTS / f"{name}_{mode}.py"
    if os.environ.get("ADCORE_REGENERATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path.name}: run `{REGENERATE}` and read what it wrote"
    stored = path.read_text()
    diff = "\n".join(
        difflib.unified_diff(stored.splitlines(), text.splitlines(), path.name, "now", lineterm="")
    )
    assert text == stored, f"the generated source changed: read the diff, then run `{REGENERATE}`\n{diff}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CASES)
def test_named_after_f_variables_and_nothing_for_inactive_ones(name, mode):
    _, _, active, inactive = CASES[name]
    names = identifiers(generated(name, mode))
    prefix = PREFIX[mode]
    for v in active:
        assert prefix + v in names, f"no {prefix}{v} for f's active {v} in the {mode} source"
    for v in inactive:
        assert prefix + v not in names, f"{prefix}{v}, a derivative of the inactive {v}, in the {mode} source"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CASES)
def test_comments_point_at_the_lines_of_f(name, mode):
    f = CASES[name][0]
    text = generated(name, mode)
    lines, first = inspect.getsourcelines(f)
    body = range(first + 1, first + len(lines))
    pointed = [int(n) for n in re.findall(rf"#.*{re.escape(Path(__file__).name)}:(\d+)", text)]
    assert pointed, f"no `# {Path(__file__).name}:<line>` comment in the {mode} source:\n{text}"
    assert all(n in body for n in pointed), f"comments point outside {f.__name__} ({list(body)}): {pointed}"
    statements = [
        first + i
        for i, line in enumerate(lines)
        if re.match(r"\s+\w+(\[.*\])? [-+*/]?= ", line) and "dead code" not in line
    ]
    missing = [n for n in statements if n not in pointed]
    assert not missing, f"the {mode} source has no comment for f's assignments on lines {missing}:\n{text}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CASES)
def test_one_statement_per_line(name, mode):
    lines = [n.lineno for n in ast.walk(ast.parse(generated(name, mode))) if isinstance(n, ast.stmt)]
    shared = sorted({n for n in lines if lines.count(n) > 1})
    assert not shared, f"more than one statement on lines {shared} of the {mode} source"


@pytest.mark.parametrize("name", CASES)
def test_no_statement_assigns_a_zero_adjoint(name):
    # except an accumulator a loop adds into, started just before the loop (as Tangent does): the
    # loop's first trip has nothing to add to, and the trips run a number of times known only then
    zero = re.compile(r"^\s*b\w+ = (0|0\.0|None|\w*zero\w*\(.*\))\s*(#.*)?$")
    lines = [
        line
        for line in generated(name, "reverse").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assigned = [
        line
        for line, after in zip(lines, lines[1:] + [""])
        if zero.match(line) and not (zero.match(after) or re.match(r"^\s*(for|while) ", after))
    ]
    assert not assigned, f"statements assigning a zero adjoint: {assigned}"


@pytest.mark.parametrize("mode", MODES)
def test_dead_code_is_left_out(mode):
    # `unused = np.cos(x)` reaches neither the output nor any derivative
    assert "unused" not in identifiers(generated("straight_line", mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CASES)
def test_the_snapshot_is_an_importable_module(name, mode):
    # the stored text is a module a user can keep and edit: it runs as it is
    path = SNAPSHOTS / f"{name}_{mode}.py"
    namespace: dict = {"__name__": f"snapshot_{name}_{mode}", "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert any(inspect.isfunction(v) and v.__module__ == namespace["__name__"] for v in namespace.values())


@pytest.mark.parametrize("mode", MODES)
def test_the_in_place_snapshot_function_differentiates_right(mode):
    # the tape cannot take running_sum; sum(s) = n x0 + sum_i (n - i) x_i^2
    x = np.array([0.3, -0.7, 1.2, 0.5])
    n, i = x.size, np.arange(x.size)
    want = np.where(i == 0, n, 2.0 * (n - i) * x)
    np.testing.assert_allclose(adcore.grad(running_sum, backend="source", mode=mode)(x), want, rtol=1e-12)
