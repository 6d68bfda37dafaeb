"""The scipy.integrate ops' rules, side by side: JVPS (forward), VJPS (reverse), SYMPY_RULES (symbolic).

The rule forms are those of the core tables (adcore_forward.jvps, adcore_reverse.vjps,
adcore_symbolic.sympy_rules): one rule per input of the op, None where no derivative flows.

odeint's rules are odeints themselves, of augmented systems (adcore_scipy.integrate.dynamics),
so a rule can be differentiated again (forward over reverse, reverse over forward):

- VJP, the adjoint method (Chen et al. 2018; autograd's odeint): from a = g[-1] at t[-1],
  integrate (y, a, a_theta) backward interval by interval, starting each from the stored output
  y(t[i]) and adding g[i-1] to a at t[i-1]. Memory is that of the outputs (what the op stores
  anyway) and one augmented state: independent of the solver's steps. Then d/dy0 = a(t0) +
  g[0], d/dtheta = a_theta(t0), d/dt[i] = g[i]·f(y_i, t_i) for i > 0 and -a(t0)·f(y0, t0) for t0.
  The solves start at the last output whose cotangent is nonzero (a Jacobian's one-hot rows skip
  the intervals after it, where the adjoint is exactly 0), at t[-1] when g is traced.
- JVP, forward sensitivities: integrate y with S = dy/d(direction), dS/dt = ∂f/∂y S + ∂f/∂theta
  T, from S(t0) = the y0 tangent; a tangent of t[0] starts S at -f(y0, t0) dt0 and one of t[i]
  adds f(y_i, t_i) dt_i.

Both solve with tight tolerances (ops.DERIVATIVE_TOLERANCE, 1e-10, or the call's if tighter).
A Python func has no sympy form: the symbolic backend refuses odeint (MissingRuleError).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import Tracer, concrete
from adcore_scipy.integrate.dynamics import AdjointDynamics, SensitivityDynamics
from adcore_scipy.integrate.ops import derivative_solve, odeint

# --- reverse: the adjoint ---------------------------------------------------------------------

_last = threading.local()  # the last adjoint computed, for the other inputs' rules of the same node


def _adjoint(g: Any, ys: Any, y0: Any, t: Any, theta: Any, params: dict) -> tuple[Any, Any]:
    """(a(t0), a_theta(t0)): the adjoint just after t0 (before g[0] is added) and theta's cotangent.
    Computed once per (g, inputs): the reverse sweep asks each input's rule in turn."""
    key = (g, ys, y0, t, theta, params["dynamics"])
    cached = getattr(_last, "value", None)
    if cached is not None and all(a is b for a, b in zip(cached[0], key)):
        return cached[1]
    n = ys.shape[1]
    # the adjoint is linear in g: it is integrated for g / scale, of largest entry 1, so the solves'
    # atol is relative to it (a loss's cotangents may be ~1/len(t), or 1e-12)
    scale = float(np.max(np.abs(concrete(g)), initial=0.0))
    if scale == 0.0 or not np.isfinite(scale):
        scale = 1.0
    g = g / scale
    adjoint = AdjointDynamics(params["dynamics"], n)
    solve = derivative_solve(params["rtol"], params["atol"], params["options"], "rk45")
    # past the last output with a nonzero cotangent the adjoint is exactly 0 (a Jacobian's rows
    # are one-hot): start there, not at t[-1]; if that is t[0], nothing is solved (a(t0) is 0,
    # in the dtype a solve would give it)
    last = _last_nonzero(g)
    if last == 0:
        a = np.zeros(n, np.result_type(*(concrete(x) for x in (ys, g, t, theta))))
    else:
        a = g[last]
    a_theta = anp.zeros_like(theta)
    for i in range(last, 0, -1):
        z = odeint(
            anp.concatenate([ys[i], a, a_theta]), t[i - 1 : i + 1][::-1], theta, dynamics=adjoint, **solve
        )
        a, a_theta = z[1, n : 2 * n], z[1, 2 * n :]
        if i > 1:
            a = a + g[i - 1]
    result = (a * scale, a_theta * scale)
    _last.value = (key, result)
    return result


def _last_nonzero(g: Any) -> int:
    """The last output whose cotangent g[i] is nonzero, 0 if none; the last output if g is traced
    (a zero value may carry a nonzero derivative)."""
    if isinstance(g, Tracer):
        return g.shape[0] - 1
    live = np.flatnonzero(np.any(np.reshape(g, (g.shape[0], -1)) != 0, axis=1))
    return int(live[-1]) if live.size else 0


