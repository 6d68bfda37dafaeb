"""What generated reverse code calls besides runtime.py: adjoints of subscripts, in-place writes and
list appends (written into in place, so a loop over x[i] costs O(1) per trip), the forward sweep's
copies of what it keeps, and the parameters' adjoints in their shape and dtype.

An adjoint is None where it is zero; the adjoint of a list or tuple is a list of entries' adjoints
(None for zero), of a dict a dict. The emitter hands these helpers only adjoints it owns (no other
name holds them), copying first with `owned` where it cannot tell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from adcore_reverse.zeros import Masked, plain

import adcore.numpy as anp
from adcore import ops
from adcore.core import Tracer
from adcore.extend.rules import unbroadcast
from adcore_source.runtime import add_adjoint, zero_adjoint

_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def owned(adjoint: Any) -> Any:
    """A copy of an adjoint that other names may hold, to be written into in place."""
    adjoint = plain(adjoint)
    if isinstance(adjoint, np.ndarray):
        return adjoint.copy()  # (a traced value is never written into: it is its own)
    if isinstance(adjoint, (list, tuple)):
        return list(adjoint)
    if isinstance(adjoint, dict):
        return dict(adjoint)
    return adjoint


def add_at(adjoint: Any, x: Any, index: Any, g: Any) -> Any:
    """The adjoint of x after `y = x[index]` passed y's adjoint g back (in place; None: zero)."""
    if g is None:
        return adjoint
    if g.__class__ is Masked and not isinstance(x, (list, tuple, dict, Tracer)):
        return _masked_add_at(adjoint, x, index, g)
    g = plain(g)
    if isinstance(x, (list, tuple, dict)):
        if adjoint is None:
            adjoint = dict.fromkeys(x) if isinstance(x, dict) else [None] * len(x)
        if isinstance(index, slice):
            for k, gk in zip(range(*index.indices(len(x))), g):
                adjoint[k] = add_adjoint(adjoint[k], gk)
        else:
            adjoint[index] = add_adjoint(adjoint[index], g)
        return adjoint
    if isinstance(g, Tracer) or isinstance(adjoint, Tracer) or isinstance(x, Tracer):
        # under an outer derivative (the adjoint sweep itself differentiated): no writes in place
        moved = ops.scatter_add(g, index=index, shape=np.shape(x))
        return moved if adjoint is None else plain(adjoint) + moved
    if adjoint is None:
        x = np.asarray(x)
        adjoint = np.zeros(x.shape, x.dtype if x.dtype.kind in "fc" else np.result_type(g, 0.0))
    else:
        adjoint = plain(adjoint)
        if adjoint.__class__ is not np.ndarray:  # a number: x was 0-d
            adjoint = np.array(adjoint)
    if _basic(index):
        adjoint[index] += g
    else:
        np.add.at(adjoint, index, g)
    return adjoint


def _masked_add_at(adjoint: Any, x: Any, index: Any, g: Masked) -> Any:
    """add_at for a g with structural zeros: they move to x's positions with g's, and the positions
    g does not reach are structural zeros of this contribution too (as the tape's getitem keeps them)."""
    x = np.asarray(x)
    moved = np.zeros(x.shape, x.dtype if x.dtype.kind in "fc" else np.result_type(g.cotangent, 0.0))
    zeros = np.ones(x.shape, bool)
    if _basic(index):
        moved[index] += g.cotangent
        zeros[index] = np.broadcast_to(g.zeros, np.shape(moved[index]))
    else:
        np.add.at(moved, index, g.cotangent)
        reached = np.zeros(x.shape)
        np.add.at(reached, index, np.where(g.zeros, 0.0, 1.0))
        zeros = reached == 0
    contribution = Masked(moved, zeros) if zeros.any() else moved
    return contribution if adjoint is None else add_adjoint(adjoint, contribution)


def take_at(adjoint: Any, index: Any, v: Any) -> Any:
    """After `x[index] = v`: v's adjoint, x's adjoint there (a copy) summed to v's shape; zeros like
    v where a list's entry had none."""
    if isinstance(adjoint, (list, dict)):
        if isinstance(index, slice):
            positions = range(*index.indices(len(adjoint)))
            return [zero_adjoint(vk) if adjoint[k] is None else adjoint[k] for k, vk in zip(positions, v)]
        out = adjoint[index]
        return zero_adjoint(v) if out is None else out
    out = adjoint[index] if isinstance(adjoint, Tracer) else np.array(adjoint[index])
    return unbroadcast(out, v) if np.shape(out) != np.shape(v) else out


