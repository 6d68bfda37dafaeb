"""What is differentiated: a CheckedCall (a function, its arguments, which of them to differentiate),
built from an op's or a case's samples.

An op that accepts complex values is checked on complex samples too, as a real function
(`split_function`): each complex input is passed as its real and imaginary parts, and a complex
output comes back as its real and imaginary parts stacked along a new leading axis. Its Jacobian
is the op's derivative as a real-linear map, JAX's convention (docs/complex.md), so every
check compares real Jacobians: complex128 like float64, complex64 like float32."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from adcore import ops as adcore_ops
from adcore.core import Tracer
from adcore.spec import Case, OpSpec, Sample


@dataclass(frozen=True)
class CheckedCall:
    """fn(*args) differentiated with respect to args[argnums]; args[zeros] must get 0."""

    fn: Callable[..., Any]
    args: tuple
    argnums: tuple[int, ...]
    zeros: tuple[int, ...] = ()
    label: str = ""
    # for an op's call, whether fn is the op alone: no complex input or output split into parts
    # (split_function adds ops of its own); asked lazily, it runs the op once (None: not an op's call)
    op_alone: Callable[[], bool] | None = None

    def in_float64(self) -> CheckedCall:
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
_case_functions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _op_function(op: OpSpec, params: dict, dtypes: tuple) -> Callable[..., Any]:
    """split_function(op(*inputs, **params), dtypes), one function object per (op, params,
    dtypes): the symbolic backend caches its compiled derivative per function object, so samples
    of the same shapes share it."""
    functions = _op_functions.setdefault(op, {})
    key = (repr(sorted(params.items())), dtypes)
    if key not in functions:
        functions[key] = split_function(lambda *inputs: op(*inputs, **params), dtypes)
    return functions[key]


def op_calls(op: OpSpec, dtype: str, seed: int | Sequence[int] = 0) -> list[CheckedCall]:
    """One CheckedCall per sample of `op` in `dtype`, drawn with `seed` (split_call); in a complex dtype,
    one per sample with a complex input."""
    samples = op.samples(np.random.default_rng(seed), np.dtype(dtype)) if op.samples else []
    every = np.dtype(dtype).kind != "c"
    return [
        split_call(op, sample, describe(k, sample))
        for k, sample in enumerate(samples)
        if every or any(map(is_complex, sample.args))
    ]


def checks_complex(op: OpSpec) -> bool:
    """Whether `op` is checked on complex dtypes: it accepts complex values and a sample of it in
    complex128 has a complex input (an op of integers alone has none)."""
    if not op.accepts_complex or op.samples is None:
        return False
    try:
        samples = op.samples(np.random.default_rng(0), np.dtype(np.complex128))
    except Exception:
        return True  # the unit's cells say what drawing them raises
    return any(is_complex(a) for sample in samples for a in sample.args)


def split_call(op: OpSpec, sample: Sample, label: str) -> CheckedCall:
    """`op` at a sample as a real function of real arguments (split_function): each complex input
    as its real and imaginary parts in its place, both differentiated (or both held to 0) as the
    input is; real inputs as they are; float inputs differentiated, or held to 0 where the op
    declares them not differentiable."""
    args: list = []
    argnums: list[int] = []
    zeros: list[int] = []
    for i, a in enumerate(sample.args):
        parts = (np.array(np.real(a)), np.array(np.imag(a))) if is_complex(a) else (a,)
        if is_float(a) or is_complex(a):
            (argnums if op.is_differentiable(i) else zeros).extend(range(len(args), len(args) + len(parts)))
        args += parts
    dtypes = tuple(a.dtype if is_complex(a) else None for a in sample.args)
    fn = _op_function(op, sample.params, dtypes) if op.gauge is None else _gauged(op, sample, dtypes)
    return CheckedCall(
        fn, tuple(args), tuple(argnums), tuple(zeros), label, functools.cache(lambda: _alone(op, sample))
    )


def _gauged(op: OpSpec, sample: Sample, dtypes: tuple) -> Callable[..., Any]:
    """split_function of the op with its gauge (OpSpec.gauge) aligned to its value at the sample:
    the same value there, bit for bit, and near it the branch of LAPACK's signs the sample's value
    is on, which a finite difference (or the same sample in float64) must follow."""
    centre = op.impl(*sample.args, **sample.params)
    params = sample.params
    return split_function(lambda *inputs: op.gauge(op(*inputs, **params), centre, *inputs, **params), dtypes)


def _alone(op: OpSpec, sample: Sample) -> bool:
    """Whether the op at the sample takes and gives real values only (split_function adds nothing)."""
    if any(map(is_complex, sample.args)):
        return False
    try:
        return not np.iscomplexobj(op.impl(*sample.args, **sample.params))
    except Exception:
        return False


def split_function(fn: Callable[..., Any], dtypes: Sequence[np.dtype | None] = ()) -> Callable[..., Any]:
    """g(*parts): fn with each input i whose dtypes[i] is a complex dtype given as two real
    arguments, its real and imaginary parts (joined as re + im * 1j in that dtype), the others (and
    any past `dtypes`) as they are; a complex output returned as its real and imaginary parts
    stacked along a new leading axis (`real_parts`). So a real input giving a complex output (an
    fft) is checked on both parts, never on a real part alone."""
    if not any(d is not None for d in dtypes):
        return lambda *args: real_parts(fn(*args))

    def split(*parts: Any) -> Any:
        args, k = [], 0
        for dtype in dtypes:
            if dtype is None:
                args.append(parts[k])
                k += 1
            else:
                args.append(_join(parts[k], parts[k + 1], np.asarray(1j, dtype=dtype)))
                k += 2
        return real_parts(fn(*args, *parts[k:]))

    return split


def _join(re: Any, im: Any, unit: np.ndarray) -> Any:
    """re + im * unit (1j in the complex dtype: a Python 1j would make complex64 complex128), by
    adcore ops where a part is traced, else by NumPy (numeric calls g thousands of times)."""
    if isinstance(re, Tracer) or isinstance(im, Tracer):
        return adcore_ops.add(re, adcore_ops.multiply(im, unit))
    return re + im * unit


def real_parts(out: Any) -> Any:
    """A complex `out` as stack([real(out), imag(out)]) (a new leading axis of 2); a real one as is."""
    if (out.dtype if hasattr(out, "dtype") else np.result_type(out)).kind != "c":
        return out
    if not isinstance(out, Tracer):
        return np.stack([np.real(out), np.imag(out)])
    return adcore_ops.stack([adcore_ops.real(out), adcore_ops.imag(out)])


def case_calls(case: Case, dtype: str, seed: int | Sequence[int] = 0) -> list[CheckedCall]:
    """One CheckedCall per sample of `case` in `dtype`, drawn with `seed`, a complex output split (real_parts)."""
    samples = case.samples(np.random.default_rng(seed), np.dtype(dtype))
    calls = []
    for k, sample in enumerate(samples):
        fn = case.fn if not sample.params else _with_keywords(case.fn, sample.params)
        calls.append(
            CheckedCall(_real_valued(fn), tuple(sample.args), tuple(case.argnums), (), describe(k, sample))
        )
    return calls


def _real_valued(fn: Callable[..., Any]) -> Callable[..., Any]:
    """split_function(fn), one function object per fn (as _op_function, for symbolic's cache)."""
    try:
        return _case_functions.setdefault(fn, split_function(fn))
    except TypeError:  # fn cannot be weakly referenced (a builtin)
        return split_function(fn)


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


def is_complex(a: Any) -> bool:
    """A complex NumPy array or scalar (differentiated as its real and imaginary parts)."""
    return isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "c"
