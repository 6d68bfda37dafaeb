"""The scipy.linalg ops' rules, side by side: JVPS (forward), VJPS (reverse), SYMPY_RULES (symbolic).

The rule forms are those of the core tables (adcore_forward.jvps, adcore_reverse.vjps,
adcore_symbolic.sympy_rules): one rule per input of the op, None where no derivative flows.
JAX's convention for complex values: a VJP is the transpose of the JVP under Re(sum(u * v)),
so the formulas transpose and never conjugate; a real input's cotangent is the real part.
Rules are written with adcore ops (the ops' own among them), so they nest.

- expm: the Frechet derivative L(A, E), the top right block of expm([[A, E], [0, A]]); its
  transpose is L(A^T, G).
- sqrtm: X dX + dX X = dA, a Sylvester equation; its transpose solves X^T Z + Z X^T = G.
- solve_sylvester: A dX + dX B = dQ - dA X - X dB; with Z solving A^T Z + Z B^T = G, the
  cotangents are Z, -Z X^T, -X^T Z.
- solve_banded: as solve's, dx = A^-1 (db - dA x), with A's entries read off ab's bands, the
  transposed solve with ab's bands rearranged for A^T; ab's unused corners get 0.
The core ops solve_triangular, cholesky and cho_solve behind adcore_scipy.linalg's
solve_triangular, cho_factor and cho_solve have their rules in the core tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.core import concrete
from adcore.extend import times_step, unbroadcast
from adcore_scipy.linalg.ops import check_bands, refuse_singular_sylvester


def _swap(x: Any) -> Any:
    return anp.swapaxes(x, -1, -2)


def _lift(t: Any, ndim: int) -> Any:
    """A batched tangent (B, ...) with axes of length 1 after B, up to 1 + ndim axes, so that its
    matrix axes line up under a result of ndim axes."""
    missing = ndim - (t.ndim - 1)
    return t if missing <= 0 else anp.reshape(t, t.shape[:1] + (1,) * missing + t.shape[1:])


def _to_input(g: Any, x: Any) -> Any:
    """A cotangent for input x: its real part for a real x, unbroadcast to x's shape."""
    if np.iscomplexobj(concrete(g)) and not np.iscomplexobj(concrete(x)):
        g = anp.real(g)
    return unbroadcast(g, x)


# --- expm -----------------------------------------------------------------------------------


def frechet_expm(a: Any, e: Any) -> Any:
    """L(A, E), the derivative of expm at A in the direction E: the top right block of
    expm([[A, E], [0, A]]) (A broadcast to E's stack)."""
    n = a.shape[-1]
    a = anp.broadcast_to(a, np.broadcast_shapes(a.shape, e.shape))
    e = anp.broadcast_to(e, a.shape)
    zero = np.zeros(a.shape, dtype=np.result_type(concrete(a), concrete(e)))
    block = anp.concatenate([anp.concatenate([a, e], axis=-1), anp.concatenate([zero, a], axis=-1)], axis=-2)
    return anp.expm(block)[..., :n, n:]


def _expm_jvp(t, ans, a):
    return frechet_expm(a, t)


def _expm_vjp(g, ans, a):
    return _to_input(frechet_expm(_swap(a), g), a)


# --- sqrtm ----------------------------------------------------------------------------------


def _refuse_singular_root(x: Any) -> None:
    refuse_singular_sylvester(
        "sqrtm", concrete(x), concrete(x), "no derivative at a singular a (X dX + dX X = dA has no unique dX)"
    )


def _sqrtm_jvp(t, ans, a):
    _refuse_singular_root(ans)
    return anp.solve_sylvester(ans, ans, t)


def _sqrtm_vjp(g, ans, a):
    _refuse_singular_root(ans)
    x_t = _swap(ans)
    return _to_input(anp.solve_sylvester(x_t, x_t, g), a)


# --- solve_sylvester ------------------------------------------------------------------------


def _sylvester_jvp(argnum: int):
    def rule(t, ans, a, b, q):
        lifted = _lift(t, ans.ndim)
        if argnum == 0:
            rhs = -anp.matmul(lifted, ans)
        elif argnum == 1:
            rhs = -anp.matmul(ans, lifted)
        else:
            rhs = lifted
        return anp.solve_sylvester(a, b, rhs)

    return rule


