"""What is differentiated: a Call (a function, its arguments, which of them to differentiate),
built from an op's or a case's samples."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from adcore.spec import Case, OpSpec, Sample


@dataclass(frozen=True)
class Call:
    """fn(*args) differentiated with respect to args[argnums]; args[zeros] must get 0."""

    fn: Callable[..., Any]
    args: tuple
    argnums: tuple[int, ...]
    zeros: tuple[int, ...] = ()
    label: str = ""

    def in_float64(self) -> Call:
        """The same call at the same values, every float input in float64."""
        args = tuple(a.astype(np.float64) if is_float(a) else a for a in self.args)
        return replace(self, args=args)

    def of(self, argnums: Sequence[int]) -> Callable[..., Any]:
        """fn as a function of the inputs at `argnums` alone, the others fixed."""

        def partial(*xs: Any) -> Any:
            args = list(self.args)
            for i, x in zip(argnums, xs):
                args[i] = x
            return self.fn(*args)

        return partial

    @property
    def size(self) -> int:
        """Elements of the differentiated inputs, in all."""
        return sum(int(np.size(self.args[i])) for i in self.argnums)


_op_functions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _op_function(op: OpSpec, params: dict) -> Callable[..., Any]:
    """op(*inputs, **params), one function object per (op, params): the symbolic backend
    caches its compiled derivative per function object, so samples of the same shapes share it."""
    functions = _op_functions.setdefault(op, {})
    key = repr(sorted(params.items()))
    if key not in functions:
        functions[key] = lambda *inputs: op(*inputs, **params)
    return functions[key]


def op_calls(op: OpSpec, dtype: str, seed: int = 0) -> list[Call]:
    """One Call per sample of `op` in `dtype`, drawn with `seed`."""
    samples = op.samples(np.random.default_rng(seed), np.dtype(dtype)) if op.samples else []
    calls = []
    for k, sample in enumerate(samples):
        floats = [i for i, a in enumerate(sample.args) if is_float(a)]
        calls.append(
            Call(
                _op_function(op, sample.params),
                sample.args,
                tuple(i for i in floats if op.is_differentiable(i)),
                tuple(i for i in floats if not op.is_differentiable(i)),
                describe(k, sample),
            )
        )
    return calls


def case_calls(case: Case, dtype: str, seed: int = 0) -> list[Call]:
    """One Call per sample of `case` in `dtype`, drawn with `seed`."""
    samples = case.samples(np.random.default_rng(seed), np.dtype(dtype))
    calls = []
    for k, sample in enumerate(samples):
        fn = case.fn if not sample.params else _with_keywords(case.fn, sample.params)
        calls.append(Call(fn, tuple(sample.args), tuple(case.argnums), (), describe(k, sample)))
    return calls


def _with_keywords(fn: Callable[..., Any], params: dict) -> Callable[..., Any]:
    return lambda *args: fn(*args, **params)


def describe(k: int, sample: Sample) -> str:
    """'#k x0: float64 (2, 3), x1: bool (2, 3); axis=1'."""
    inputs = ", ".join(f"x{i}: {_describe_value(a)}" for i, a in enumerate(sample.args))
    params = ", ".join(f"{name}={value!r}" for name, value in sample.params.items())
    return f"#{k} {inputs}" + (f"; {params}" if params else "")


def _describe_value(a: Any) -> str:
    if isinstance(a, (np.ndarray, np.generic)):
        return f"{a.dtype} {a.shape}"
    return repr(a)


def is_float(a: Any) -> bool:
    """A float NumPy array or scalar (what is differentiated)."""
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "f"
