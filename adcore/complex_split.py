"""Complex arguments at the API boundary: each complex leaf z the engine is to differentiate is
handed to it as two real arrays (x, y), f called on z = x + 1j*y, so backends differentiate
real functions and meet complex values only inside f; the real derivatives are put together
into JAX's answers here (docs/complex.md):

- f real-valued: d f / d z is df/dx - 1j*df/dy (grad(lambda z: abs(z)**2)(z) is 2*conj(z));
- f complex-valued with holomorphic=True: df/dx, once df/dy == 1j*df/dx (Cauchy-Riemann) holds;
- f complex-valued without it: an error (pass holomorphic=True, or use jvp/vjp);
- a cotangent of z is gx - 1j*gy, from the cotangents gx, gy of x and y.

Complex outputs are split likewise, into real and imaginary rows (adcore.flatten.Output).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer, concrete
from adcore.errors import InvalidOutputError, NotHolomorphicError, UnsupportedByBackendError


def is_complex(value: Any) -> bool:
    """Whether a value is complex: an array, tracer or number of a complex dtype."""
    dtype = getattr(value, "dtype", None)
    return dtype.kind == "c" if dtype is not None else isinstance(value, complex)


def real_part(value: Any) -> Any:
    """Re(value), a real array (a tracer stays traced); a copy, never a view of the caller's array."""
    if isinstance(value, Tracer):
        return ops.real(value)
    return np.array(np.real(value))


def imag_part(value: Any) -> Any:
    """Im(value), as real_part."""
    if isinstance(value, Tracer):
        return ops.imag(value)
    return np.array(np.imag(value))


def join(x: Any, y: Any) -> Any:
    """x + 1j*y, traced when x or y is; complex64 for float32 parts, complex128 for float64."""
    if isinstance(x, Tracer) or isinstance(y, Tracer):
        return x + y * 1j
    return np.asarray(x + 1j * np.asarray(y))


class Split:
    """Which of a call's flat arguments are complex and where their imaginary parts go: the real
    part stays in the argument's place, the imaginary parts follow the n flat arguments in order."""

    __slots__ = ("n", "positions")

    def __init__(self, n: int, positions: tuple[int, ...]) -> None:
        self.n, self.positions = n, positions

    @classmethod
    def of(cls, flat: Sequence[Any], argnums: Sequence[int]) -> Split | None:
        """The Split of the complex arguments among flat[argnums]; None when none is (the common case)."""
        positions = None
        for i in argnums:
            a = flat[i]
            if a.__class__ is np.ndarray and a.dtype.kind == "f":
                continue
            if is_complex(a):
                positions = (positions or ()) + (i,)
        return None if positions is None else cls(len(flat), tuple(dict.fromkeys(positions)))

    def args(self, flat: Sequence[Any]) -> list:
        """The real flat arguments: real parts in place, then the imaginary parts."""
        real = list(flat)
        for i in self.positions:
            real[i] = real_part(flat[i])
        return real + [imag_part(flat[i]) for i in self.positions]

    def argnums(self, argnums: Sequence[int]) -> tuple[int, ...]:
        """The real flat positions to differentiate: a complex argument's real then imaginary part."""
        return tuple(p for i in argnums for p in self.parts(i))

    def parts(self, i: int) -> tuple[int, ...]:
        return (i, self.n + self.positions.index(i)) if i in self.positions else (i,)

    def pairs(self, argnums: Sequence[int], values: Sequence[Any]) -> list:
        """The engine's results for self.argnums(argnums), one per argnum: a pair (of the real
        part, of the imaginary part) for a complex argument, else the result itself."""
        out, k = [], 0
        for i in argnums:
            if i in self.positions:
                out.append((values[k], values[k + 1]))
                k += 2
            else:
                out.append(values[k])
                k += 1
        return out

    def cotangents(self, flat: Sequence[Any], values: Sequence[Any]) -> list:
        """The cotangent of each flat argument from the engine's, which are in Split.args' order:
        gx - 1j*gy for a complex one, in its dtype."""
        ordered = self.pairs(range(self.n), [values[p] for p in self.argnums(range(self.n))])
        return [cotangent(*v, x.dtype) if type(v) is tuple else v for v, x in zip(ordered, flat)]

    def function(self, fn: Callable[..., Any]) -> Joined:
        return Joined(fn, self.n, self.positions)

    def note(self, error: Exception) -> None:
        """A backend's error names its own arguments: say which are imaginary parts."""
        if error.args and isinstance(error.args[0], str) and "argument" in error.args[0]:
            error.add_note(
                "adcore handed each complex argument to the backend as two real ones: "
                + ", ".join(
                    f"its argument {self.n + k} is Im of argument {i}" for k, i in enumerate(self.positions)
                )
            )


