"""The sparsity tracer: f run on values that carry which differentiated input elements each element
may depend on (P), and for Hessian patterns which pairs its second derivatives may couple (H).

Each op combines its inputs' patterns as its `sparsity` rule says (adcore_sparsity.patterns). In a
GLOBAL trace (valid for every input) the tracer's numbers are hidden from f: a comparison gives a
traced boolean array whose numbers are hidden too (np.where keeps both branches; rules see it as
Unknown), and anything that decides by the numbers (if x > 0, float(x), x[np.argmax(x)], x[x > 0],
np.asarray(x > 0)) raises ValueDependentError. (A comparison is not a plain boolean array, such as
adcore_sparsity.extend's Condition: np.asarray would turn that into a constant a rule may read,
and the pattern would keep one branch only.) Float arguments not differentiated are traced
too, with an empty pattern, so the pattern never depends on their values either. In a LOCAL trace
(at a point) f sees the numbers, and where/maximum/max keep the branch they take there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from adcore.array_tracer import ArrayTracer
from adcore.backend import check_output
from adcore.core import Trace, Tracer, bind_below, concrete, frozen_value, new_trace
from adcore.errors import (
    AdcoreError,
    ComplexValueError,
    InvalidInputError,
    PluginError,
    UnsupportedFunctionError,
    ValueDependentError,
)
from adcore.numpy_dispatch import conversion_error
from adcore_sparsity import patterns
from adcore_sparsity.extend import Condition, Unknown, is_condition
from adcore_sparsity.fallback import plugin_of, rule_for
from adcore_sparsity.second_order import SecondOrder


class SparsityTrace(Trace):
    """One sparsity transformation over n differentiated input elements (columns of every P)."""

    backend = "sparsity"
    copies_params = False  # the caller's own index arrays and masks, to be watched (`constants`)

    def __init__(self, n: int, local: bool = False, hessian: bool = False) -> None:
        self.n, self.local = n, local
        self.second = SecondOrder(n) if hessian else None  # the Hessian's bookkeeping, when asked
        # id -> (what, the object, a copy): every array, list or dict f's ops read as a constant (a
        # closure's matrix, an index array, a mask), whose values the pattern may depend on; a plan
        # reused later checks them (adcore_sparsity.checks.Signature)
        self.constants: dict[int, tuple[str, Any, Any]] = {}

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        for name, value in params.items():
            if self._decides(value):
                raise ValueDependentError(
                    f"op {op.name!r} got a traced value (a comparison, or a float argument's value) as its "
                    f"param {name!r} (a mask, an index, a static value): what the op does then depends on the "
                    "input's numbers, which a global sparsity pattern (valid for every input) cannot follow. "
                    "Detect the pattern at this point with local=True, or choose between values with anp.where "
                    "(both branches are kept)."
                )
        self._watch(op, args, params)
        rule = rule_for(op)
        if rule is None:  # a traceable op with no rule: its body, op by op
            return op.impl(*args, **params)
        mine = [isinstance(a, SparsityTracer) and a._trace is self for a in args]
        primals = [a.value if m else _plain(a) for a, m in zip(args, mine)]
        ans = _plain(bind_below(op, primals, params))
        rows = int(np.size(ans))
        # A local Hessian shows a rule that is not piecewise linear the traced inputs' shapes only, as a
        # global trace does: at a point it drops what a zero of a traced factor cuts from the first
        # derivative (v[:3] @ v[3:] at v[3:] = 0), and the second derivative across that factor is still
        # there. A linear rule's choice of branch (maximum, where, relu) holds near the point.
        if self.local and (self.second is None or rule.order == "linear"):
            inputs = [
                _unknown(a) if isinstance(a, Tracer) and not m else p for a, m, p in zip(args, mine, primals)
            ]
            shown = ans
        else:
            inputs = [_unknown(a) if isinstance(a, Tracer) else a for a in args]
            shown = _unknown(ans)
        dependencies = _dependencies(op, rule, shown, inputs, params)
        terms, parents = [], []
        for i, (a, m) in enumerate(zip(args, mine)):
            if not m or dependencies[i] is None or not op.is_differentiable(i):
                continue
            try:
                term = patterns.apply(dependencies[i], a.pattern, rows)
            except ValueError as e:
                raise _rule_error(op, f"its entry for input {i} does not fit: {e}") from e
            if term is not None:
                terms.append(term)
                parents.append(a.hessian)
        pattern = patterns.union(terms, rows, self.n)
        if self.second is None:
            hessian = None
        else:
            paired = (
                _paired(op, rule, shown, inputs, params, args, mine) if rule.order == "multilinear" else None
            )
            hessian = self.second.node(rule.order, terms, parents, pattern, paired)
        return SparsityTracer(ans, pattern, hessian, self)

    def _watch(self, op: Any, args: tuple, params: dict) -> None:
        """Note the constants among an op's inputs and params that could change in place."""
        named = [(f"input {i}", a) for i, a in enumerate(args) if not isinstance(a, Tracer)]
        for what, value in named + [(f"param {name!r}", v) for name, v in params.items()]:
            if id(value) not in self.constants:
                copy = frozen_value(value)
                if copy is not value:
                    self.constants[id(value)] = (f"{what} of op {op.name!r}", value, copy)

    def _decides(self, param: Any) -> bool:
        """Whether a param (a mask, an index) is a traced value of a global trace, or a Condition."""
        if isinstance(param, (list, tuple)):
            return any(self._decides(p) for p in param)
        if isinstance(param, SparsityTracer) and param._trace is self:
            return not self.local
        return is_condition(param)

    def constant(self, value: Any) -> SparsityTracer:
        """A traced value that depends on no differentiated element (a comparison, an argument not
        differentiated): its numbers stay hidden in a global trace all the same."""
        return SparsityTracer(value, patterns.empty(int(np.size(value)), self.n), None, self)


