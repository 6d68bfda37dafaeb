"""The right-hand sides the odeint op integrates: `dynamics(y, t, theta) -> dy/dt`.

Every one is written with adcore ops, so it runs on plain arrays inside SciPy's solver and on
traced values when a rule of the op (which is itself an odeint of an augmented system) is
differentiated again. `theta` is a flat vector: the differentiable arguments of the user's
func, laid end to end; the augmented systems carry their extra constants in it too, so no
dynamics closes over a value being differentiated.

- `UserDynamics`: the user's func(y, t, *args) (or func(t, y, *args) with tfirst).
- `AdjointDynamics`: the adjoint system of Chen et al. (2018), state (y, a, a_theta), integrated
  backward: dy/dt = f, da/dt = -a·∂f/∂y, da_theta/dt = -a·∂f/∂theta, the products by `adcore.vjp`.
- `SensitivityDynamics`: y with B tangent directions S, dS/dt = ∂f/∂y·S + ∂f/∂theta·T, the
  products by `adcore.jvp`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore import jvp, vjp
from adcore.errors import InvalidOutputError


@dataclass(frozen=True, eq=False)
class UserDynamics:
    """func(y, t, *args): `arguments` are func's args with None where a differentiable one goes,
    `slots` (position, shape) of each differentiable one, taken from theta in order."""

    func: Callable[..., Any]
    arguments: tuple
    slots: tuple[tuple[int, tuple[int, ...]], ...]
    tfirst: bool = False

    def __call__(self, y: Any, t: Any, theta: Any) -> Any:
        args = list(self.arguments)
        start = 0
        for position, shape in self.slots:
            size = int(np.prod(shape))
            args[position] = anp.reshape(theta[start : start + size], shape)
            start += size
        out = self.func(t, y, *args) if self.tfirst else self.func(y, t, *args)
        if isinstance(out, (list, tuple)):
            out = anp.array(out)
        if np.shape(out) != np.shape(y):
            raise InvalidOutputError(
                f"odeint: func returned shape {np.shape(out)} for y of shape {np.shape(y)}; it must "
                "return dy/dt, of y's shape"
            )
        return out

    def __repr__(self) -> str:
        return f"<dynamics {getattr(self.func, '__qualname__', self.func)!r}>"


@dataclass(frozen=True, eq=False)
class AdjointDynamics:
    """The adjoint system of `inner` (n states, p parameters): state (y, a, a_theta)."""

    inner: Any
    n: int

    def __call__(self, z: Any, t: Any, theta: Any) -> Any:
        n = self.n
        y, a = z[:n], z[n : 2 * n]
        dy, pullback = vjp(lambda y_, theta_: self.inner(y_, t, theta_), y, theta)
        da, dtheta = pullback(-a)
        return anp.concatenate([dy, da, dtheta])

    def __repr__(self) -> str:
        return f"<adjoint of {self.inner!r}>"


@dataclass(frozen=True, eq=False)
class SensitivityDynamics:
    """`inner` (n states, p parameters) with `batch` tangent directions: state (y, S) with S of
    shape (batch, n) laid flat; with `tangent_theta`, theta is (theta, T), T of shape (batch, p)
    laid flat, else the directions have no parameter tangent."""

    inner: Any
    n: int
    p: int
    batch: int
    tangent_theta: bool

    def __call__(self, z: Any, t: Any, theta: Any) -> Any:
        n, p, batch = self.n, self.p, self.batch
        y, directions = z[:n], anp.reshape(z[n:], (batch, n))
        if self.tangent_theta:
            params, tangents = theta[:p], anp.reshape(theta[p:], (batch, p))
            pairs = [
                jvp(lambda y_, theta_: self.inner(y_, t, theta_), (y, params), (directions[b], tangents[b]))
                for b in range(batch)
            ]
        else:
            pairs = [jvp(lambda y_: self.inner(y_, t, theta), (y,), (directions[b],)) for b in range(batch)]
        dy = pairs[0][0] if pairs else self.inner(y, t, theta[:p])
        return anp.concatenate([dy] + [tangent for _, tangent in pairs])

    def __repr__(self) -> str:
        return f"<sensitivities of {self.inner!r} along {self.batch}>"
