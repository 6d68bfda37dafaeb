"""The fused optimizers of `adcore_kernels.optim` in optax's functional form, over any pytree of arrays.

    from adcore_kernels import optim_functional as optf

    opt = optf.adam(lr=1e-2, weight_decay=0.01)     # torch's hyperparameter names and defaults
    state = opt.init(params)                        # params: a dict, nested lists/tuples, a Module...
    updates, state = opt.update(grads, state, params)     # grads: the params' structure
    params = optf.apply_updates(params, updates)    # new arrays: nothing is changed in place

Each step runs the in-place optimizer's code and kernel on new arrays (copies of the params and
of the state), so a run is bit for bit the run of `optim.Adam(list_of_params).step(grads)`.

UPDATES ARE NOT DELTAS. `updates` is an `Updates` object holding the new parameter values
that `update` computed, and `apply_updates(params, updates)` returns them. The kernels compute
the new value w' directly (AdamW's w ← (1 − αλ)w first, then its step), and w + (w' − w) is not
w' in floating point, so deltas could not give the in-place optimizer's parameters bit for bit.
Arithmetic on an `Updates` (scaling, adding, clipping, np.asarray) is refused with a typed error,
and `apply_updates` refuses params other than (bit for bit) those `update` was given: a scaled
or misapplied update is an error, never a silently different optimizer. Scale the learning rate
instead (`state.param_groups[0]["lr"]`), or clip the gradients before `update`.

The state is a pytree (a NamedTuple) in torch's state_dict layout, `OptState(state,
param_groups)`: `state` maps each leaf's index (the params' leaf order) to torch's per-parameter
state ({"step": float, "exp_avg": array, ...}); `param_groups` holds one group, the
hyperparameters `update` reads at every step (optax's inject_hyperparams), so a scheduler of
`adcore_kernels.lr_scheduler` drives it: `StepLR(state, step_size=10)`. `update` returns a state
with new arrays that SHARES `param_groups` (the same list of dicts) with the state it was given:
the one mutable part, as an optimizer's param_groups, so a scheduler made on the first state
drives every later one. copy.deepcopy(state) for an independent snapshot. An in-place optimizer
loads it (`optim.Adam(params).load_state_dict(state._asdict())`), and `update` accepts a torch
or in-place state_dict as `OptState(**state_dict)`. One param group: for per-leaf hyperparameters
use the in-place optimizer's param groups.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import adcore
from adcore.errors import InvalidInputError, InvalidValueError
from adcore_kernels import optim
from adcore_kernels._optimizer import FLOAT_DTYPES, Optimizer
from adcore_kernels._param_trees import mismatch


class OptState(NamedTuple):
    """A functional optimizer's state, torch's state_dict layout (a pytree; see the module's doc)."""

    state: dict[int, dict[str, Any]]
    param_groups: list[dict[str, Any]]


class Transformation(NamedTuple):
    """optax's GradientTransformation contract: `init(params) -> state`,
    `update(grads, state, params) -> (updates, state)`."""

    init: Callable[[Any], OptState]
    update: Callable[[Any, OptState, Any], tuple[Updates, OptState]]


class Updates:
    """The new parameter values one `update` computed: NOT deltas (see the module's doc). Only
    `apply_updates(params, updates)` reads them; arithmetic on them is refused."""

    __slots__ = ("_new", "_old", "_optimizer", "treedef")

    def __init__(self, optimizer: str, treedef: Any, new: list[np.ndarray], old: list[np.ndarray]) -> None:
        self._optimizer, self.treedef, self._new, self._old = optimizer, treedef, new, old

    def __repr__(self) -> str:
        return f"Updates({self._optimizer}: the new values of {len(self._new)} parameters, not deltas)"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidInputError(
            f"{self!r}: these updates are the new parameter values {self._optimizer}'s update computed, not "
            "deltas (p + (p_new - p) is not p_new in floating point), so they cannot be scaled, added, "
            "clipped or converted; pass them to apply_updates(params, updates) as they are. To take a "
            "smaller step, lower state.param_groups[0]['lr']; to clip, clip the gradients before update"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __neg__ = __pos__ = __abs__ = __pow__ = __matmul__ = __rmatmul__ = __array__ = _refuse
    __array_ufunc__ = __array_function__ = __iter__ = __len__ = __getitem__ = _refuse


def apply_updates(params: Any, updates: Updates) -> Any:
    """The params after the step `updates` holds: a tree of the params' structure with the new
    arrays `update` computed (bit for bit the in-place optimizer's). `params` must be the params
    `update` was given (the same arrays, or equal bit for bit); nothing is changed in place."""
    me = "apply_updates"
    if not isinstance(updates, Updates):
        raise InvalidInputError(
            f"{me}: updates must be the Updates an adcore_kernels.optim_functional update returned (they "
            f"are new values, not deltas), got {type(updates).__name__}"
        )
    leaves, treedef = adcore.tree.flatten(params)
    if (problem := mismatch(params, updates.treedef, "params")) is not None:
        raise InvalidValueError(f"{me}: {problem} (the updates were computed for other params)")
    paths = None
    for i, (p, q) in enumerate(zip(leaves, updates._old)):
        if p is not q and not _same_bits(p, q):
            paths = paths or adcore.tree.paths(treedef, "params")
            raise InvalidValueError(
                f"{me}: {paths[i]} is not the array update() computed these updates from: the updates are "
                "the new values for those params, not deltas to add to others; call update with these params"
            )
    return adcore.tree.unflatten(treedef, updates._new)


def _same_bits(p: Any, q: np.ndarray) -> bool:
    return (
        isinstance(p, np.ndarray)
        and p.dtype == q.dtype
        and p.shape == q.shape
        and np.ascontiguousarray(p).tobytes() == np.ascontiguousarray(q).tobytes()
    )


def _float_leaves(params: Any, me: str) -> tuple[list[np.ndarray], Any]:
    """The params' leaves (float32/float64 arrays, else an error naming the path) and structure."""
    leaves, treedef = adcore.tree.flatten(params)
    for i, p in enumerate(leaves):
        if not (isinstance(p, np.ndarray) and p.dtype in FLOAT_DTYPES):
            path = adcore.tree.paths(treedef, "params")[i]
            got = f"an array of dtype {p.dtype}" if isinstance(p, np.ndarray) else f"a {type(p).__name__}"
            raise InvalidInputError(
                f"{me}: {path} is {got}; a functional optimizer's params are float32 or float64 NumPy arrays"
            )
    return leaves, treedef


def _init(cls: type[Optimizer], hyper: dict[str, Any], params: Any) -> OptState:
    """torch's state for these params (empty until the first step, but Adagrad's sums), one group."""
    leaves, treedef = _float_leaves(params, f"{cls.name}.init")
    opt = cls(adcore.tree.unflatten(treedef, [np.array(p, order="C") for p in leaves]), **hyper)
    saved = opt.state_dict()
    return OptState(saved["state"], saved["param_groups"])


def _update(
    cls: type[Optimizer], hyper: dict[str, Any], grads: Any, state: OptState, params: Any
) -> tuple[Updates, OptState]:
    """One step of the in-place optimizer on copies of the params and of the state."""
    me = f"{cls.name}.update"
    if not isinstance(state, OptState):
        raise InvalidInputError(
            f"{me}: state must be the OptState init or update returned (or OptState(**state_dict)), "
            f"got {type(state).__name__}"
        )
    if params is None:  # optax allows it for some transformations; these kernels compute from params
        raise InvalidInputError(f"{me}: params is None; give the params: the step computes their new values")
    leaves, treedef = _float_leaves(params, me)
    copies = [np.array(p, order="C") for p in leaves]  # the new params: the step writes into them
    opt = cls(adcore.tree.unflatten(treedef, copies), **hyper)
    opt.load_state_dict(state._asdict())  # checked, and copied: the given state's arrays stay as they are
    opt.step(grads)
    new_state = dict(sorted(opt.state.items()))  # arrays the load copied and the step wrote: new ones
    return Updates(cls.name, treedef, copies, leaves), OptState(new_state, state.param_groups)


def _transformation(cls: type[Optimizer]) -> Callable[..., Transformation]:
    """The functional form of `cls`: its hyperparameters (torch's names, order and defaults, from
    the class's signature), without the params and torch's implementation switches."""
    signature = inspect.signature(cls.__init__)
    hypers = [p for name, p in signature.parameters.items() if name in cls.row.hyper]
    signature = signature.replace(parameters=hypers, return_annotation=Transformation)

    def make(*args: Any, **kwargs: Any) -> Transformation:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise InvalidInputError(
                f"{cls.name}: {e}; its hyperparameters are torch's {cls.__name__}'s: {list(cls.row.hyper)}"
            ) from None
        bound.apply_defaults()
        hyper = dict(bound.arguments)
        cls([np.zeros(1)], **hyper)  # the hyperparameters' checks, now rather than at init
        return Transformation(partial(_init, cls, hyper), partial(_update, cls, hyper))

    make.__signature__ = signature  # type: ignore[attr-defined]
    make.__name__ = make.__qualname__ = cls.name
    make.__doc__ = (
        f"torch.optim.{cls.__name__} as an optax-style Transformation(init, update) over a pytree; "
        f"`update` reads the hyperparameters from state.param_groups[0].\n\n{cls.__doc__}"
    )
    return make


sgd = _transformation(optim.SGD)
adam = _transformation(optim.Adam)
adamw = _transformation(optim.AdamW)
adagrad = _transformation(optim.Adagrad)
rmsprop = _transformation(optim.RMSprop)
adadelta = _transformation(optim.Adadelta)
adamax = _transformation(optim.Adamax)
rprop = _transformation(optim.Rprop)

__all__ = [
    "OptState",
    "Transformation",
    "Updates",
    "apply_updates",
    *(cls.name for cls in optim.OPTIMIZERS.values()),
]
