"""The backward sweep: newest node first, each node's VJP rules sending cotangents to its inputs."""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import GraphFreedError, StateChangedError
from adcore_reverse.vjps.shapes import JOINT_VJPS
from adcore_reverse.zeros import MOVES, Masked, MaskingRules, moved_zeros, unbroadcast_mask, zero_at


def backward_pass(
    root: Any, seed: Any, *, retain_graph: bool = False, create_graph: bool = False
) -> list[tuple[Any, Any]]:
    """Propagate `seed` from `root` to the leaves; return each reached leaf with its gradient.

    Nodes are numbered when created, after their inputs, so popping the highest number
    first visits every node after all the nodes that use it: no recursion, no sort.
    With `create_graph` the rules get Tensors, so the sweep is recorded as a graph.
    `zeros` holds, per pending node, the positions of its cotangent that a `where` or a step
    proved structurally zero (zeros.py); a node with none takes the plain loop below.
    """
    trace = root._trace
    # the caller's array may change before its next sweep, while rules keep what they computed
    # for a cotangent by its identity (custom.py, checkpoint.py): each sweep gets its own
    pending = {root._seq: seed.copy() if seed.__class__ is np.ndarray else seed}
    zeros: dict[int, np.ndarray] = {}
    heap = [(-root._seq, root)]
    leaves = []
    while heap:
        node = heappop(heap)[1]
        g = pending.pop(node._seq)
        if node._hooks:
            g, replaced = node._run_hooks(g)
            if replaced and zeros:
                zeros.pop(node._seq, None)  # the hook's gradient may be nonzero anywhere
        op = node._op
        if op is None:
            leaves.append((node, g))
            if zeros:
                zeros.pop(node._seq, None)  # so that the nodes after it take the plain loop again
            continue
        if node._args is None:
            raise GraphFreedError(
                f"backward through op {op.name!r} a second time, but its buffers were freed by the "
                "first backward(); call the first one with retain_graph=True"
            )
        args = node._args
        if create_graph:
            _check_unchanged(node)
            inputs, ans = args, node
        else:
            inputs, ans = node._primals, node._ans
        params, vjps = node._params, node._vjps
        if zeros or vjps.__class__ is MaskingRules:  # only at or below a where
            _send_with_zeros(node, g, zeros.pop(node._seq, None), inputs, ans, pending, zeros, heap)
        else:
            joint = JOINT_VJPS.get(op.name) if op.variadic else None
            shares = None if joint is None else joint(g, ans, *inputs, **params)
            for i, a in enumerate(args):
                if not (getattr(a, "_trace", None) is trace and a.requires_grad):  # a Tensor of this sweep
                    continue
                rule = vjps[i]
                if rule is None:
                    continue
                gi = rule(g, ans, *inputs, **params) if shares is None else shares[i]
                dtype = a.value.dtype
                if getattr(gi, "dtype", dtype) is not dtype:
                    gi = cotangent_of(gi, dtype)
                seq = a._seq
                if seq in pending:
                    pending[seq] = pending[seq] + gi
                    if zeros and seq in zeros:  # a sum is a structural zero only where every term is
                        del zeros[seq]
                else:
                    pending[seq] = gi
                    heappush(heap, (-seq, a))
        if not retain_graph:
            node._args = node._primals = node._ans = None
    return leaves


def cotangent_of(g: Any, dtype: np.dtype) -> Any:
    """g as the cotangent of a primal of `dtype`: the real part where a complex g meets a real
    primal (JAX's convention: the pairing Re(sum(g * dx)) sees only Re g when dx is real), traced
    when g is; a plain array in the primal's dtype (a rule promoted: a float64 mask * float32 g)."""
    g_dtype = getattr(g, "dtype", None)
    if g_dtype is None:
        g_dtype = np.result_type(g)
    if g_dtype.kind == "c" and dtype.kind != "c":
        g = anp.real(g)
    if (g.__class__ is np.ndarray or isinstance(g, np.generic)) and g.dtype != dtype:
        g = g.astype(dtype)  # a NumPy scalar too: a 0-d leaf's sum rule gives one
    return g


def _check_unchanged(node: Any) -> None:
    """With create_graph the rules read the Tensors themselves, not the copies the node kept:
    refuse if one was changed in place since the op ran."""
    for i, (a, kept) in enumerate(zip(node._args, node._primals)):
        if a.__class__ is node.__class__ and not np.array_equal(a.value, kept, equal_nan=True):
            raise StateChangedError(
                f"backward(create_graph=True) through op {node._op.name!r}: its input {i} ({a._name()}) "
                "was changed in place after the op used it, so the graph of the derivative would "
                "use the new values. Do not write into `.data` of a Tensor a graph still needs, or "
                "call backward() without create_graph, which uses the values the op saw."
            )
    if not np.array_equal(node.value, node._ans, equal_nan=True):
        raise StateChangedError(
            f"backward(create_graph=True) through op {node._op.name!r}: its output ({node._name()}) "
            "was changed in place after the op made it; do not write into `.data` of a Tensor a "
            "graph still needs, or call backward() without create_graph."
        )


def _send_with_zeros(node, g, known_zero, inputs, ans, pending, zeros, heap) -> None:
    """The loop of backward_pass for a node with structural zeros: its own (`known_zero`,
    zeroed in each input's cotangent) or those its rules return (Masked)."""
    op, trace, vjps, params = node._op, node._trace, node._vjps, node._params
    moves = known_zero is not None and op.name in MOVES
    if known_zero is not None and not op.elementwise and not moves:
        # positions no longer line up with the inputs'; but if no output position reaches
        # the result, no input position does through this node (a reduction under where)
        known_zero = np.ones((), bool) if known_zero.all() else None
    for i, a in enumerate(node._args):
        if not (getattr(a, "_trace", None) is trace and a.requires_grad):  # a Tensor of this sweep
            continue
        rule = vjps[i]
        if rule is None:
            continue
        gi = rule(g, ans, *inputs, **params)
        zi = None
        if gi.__class__ is Masked:
            gi, zi = gi
        if moves:  # gi gathers g's entries, zero at known_zero: only the positions need moving
            zi = moved_zeros(rule, known_zero, node._ans, node._primals, params)
            zi = zi if zi.any() else None
        elif known_zero is not None:
            shape = a.value.shape
            mask = (
                np.broadcast_to(known_zero, shape)
                if known_zero.ndim == 0
                else unbroadcast_mask(known_zero, shape)
            )
            if mask.any():
                gi, zi = zero_at(gi, mask), mask if zi is None else zi | mask
        gi = cotangent_of(gi, a.value.dtype)
        seq = a._seq
        if seq in pending:
            pending[seq] = pending[seq] + gi
            if seq in zeros:
                if zi is None:
                    del zeros[seq]
                else:
                    zeros[seq] = zeros[seq] & zi
        else:
            pending[seq] = gi
            if zi is not None:
                zeros[seq] = zi
            heappush(heap, (-seq, a))
