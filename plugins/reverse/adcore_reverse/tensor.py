"""Tensor: reverse mode's traced value, and the eager API of seed 001 (backward, grad, hooks)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore import ops
from adcore.array_tracer import ArrayTracer
from adcore.core import Trace, bind_below, frozen_value
from adcore.errors import GradientError, InvalidInputError, InvalidValueError
from adcore.numpy_dispatch import conversion_error
from adcore.plugins import loaded_registry
from adcore_reverse import grad_mode
from adcore_reverse.backward import backward_pass
from adcore_reverse.zeros import plain

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
                    kept_ans = ans if self.owns_values else _copy(ans)
                    return _make(ans, self, op, params, args, primals, vjps, True, kept_ans)
        return _make(ans, self, None, None, None, None, None, False)


class EagerTrace(ReverseTrace):
    """Level 0, for Tensors made by hand: it lives as long as the program, so it reads the
    rule table from the registry at each op (plugins may be reloaded meanwhile)."""

    owns_values = False  # `.data` hands the user every Tensor's array

    def __init__(self) -> None:
        self.since = 0

    @property
    def vjp_rules(self) -> dict:
        return loaded_registry().rules["vjp"]


def _copy(value: Any) -> Any:
    return value.copy(order="K") if isinstance(value, np.ndarray) else value


EAGER = EagerTrace()


class Tensor(ArrayTracer):
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

    # --- the eager API ----------------------------------------------------------
    @property
    def data(self) -> Any:
        """The plain value of an eager Tensor (writing into it is checked: see backward.py)."""
        return self._plain_value("x.data")

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

    def numpy(self) -> Any:
        """The plain value of an eager Tensor, cut from the graph."""
        return self._plain_value("x.numpy()")

    def _plain_value(self, what: str) -> Any:
        # Inside adcore.grad(f) the value would enter f's arithmetic as a constant: a silent cut.
        if self._trace is not EAGER:
            raise conversion_error(self, what, "x.detach() is the traced cut. ")
        return self.value

    def detach(self) -> Any:
        """The same value as a new leaf that does not require grad; inside a functional trace
        (`adcore.grad(f)`), `stop_gradient(self)`, a constant of that trace."""
        if self._trace is EAGER:
            return Tensor(self.value)
        return ops.stop_gradient(self)  # not an eager Tensor, which would leak out as f's result

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not self.is_leaf:
            raise GradientError("requires_grad can only be changed on leaf Tensors; use detach() first")
        if requires_grad and self.value.dtype.char not in "fd":
            raise InvalidInputError(
                f"only float32/float64 Tensors can require grad, got dtype {self.value.dtype}; make a "
                "new Tensor(np.asarray(data, np.float32), requires_grad=True)"
            )
        self.requires_grad = requires_grad
        return self

    def register_hook(self, hook: Callable[[Any], Any]) -> Callable[[], None]:
        """Call `hook(grad)` when this Tensor's gradient is computed; a non-None return replaces it
        and must have the gradient's shape and dtype.

        Returns a function that removes the hook.
        """
        if not callable(hook):
            raise InvalidInputError(
                f"register_hook on {self._name()}: expected a callable hook(grad) -> grad or None, "
                f"got {type(hook).__name__} {hook!r}"
            )
        if not self.requires_grad:
            raise GradientError("cannot register a hook on a Tensor that does not require grad")
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)

        def remove() -> None:
            if self._hooks is not None and hook in self._hooks:
                self._hooks.remove(hook)

        return remove

    def _run_hooks(self, given: Any) -> Any:
        """This Tensor's gradient after its hooks: `given` (Masked too) unless a hook replaced it
        with one that may be nonzero anywhere."""
        g = plain(given)
        replaced = False
        for hook in self._hooks:
            new = hook(g)
            if new is None:
                continue
            if type(new) in (int, float):
                new = np.asarray(new, dtype=np.result_type(g))  # a Python number takes g's dtype
            shape, dtype = _shape_and_dtype(new)
            if shape != np.shape(g) or dtype != np.result_type(g):
                raise InvalidValueError(
                    f"hook {getattr(hook, '__name__', hook)!r} on {self._name()} returned "
                    f"{type(new).__name__} of shape {shape} and dtype {dtype}; "
                    f"it must return None or a gradient of this Tensor's shape {np.shape(g)} and "
                    f"dtype {np.result_type(g)}"
                )
            g, replaced = _copy(new), True  # the hook's own array may change before the next sweep
        return g if replaced else given

    def _name(self) -> str:
        """How errors name this Tensor: the op that made it (or leaf) and its shape."""
        made_by = "a leaf Tensor" if self._op is None else f"the Tensor op {self._op.name!r} made"
        return f"{made_by}, shape {self.shape}"

    def backward(self, grad: Any = None, retain_graph: bool = False, create_graph: bool = False) -> None:
        """Accumulate d self / d leaf into `.grad` of every leaf this Tensor depends on.

        `grad` seeds the sweep (needed unless self is a scalar). The graph's buffers are
        freed afterwards unless `retain_graph`; `create_graph` records the sweep itself,
        so `.grad` is a Tensor that can be differentiated again.
        """
        if not self.requires_grad:
            raise GradientError(
                "this Tensor does not require grad: it was computed under no_grad(), or from "
                "Tensors none of which has requires_grad=True"
            )
        if grad is None:
            if self.value.shape != ():
                raise GradientError(
                    f"backward() without a seed needs a scalar, this Tensor has shape {self.shape}; "
                    "pass grad= of that shape"
                )
            grad = np.ones_like(self.value)
        elif np.shape(grad) != self.shape:
            raise GradientError(
                f"backward(grad=...): the seed has shape {np.shape(grad)}, this Tensor has shape "
                f"{self.shape}; they must match"
            )
        elif isinstance(grad, Tensor) and not create_graph:
            grad = grad.value
        if create_graph and not isinstance(grad, Tensor):
            grad = Tensor(grad)
        for leaf, g in backward_pass(
            self, grad, retain_graph=retain_graph or create_graph, create_graph=create_graph
        ):
            leaf.grad = g if leaf.grad is None else leaf.grad + g

    def __repr__(self) -> str:
        extra = (
            f", op={self.op}"
            if self._op is not None
            else (", requires_grad=True" if self.requires_grad else "")
        )
        return f"Tensor({self.value!r}{extra})"


def _shape_and_dtype(x: Any) -> tuple[Any, Any]:
    """x's shape and dtype, or (None, None) for something that is not an array."""
    try:
        return np.shape(x), np.result_type(x)
    except (TypeError, ValueError):
        return None, None


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
