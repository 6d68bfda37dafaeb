"""The backward sweep: newest node first, each node's VJP rules sending cotangents to its inputs."""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.errors import GraphFreedError, StateChangedError
from adcore.registry import JointRules
from adcore_reverse.zeros import Masked, input_zeros, plain, total, with_zeros


def backward_pass(
    root: Any, seed: Any, *, retain_graph: bool = False, create_graph: bool = False
) -> list[tuple[Any, Any]]:
    """Propagate `seed` from `root` to the leaves; return each reached leaf with its gradient.

    Nodes are numbered when created, after their inputs, so popping the highest number
    first visits every node after all the nodes that use it: no recursion, no sort.
    With `create_graph` the rules get Tensors, so the sweep is recorded as a graph.
    A cotangent may be Masked: with the positions a `where` or a step proved zero (zeros.py).
    """
    trace = root._trace
    # the caller's array may change before its next sweep, while rules keep what they computed
    # for a cotangent by its identity (custom.py, checkpoint.py): each sweep gets its own
    pending = {root._seq: seed.copy() if seed.__class__ is np.ndarray else seed}
    heap, leaves = [(-root._seq, root)], []
    while heap:
        node = heappop(heap)[1]
        g = pending.pop(node._seq)
        if node._hooks:
            g = node._run_hooks(g)
        if node._op is None:
            leaves.append((node, plain(g)))
            continue
        if node._args is None:
            raise _freed(node)
        inputs, ans = _recorded(node) if create_graph else (node._primals, node._ans)
        g, zeros = (g.cotangent, input_zeros(node, g.zeros)) if g.__class__ is Masked else (g, None)
        rules, params = node._vjps, node._params
        shares = rules.joint(g, ans, *inputs, **params) if rules.__class__ is JointRules else None
        for i, a in enumerate(node._args):
            if not (getattr(a, "_trace", None) is trace and a.requires_grad):
                continue  # not a Tensor of this sweep
            rule = rules[i]
            if rule is None:
                continue  # no derivative flows to it
            gi = rule(g, ans, *inputs, **params) if shares is None else shares[i]
            if zeros is not None:
                gi = with_zeros(gi, zeros[i])
            dtype = a.value.dtype
            if getattr(gi, "dtype", None) is not dtype:
                gi = cotangent_of(gi, dtype)
            seq = a._seq
            if seq in pending:
                prev = pending[seq]
                both_plain = prev.__class__ is not Masked and gi.__class__ is not Masked
                pending[seq] = prev + gi if both_plain else total(prev, gi)
            else:
                pending[seq] = gi
                heappush(heap, (-seq, a))
        if not retain_graph:
            node._args = node._primals = node._ans = None
    return leaves


def _freed(node: Any) -> GraphFreedError:
    return GraphFreedError(
        f"backward through op {node._op.name!r} a second time, but its buffers were freed by the "
        "first backward(); call the first one with retain_graph=True"
    )


def _recorded(node: Any) -> tuple[Any, Any]:
    """With `create_graph` the rules read the Tensors themselves, so the sweep is recorded."""
    _check_unchanged(node)
    return node._args, node


def cotangent_of(g: Any, dtype: np.dtype) -> Any:
    """g as the cotangent of a primal of `dtype`: the real part where a complex g meets a real
    primal (JAX's convention: the pairing Re(sum(g * dx)) sees only Re g when dx is real), traced
    when g is; a plain array in the primal's dtype (a rule promoted: a float64 mask * float32 g).
    A Masked g keeps its zeros."""
    if g.__class__ is Masked:
        return Masked(cotangent_of(g.cotangent, dtype), g.zeros)
    g_dtype = getattr(g, "dtype", None)
    if g_dtype is dtype:
        return g
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