class Joined:
    """The flat function on the real flat arguments (Split.args, then anything the engine passes
    after them): z = x + 1j*y for each complex argument, then fn on the flat arguments."""

    __slots__ = ("fn", "n", "positions")

    def __init__(self, fn: Callable[..., Any], n: int, positions: tuple[int, ...]) -> None:
        self.fn, self.n, self.positions = fn, n, positions

    def __call__(self, *real: Any) -> Any:
        k = len(self.positions)
        flat = list(real[: self.n])
        for j, i in enumerate(self.positions):
            x, y = flat[i], real[self.n + j]
            if is_complex(x) or is_complex(y):
                raise UnsupportedByBackendError(
                    f"argument {i} is complex, and the backend evaluated f with complex values for its real "
                    "and imaginary parts: a complex step (numeric's method='complex') perturbs the imaginary "
                    "part, which a complex argument already uses, so it cannot differentiate with respect to "
                    "one. Use a method that steps real values (method='central' or 'richardson'), or "
                    "backend='reverse' or 'forward'."
                )
            flat[i] = join(x, y)
        return self.fn(*flat, *real[self.n + k :])


def cotangent(gx: Any, gy: Any, dtype: np.dtype) -> Any:
    """The cotangent of z = x + 1j*y from those of x and y (JAX's: gx - 1j*gy), in z's dtype."""
    if isinstance(gx, Tracer) or isinstance(gy, Tracer):
        return gx - gy * 1j
    return np.asarray(gx - 1j * np.asarray(gy), dtype=dtype)


def derivative(
    dx: Any,
    dy: Any,
    complex_out: bool,
    holomorphic: bool,
    dtype: np.dtype,
    where: Callable[[], str],
    estimated: bool = False,
) -> Any:
    """d out / d z from d out/dx and d out/dy (complex already for a complex output): for a real
    output dx - 1j*dy (grad's convention); for a complex one, with holomorphic, dx once
    Cauchy-Riemann holds, to rounding, or to an estimating backend's precision (`estimated`);
    `where()` names the argument and output for the errors."""
    if not complex_out:
        if holomorphic:
            raise InvalidOutputError(
                f"holomorphic=True: {where()} is real, and a holomorphic function has complex values; "
                "leave holomorphic out for a real-valued f (grad then gives df/dx - 1j*df/dy)"
            )
        return cotangent(dx, dy, dtype)
    if not holomorphic:
        raise InvalidOutputError(
            f"{where()} is complex and so is the argument: its derivative is a complex number only if f "
            "is holomorphic. Pass holomorphic=True if it is (you get f'(z), checked), or use adcore.jvp / "
            "adcore.vjp for the derivative of a function that is not (they take and give complex "
            "tangents and cotangents, JAX's convention); or differentiate a real function of it "
            "(abs, real, imag)"
        )
    check_cauchy_riemann(dx, dy, where, estimated)
    return dx if isinstance(dx, Tracer) else np.asarray(dx, dtype=dtype)


def error(ex: Any, ey: Any, dtype: np.dtype) -> np.ndarray:
    """The error estimate of a derivative put together from two estimated parts: |ex| + |ey|."""
    return np.asarray(np.abs(ex) + np.abs(ey), dtype=np.finfo(dtype).dtype)


def cauchy_riemann_tolerance(dtype: np.dtype, estimated: bool) -> float:
    """How far df/dy may be from 1j*df/dx, relative to the derivative's size: rounding takes them
    along different paths through f, so they agree to about sqrt(eps) at worst; finite differences
    (even one-sided ones) to about eps**(1/4); a function that is not holomorphic misses by the
    size of its derivative."""
    eps = float(np.finfo(dtype).eps)
    return eps**0.25 if estimated else eps**0.5


def check_cauchy_riemann(dx: Any, dy: Any, where: Callable[[], str], estimated: bool = False) -> None:
    """Refuse unless df/dy == 1j*df/dx everywhere (f complex-differentiable at the point)."""
    dx, dy = np.asarray(concrete(dx)), np.asarray(concrete(dy))  # inside another derivative: its values
    gap = np.abs(dy - 1j * dx)
    size = np.abs(dx) + np.abs(dy)
    with np.errstate(invalid="ignore"):
        scale = np.max(size, initial=0.0, where=np.isfinite(size))
    tol = cauchy_riemann_tolerance(dx.dtype, estimated)
    bad = ~(gap <= tol * (size + scale))
    bad &= np.isfinite(dx) | np.isfinite(dy)  # nan and inf both ways stay (a singular point): no verdict
    if np.any(bad):
        k = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        raise NotHolomorphicError(
            f"holomorphic=True, but f is not holomorphic at this point: {where()} has df/dx = {dx[k]:.6g} "
            f"and df/dy = {dy[k]:.6g} at entry {k}, where a holomorphic f has df/dy = 1j*df/dx "
            "(Cauchy-Riemann). conj, abs, real, imag and angle are not holomorphic. For the derivative of "
            "such an f use adcore.jvp / adcore.vjp, or grad of a real-valued function of it."
        )
