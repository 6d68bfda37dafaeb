"""What a NumPy function or ufunc called on a traced value is: the op registered for it, a Python
function over ops (`adcore.ops.NUMPY_FUNCTIONS`), a plain answer (indices, shapes, predicates), or
a typed refusal naming it. `ArrayTracer.__array_ufunc__`/`__array_function__` hand their calls here;
the refusals of conversions (`conversion_error`) and of ndarray's methods with no op live here too.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer, concrete, stand_in, traced_by
from adcore.errors import InvalidValueError, TracerConversionError, UnsupportedFunctionError

# NumPy functions that only read shape or dtype: they answer from the concrete value.
_SHAPE_FUNCTIONS = {np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj}
# NumPy functions that build a new constant array from a prototype's shape and dtype.
_LIKE_FUNCTIONS = {np.zeros_like, np.ones_like, np.empty_like, np.full_like}


def plain_index(func: Any, *args: Any, **kwargs: Any) -> Any:
    """func (an index function: argmax, ...) of the plain values; NumPy's ValueError (argmax of an
    empty array) as an InvalidValueError, still a ValueError, naming the function."""
    try:
        return func(*(concrete(a) for a in args), **{k: concrete(v) for k, v in kwargs.items()})
    except ValueError as e:
        shapes = [np.shape(concrete(a)) for a in args if isinstance(a, Tracer)]
        raise InvalidValueError(
            f"np.{func.__name__} of a traced value of shape {shapes[0] if shapes else '?'}: {e}; an empty "
            "array (or axis) has no such index: check its size first"
        ) from e


# NumPy functions whose answer is an index, with no derivative: on a traced value, the plain one.
INDEX_FUNCTIONS = {
    np.argsort,
    np.argmax,
    np.argmin,
    np.nonzero,
    np.argwhere,
    np.flatnonzero,
    np.searchsorted,
}

# ufunc.reduce and ufunc.accumulate of these ufuncs are these reductions and cumulative ops
_UFUNC_REDUCTIONS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}
_UFUNC_ACCUMULATIONS = {np.add: "cumsum", np.multiply: "cumprod"}


def is_predicate(ufunc: Any) -> bool:
    return all(t.endswith("?") for t in ufunc.types if "O" not in t)


def _ufunc_method(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """np.add.reduce(x) is sum(x, axis=0), np.add.accumulate cumsum, np.multiply.outer(a, b) is
    multiply(a[..., None, ...], b): the ops that stand for a ufunc's methods, or NotImplemented."""
    if method == "outer":
        op = ops.registry().numpy_op(ufunc)
        if kwargs or len(inputs) != 2 or not (is_predicate(ufunc) or (op is not None and op.elementwise)):
            return NotImplemented
        a, b = inputs
        a_shape = np.shape(a) if not isinstance(a, Tracer) else a.shape
        b_ndim = np.ndim(b) if not isinstance(b, Tracer) else b.ndim
        spread = a_shape + (1,) * b_ndim
        if op is None:  # a comparison's outer: plain booleans
            return ufunc.outer(concrete(a), concrete(b))
        a = ops.reshape(a, shape=spread) if isinstance(a, Tracer) else np.reshape(a, spread)
        return op(a, b)
    table = _UFUNC_REDUCTIONS if method == "reduce" else _UFUNC_ACCUMULATIONS
    name = table.get(ufunc)
    if name is None or len(inputs) != 1:
        return NotImplemented
    allowed = {"axis", "keepdims", "dtype"} if method == "reduce" else {"axis", "dtype"}
    if not set(kwargs) <= allowed:
        return NotImplemented
    params = {"axis": kwargs.get("axis", 0)}  # a ufunc method's default axis is 0, not None
    if kwargs.get("keepdims"):
        params["keepdims"] = True
    if kwargs.get("dtype") is not None:
        if name in ("sum", "cumsum", "cumprod"):
            params["dtype"] = kwargs["dtype"]
        else:
            same_dtype(inputs[0], f"{ufunc.__name__}.{method}", kwargs["dtype"])
    return getattr(ops, name)(inputs[0], **params)


def ufunc_name(ufunc: Any) -> str:
    """A ufunc by the module that exposes it: numpy.exp, scipy.special.erfc (a ufunc has no
    __module__, so its module is found by identity among NumPy's and the imported SciPy's)."""
    name = ufunc.__name__
    if getattr(np, name, None) is ufunc:
        return f"numpy.{name}"
    candidates = sorted(
        module
        for module in list(sys.modules)
        if module.split(".")[0] in ("scipy", "numpy")
        and not any(p.startswith("_") for p in module.split("."))
    )
    for module in sorted(candidates, key=lambda m: (m.count("."), m)):
        if getattr(sys.modules.get(module), name, None) is ufunc:
            return f"{module}.{name}"
    return f"the ufunc {name}"


