"""Tracing f into sympy: Sym, a traced array whose elements are sympy expressions.

In the full mode every element of every array argument is its own symbol, and each op
builds its output from its inputs' expressions with its `sympy` rule. Each element of an
op's result that is not already a symbol or a number is then bound to a fresh symbol
(t0, t1, ...: the trace's `definitions`, a program of assignments), so every expression
sympy builds or differentiates has symbols for arguments: its automatic evaluation and
assumption queries stay small however deep f is, and the derivative takes time linear in
the number of traced ops (a WorkBudget counts it). In the elementwise
mode (a loss over many points) one symbol stands for every element of an argument and
each Sym carries one expression for all of its elements; ops must then be elementwise,
except for sums and means over everything, which become symbols S0, S1, ... The trace
stops with NotElementwise at anything else, and the backend traces again in full.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import sympy as sp

from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, Tracer
from adcore.errors import UnsupportedByBackendError
from adcore.extend import each, reduced_axes
from adcore.plugins import loaded_registry
from adcore_symbolic.budget import WorkBudget, tree_size
from adcore_symbolic.errors import SymbolicComplexError, SymbolicControlFlowError
from adcore_symbolic.functions import stop_gradient

# The ops whose sympy rules are arithmetic and moving elements about (sympy_rules.py)
UNEVALUATED = frozenset(
    "add subtract multiply divide negative square reciprocal matmul sum mean prod transpose reshape "
    "broadcast_to expand_dims squeeze getitem scatter_add concatenate stack".split()
)


class NotElementwise(Exception):
    """f did something the elementwise mode cannot follow (`what`); trace it in full."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def real_symbol(name: str) -> sp.Symbol:
    # real: so that d|x|/dx is sign(x) and comparisons make sense
    return sp.Symbol(name, real=True)


class Sym(ArrayTracer):
    """A traced array: `value` is an object array of sympy expressions, one per element,
    or in the elementwise mode a 0-d one standing for every element of `shape`."""

    __slots__ = ("_shape", "_dtype", "after_sum")

    def __init__(
        self, expr: np.ndarray, shape: tuple, dtype: Any, trace: SymbolicTrace, after_sum=False
    ) -> None:
        self.value = expr
        self._shape = tuple(shape)
        self._dtype = np.dtype(dtype)
        self._trace = trace
        self.after_sum = after_sum  # elementwise mode: depends on one of the sums S0, S1, ...

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def _concrete_value(self) -> Any:
        raise SymbolicControlFlowError()

    # comparisons and logic build sympy booleans, for where (Piecewise)
    def __lt__(self, other):
        return self._trace.relate(operator.lt, self, other)

    def __le__(self, other):
        return self._trace.relate(operator.le, self, other)

    def __gt__(self, other):
        return self._trace.relate(operator.gt, self, other)

    def __ge__(self, other):
        return self._trace.relate(operator.ge, self, other)

    def __eq__(self, other):
        return self._trace.relate(sp.Eq, self, other)

    def __ne__(self, other):
        return self._trace.relate(sp.Ne, self, other)

    __hash__ = Tracer.__hash__

    def __and__(self, other):
        return self._trace.relate(sp.And, self, other)

    __rand__ = __and__

    def __or__(self, other):
        return self._trace.relate(sp.Or, self, other)

    __ror__ = __or__

    def __invert__(self):
        return self._trace.relate(sp.Not, self)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        relation = _RELATIONS.get(ufunc)
        if relation is not None and method == "__call__" and not kwargs:
            return self._trace.relate(relation, *inputs)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)


_RELATIONS = {
    np.less: operator.lt,
    np.less_equal: operator.le,
    np.greater: operator.gt,
    np.greater_equal: operator.ge,
    np.equal: sp.Eq,
    np.not_equal: sp.Ne,
    np.logical_and: sp.And,
    np.logical_or: sp.Or,
    np.logical_not: sp.Not,
    np.bitwise_and: sp.And,  # & | ~ on boolean arrays
    np.bitwise_or: sp.Or,
    np.invert: sp.Not,
}


