"""What is differentiated: a CheckedCall (a function, its arguments, which of them to differentiate),
built from an op's or a case's samples.

An op that accepts complex values is checked on complex samples too, as a real function
(`split_function`): each complex input is passed as its real and imaginary parts, and a complex
output comes back as its real and imaginary parts stacked along a new leading axis. Its Jacobian
is the op's derivative as a real-linear map, JAX's convention (docs/complex.md), so every
check compares real Jacobians: complex128 like float64, complex64 like float32.

Every function handed to the backends is written as Python source with one parameter per
argument (adcore.conformance.written), the op or case called by name: a backend that reads f's
source differentiates it as a user's function."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from adcore import ops as adcore_ops
from adcore.conformance.written import call_text, identifier, written
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
    # (split_function adds ops of its own); None: not an op's call
    op_alone: bool | None = None

    def in_float64(self) -> CheckedCall:
        """The same call at the same values, every float input in float64."""
        args = tuple(a.astype(np.float64) if is_float(a) else a for a in self.args)
        return replace(self, args=args)

    def of(self, argnums: Sequence[int]) -> Callable[..., Any]:
        """fn as a function of the inputs at `argnums` alone, the others fixed (fn itself when
        `argnums` are all its inputs in order)."""
        if tuple(argnums) == tuple(range(len(self.args))):
            return self.fn
        namespace: dict[str, Any] = {"fn": self.fn}
        for i, a in enumerate(self.args):
            if i not in argnums:
                namespace[f"x{i}_fixed"] = a
        arguments = [f"x{i}" if i in argnums else f"x{i}_fixed" for i in range(len(self.args))]
        name = f"{_name_of(self.fn)}_of_{'_'.join(f'x{i}' for i in argnums)}"
        return written(
            name,
            [f"x{i}" for i in argnums],
            [f"return {call_text('fn', arguments, {}, namespace)}"],
            namespace,
        )

    @property
    def size(self) -> int:
        """Elements of the differentiated inputs, in all."""
        return sum(int(np.size(self.args[i])) for i in self.argnums)


_op_functions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_case_functions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _op_function(op: OpSpec, params: dict, dtypes: tuple, complex_output: bool) -> Callable[..., Any]:
    """split_function(op, dtypes, params), one function object per (op, params, dtypes, complex
    output): the symbolic backend caches its compiled derivative per function object, so samples
    of the same shapes share it."""
    functions = _op_functions.setdefault(op, {})
    key = (repr(sorted(params.items())), dtypes, complex_output)
    if key not in functions:
        functions[key] = split_function(op, dtypes, params, complex_output=complex_output)
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
    complex_output = gives_complex(op.impl, sample.args, sample.params)
    if op.gauge is None:
        fn = _op_function(op, sample.params, dtypes, complex_output)
    else:
        fn = _gauged(op, sample, dtypes, complex_output)
    alone = all(d is None for d in dtypes) and not complex_output
    return CheckedCall(fn, tuple(args), tuple(argnums), tuple(zeros), label, alone)


def _gauged(op: OpSpec, sample: Sample, dtypes: tuple, complex_output: bool) -> Callable[..., Any]:
    """split_function of the op with its gauge (OpSpec.gauge) aligned to its value at the sample:
    the same value there, bit for bit, and near it the branch of LAPACK's signs the sample's value
    is on, which a finite difference (or the same sample in float64) must follow."""
    namespace = {"op": op, "gauge": op.gauge, "centre": op.impl(*sample.args, **sample.params)}
    inputs = [f"x{i}" for i in range(len(dtypes))]
    value = call_text("op", inputs, sample.params, namespace)
    body = [f"return {call_text('gauge', [value, 'centre', *inputs], sample.params, namespace)}"]
    gauged = written(f"{_name_of(op)}_gauged", inputs, body, namespace)
    return split_function(gauged, dtypes, complex_output=complex_output)


def split_function(
    fn: Callable[..., Any],
    dtypes: Sequence[np.dtype | None],
    params: dict | None = None,
    *,
    complex_output: bool,
) -> Callable[..., Any]:
    """g(*parts): fn(*inputs, **params) of one input per entry of `dtypes`, each input i whose
    dtypes[i] is a complex dtype given as two real arguments, its real and imaginary parts (joined
    as re + im * 1j in that dtype), the others as they are; with `complex_output` (fn gives a
    complex value at the sample: `gives_complex`), the output returned as its real and imaginary
    parts stacked along a new leading axis. So a real input giving a complex output (an fft) is
    checked on both parts, never on a real part alone. Written as Python source of adcore ops
    (`def exp_of_parts(x0_real, x0_imag): x0 = add(x0_real, multiply(x0_imag, unit0)) ...`), so a
    backend that reads it (source) differentiates it all, with no call it cannot see into."""
    namespace: dict[str, Any] = {"fn": fn}
    add, multiply = _bound(namespace, adcore_ops.add), _bound(namespace, adcore_ops.multiply)
    parameters, body, inputs = [], [], []
    for i, dtype in enumerate(dtypes):
        inputs.append(f"x{i}")
        if dtype is None:
            parameters.append(f"x{i}")
            continue
        parameters += [f"x{i}_real", f"x{i}_imag"]
        # 1j in the complex dtype: a Python 1j would make complex64 complex128
        namespace[f"unit{i}"] = np.asarray(1j, dtype=dtype)
        body.append(f"x{i} = {add}(x{i}_real, {multiply}(x{i}_imag, unit{i}))")
    value = call_text("fn", inputs, params or {}, namespace)
    if complex_output:
        stack, real, imag = (
            _bound(namespace, op) for op in (adcore_ops.stack, adcore_ops.real, adcore_ops.imag)
        )
        body += [f"out = {value}", f"return {stack}([{real}(out), {imag}(out)])"]
    else:
        body.append(f"return {value}")
    return written(f"{_name_of(fn)}_of_parts", parameters, body, namespace)


def _bound(namespace: dict[str, Any], op: OpSpec) -> str:
    """op's name, bound to op in `namespace`: the written text calls it by that name."""
    namespace[op.name] = op
    return op.name