def _paired(op: Any, rule: Any, ans: Any, inputs: list, params: dict, args: tuple, mine: list) -> list | None:
    """A multilinear rule's own pairs (P_i, M_ij P_j) of the traced inputs, or None (the default)."""
    pairs = None if rule.pairs is None else rule.pairs(ans, *inputs, **params)
    if pairs is None:
        return None
    paired = []
    for (i, j), m in pairs.items():
        if m is not None and mine[i] and mine[j] and op.is_differentiable(i) and op.is_differentiable(j):
            paired.append((args[i].pattern, patterns.as_bool(m @ args[j].pattern)))
    return paired


def _dependencies(op: Any, rule: Any, ans: Any, inputs: list, params: dict) -> tuple:
    """The rule's entries, one per input; a rule that breaks is a PluginError naming op and plugin."""
    try:
        dependencies = rule(ans, *inputs, **params)
    except AdcoreError:
        raise
    except Exception as e:
        raise _rule_error(op, f"it raised {type(e).__name__}: {e}") from e
    if not isinstance(dependencies, (tuple, list)) or len(dependencies) != len(inputs):
        raise _rule_error(op, f"it gave {dependencies!r}, not one entry per input ({len(inputs)})")
    return dependencies


def _rule_error(op: Any, what: str) -> PluginError:
    return PluginError(
        f"the 'sparsity' rule of op {op.name!r} (plugin {plugin_of(op.name)!r}) failed: {what}. "
        "A rule gives one entry per input of the call: None, DENSE or a sparse (ans.size, input.size) matrix."
    )


def _plain(value: Any) -> Any:
    """A Condition's booleans as a plain array (what an impl computes with); anything else as is."""
    return value.view(np.ndarray) if isinstance(value, Condition) else value


def _unknown(value: Any) -> Unknown:
    return Unknown(np.shape(value) if not isinstance(value, Tracer) else value.shape, _dtype(value))