class SymbolicTrace(Trace):
    """One symbolic transformation: each op on its Syms builds sympy expressions, each bound
    to its own symbol in `definitions` (in order; `origin` names the op that made each).

    Elementwise mode: `constants` are the arrays f used that are not arguments, each
    given a symbol; `sums` are (S, the expression summed, its shape, its dtype), one per
    reduction to a scalar. `budget` counts the nodes of every definition, so that a trace
    too large to differentiate in reasonable time stops at the op that made it so.
    """

    def __init__(self, elementwise: bool, budget: WorkBudget, taken: set[str]) -> None:
        self.rules = loaded_registry().rules["sympy"]
        self.elementwise = elementwise
        self.budget = budget
        self.definitions: list[tuple[sp.Symbol, Any]] = []
        self.origin: dict[sp.Symbol, str] = {}
        self._defined: dict[Any, sp.Symbol] = {}  # expression -> its symbol: one definition each
        self._definition_names = sp.numbered_symbols(
            "t", cls=sp.Symbol, real=True, exclude=[real_symbol(n) for n in taken]
        )
        self.constants: list[tuple[sp.Symbol, np.ndarray]] = []
        self.sums: list[tuple[sp.Symbol, Any, tuple[int, ...], np.dtype]] = []
        self._constant_symbols: dict[int, tuple[Any, np.ndarray]] = {}
        self._names = sp.numbered_symbols(
            "const", cls=sp.Symbol, real=True, exclude=[real_symbol(n) for n in taken]
        )
        self._sum_names = sp.numbered_symbols(
            "S", cls=sp.Symbol, real=True, exclude=[real_symbol(n) for n in taken]
        )

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        for a in args:
            if a.__class__ is not float and a.__class__ is not int and _is_complex(a):
                raise SymbolicComplexError(op.name, f"a complex value ({_dtype_of(a)})")
        dtype = params.get("dtype")  # x.astype(complex), sum(x, dtype=complex): a complex result of real x
        if dtype is not None and np.dtype(dtype).kind == "c":
            raise SymbolicComplexError(op.name, f"dtype={np.dtype(dtype)}, a complex result")
        rule = self.rules.get(op.name) or loaded_registry().rule("sympy", op, "symbolic")
        if rule is None:  # a traceable op with no sympy rule: trace its body, op by op
            return op.impl(*args, **params)
        if self.elementwise and not op.elementwise:
            return self._reduce_everything(op, args, params)
        nondiff = [i for i in range(len(args)) if not op.is_differentiable(i)]
        typed = [a for i, a in enumerate(args) if op.is_differentiable(i)] or args
        return self.apply(rule, args, params, op.name, _result_type(typed), nondiff)

    def relate(self, relation: Any, *args: Any) -> Sym:
        """A comparison or logical op on Syms: a Sym of sympy booleans."""
        return self.apply(lambda *xs: each(relation, *xs), args, {}, relation.__name__, np.bool_, [])

    def apply(self, rule: Any, args: tuple, params: dict, name: str, dtype: Any, nondiff: list[int]) -> Sym:
        inputs = [self._input(a) for a in args]
        for i in nondiff:
            if isinstance(args[i], Sym) and args[i].dtype.kind == "f":
                inputs[i] = each(stop_gradient, inputs[i])  # the op declares no derivative here
        # arithmetic unevaluated: its inputs are symbols, so sympy's evaluation would only sort,
        # flatten and ask assumptions (a millisecond a node: minutes for a small MLP). Other
        # rules evaluate, as their functions' eval may simplify (power with a number exponent)
        with sp.evaluate(name not in UNEVALUATED):
            out = np.asarray(rule(*inputs, **params), dtype=object)
        after_sum = any(getattr(a, "after_sum", False) for a in args)
        if self.elementwise:
            shape = np.broadcast_shapes(*(np.shape(a) for a in args))
            if out.shape != ():
                raise NotElementwise(f"op {name!r} with an array param")
            if after_sum and int(np.prod(shape)) > 1:
                raise NotElementwise(f"op {name!r} combining a sum with an array")
        else:
            shape = out.shape
        if np.dtype(dtype) != np.bool_:  # sympy booleans stay inline, in the Piecewise they choose
            out = self._define(out, name)
        return Sym(out, shape, dtype, self, after_sum)

    def _define(self, out: np.ndarray, name: str) -> np.ndarray:
        """out with each compound expression replaced by its symbol, defined now if it is new."""
        defined = np.empty(out.shape, dtype=object)
        for index, expr in np.ndenumerate(out):
            if expr is sp.I:
                raise SymbolicComplexError(name, "a complex result (the imaginary unit)")
            if isinstance(expr, sp.Expr) and not expr.is_Atom:
                symbol = self._defined.get(expr)
                if symbol is None:
                    if expr.has(sp.I):  # a complex result of real inputs (an FFT's rule)
                        raise SymbolicComplexError(name, "a complex result of real inputs")
                    self.budget.charge(tree_size(expr), name, "tracing")
                    symbol = next(self._definition_names)
                    self.definitions.append((symbol, expr))
                    self.origin[symbol] = name
                    self._defined[expr] = symbol
                expr = symbol
            defined[index] = expr
        return defined

    def _input(self, a: Any) -> Any:
        """An op input as the rule receives it: expressions for a Sym, else the constant."""
        if isinstance(a, Sym) and a._trace is self:
            return a.value
        if isinstance(a, Tracer):
            raise UnsupportedByBackendError(
                f"backend 'symbolic': f uses a value another transformation is tracing "
                f"({type(a).__name__}) without receiving it as an argument; pass it to f as an argument"
            )
        if not self.elementwise or np.ndim(a) == 0:
            return (
                np.asarray(a, dtype=object) if np.ndim(a) else np.asarray(np.asarray(a).item(), dtype=object)
            )
        return np.asarray(self._constant(a), dtype=object)

    def _constant(self, array: Any) -> Any:
        """The symbol standing for each element of a constant array (elementwise mode)."""
        known = self._constant_symbols.get(id(array))
        if known is None:
            symbol = next(self._names)
            self.constants.append((symbol, np.asarray(array)))
            # a boolean array (a `where` condition) takes part as a sympy boolean
            known = (symbol > 0 if np.asarray(array).dtype == bool else symbol, array)
            self._constant_symbols[id(array)] = known
        return known[0]

    def _reduce_everything(self, op: Any, args: tuple, params: dict) -> Sym:
        """sum or mean over every axis, in the elementwise mode: a new symbol S for the sum."""
        x = args[0] if args else None
        axis = params.get("axis")
        if op.name not in ("sum", "mean") or not isinstance(x, Sym) or len(args) != 1:
            raise NotElementwise(f"op {op.name!r}")
        if params.get("where", True) is not True or params.get("dtype") is not None:
            raise NotElementwise(f"op {op.name!r} with where= or dtype=")
        if set(reduced_axes(x.ndim, axis)) != set(range(x.ndim)):
            raise NotElementwise(f"op {op.name!r} over some axes")
        shape = (1,) * x.ndim if params.get("keepdims") else ()
        if x.size == 1:
            return Sym(x.value, shape, x.dtype, self, x.after_sum)
        if x.after_sum:
            raise NotElementwise(f"op {op.name!r} of an expression holding a sum")
        S = next(self._sum_names)
        self.sums.append((S, x.value.item(), x.shape, x.dtype))
        expr = S if op.name == "sum" else S / x.size
        return Sym(np.asarray(expr, dtype=object), shape, x.dtype, self, after_sum=True)


def _is_complex(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype).kind == "c"
    return isinstance(value, complex) or (isinstance(value, (list, tuple)) and np.iscomplexobj(value))


def _dtype_of(value: Any) -> str:
    return str(value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype)


def _result_type(args: Any) -> np.dtype:
    """The dtype NumPy would give the op's output: Syms by their dtype, Python numbers weakly."""
    return np.result_type(*(a.dtype if isinstance(a, Tracer) else a for a in args))
