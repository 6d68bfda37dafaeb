"""`adcore.numpy`: differentiable functions under NumPy's names, NumPy itself for everything else.

`anp.sin`, `anp.sum`, `anp.matmul`, ... are the registered ops; names that are not
ops (array creation, dtypes, constants) fall through to NumPy, whose functions then
work on traced values wherever adcore maps them to an op.
"""

from __future__ import annotations

import functools as _functools
import types as _types
from typing import Any

import numpy as _np

from adcore import core as _core
from adcore import ops as _ops
from adcore.ops import CORE_OPS

globals().update({_spec.name: _spec for _spec in CORE_OPS})
globals().update({_alias: _spec for _spec in CORE_OPS for _alias in _spec.aliases})
absolute = globals()["abs"]
true_divide = globals()["divide"]
amax = globals()["max"]
amin = globals()["min"]

# NumPy's shape functions that are Python over ops (not ops), and array building from traced values
from adcore.ops.composite_shapes import (  # noqa: E402, F401
    array,
    array_split,
    asarray,
    astype,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    c_,
    column_stack,
    dsplit,
    dstack,
    hsplit,
    hstack,
    pad,
    r_,
    select,
    split,
    vsplit,
    vstack,
)
from adcore.ops.composite_shapes import array as _array  # noqa: E402

# np.linalg.slogdet's (sign, logabsdet) on traced values, from one op slogdet_packed
from adcore.ops.linalg import slogdet  # noqa: E402, F401

# np.full(shape, x) converts x before any dispatch could reach adcore: anp.full instead
from adcore.ops.numpy_functions import full, full_like  # noqa: E402, F401

# np.average's signature (weights optional, after axis) around ops mean and average
from adcore.ops.reductions import numpy_average as average  # noqa: E402, F401

# NumPy functions whose array arguments are sequences of arrays, which a list stacked would change
_TAKE_SEQUENCES = frozenset({_np.hstack, _np.vstack, _np.dstack, _np.column_stack, _np.select, _np.block})
_served: dict[Any, Any] = {}  # NumPy function -> its adcore.numpy wrapper, made once


def _takes_traced_lists(function: Any) -> Any:
    """A NumPy function adcore serves on traced values, taking lists of traced values too
    (anp.append([a], x), anp.linalg.norm([a, b])): each such argument is stacked first, as
    np.asarray would for plain numbers, and the call then dispatches to adcore."""
    wrapper = _served.get(function)
    if wrapper is None:

        @_functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = (*args, *kwargs.values())
            if not any(isinstance(a, _core.Tracer) or _holds_tracer_list(a) for a in values):
                return function(*args, **kwargs)
            args = tuple(_array(a) if _holds_tracer_list(a) else a for a in args)
            kwargs = {k: _array(v) if _holds_tracer_list(v) else v for k, v in kwargs.items()}
            # adcore's own function, which sees a traced argument NumPy's dispatch would not
            # (np.interp(x, xp, fp, left=traced) dispatches on x, xp and fp only)
            return _ops.NUMPY_FUNCTIONS.get(function, function)(*args, **kwargs)

        _served[function] = wrapper
    return wrapper


def _holds_tracer_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, _core.Tracer) or _holds_tracer_list(v) for v in value
    )


def _is_served(function: Any) -> bool:
    """Whether adcore serves function on traced values with arrays (not sequences of them:
    a variadic op's, np.linalg.multi_dot's, list is its inputs) as arguments."""
    try:
        if function in _ops.NUMPY_FUNCTIONS:
            return True
        op = _ops.registry().numpy_op(function)
    except TypeError:  # unhashable
        return False
    return op is not None and not op.variadic


def _numpy_name(module: Any, name: str) -> Any:
    value = getattr(module, name)
    if callable(value) and not isinstance(value, type) and value not in _TAKE_SEQUENCES and _is_served(value):
        return _takes_traced_lists(value)
    return value


class _Submodule(_types.ModuleType):
    """anp.linalg, anp.fft: NumPy's, their functions taking lists of traced values too."""

    def __init__(self, module: Any) -> None:
        super().__init__(f"adcore.numpy.{module.__name__.rsplit('.', 1)[-1]}", module.__doc__)
        self._numpy = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _numpy_name(self._numpy, name)


# adcore.numpy's own Python functions take lists of traced values too (anp.average([a, b]))
average, slogdet, split, array_split, hsplit, vsplit, dsplit, atleast_1d, atleast_2d, atleast_3d, pad = (
    _takes_traced_lists(f)
    for f in (
        average,
        slogdet,
        split,
        array_split,
        hsplit,
        vsplit,
        dsplit,
        atleast_1d,
        atleast_2d,
        atleast_3d,
        pad,
    )
)
linalg = _Submodule(_np.linalg)
fft = _Submodule(_np.fft)


def __getattr__(name: str) -> Any:
    op = _ops.registry().complete().ops.get(name)  # set by adcore.plugins, a layer above this one
    if op is not None:
        return op
    return _numpy_name(_np, name)