def _rates(ys: Any, t: Any, theta: Any, dynamics: Any) -> Any:
    """f(y_i, t_i) at every output, shape ys.shape."""
    return anp.stack([dynamics(ys[i], t[i], theta) for i in range(ys.shape[0])])


def _params(
    dynamics: Any, rtol: Any = None, atol: Any = None, options: tuple = (), method: str = "lsoda"
) -> dict:
    return {"dynamics": dynamics, "rtol": rtol, "atol": atol, "options": options, "method": method}


def _vjp_y0(g, ans, y0, t, theta, **params):
    return _adjoint(g, ans, y0, t, theta, _params(**params))[0] + g[0]


def _vjp_t(g, ans, y0, t, theta, **params):
    a0 = _adjoint(g, ans, y0, t, theta, _params(**params))[0]
    rates = _rates(ans, t, theta, params["dynamics"])
    later = anp.sum(g[1:] * rates[1:], axis=1)
    return anp.concatenate([anp.reshape(-anp.sum(a0 * rates[0]), (1,)), later])


def _vjp_theta(g, ans, y0, t, theta, **params):
    return _adjoint(g, ans, y0, t, theta, _params(**params))[1]


# --- forward: sensitivities -------------------------------------------------------------------


def _live(*tangents: Any) -> list[int] | None:
    """The directions in which some of the (plain) batched tangents is nonzero; None if one is traced."""
    if any(isinstance(x, Tracer) for x in tangents if x is not None):
        return None
    rows = [np.any(np.reshape(x, (x.shape[0], -1)) != 0, axis=1) for x in tangents if x is not None]
    return [int(b) for b in np.flatnonzero(np.logical_or.reduce(rows))]


def _sensitivities(directions: Any, tangents: Any, y0: Any, t: Any, theta: Any, params: dict) -> Any:
    """S(t_i) for each direction, shape (B, len(t), len(y0)): the derivative of the solution
    along y0 + directions[b] (and theta + tangents[b], unless tangents is None)."""
    batch, n, m = directions.shape[0], y0.shape[0], t.shape[0]
    live = _live(directions, tangents)
    if live is not None and len(live) < batch:  # a Jacobian's directions mostly miss this input
        zero = np.zeros((m, n), np.result_type(y0, t, theta))
        if not live:
            return np.zeros((batch, m, n), zero.dtype)
        found = _sensitivities(
            directions[live], None if tangents is None else tangents[live], y0, t, theta, params
        )
        return anp.stack([found[live.index(b)] if b in live else zero for b in range(batch)])
    system = SensitivityDynamics(params["dynamics"], n, theta.shape[0], batch, tangents is not None)
    start = anp.concatenate([y0, anp.ravel(directions)])
    constants = theta if tangents is None else anp.concatenate([theta, anp.ravel(tangents)])
    solve = derivative_solve(params["rtol"], params["atol"], params["options"], params["method"])
    zs = odeint(start, t, constants, dynamics=system, **solve)
    return anp.transpose(anp.reshape(zs[:, n:], (m, batch, n)), (1, 0, 2))


def _jvp_y0(ty0, ans, y0, t, theta, **params):
    return _sensitivities(ty0, None, y0, t, theta, _params(**params))


def _jvp_t(tt, ans, y0, t, theta, **params):
    rates = _rates(ans, t, theta, params["dynamics"])
    shifted = anp.expand_dims(tt, -1) * rates  # the outputs' own times: f(y_i, t_i) dt_i
    if _live(tt[:, :1]) == []:
        return shifted
    # moving t0 moves the start: S(t0) = -f(y0, t0), scaled by each direction's dt0
    start = _sensitivities(-rates[:1], None, y0, t, theta, _params(**params))
    return shifted + anp.reshape(tt[:, 0], (-1, 1, 1)) * start


def _jvp_theta(tth, ans, y0, t, theta, **params):
    directions = np.zeros((tth.shape[0], y0.shape[0]), np.result_type(y0, theta))
    return _sensitivities(directions, tth, y0, t, theta, _params(**params))


JVPS: dict[str, Any] = {"odeint": (_jvp_y0, _jvp_t, _jvp_theta)}
VJPS: dict[str, Any] = {"odeint": (_vjp_y0, _vjp_t, _vjp_theta)}
SYMPY_RULES: dict[str, Any] = {}
