"""The PyTorch-style eager API of a Tensor (seed 001): `.data`, `backward()` filling the leaves'
`.grad`, hooks, `detach`, `requires_grad_`; on the same node the functional backends trace, with
the same backward_pass (no_grad and enable_grad are grad_mode.py's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore import ops
from adcore.errors import GradientError, InvalidInputError, InvalidValueError
from adcore.numpy_dispatch import conversion_error
from adcore_reverse.backward import backward_pass
from adcore_reverse.zeros import plain


class EagerAPI:
    """The methods a Tensor made by hand uses, as in PyTorch (a mixin of tensor.Tensor)."""

    __slots__ = ()

    @property
    def data(self) -> Any:
        """The plain value of an eager Tensor (writing into it is checked: see backward.py)."""
        return self._plain_value("x.data")

    def numpy(self) -> Any:
        """The plain value of an eager Tensor, cut from the graph."""
        return self._plain_value("x.numpy()")

    def _plain_value(self, what: str) -> Any:
        # Inside adcore.grad(f) the value would enter f's arithmetic as a constant: a silent cut.
        if not self._trace.is_eager:
            raise conversion_error(self, what, "x.detach() is the traced cut. ")
        return self.value

    def detach(self) -> Any:
        """The same value as a new leaf that does not require grad; inside a functional trace
        (`adcore.grad(f)`), `stop_gradient(self)`, a constant of that trace."""
        if self._trace.is_eager:
            return type(self)(self.value)
        return ops.stop_gradient(self)  # not an eager Tensor, which would leak out as f's result

    def requires_grad_(self, requires_grad: bool = True) -> Any:
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
            g, replaced = own_copy(new), True  # the hook's own array may change before the next sweep
        return g if replaced else given

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
        elif isinstance(grad, type(self)) and not create_graph:
            grad = grad.value
        if create_graph and not isinstance(grad, type(self)):
            grad = type(self)(grad)
        for leaf, g in backward_pass(
            self, grad, retain_graph=retain_graph or create_graph, create_graph=create_graph
        ):
            leaf.grad = g if leaf.grad is None else leaf.grad + g


def _shape_and_dtype(x: Any) -> tuple[Any, Any]:
    """x's shape and dtype, or (None, None) for something that is not an array."""
    try:
        return np.shape(x), np.result_type(x)
    except (TypeError, ValueError):
        return None, None


def own_copy(value: Any) -> Any:
    """An ndarray copied (a caller or hook may write into the original later); else the value itself."""
    return value.copy(order="K") if isinstance(value, np.ndarray) else value
