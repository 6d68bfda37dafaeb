"""A random program of `adcore conformance --fuzz`: lines of op calls on its inputs, run as a
function, and written as Python source that can be pasted into a test."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from adcore import ops as core_ops
from adcore.conformance.written import call_text, constant, identifier, written


@dataclass(frozen=True)
class Line:
    """One op call: each arg an earlier value's index (ints; the inputs come first) or a constant
    (a float, or an array: a mixing matrix, an identity, an op's non-float input)."""

    op: str
    args: tuple[Any, ...]
    params: tuple[tuple[str, Any], ...] = ()


def is_value(a: Any) -> bool:
    return isinstance(a, int) and not isinstance(a, bool)


@dataclass(eq=False)  # the symbolic backend caches per function object, so identity matters
class RandomProgram:
    """A random function of its inputs, with the input values to differentiate it at."""

    inputs: tuple[np.ndarray, ...]
    lines: tuple[Line, ...]

    def __call__(self, *xs: Any) -> Any:
        values = list(xs)
        for j, line in enumerate(self.lines):
            args = [values[a] if is_value(a) else a for a in line.args]
            op, params = core_ops[line.op], dict(line.params)
            value = op(*args, **params)
            if op.gauge is not None:  # LAPACK's signs on the branch of the program's own inputs
                value = op.gauge(value, self._centres[j], *args, **params)
            values.append(value)
        return values[-1]

    @functools.cached_property
    def _centres(self) -> list:
        """Each line's value at the program's inputs, which an op's gauge aligns to (OpSpec.gauge):
        a finite difference of the program then follows one branch of LAPACK's signs."""
        values = list(self.inputs)
        for line in self.lines:
            args = [values[a] if is_value(a) else a for a in line.args]
            values.append(core_ops[line.op](*args, **dict(line.params)))
        return values[len(self.inputs) :]

    @functools.cached_property
    def function(self) -> Callable[..., Any]:
        """The program as a Python function written out (conformance.written), what a backend that
        reads f's source reads: `v2 = sin(x0)`, ...; the same values as calling the program."""
        k = len(self.inputs)
        names = [f"x{i}" for i in range(k)] + [f"v{j}" for j in range(len(self.lines))]
        namespace: dict[str, Any] = {}
        body = []
        for j, line in enumerate(self.lines):
            op, params = core_ops[line.op], dict(line.params)
            args = [names[a] if is_value(a) else constant(namespace, "c", a) for a in line.args]
            value = call_text(constant(namespace, identifier(line.op), op), args, params, namespace)
            if op.gauge is not None:  # as __call__ does
                centre = constant(namespace, f"centre_{j}", self._centres[j])
                gauge = constant(namespace, f"{identifier(line.op)}_gauge", op.gauge)
                value = call_text(gauge, [value, centre, *args], params, namespace)
            body.append(f"{names[k + j]} = {value}")
        body.append(f"return {names[-1]}")
        return written("program", names[:k], body, namespace)

    @property
    def ops(self) -> set[str]:
        return {line.op for line in self.lines}

    def astype(self, dtype: str) -> RandomProgram:
        """The same program at its input values (and float constants) rounded to `dtype`."""
        lines = tuple(
            replace(
                line,
                args=tuple(a.astype(dtype) if is_float(a) else a for a in line.args),
                params=in_dtype(line.params, dtype),
            )
            for line in self.lines
        )
        return RandomProgram(tuple(x.astype(dtype) for x in self.inputs), lines)

    @property
    def source(self) -> str:
        """Python source defining `f` and its inputs, to paste into a test."""
        k = len(self.inputs)
        names = [f"x{i}" for i in range(k)] + [f"v{j}" for j in range(len(self.lines))]
        xs = ", ".join(names[:k])
        body = "".join(f"    {names[k + j]} = {_call(line, names)}\n" for j, line in enumerate(self.lines))
        inputs = "".join(f"x{i} = {_array_source(x)}\n" for i, x in enumerate(self.inputs))
        check = f"adcore.jacobian(f, argnums={tuple(range(k))}, backend=name)({xs})"
        return (
            f"import numpy as np\n\nimport adcore\n\n\ndef f({xs}):\n{body}    return {names[-1]}\n\n\n"
            f"{inputs}# every backend must agree (one with variants under each variant's options too):\n"
            f"# for name in adcore.backends(): {check}\n"
        )

    def __repr__(self) -> str:
        inputs = ", ".join(f"x{i}: {x.dtype} {x.shape}" for i, x in enumerate(self.inputs))
        return f"<RandomProgram of {inputs}: {', '.join(line.op for line in self.lines)}>"


def _array_source(a: np.ndarray) -> str:
    return f"np.array({_source(a.tolist())}, dtype=np.{a.dtype})"


def _source(value: Any) -> str:
    """Python source for a constant or param: arrays and dtypes as NumPy expressions."""
    if isinstance(value, np.ndarray):
        return _array_source(value)
    if _is_dtype(value):
        return f"np.{np.dtype(value).name}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(map(_source, value)) + ("," if isinstance(value, tuple) and len(value) == 1 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):  # nan_to_num's samples
        return "np.nan" if np.isnan(value) else "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def writable(value: Any) -> bool:
    """Whether _source(value) is a Python expression."""
    try:
        compile(_source(value), "<param>", "eval")
    except SyntaxError:
        return False
    return True


def _is_dtype(value: Any) -> bool:
    return isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic))


def in_dtype(params: tuple[tuple[str, Any], ...], dtype: Any) -> tuple[tuple[str, Any], ...]:
    """The params with each dtype among them (sum's dtype=, astype's) the program's own."""
    return tuple((key, np.dtype(dtype) if _is_dtype(value) else value) for key, value in params)


def _call(line: Line, names: list[str]) -> str:
    args = [names[a] if is_value(a) else _source(a) for a in line.args]
    args += [f"{key}={_source(value)}" for key, value in line.params]
    return f"adcore.ops.{line.op}({', '.join(args)})"


def is_float(a: Any) -> bool:
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "f"
