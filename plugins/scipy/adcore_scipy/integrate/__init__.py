"""`scipy.integrate`'s functions, differentiable: the same names and signatures as SciPy's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optree

import adcore.numpy as anp
from adcore.core import Tracer
from adcore.errors import InvalidInputError
from adcore_scipy.integrate import ops
from adcore_scipy.integrate.dynamics import UserDynamics

# SciPy's odeint keywords passed on to its solver; the others are refused below
SOLVER_OPTIONS = frozenset(
    {"ml", "mu", "tcrit", "h0", "hmax", "hmin", "ixpr", "mxstep", "mxhnil", "mxordn", "mxords", "printmessg"}
)
# adcore.tree's optree namespace: args are pytrees as adcore's API sees them, registered classes too
# (adcore.tree itself is above the layers a plugin may import)
PYTREES = "adcore"
REFUSED = {
    "Dfun": "adcore differentiates func itself; drop Dfun",
    "col_deriv": "it goes with Dfun, which adcore does not take; drop it",
    "full_output": "the solver's diagnostics have no derivative; call scipy.integrate.odeint for them",
}


def odeint(
    func: Callable[..., Any],
    y0: Any,
    t: Any,
    args: Any = (),
    rtol: Any = None,
    atol: Any = None,
    tfirst: bool = False,
    **options: Any,
) -> Any:
    """scipy.integrate.odeint, differentiable with respect to y0, every time of t, and args.

    func(y, t, *args) -> dy/dt (func(t, y, *args) with tfirst) is written with adcore.numpy,
    or NumPy functions that work on traced values; it is called with plain arrays inside the
    solver and with traced ones by the derivative. The float arrays and Python floats among
    args (and traced values), nested in tuples, lists, dicts or registered pytrees as deep as
    they are, are differentiable; the other args (ints, strings, callables) are passed through
    as they are. A value being differentiated must reach func through args, not as a closure
    (that is refused: its derivative would be lost).

    Returns y at each time of t, shape (len(t), len(y0)), as SciPy does. rtol, atol and the
    solver options (hmax, mxstep, ...) are SciPy's, for this solve. Reverse mode integrates
    the adjoint system backward (memory that of the outputs, whatever the solver's steps);
    forward mode integrates the sensitivities with y. Those solves use rtol = atol = 1e-10
    (ops.DERIVATIVE_TOLERANCE) or the call's if tighter, and hmax, mxstep, ... as given.
    """
    for key in options:
        if key in REFUSED:
            raise InvalidInputError(f"odeint: {key} is not supported: {REFUSED[key]}")
        if key not in SOLVER_OPTIONS:
            raise InvalidInputError(
                f"odeint got an unexpected keyword argument {key!r}; SciPy's solver options are "
                f"{sorted(SOLVER_OPTIONS)}"
            )
    if not callable(func):
        raise InvalidInputError(f"odeint: func must be callable, got {type(func).__name__}")
    y0 = _floats(y0, "y0")
    if y0.ndim > 1:
        raise InvalidInputError(f"odeint: y0 must be a vector (or a scalar), got shape {y0.shape}")
    t = _floats(t, "t")
    if t.ndim != 1 or t.shape[0] == 0:
        raise InvalidInputError(f"odeint: t must be a non-empty vector of times, got shape {t.shape}")
    if not isinstance(args, tuple):
        args = (args,)  # as SciPy does
    leaves, structure = optree.tree_flatten(args, none_is_leaf=False, namespace=PYTREES)
    arguments, slots, parts = list(leaves), [], []
    for i, leaf in enumerate(leaves):
        if _is_differentiable(leaf):
            arguments[i] = None
            slots.append((i, tuple(np.shape(leaf))))
            parts.append(anp.ravel(leaf))
    theta = anp.concatenate(parts) if parts else np.zeros(0, np.result_type(y0))
    dynamics = UserDynamics(func, tuple(arguments), tuple(slots), bool(tfirst), structure)
    return ops.odeint(
        anp.ravel(y0),
        t,
        theta,
        dynamics=dynamics,
        rtol=_tolerance(rtol),
        atol=_tolerance(atol),
        options=tuple(sorted(options.items())),
    )


def _floats(x: Any, name: str) -> Any:
    """x as a float array (a traced value as it is)."""
    if isinstance(x, Tracer):
        return x
    x = np.asarray(x)
    if x.dtype.kind not in "fiub":
        raise InvalidInputError(f"odeint: {name} must be real numbers, got dtype {x.dtype}")
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _is_differentiable(arg: Any) -> bool:
    if isinstance(arg, Tracer):
        return True
    if isinstance(arg, float):
        return True
    return isinstance(arg, (np.ndarray, np.floating)) and np.asarray(arg).dtype.kind == "f"


def _tolerance(value: Any) -> Any:
    """A tolerance as a hashable param: None, a float, or a tuple per component."""
    if value is None or np.ndim(value) == 0:
        return value if value is None else float(value)
    return tuple(float(v) for v in np.ravel(value))


__all__: Sequence[str] = ["odeint"]