def same_dtype(value: Any, what: str, dtype: Any) -> None:
    """A dtype= that adcore's op does not take: fine when it changes nothing, else refused."""
    if dtype is not None and np.dtype(dtype) != np.result_type(value):
        raise UnsupportedFunctionError(
            f"{what}(..., dtype={np.dtype(dtype)}) of a {np.result_type(value)} traced value: adcore's op has "
            "no dtype param. Leave dtype out; pass f's arguments in the dtype it should compute in, or "
            "cast with x.astype(float dtype) first."
        )


# NumPy functions that are a method of the traced value: np.ravel(x) is x.ravel().
_METHOD_FUNCTIONS = {np.ravel: "ravel", np.copy: "copy"}
if hasattr(np, "astype"):  # NumPy 2.1+
    _METHOD_FUNCTIONS[np.astype] = "astype"


def unsupported(name: str) -> UnsupportedFunctionError:
    return UnsupportedFunctionError(
        f"{name} has no adcore op, so it cannot be differentiated. Use an adcore.numpy "
        "function instead, or register an op for it: an OpSpec with numpy=(the function,) "
        "from a plugin's adcore_register_ops hook, and its rules from adcore_register_rules."
    )


@functools.cache
def _signature(func: Any) -> inspect.Signature:
    return inspect.signature(func)


@functools.cache
def _layout(func: Any) -> tuple[tuple[str, ...], int, frozenset, frozenset] | None:
    """NumPy's signature as (parameter names in order, how many may be positional, the
    positional-only ones, the required ones); None if it has *args or **kwargs."""
    parameters = list(_signature(func).parameters.values())
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds or inspect.Parameter.VAR_KEYWORD in kinds:
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return (
        tuple(p.name for p in parameters),
        sum(kind in positional for kind in kinds),
        frozenset(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY),
        frozenset(p.name for p in parameters if p.default is inspect.Parameter.empty),
    )


