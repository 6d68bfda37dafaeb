"""What a callee of f is, decided at transform time: a tier-1 template op, a tier-2 op, a user
function to transform in turn, or a call no derivative flows through (`callee_kind`); and the op a
Python operator stands for (`operator_op`).

Tier 1 ("template"): an op whose partial derivatives adcore.extend.elementwise_partials.PARTIALS
states; its derivative is written inline as an expression (templates.py). Tier 2 ("op"): any other
op, NumPy function adcore maps to ops, or Python function over ops; the generated code calls it
through the tape or the dual numbers at run time (tier2.call_vjp / call_jvp), so its derivative
is the registered rules' by construction. A dynamic callee (a local holding a function or a bound
method) is resolved at run time the same way.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import math
import operator
import types
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from adcore import numpy_dispatch, ops
from adcore.spec import OpSpec
from adcore_source.templates import template_op

Kind = Literal["template", "op", "user", "inactive"]


@dataclass(frozen=True)
class Callee:
    """What a callee is to the emitters.

    - kind "template": `value` is the op's name (in PARTIALS); call f's callee for the value and
      write the derivative from templates.py.
    - kind "op": `value` names the op or function; `y, pullback = call_vjp(fn, args, kwargs)`.
    - kind "user": `value` is the Python function to transform recursively.
    - kind "inactive": `value` is the object; it runs as is and its result carries no derivative.
      `takes_active`: an active argument is fine (len, np.shape, np.zeros_like, print, floor);
      False: an active argument must be refused, for the reason `why` (it would drop the derivative).
    `fn` is what tier 2 differentiates: the callee itself, or adcore's stand-in for one that does
    not dispatch on traced values (np.array -> adcore.numpy.array, math.hypot -> np.hypot).
    `masks`: a tier-2 pullback of it may return cotangents with structural zeros (runtime.Masked).
    """

    kind: Kind
    value: Any
    fn: Any = None
    takes_active: bool = True
    why: str = ""
    masks: bool = False


# ops whose reverse rules return structural zeros (adcore_reverse's defvjp_steps and where)
MASKING_OPS = frozenset(
    {"abs", "fabs", "maximum", "minimum", "fmax", "fmin", "clip", "copysign", "heaviside", "nan_to_num",
     "where", "relu", "max", "min", "amax", "amin", "ptp", "nanmax", "nanmin", "nansum", "nanmean",
     "median", "quantile", "percentile", "solve_triangular", "cho_solve"}
)  # fmt: skip

_PYTHON_OPERATORS: dict[type, str] = {
    ast.Add: "add",
    ast.Sub: "subtract",
    ast.Mult: "multiply",
    ast.Div: "divide",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "mod",
    ast.Pow: "power",
    ast.MatMult: "matmul",
    ast.USub: "negative",
}
_OPERATOR_FUNCTIONS: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.MatMult: operator.matmul, ast.USub: operator.neg, ast.UAdd: operator.pos,
    ast.Invert: operator.invert, ast.Not: operator.not_, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}  # fmt: skip


def operator_op(op: ast.operator | ast.unaryop) -> str | None:
    """The op a Python operator stands for (Add -> "add", MatMult -> "matmul", USub -> "negative"),
    None for one with no op: `+x` (the value itself), `not`, `~` and the bitwise ones (integers)."""
    return _PYTHON_OPERATORS.get(type(op))


def operator_function(op: ast.operator | ast.unaryop) -> Any:
    """The `operator` module's function for a Python operator (operator.add for Add): the callee
    for a tier-2 call of it (call_vjp(operator.pos, (x,), {}))."""
    return _OPERATOR_FUNCTIONS[type(op)]


def operator_callee(op: ast.operator | ast.unaryop, nargs: int | None = None) -> Callee:
    """callee_kind of the op a Python operator stands for; a tier-2 call of the operator's
    function when it has none (`+x`), inactive for `not` and the bitwise ones."""
    name = operator_op(op)
    if name is not None:
        spec = ops.registry().op(name)
        callee = _op_callee(spec, operator_function(op), nargs, ())
        # tier 2 calls the op itself (x @ w is matmul's value), whose rules then apply directly
        return Callee("op", name, spec, masks=callee.masks) if callee.kind == "op" else callee
    if isinstance(op, ast.UAdd):
        return Callee("op", "positive", operator.pos)
    return Callee("inactive", operator_function(op), takes_active=False, why=_INTEGER_OPERATOR)


_INTEGER_OPERATOR = "an integer or boolean operator (not, ~, &, |, ^, <<, >>) has no derivative"


def callee_kind(obj: Any, nargs: int | None = None, keywords: Any = ()) -> Callee:
    """What `obj`, a callee found in f's namespace, is. With `nargs` and `keywords` (the call's
    positional count and keyword names), a template op called any other way than with exactly
    its inputs (np.sin(x, dtype=...), a where= keyword) is tier 2 instead."""
    keywords = tuple(keywords)
    if isinstance(obj, OpSpec):
        return _op_callee(obj, obj, nargs, keywords)
    stand_in = _stand_in(obj, nargs)
    if stand_in is not None:
        return stand_in
    if _is_numpy_function(obj):
        return _numpy_callee(obj, nargs, keywords)
    if isinstance(obj, np.ufunc):
        op = numpy_dispatch.numpy_op(obj)
        if op is not None:
            return _op_callee(op, obj, nargs, keywords)
        if numpy_dispatch.is_predicate(obj):
            return Callee("inactive", obj)
        return _refused(obj, f"{numpy_dispatch.ufunc_name(obj)} has no adcore op")
    if isinstance(obj, functools.partial):
        inner = callee_kind(obj.func)
        if inner.kind == "user":
            return Callee("user", obj)  # the bound arguments are the driver's (generate.py)
        if inner.kind == "inactive":
            return Callee("inactive", obj, takes_active=inner.takes_active, why=inner.why)
        return Callee(
            "op", inner.value if isinstance(inner.value, str) else _name(obj.func), obj, masks=inner.masks
        )
    if type(obj).__module__ == "adcore.custom":  # custom_vjp / custom_jvp: an op of the registry
        return Callee("op", _name(obj), obj)
    if getattr(builtins, getattr(obj, "__name__", ""), None) is obj:
        return _builtin_callee(obj)
    if isinstance(obj, type):
        return _class_callee(obj)
    if isinstance(obj, types.MethodType | types.BuiltinMethodType):
        owner = obj.__self__
        if isinstance(owner, np.ndarray | np.generic | float | complex):
            return Callee("op", _name(obj), obj)  # a method of a constant array: the tape decides
        return _refused(obj, f"the bound method {_name(obj)} of a {type(owner).__name__} object")
    if isinstance(obj, types.FunctionType):
        return _function_callee(obj)
    return _refused(obj, f"{_name(obj)}, a {type(obj).__name__} object with no adcore op")


def _op_callee(op: OpSpec, fn: Any, nargs: int | None, keywords: tuple) -> Callee:
    rules = ops.registry().rules["vjp"].get(op.name)
    if isinstance(rules, tuple) and rules and all(r is None for r in rules):
        return Callee("inactive", fn)  # floor, sign, round, ...: no derivative flows
    exact = (nargs is None or nargs == op.nin) and not keywords
    if template_op(op.name) and exact:
        return Callee("template", op.name, fn)
    return Callee("op", op.name, fn, masks=op.name in MASKING_OPS)


def _refused(obj: Any, why: str) -> Callee:
    return Callee("inactive", obj, takes_active=False, why=why)


def _name(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    return f"{module}.{name}" if module and module != "builtins" else name


def _is_numpy_function(obj: Any) -> bool:
    """A function of NumPy's (np.sum, np.linalg.eigh, np.zeros) or adcore.numpy's wrapper of one."""
    if isinstance(obj, type) or isinstance(obj, np.ufunc):
        return False
    module = getattr(obj, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.")


# NumPy functions whose result never carries a derivative, whatever their arguments
_NUMPY_READS = {
    np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj, np.zeros_like,
    np.ones_like, np.empty_like, np.isscalar, np.array_equal, np.allclose, np.isclose, np.may_share_memory,
    np.broadcast_shapes, np.can_cast, np.promote_types, np.issubdtype, np.count_nonzero,
}  # fmt: skip
# NumPy functions that build constant arrays from shapes, dtypes and plain numbers
_NUMPY_MAKERS = {
    np.zeros, np.ones, np.empty, np.eye, np.identity, np.arange, np.linspace, np.logspace,
    np.geomspace, np.tri, np.indices, np.meshgrid,
}  # fmt: skip


def _numpy_callee(obj: Any, nargs: int | None, keywords: tuple) -> Callee:
    if obj in _NUMPY_READS or obj in numpy_dispatch.INDEX_FUNCTIONS:
        return Callee("inactive", obj)
    if obj is np.where and nargs == 1 and not keywords:  # the indices where a condition holds
        return Callee("inactive", obj)
    try:
        op = numpy_dispatch.numpy_op(obj)
    except TypeError:  # unhashable
        op = None
    if op is not None:
        return _op_callee(op, obj, nargs, keywords)
    if obj in ops.NUMPY_FUNCTIONS:  # Python over ops (np.linalg.eigh, np.split, ...)
        return Callee("op", _name(obj), obj)
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is not None and _is_numpy_function(wrapped):  # adcore.numpy's wrappers (anp.linalg.norm)
        inner = _numpy_callee(wrapped, nargs, keywords)
        if inner.kind != "inactive":
            return Callee(inner.kind, inner.value, obj, masks=inner.masks)
    if obj in _NUMPY_MAKERS:
        return _refused(
            obj, f"np.{obj.__name__} makes a constant array: its arguments are shapes and numbers"
        )
    return _refused(obj, f"{_name(obj)} has no adcore op")


# Callees adcore differentiates through a stand-in that takes traced values (the stand-in
# computes the same value): what NumPy cannot dispatch on a traced value, and `math`'s functions
_STAND_INS: dict[Any, tuple[str, Any]] = {}


def _stand_ins() -> dict[Any, tuple[str, Any]]:
    if not _STAND_INS:
        import adcore.numpy as anp

        for name in ("array", "asarray", "full", "full_like"):
            _STAND_INS[getattr(np, name)] = (name, getattr(anp, name))
        for name, op in _MATH_OPS.items():
            if hasattr(math, name):
                _STAND_INS[getattr(math, name)] = (op, ops.registry().op(op))
    return _STAND_INS


# math's functions that are an op's (on a float, the same value up to rounding)
_MATH_OPS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "atan2": "arctan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "exp": "exp", "expm1": "expm1", "exp2": "exp2",
    "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10", "sqrt": "sqrt", "cbrt": "cbrt",
    "fabs": "fabs", "hypot": "hypot", "pow": "power",
}  # fmt: skip
# math's functions with no derivative (integer-valued or predicates)
_MATH_READS = {"floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "isclose", "copysign_sign"}


def _stand_in(obj: Any, nargs: int | None) -> Callee | None:
    try:
        entry = _stand_ins().get(obj)
    except TypeError:  # unhashable
        return None
    if entry is None:
        if (
            getattr(obj, "__module__", None) == "math"
            or getattr(math, getattr(obj, "__name__", ""), None) is obj
        ):
            if obj.__name__ in _MATH_READS:
                return Callee("inactive", obj)
            return _refused(
                obj, f"math.{obj.__name__} takes plain floats; use np.{obj.__name__} or an adcore op"
            )
        return None
    name, stand_in = entry
    if isinstance(stand_in, OpSpec):  # math.sin: the op's template, the value computed by math
        if nargs is not None and nargs != stand_in.nin:
            return _refused(obj, f"math.{obj.__name__} with {nargs} arguments (write it with np functions)")
        callee = _op_callee(stand_in, obj, stand_in.nin, ())
        if callee.kind == "op":
            return Callee("op", name, stand_in, masks=callee.masks)
        return Callee(callee.kind, callee.value, obj, callee.takes_active, callee.why)
    return Callee("op", name, stand_in)


# builtins that only read (their result carries no derivative whatever they are given)
_BUILTIN_READS = {
    len, isinstance, issubclass, print, id, hash, callable, repr, format, range, hasattr,
    getattr, ascii, any, all, chr, ord, bin, hex, oct, next,
}  # fmt: skip
# builtins differentiated by the tape at run time (their arguments may be active values)
_BUILTIN_OPS = {abs, sum, min, max, pow, round, divmod}


def _builtin_callee(obj: Any) -> Callee:
    if obj in _BUILTIN_READS:
        return Callee("inactive", obj)
    if obj in _BUILTIN_OPS:
        masks = obj in (abs, min, max)
        return Callee("op", obj.__name__, obj, masks=masks)
    if obj in (zip, enumerate, reversed, map, filter, iter, sorted):
        return _refused(obj, f"{obj.__name__}() of active values (loop over indices instead)")
    if isinstance(obj, type):
        return _class_callee(obj)
    return _refused(obj, f"the builtin {obj.__name__}()")


def _class_callee(cls: type) -> Callee:
    if cls in (list, tuple, dict) or (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return Callee("op", cls.__name__, cls)  # a container of the values: the tape rebuilds it
    if issubclass(cls, BaseException) or cls in (range, slice, type, object, str):
        return Callee("inactive", cls)
    if cls in (float, int, complex, bool) or issubclass(cls, np.generic | np.dtype):
        return _refused(cls, f"{cls.__name__}() converts to a plain number and drops the derivative")
    return _refused(cls, f"the class {_name(cls)} (an object holding active values)")


def _function_callee(fn: types.FunctionType) -> Callee:
    module = fn.__module__ or ""
    root = module.split(".")[0]
    if root in (
        "adcore",
        "adcore_source",
        "adcore_reverse",
        "adcore_forward",
        "adcore_scipy",
    ) or root.startswith("adcore_"):
        return Callee("op", _name(fn), fn)  # Python over ops: the tape differentiates it
    if root == "scipy":
        public = ".".join(p for p in module.split(".")[1:] if not p.startswith("_"))
        return _refused(
            fn,
            f"{_name(fn)}: SciPy's functions other than its ufuncs take plain arrays; call "
            f"adcore_scipy.{public}.{fn.__name__} instead (the adcore-scipy plugin, named as SciPy's)",
        )
    if root == "numpy":
        return _refused(fn, f"{_name(fn)} has no adcore op")
    try:
        inspect.getsource(fn)
    except (OSError, TypeError):
        return Callee("op", _name(fn), fn)  # no source to read: the tape differentiates it
    return Callee("user", fn)