def _sylvester_vjp(argnum: int):
    def rule(g, ans, a, b, q):
        z = anp.solve_sylvester(_swap(a), _swap(b), g)
        if argnum == 0:
            return _to_input(-anp.matmul(z, _swap(ans)), a)
        if argnum == 1:
            return _to_input(-anp.matmul(_swap(ans), z), b)
        return _to_input(z, q)

    return rule


# --- solve_banded ---------------------------------------------------------------------------


def _band_index(low: int, up: int, n: int, shift: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rows k (l + u + 1, n), columns clip(j + k - shift) and the mask of those inside 0..n-1."""
    k = np.arange(low + up + 1)[:, None]
    column = np.arange(n)[None, :] + k - shift
    inside = (column >= 0) & (column < n)
    return np.broadcast_to(k, inside.shape), np.clip(column, 0, n - 1), inside


def _solve_columns(ab: Any, rhs: Any, l_and_u: Any) -> Any:
    """A^-1 rhs for a batched right-hand side (B, n) or (B, n, k): the batch as more columns."""
    n = rhs.shape[1]
    if rhs.ndim == 2:
        return _swap(anp.solve_banded(ab, _swap(rhs), l_and_u=l_and_u))
    moved = anp.reshape(anp.transpose(rhs, (1, 0, 2)), (n, -1))
    x = anp.reshape(anp.solve_banded(ab, moved, l_and_u=l_and_u), (n, rhs.shape[0], rhs.shape[2]))
    return anp.transpose(x, (1, 0, 2))


def _banded_times(dab: Any, x: Any, low: int, up: int) -> Any:
    """dA x for the matrix dA whose bands are dab (..., l + u + 1, n) (a leading batch allowed):
    (dA x)_i = sum_k dab[k, j] x_j with j = i - k + u."""
    n = dab.shape[-1]
    k = np.arange(low + up + 1)[:, None]
    j = np.arange(n)[None, :] - k + up
    mask = ((j >= 0) & (j < n)).astype(concrete(dab).real.dtype)
    j = np.clip(j, 0, n - 1)
    entries = times_step(dab[..., np.broadcast_to(k, j.shape), j], mask)  # dA[i, i - k + u] at [..., k, i]
    if x.ndim == 1:
        return anp.sum(entries * x[j], axis=-2)
    return anp.sum(anp.expand_dims(entries, axis=-1) * x[j], axis=-3)


def _transposed_bands(ab: Any, low: int, up: int) -> Any:
    """The bands of A^T ((u, l) of them): abT[k, j] = ab[u + l - k, j + k - l]."""
    n = ab.shape[-1]
    k, j, inside = _band_index(low, up, n, shift=low)
    return times_step(ab[up + low - k, j], inside.astype(concrete(ab).real.dtype))  # corners: anything


def _solve_banded_jvp(argnum: int):
    def rule(t, ans, ab, b, l_and_u=(0, 0)):
        low, up = check_bands(l_and_u, ab)
        rhs = t if argnum == 1 else -_banded_times(t, ans, low, up)
        return _solve_columns(ab, rhs, (low, up))

    return rule


def _solve_banded_vjp(argnum: int):
    def rule(g, ans, ab, b, l_and_u=(0, 0)):
        low, up = check_bands(l_and_u, ab)
        gb = anp.solve_banded(_transposed_bands(ab, low, up), g, l_and_u=(up, low))  # A^-T g
        if argnum == 1:
            return _to_input(gb, b)
        n = ab.shape[-1]
        k, i, inside = _band_index(low, up, n, shift=up)  # ab[k, j] is A[j + k - u, j]
        rows = gb[i]
        products = rows * ans if ans.ndim == 1 else anp.sum(rows * anp.expand_dims(ans, axis=0), axis=-1)
        return _to_input(-products * inside.astype(concrete(products).real.dtype), ab)

    return rule


# fmt: off
JVPS: dict[str, Any] = {
    "expm":            (_expm_jvp,),
    "sqrtm":           (_sqrtm_jvp,),
    "solve_sylvester": (_sylvester_jvp(0), _sylvester_jvp(1), _sylvester_jvp(2)),
    "solve_banded":    (_solve_banded_jvp(0), _solve_banded_jvp(1)),
}
VJPS: dict[str, Any] = {
    "expm":            (_expm_vjp,),
    "sqrtm":           (_sqrtm_vjp,),
    "solve_sylvester": (_sylvester_vjp(0), _sylvester_vjp(1), _sylvester_vjp(2)),
    "solve_banded":    (_solve_banded_vjp(0), _solve_banded_vjp(1)),
}
# fmt: on
SYMPY_RULES: dict[str, Any] = {}
