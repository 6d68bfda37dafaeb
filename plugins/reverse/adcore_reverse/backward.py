"""The backward sweep: newest node first, each node's VJP rules sending cotangents to its inputs."""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

import numpy as np

from adcore.errors import GraphFreedError
from adcore_reverse.tensor import Tensor


def backward_pass(
    root: Tensor, seed: Any, *, retain_graph: bool = False, create_graph: bool = False
) -> list[tuple[Tensor, Any]]:
    """Propagate `seed` from `root` to the leaves; return each reached leaf with its gradient.

    Nodes are numbered when created, after their inputs, so popping the highest number
    first visits every node after all the nodes that use it: no recursion, no sort.
    With `create_graph` the rules get Tensors, so the sweep is recorded as a graph.
    """
    trace = root._trace
    pending = {root._seq: seed}
    heap = [(-root._seq, root)]
    leaves = []
    while heap:
        node = heappop(heap)[1]
        g = pending.pop(node._seq)
        if node._hooks:
            g = node._run_hooks(g)[0]
        op = node._op
        if op is None:
            leaves.append((node, g))
            continue
        if node._args is None:
            raise GraphFreedError(
                f"backward through op {op.name!r} a second time, but its buffers were freed by the "
                "first backward(); call the first one with retain_graph=True"
            )
        args = node._args
        inputs, ans = (args, node) if create_graph else (node._primals, node.value)
        params, vjps = node._params, node._vjps
        for i, a in enumerate(args):
            if not (isinstance(a, Tensor) and a.requires_grad and a._trace is trace):
                continue
            if op.variadic:
                gi = vjps(i, g, ans, *inputs, **params)
            else:
                rule = vjps[i]
                if rule is None:
                    continue
                gi = rule(g, ans, *inputs, **params)
            if gi.__class__ is np.ndarray and gi.dtype is not a.value.dtype and gi.dtype != a.value.dtype:
                gi = gi.astype(a.value.dtype)  # a rule promoted (float64 mask * float32 g)
            seq = a._seq
            if seq in pending:
                pending[seq] = pending[seq] + gi
            else:
                pending[seq] = gi
                heappush(heap, (-seq, a))
        if not retain_graph:
            node._args = node._primals = None
    return leaves