def _dtype(value: Any) -> np.dtype:
    dtype = getattr(value, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.result_type(value)


# what read a traced value's numbers, by the Tracer method that asked (for ValueDependentError)
_READERS = {
    "__bool__": "bool(x) (an `if` or `while` on a traced value, or `and`/`or`)",
    "function_call": "a NumPy function that answers with an index (np.argmax, np.argsort, np.nonzero, ...)",
    "__getitem__": "an index computed from a traced value",
    "__format__": "formatting its number (f'{x:.3f}')",
    "__contains__": "`v in x`",
    "ufunc_call": "a NumPy predicate",
}


class SparsityTracer(ArrayTracer):
    """A value the sparsity trace follows: its `value` at this point, `pattern` (a bool CSR
    (size, n): the differentiated input elements each element may depend on) and, in a Hessian
    trace, `hessian` (its adcore_sparsity.second_order.Node, None when it has no second derivative:
    the pairs of elements its elements' second derivatives may couple)."""

    __slots__ = ("hessian", "pattern")

    def __init__(self, value: Any, pattern: Any, hessian: Any, trace: SparsityTrace) -> None:
        self.value, self.pattern, self.hessian, self._trace = value, pattern, hessian, trace

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.value)

    @property
    def dtype(self) -> np.dtype:
        return _dtype(self.value)

    @property
    def _global(self) -> bool:
        return not self._trace.local

    def _concrete_value(self) -> Any:
        if self._global:
            raise self._value_dependent(_reader())
        return self.value

    def _value_dependent(self, what: str) -> ValueDependentError:
        return ValueDependentError(
            f"{what} read the numbers of a traced value (backend 'sparsity'), but a global sparsity "
            "pattern holds for every input and cannot depend on them. Use local=True for the pattern "
            "at this point, or choose between values with anp.where (both branches are kept); an index "
            "must come from something other than the differentiated or float arguments."
        )

    # --- comparisons: a traced boolean array in a global trace (where keeps both branches) ---------
    def _compare(self, other: Any, ufunc: Callable[..., Any]) -> Any:
        return _predicate(self._trace, ufunc, (self, other))

    def __lt__(self, other):
        return self._compare(other, np.less)

    def __le__(self, other):
        return self._compare(other, np.less_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    __hash__ = Tracer.__hash__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if self._global and method == "__call__" and not kwargs and _is_predicate(ufunc):
            return _predicate(self._trace, ufunc, inputs)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    # logical operators on comparisons: (x > 0) & (x < 1), ~(x > 0)
    def __invert__(self):
        return _predicate(self._trace, np.invert, (self,))

    def __and__(self, other):
        return _predicate(self._trace, np.bitwise_and, (self, other))

    def __rand__(self, other):
        return _predicate(self._trace, np.bitwise_and, (other, self))

    def __or__(self, other):
        return _predicate(self._trace, np.bitwise_or, (self, other))

    def __ror__(self, other):
        return _predicate(self._trace, np.bitwise_or, (other, self))

    def __xor__(self, other):
        return _predicate(self._trace, np.bitwise_xor, (self, other))

    def __rxor__(self, other):
        return _predicate(self._trace, np.bitwise_xor, (other, self))

    def any(self, *args: Any, **kwargs: Any) -> Any:
        return self._number("x.any()") if self._global else super().any(*args, **kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        return self._number("x.all()") if self._global else super().all(*args, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        try:
            return super().__array_function__(func, types, args, kwargs)
        except UnsupportedFunctionError:
            # np.all(x > 0), np.any, np.count_nonzero: no op, and one would decide by hidden numbers
            if self._global and self.dtype == bool:
                raise self._value_dependent(f"np.{getattr(func, '__name__', func)}(x > ...)") from None
            raise

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._global:
            raise self._value_dependent("np.asarray(x) (or np.array(x), a NumPy call that converts x)")
        return super().__array__(dtype, copy)

    # --- conversions to numbers: in a global trace, they read what the pattern must not -------------
    def _number(self, what: str) -> Any:
        if self._global:
            raise self._value_dependent(what)
        raise conversion_error(self, what)

    def __float__(self) -> float:
        return self._number("float(x)")

    def __int__(self) -> int:
        return self._number("int(x)")

    def __index__(self) -> int:
        return self._number("operator.index(x) (x as an index, range(x), a slice bound)")

    def __complex__(self) -> complex:
        return self._number("complex(x)")

    def item(self, *index: Any) -> Any:
        return self._number("x.item()")

    def tolist(self) -> Any:
        return self._number("x.tolist()")

    def __repr__(self) -> str:
        return f"SparsityTracer(shape={self.shape}, dtype={self.dtype}, nnz={self.pattern.nnz})"


def _is_predicate(ufunc: Any) -> bool:
    return all(t.endswith("?") for t in ufunc.types if "O" not in t)


def _predicate(trace: SparsityTrace, ufunc: Callable[..., Any], inputs: Sequence[Any]) -> Any:
    """A comparison (or logical op) of traced values: in a global trace a traced boolean array that
    depends on no element and hides its numbers (so nothing can decide by them, and rules see it as
    Unknown: where keeps both branches); in a local trace the plain booleans."""
    values = [x.value if isinstance(x, SparsityTracer) and x._trace is trace else concrete(x) for x in inputs]
    result = ufunc(*map(_plain, values))
    return result if trace.local else trace.constant(np.asarray(result))


def _reader() -> str:
    """What asked for a hidden value: the Tracer method (or NumPy protocol) below `concrete`."""
    frame = sys._getframe(2)
    while frame is not None and (
        frame.f_code.co_name in ("concrete", "_concrete_value") or "<" in frame.f_code.co_name
    ):
        frame = frame.f_back  # past concrete and the comprehensions that call it
    name = frame.f_code.co_name if frame is not None else "?"
    func = frame.f_locals.get("func") if name in ("function_call", "plain_index") else None
    if func is not None:
        return f"np.{getattr(func, '__name__', func)}(x) (an index has no derivative, but which one depends on x)"
    return _READERS.get(name, f"x.{name}()")


# --- tracing f ------------------------------------------------------------------------------


def columns(start: int, size: int, n: int) -> sparse.csr_array:
    """The pattern of a differentiated argument whose elements are columns start..start+size."""
    return sparse.csr_array(
        (np.ones(size, dtype=bool), np.arange(start, start + size), np.arange(size + 1)), shape=(size, n)
    )


def differentiated(x: Any, argnum: int) -> np.ndarray:
    """The argument at argnum as a float ndarray, or a typed error."""
    array = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if array.dtype.kind == "c":
        raise ComplexValueError(
            f"argument {argnum} is complex ({array.dtype}): the sparsity backend gives patterns of "
            "derivatives with respect to real arguments; pass its real and imaginary parts as two "
            "float arguments (anp.real, anp.imag) and differentiate with respect to each."
        )
    if array.dtype.kind != "f":
        raise InvalidInputError(
            f"argument {argnum} has dtype {array.dtype}: a pattern is taken with respect to a float "
            "argument (integers have no derivative); pass it as np.asarray(x, float), or leave it "
            "out of argnums."
        )
    return array


def _is_float(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex)):
        return True
    dtype = getattr(x, "dtype", None)
    return dtype is not None and isinstance(x, (np.ndarray, np.generic)) and dtype.kind in "fc"


def trace(
    f: Callable[..., Any],
    args: tuple,
    argnums: Sequence[int],
    *,
    local: bool = False,
    hessian: bool = False,
    constants: list | None = None,
) -> tuple[Any, Any, Any, list[int]]:
    """Run f on sparsity tracers: (f's value, P of its output (out.size, n), H (n, n) or None,
    the sizes of the differentiated arguments, whose columns follow one another in P). `constants`,
    if given, receives (what, object, copy) for each array, list or dict f's ops read as a constant."""
    args = list(args)
    for i in argnums:
        args[i] = differentiated(args[i], i)
    sizes = [int(args[i].size) for i in argnums]
    n = sum(sizes)
    with new_trace(SparsityTrace, n=n, local=local, hessian=hessian) as sparsity:
        inputs, start = list(args), 0
        for i, size in zip(argnums, sizes):
            inputs[i] = SparsityTracer(args[i], columns(start, size, n), None, sparsity)
            start += size
        if not local:  # a float argument not differentiated may change: the pattern must not read it
            for i, a in enumerate(args):
                if i not in argnums and _is_float(a):
                    inputs[i] = sparsity.constant(np.asarray(a))
        out = f(*inputs)
    if constants is not None:
        constants.extend(sparsity.constants.values())
    check_output(out, "sparsity", scalar=False)
    if isinstance(out, SparsityTracer) and out._trace is sparsity:
        second = sparsity.second
        return out.value, out.pattern, None if second is None else second.hessian(out.hessian), sizes
    if isinstance(out, Tracer):
        raise InvalidInputError(
            "f returned a value traced by another transformation than the sparsity backend's; "
            "return an array computed from f's arguments"
        )
    size = int(np.size(out))
    return out, patterns.empty(size, n), patterns.empty(n, n) if hessian else None, sizes