def cleared_at(adjoint: Any, index: Any) -> Any:
    """x's adjoint after `x[index] = v`: zero at index (the values there were overwritten), in place."""
    if isinstance(adjoint, (list, dict)):
        if isinstance(index, slice):
            for k in range(*index.indices(len(adjoint))):
                adjoint[k] = None
        else:
            adjoint[index] = None
        return adjoint
    if isinstance(adjoint, Tracer):
        return adjoint - ops.scatter_add(adjoint[index], index=index, shape=np.shape(adjoint))
    adjoint[index] = 0
    return adjoint


def set_at(x: Any, index: Any, v: Any) -> Any:
    """`x[index] = v` as f does it, in place; on a traced value (the sweeps run under an outer
    derivative: a hessian, or another backend over the generated code) the new value is built
    instead, with x's other entries and v's bit for bit."""
    if not (isinstance(v, Tracer) or isinstance(x, Tracer)) or isinstance(x, (list, dict)):
        x[index] = v
        return x
    mask = np.zeros(np.shape(x), bool)
    mask[index] = True
    placed = ops.scatter_add(anp.broadcast_to(v, mask[index].shape), index=index, shape=mask.shape)
    return anp.where(mask, placed, x)


def pop_adjoint(adjoint: Any) -> Any:
    """After `l.append(v)`: v's adjoint, the last entry of l's adjoint, taken off it."""
    return adjoint.pop()


def popped_extension(adjoint: Any, values: Any) -> Any:
    """After `l.extend(values)`: the adjoint of `values` (in its structure), taken off l's adjoint."""
    k = len(values)
    entries = adjoint[len(adjoint) - k :]
    del adjoint[len(adjoint) - k :]
    if isinstance(values, np.ndarray):
        return np.stack([zero_adjoint(v) if e is None else plain(e) for e, v in zip(entries, values)])
    return entries


def unextend(values: list, extension: Any) -> None:
    """Undo `values.extend(extension)`."""
    del values[len(values) - len(extension) :]


def snapshot(v: Any) -> Any:
    """A copy of v that no later write reaches: arrays copied, containers rebuilt around copies."""
    cls = v.__class__
    if cls is np.ndarray:
        return v.copy(order="K")  # in its memory layout: NumPy's sums over it depend on the layout
    if cls is list:
        return [snapshot(e) for e in v]
    if cls is tuple:
        return tuple(snapshot(e) for e in v)
    if cls is dict:
        return {k: snapshot(e) for k, e in v.items()}
    return v


def param_adjoint(adjoint: Any, p: Any) -> Any:
    """The adjoint of parameter p as the caller gets it: p's structure, zeros where nothing reached,
    p's shape and dtype."""
    adjoint = plain(adjoint)
    if adjoint is None:
        return zero_adjoint(p)
    cls = p.__class__
    if cls is list or cls is tuple:
        entries = [param_adjoint(a, v) for a, v in zip(adjoint, p, strict=True)]
        return entries if cls is list else tuple(entries)
    if cls is dict:
        return {k: param_adjoint(adjoint.get(k), v) for k, v in p.items()}
    dtype = getattr(p, "dtype", None)
    if dtype is None:
        return adjoint
    if np.shape(adjoint) != np.shape(p):
        adjoint = unbroadcast(adjoint, p)
    if np.result_type(adjoint).kind == "c" and dtype.kind != "c":
        adjoint = anp.real(adjoint)  # a real primal's cotangent is Re g (JAX's convention, as reverse's)
    if isinstance(adjoint, Tracer) or isinstance(p, Tracer):
        return adjoint if adjoint.dtype == dtype else adjoint.astype(dtype)
    adjoint = np.asarray(adjoint, dtype)
    return adjoint if isinstance(p, np.ndarray) else adjoint[()]


def _basic(index: Any) -> bool:
    if isinstance(index, tuple):
        return all(isinstance(i, _BASIC) for i in index)
    return isinstance(index, _BASIC)


__all__ = [
    "Masked",
    "add_at",
    "cleared_at",
    "owned",
    "param_adjoint",
    "pop_adjoint",
    "set_at",
    "popped_extension",
    "snapshot",
    "take_at",
    "unextend",
]
