"""Tensor: reverse mode's traced value, a node of the graph (its eager API is eager.py's EagerAPI)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, bind_below, frozen_value
from adcore.errors import InvalidInputError
from adcore.plugins import loaded_registry
from adcore_reverse import grad_mode
from adcore_reverse.eager import EagerAPI, own_copy

# Every Tensor gets the next number: a node is always numbered after its inputs, so
# "newest first" is a topological order for the backward sweep.
_numbers = itertools.count()


class ReverseTrace(Trace):
    """Records each op on Tensors of this trace as a node: op, params, inputs, VJP rule.

    The backward pass reads a node's inputs and output again, after f (or its caller) may
    have changed an array in place (`k *= 10` on a constant f used). So a node keeps a copy of
    every array it did not make itself: constants here (lists too), and in the eager trace also
    the Tensors' values and its own output, which the user reaches through `.data`; `bind` has
    copied the arrays and lists among the params (index arrays, masks, `q`: core.frozen_params).
    The derivative is then that of the computation as it ran (docs/conventions.md, "State").
    """

    owns_values = True  # Tensor values are made by ops of this trace and reach no one else
    is_eager = False

    def __init__(self) -> None:
        self.since = grad_mode.depth()
        self.vjp_rules = loaded_registry().rules["vjp"]  # read once: a functional trace is short-lived

    def process(self, op: Any, args: tuple, params: dict) -> Tensor:
        vjps = self.vjp_rules.get(op.name)
        if vjps is None:
            vjps = loaded_registry().rule("vjp", op, "reverse")
            if vjps is None:  # a traceable op with no vjp rule: record its body, op by op
                return op.impl(*args, **params)
        # copied up front, so the impl reads the same copy the node keeps
        if self.owns_values:
            primals = [
                a.value if isinstance(a, Tensor) and a._trace is self else frozen_value(a) for a in args
            ]
        else:  # the Tensors' values too; numpy scalars, which 0-d ops return, cannot change
            primals = [
                (a.value.copy(order="K") if a.value.__class__ is np.ndarray else a.value)
                if isinstance(a, Tensor) and a._trace is self
                else frozen_value(a)
                for a in args
            ]
        ans = bind_below(op, primals, params)
        if grad_mode.is_recording(self.since):
            for i, a in enumerate(args):
                if isinstance(a, Tensor) and a.requires_grad and a._trace is self and vjps[i] is not None:
                    kept_ans = ans if self.owns_values else own_copy(ans)
                    return _make(ans, self, op, params, args, primals, vjps, True, kept_ans)
        return _make(ans, self, None, None, None, None, None, False)


class EagerTrace(ReverseTrace):
    """Level 0, for Tensors made by hand: it lives as long as the program, so it reads the
    rule table from the registry at each op (plugins may be reloaded meanwhile)."""

    owns_values = False  # `.data` hands the user every Tensor's array

    is_eager = True  # its Tensors have the eager API's values, detach and backward (eager.py)

    def __init__(self) -> None:
        self.since = 0

    @property
    def vjp_rules(self) -> dict:
        return loaded_registry().rules["vjp"]


EAGER = EagerTrace()


class Tensor(EagerAPI, ArrayTracer):
    """An array that reverse mode traces.

    Made by hand (`Tensor(data, requires_grad=True)`) it is eager, as in PyTorch:
    ops on it record a graph, `backward()` fills `.grad` of the leaves. Inside
    `adcore.differentiate(..., backend="reverse")` the arguments are Tensors of that
    call's own trace. Python numbers become float64.
    """

    __slots__ = (
        "requires_grad",
        "grad",
        "_op",
        "_params",
        "_args",
        "_primals",
        "_ans",
        "_vjps",
        "_seq",
        "_hooks",
    )

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        if isinstance(data, Tensor):
            data = data.value
        value = np.asarray(data, dtype=np.float64) if isinstance(data, (int, float)) else np.asarray(data)
        if requires_grad and value.dtype.char not in "fd":  # float16 too: no rule is checked for it
            raise InvalidInputError(
                f"only float32/float64 Tensors can require grad, got dtype {value.dtype}; "
                "convert with np.asarray(data, np.float32) or np.asarray(data, np.float64)"
            )
        _make(value, EAGER, None, None, None, None, None, requires_grad, t=self)

    @classmethod
    def _leaf(cls, value: Any, trace: ReverseTrace) -> Tensor:
        """A differentiated argument of a functional call: the caller's array itself, which the
        backend copies first when the pullback runs later (vjp), or freezes for the call."""
        return _make(value, trace, None, None, None, None, None, True)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def is_leaf(self) -> bool:
        return self._op is None

    @property
    def op(self) -> str | None:
        """Name of the op that made this Tensor (None for a leaf)."""
        return None if self._op is None else self._op.name

    def _name(self) -> str:
        """How errors name this Tensor: the op that made it (or leaf) and its shape."""
        made_by = "a leaf Tensor" if self._op is None else f"the Tensor op {self._op.name!r} made"
        return f"{made_by}, shape {self.shape}"

    def __repr__(self) -> str:
        extra = (
            f", op={self.op}"
            if self._op is not None
            else (", requires_grad=True" if self.requires_grad else "")
        )
        return f"Tensor({self.value!r}{extra})"


def _make(
    value, trace, op, params, args, primals, vjps, requires_grad, ans=None, t: Tensor | None = None
) -> Tensor:
    """A new Tensor (or `t`, filled): a node remembers its op, params, inputs (as given and
    as primals, the arrays it keeps), its output as kept and its VJP rules; a leaf or a
    constant has None for all of them."""
    if t is None:
        t = Tensor.__new__(Tensor)
    t.value = value
    t._trace = trace
    t.requires_grad = requires_grad
    t.grad = None
    t._op = op
    t._params = params
    t._args = args
    t._primals = primals
    t._ans = ans
    t._vjps = vjps
    t._seq = next(_numbers)
    t._hooks = None
    return t
