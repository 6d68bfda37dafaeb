"""Dual: forward mode's traced value, a primal with a batch of tangents, and the trace that moves them."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import ops
from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, bind_below
from adcore.plugins import loaded_registry
from adcore.registry import JointRules


class ForwardTrace(Trace):
    """One forward-mode transformation: each op on its Duals also computes the output's
    tangents, from the JVP rules of the inputs that carry some (seed 001, 二元数).

    All Duals of one trace carry the same number of tangent directions, `batch`.
    Its level keeps its tangents apart from those of any other transformation nested
    with it (no perturbation confusion): a Dual of another trace is a constant here.
    """

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.jvp_rules = loaded_registry().rules["jvp"]  # read once: a trace is short-lived

    def process(self, op: Any, args: tuple, params: dict) -> Any:
        rules = self.jvp_rules.get(op.name)
        if rules is None:
            rules = loaded_registry().rule("jvp", op, "forward")
            if rules is None:  # a traceable op with no jvp rule: push the tangents through its body
                return op.impl(*args, **params)
        primals = [a.value if isinstance(a, Dual) and a._trace is self else a for a in args]
        ans = bind_below(op, primals, params)
        if rules.__class__ is JointRules:  # one call for all inputs (hookspecs.Joint)
            ts = [a.tangent if isinstance(a, Dual) and a._trace is self else None for a in args]
            if all(t is None for t in ts):
                return ans
            return Dual(ans, _fit(rules.joint(ts, ans, *primals, **params), self.batch, ans), self)
        tangent = None
        for i, a in enumerate(args):
            if not (isinstance(a, Dual) and a._trace is self):
                continue
            rule = rules[i]
            if rule is None:
                continue
            share = rule(a.tangent, ans, *primals, **params)
            tangent = share if tangent is None else tangent + share
        if tangent is None:  # no derivative flows: a constant to this trace
            return ans
        return Dual(ans, _fit(tangent, self.batch, ans), self)


def _fit(tangent: Any, batch: int, ans: Any) -> Any:
    """The summed shares as a batched tangent of `ans`: its shape and its dtype. A real output's
    tangent is real (JAX's convention): a complex share meeting it gives its real part, explicitly."""
    shape = (batch,) + getattr(ans, "shape", ())
    if tangent.shape != shape:  # a share that broadcasts, such as a lifted input of add
        tangent = ops.broadcast_to(tangent, shape=shape)
    dtype = getattr(ans, "dtype", None)
    if dtype is None:
        dtype = np.result_type(ans)
    if tangent.dtype is not dtype:
        if tangent.dtype.kind == "c" and dtype.kind != "c":
            tangent = ops.real(tangent)
        if tangent.__class__ is np.ndarray and tangent.dtype != dtype:
            tangent = tangent.astype(dtype)  # a rule promoted (a float64 mask times float32 t)
    return tangent


class Dual(ArrayTracer):
    """x + ε·t for a batch of directions at once: `value` is the primal, `tangent` has
    shape (batch,) + value.shape, one tangent per direction.

    A Jacobian with n inputs is one evaluation with n directions (the identity as
    tangents) instead of n evaluations (seed 001: forward mode costs n passes of f).
    """

    __slots__ = ("tangent",)

    def __init__(self, value: Any, tangent: Any, trace: ForwardTrace) -> None:
        self.value = value
        self.tangent = tangent
        self._trace = trace

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    def __repr__(self) -> str:
        return f"Dual({self.value!r}, tangent={self.tangent!r})"