def gives_complex(fn: Callable[..., Any], args: Sequence[Any], params: dict | None = None) -> bool:
    """Whether fn(*args, **params) is a complex value (split_function's complex_output); False where
    it raises: every backend's cell then says why."""
    try:
        with np.errstate(all="ignore"):
            return bool(np.iscomplexobj(fn(*args, **(params or {}))))
    except Exception:
        return False


def _name_of(fn: Any) -> str:
    """A name for a function written around fn: its op's or its own."""
    return identifier(getattr(fn, "name", None) or getattr(fn, "__name__", "") or "f")


def case_calls(case: Case, dtype: str, seed: int | Sequence[int] = 0) -> list[CheckedCall]:
    """One CheckedCall per sample of `case` in `dtype`, drawn with `seed`, a complex output split
    into its parts (split_function)."""
    samples = case.samples(np.random.default_rng(seed), np.dtype(dtype))
    calls = []
    for k, sample in enumerate(samples):
        complex_output = gives_complex(case.fn, sample.args, sample.params)
        fn = _real_valued(case.fn, len(sample.args), sample.params, complex_output)
        calls.append(CheckedCall(fn, tuple(sample.args), tuple(case.argnums), (), describe(k, sample)))
    return calls


def _real_valued(
    fn: Callable[..., Any], count: int, params: dict, complex_output: bool
) -> Callable[..., Any]:
    """split_function of fn's `count` real inputs, one function object per (fn, count, params,
    complex output) (as _op_function, for symbolic's cache)."""
    key = (count, repr(sorted(params.items())), complex_output)
    try:
        functions = _case_functions.setdefault(fn, {})
    except TypeError:  # fn cannot be weakly referenced (a builtin)
        return split_function(fn, (None,) * count, params, complex_output=complex_output)
    if key not in functions:
        functions[key] = split_function(fn, (None,) * count, params, complex_output=complex_output)
    return functions[key]


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
