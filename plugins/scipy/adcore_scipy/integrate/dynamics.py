"""The right-hand sides the odeint op integrates: `dynamics(y, t, theta) -> dy/dt`.

Every one runs on plain arrays inside SciPy's solver and on traced values when a rule of the
op (itself an odeint of an augmented system) is differentiated again: NumPy's functions on
plain arrays are NumPy's, on traced ones adcore's ops. `theta` is a flat vector: the
differentiable arguments of the user's func laid end to end; the augmented systems carry
their extra constants in it too, so no dynamics closes over a value being differentiated.
Each splits theta with `unpack(theta)` into the parts `rate(y, t, parts)` takes, so a
derivative of the rate is taken with respect to y and the parts, not through theta's slices
(the products below are where the solves of a derivative spend their time).

- `UserDynamics`: the user's func(y, t, *args) (or func(t, y, *args) with tfirst).
- `AdjointDynamics`: the adjoint system of Chen et al. (2018), state (y, a, a_theta), integrated
  backward: dy/dt = f, da/dt = -a·∂f/∂y, da_theta/dt = -a·∂f/∂theta, the products by `adcore.vjp`.
- `SensitivityDynamics`: y with B tangent directions S, dS/dt = ∂f/∂y·S + ∂f/∂theta·T, the
  B products from one forward pass (`adcore.value_and_jacobian` in the directions' weights).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore import value_and_jacobian, vjp
from adcore.core import shape_of
from adcore.errors import InvalidOutputError


class Dynamics:
    """dy/dt = rate(y, t, unpack(theta)); a system whose theta is one part unpacks it as it is."""

    def unpack(self, theta: Any) -> tuple:
        return (theta,)

    def rate(self, y: Any, t: Any, parts: tuple) -> Any:
        raise NotImplementedError

    def __call__(self, y: Any, t: Any, theta: Any) -> Any:
        return self.rate(y, t, self.unpack(theta))


@dataclass(frozen=True, eq=False)
class UserDynamics(Dynamics):
    """func(y, t, *args): `arguments` are func's args with None where a differentiable one goes,
    `slots` (position, shape) of each differentiable one, taken from theta in order. With
    `structure` (an optree treespec of the args tuple), `arguments` are its leaves, so a value
    being differentiated may sit inside a tuple, list or dict among the args."""

    func: Callable[..., Any]
    arguments: tuple
    slots: tuple[tuple[int, tuple[int, ...]], ...]
    tfirst: bool = False
    structure: Any = None

    def unpack(self, theta: Any) -> tuple:
        parts, start = [], 0
        for _, shape in self.slots:
            size = int(np.prod(shape))
            parts.append(np.reshape(theta[start : start + size], shape))
            start += size
        return tuple(parts)

    def rate(self, y: Any, t: Any, parts: tuple) -> Any:
        args = list(self.arguments)
        for (position, _), part in zip(self.slots, parts):
            args[position] = part
        if self.structure is not None:
            args = self.structure.unflatten(args)
        out = self.func(t, y, *args) if self.tfirst else self.func(y, t, *args)
        if isinstance(out, (list, tuple)):
            out = anp.array(out)
        if shape_of(out) != shape_of(y):
            raise InvalidOutputError(
                f"odeint: func returned shape {np.shape(out)} for y of shape {np.shape(y)}; it must "
                "return dy/dt, of y's shape"
            )
        return out

    def __repr__(self) -> str:
        return f"<dynamics {getattr(self.func, '__qualname__', self.func)!r}>"


@dataclass(frozen=True, eq=False)
class AdjointDynamics(Dynamics):
    """The adjoint system of `inner` (n states): state (y, a, a_theta)."""

    inner: Dynamics
    n: int

    def unpack(self, theta: Any) -> tuple:
        return self.inner.unpack(theta)  # the system's theta is inner's: a solve unpacks it once

    def rate(self, z: Any, t: Any, parts: tuple) -> Any:
        n, inner = self.n, self.inner
        y, a = z[:n], z[n : 2 * n]
        dy, pullback = vjp(lambda y_, *parts_: inner.rate(y_, t, parts_), y, *parts)
        return np.concatenate([dy, *(np.ravel(ct) for ct in pullback(-a))])

    def __repr__(self) -> str:
        return f"<adjoint of {self.inner!r}>"


@dataclass(frozen=True, eq=False)
class SensitivityDynamics(Dynamics):
    """`inner` (n states, p parameters) with `batch` tangent directions: state (y, S) with S of
    shape (batch, n) laid flat; with `tangent_theta`, theta is (theta, T), T of shape (batch, p)
    laid flat, else the directions have no parameter tangent."""

    inner: Dynamics
    n: int
    p: int
    batch: int
    tangent_theta: bool

    def unpack(self, theta: Any) -> tuple:
        """inner's parts, then T (with tangent_theta): laid flat end to end, they are theta."""
        parts = self.inner.unpack(theta[: self.p])
        return (*parts, np.reshape(theta[self.p :], (self.batch, self.p))) if self.tangent_theta else parts

    def rate(self, z: Any, t: Any, parts: tuple) -> Any:
        n, batch = self.n, self.batch
        y, directions = z[:n], np.reshape(z[n:], (batch, n))
        tangents, params = (parts[-1], parts[:-1]) if self.tangent_theta else (None, parts)
        if batch == 0:
            return self.inner.rate(y, t, params)
        # the rate's derivative along every direction from one forward pass (not one jvp each):
        # the Jacobian in c, at c = 0, of the rate at y + c·directions (params + c·tangents)
        dtype = np.result_type(z.dtype, *(part.dtype for part in parts))
        dy, along = self._value_and_jacobian(np.zeros(batch, dtype), y, t, directions, tangents, *params)
        return np.concatenate([dy, np.ravel(np.transpose(along))])

    def _along(self, c: Any, y: Any, t: Any, directions: Any, tangents: Any, *params: Any) -> Any:
        """The rate at y + c·directions, each param + c·(its columns of tangents) (the params as
        they are without tangents). At c = 0 these are y and the params, and the tangent of c's
        entry b is exactly direction b: a sum whose other terms are 0."""
        if tangents is not None:
            moved, start = [], 0
            for part in params:
                shape = shape_of(part)
                size = math.prod(shape)
                # a scalar's column as a vector: c @ it is the scalar, no reshape on the pass
                step = c @ (tangents[:, start] if shape == () else tangents[:, start : start + size])
                moved.append(part + (np.reshape(step, shape) if len(shape) > 1 else step))
                start += size
            params = tuple(moved)
        return self.inner.rate(y + c @ directions, t, params)

    @functools.cached_property
    def _value_and_jacobian(self) -> Callable[..., Any]:
        return value_and_jacobian(self._along, backend="forward")

    def __repr__(self) -> str:
        return f"<sensitivities of {self.inner!r} along {self.batch}>"