def _bound_arguments(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call by parameter name, in the signature's order, as
    `inspect.Signature.bind` gives them; a well-formed call skips bind's cost (per-op hot path)."""
    layout = _layout(func)
    if layout is not None:
        names, npositional, positional_only, required = layout
        if len(args) <= npositional:
            arguments = dict(zip(names, args))
            if kwargs:
                if not all(k in names and k not in arguments and k not in positional_only for k in kwargs):
                    return dict(_signature(func).bind(*args, **kwargs).arguments)  # it raises
                arguments.update(kwargs)
                arguments = {name: arguments[name] for name in names if name in arguments}
            if required.issubset(arguments):
                return arguments
    return dict(_signature(func).bind(*args, **kwargs).arguments)


def _split_numpy_call(op: Any, func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Sort a NumPy-style call into the op's inputs and its static params, by NumPy's signature."""
    arguments = _bound_arguments(func, args, kwargs)
    names = list(arguments)
    if op.variadic:
        inputs = tuple(arguments[names[0]])
        rest = names[1:]
    else:
        inputs = tuple(arguments[n] for n in names[: op.nin])
        rest = names[op.nin :]
    params = {}
    for name in rest:
        # a **kwargs of NumPy's signature (np.einsum's) holds keywords by their own names
        var_keyword = _signature(func).parameters[name].kind is inspect.Parameter.VAR_KEYWORD
        for key, value in arguments[name].items() if var_keyword else [(name, arguments[name])]:
            if key not in op.params:
                raise UnsupportedFunctionError(
                    f"numpy.{func.__name__}(..., {key}=...) is not supported by adcore op "
                    f"{op.name!r}, whose params are {list(op.params)}; leave {key!r} out."
                )
            params[key] = value
    return inputs, params


def numpy_op(func: Any) -> Any:
    """The op a NumPy function stands for, or None: one dict get in the loaded registry when it
    knows func, else the registry's lookup (names resolved late, more plugins loaded)."""
    loaded = ops.loaded_registry
    op = None if loaded is None else loaded.numpy_ops.get(func)
    return op if op is not None else ops.registry().numpy_op(func)


def ufunc_call(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """A ufunc (or its reduce/accumulate/outer) called on traced values, out= already refused."""
    if method == "__call__" and not kwargs:
        op = numpy_op(ufunc)
        if op is not None:
            return op(*inputs)
        if is_predicate(ufunc):
            # predicates (greater, isfinite, logical_and, ...) have no derivative
            return ufunc(*(concrete(x) for x in inputs))
    if method in ("reduce", "accumulate", "outer"):
        result = _ufunc_method(ufunc, method, inputs, kwargs)
        if result is not NotImplemented:
            return result
    details = f" with {sorted(kwargs)}" if kwargs else ""
    raise unsupported(f"{ufunc_name(ufunc)}{'' if method == '__call__' else '.' + method}{details}")


def function_call(func: Any, args: tuple, kwargs: dict) -> Any:
    """A NumPy function called on traced values (`__array_function__`)."""
    if func in INDEX_FUNCTIONS or (func is np.where and len(args) + len(kwargs) == 1):
        # an index (argsort, argmax, np.where(cond), ...) has no derivative: the plain answer
        return plain_index(func, *args, **kwargs)
    if func in _SHAPE_FUNCTIONS:  # a question about the shape or dtype, answered before any lookup
        return func(*(stand_in(a) for a in args), **kwargs)  # (which may load every plugin on a miss)
    if func in _LIKE_FUNCTIONS:
        return func(stand_in(args[0]), *args[1:], **kwargs)
    op = numpy_op(func)
    if op is not None:
        inputs, params = _split_numpy_call(op, func, args, kwargs)
        # a variadic op's inputs as one list: else a first input that is a list (np.concatenate(
        # [[1.0], x])) would be taken for the list of inputs, and x for a param
        return op(list(inputs), **params) if op.variadic else op(*inputs, **params)
    function = ops.NUMPY_FUNCTIONS.get(func)
    if function is not None:
        return function(*args, **kwargs)
    method = _METHOD_FUNCTIONS.get(func)
    if method is not None and isinstance(args[0], Tracer):
        return getattr(args[0], method)(*args[1:], **kwargs)
    raise unsupported(f"{func.__module__}.{func.__name__}")


def conversion_error(tracer: Tracer, what: str, instead: str = "") -> TracerConversionError:
    """The error for a conversion of `tracer` that would cut it from the derivative (for tracer
    subclasses' own conversions too, such as a reverse Tensor's .numpy())."""
    return TracerConversionError(
        f"{what} on a traced value ({traced_by(tracer)}) would give a plain number or array and silently "
        f"cut it out of the derivative. {instead}Compute with adcore.numpy functions (anp.exp, "
        "anp.sin, ...; anp.where to choose between values); if a cut is intended, "
        "adcore.ops.stop_gradient(x) keeps x traced with derivative 0, and adcore.concrete(x) is its "
        "plain value (for printing or logging)."
    )


def scipy_caller() -> str:
    """What to say when a SciPy function (not a ufunc) converted a traced value: SciPy's functions
    call np.asarray on their inputs, which no tracer can intercept."""
    frame, name = sys._getframe(1), ""
    while frame is not None:  # the outermost SciPy frame: the function the user called
        module = frame.f_globals.get("__name__", "")
        if module == "scipy" or module.startswith("scipy."):
            name = f"{module}.{frame.f_code.co_name}"
        frame = frame.f_back
    if not name:
        return ""
    return (
        f"SciPy's {name} converted it: SciPy's functions other than its ufuncs take plain arrays. Call "
        "them through the adcore-scipy plugin's modules, named as SciPy's (adcore_scipy.special, "
        "adcore_scipy.stats, adcore_scipy.linalg, adcore_scipy.signal, adcore_scipy.integrate). "
    )


# ndarray's methods a Tracer does not define, refused by name when called. Those
# that hand out plain data cut the derivative; those that write in place cannot apply to
# an immutable traced value; the rest (cumsum, var, argsort, ...) have no op.
NDARRAY_METHODS = frozenset(
    name for name in dir(np.ndarray) if not name.startswith("_") and callable(getattr(np.ndarray, name))
)
_HANDS_OUT_DATA = {"tobytes", "tofile", "dump", "dumps", "view", "getfield"}
_WRITES_IN_PLACE = {"fill", "partition", "put", "resize", "setfield", "setflags", "byteswap"}


def refusing(name: str) -> Any:
    """A Tracer method standing for ndarray's method `name`, which refuses by name when called."""

    def method(self: Tracer, *args: Any, **kwargs: Any) -> Any:
        if name in _HANDS_OUT_DATA:
            raise conversion_error(self, f"x.{name}()")
        if name in _WRITES_IN_PLACE:
            raise UnsupportedFunctionError(
                f"x.{name}() writes in place, and a traced value ({traced_by(self)}) cannot change in "
                "place: compute a new value with adcore.numpy functions instead."
            )
        raise unsupported(f"the ndarray method x.{name}() on a traced value ({traced_by(self)})")

    method.__name__ = method.__qualname__ = name
    return method
