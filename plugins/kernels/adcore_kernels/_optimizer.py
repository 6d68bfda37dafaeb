"""The one optimizer class that runs any row of optim.py's table, and every check it makes.

A `Row` says what one optimizer does differently (its kernel, torch's hyperparameters with
their defaults and bounds, its switches, its state, the kernel's scalars, its formula);
`Optimizer` does the rest once: param groups, parameters (arrays or eager Tensors, given as
torch's list, `model.parameters()`, or any pytree of arrays: a dict, nested lists/tuples,
namedtuples, an adcore_nn Module), the checks, per-parameter state and step counts, `step`
(its grads torch's flat list or a pytree of the params' structure), `zero_grad` and torch's
state dicts (parameters numbered in the pytree's leaf order).
Every check runs before anything changes and raises an InvalidInputError (a TypeError) or an
InvalidValueError (a ValueError) naming the class and what is wrong.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import math
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, ClassVar, NamedTuple

import numpy as np

import adcore
from adcore.core import Tracer
from adcore.errors import InvalidInputError, InvalidValueError
from adcore_kernels._param_trees import GroupTree, groups_of, mismatch, tree_of

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
REAL_TYPES = (int, float, np.integer, np.floating)
# arrays or eager Tensors (model.parameters()), dicts {"params": [...], hyperparameter: value}, or a pytree
Params = Any
# torch's implementation switches and the values accepted: the kernel is always one fused CPU loop
SWITCH_VALUES = {"foreach": (None, True, False), "fused": (None, True, False), "capturable": (False,)}
SWITCH_VALUES["differentiable"] = (False,)
SCHEDULER_KEYS = {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"}  # lr_scheduler adds them


class Bound(NamedTuple):
    """What a hyperparameter may be: a bool (arity 0), or a finite real (1) or pair of them (2) `ok` accepts."""

    ok: Callable[..., bool]
    says: str  # completes "lr must be ..."
    arity: int = 1


class State(NamedTuple):
    """One of torch's state arrays: its name, whether a group's options use it (None: always), its start."""

    name: str
    used: Callable[[dict], bool] | None = None
    fill: Callable[[dict], float] = lambda h: 0.0


class Row(NamedTuple):
    """One optimizer as data: everything its class does differently from the others."""

    name: str  # registered name
    kernel: str  # its function in _optim_kernels
    hyper: dict[str, tuple[Any, Bound]]  # torch's hyperparameters in torch's order: default, bound
    switches: dict[str, Any]  # torch's implementation switches its groups hold, with their defaults
    state: tuple[State, ...]  # torch's state arrays in torch's order
    scalars: Callable[[dict, float, bool], tuple]  # (group, step t, a state array new?) -> kernel scalars
    formula: str  # the class docstring
    rule: Callable[[dict], str | None] = lambda h: None  # a check across hyperparameters
    counts_steps: bool = True  # torch keeps a "step" in the state (all but SGD)
    at_construction: bool = False  # state made with the parameter (Adagrad), not at its first step


class Optimizer:
    """The one optimizer: a public class binds it to its row and spells out torch's signature."""

    row: ClassVar[Row]
    name: ClassVar[str]
    state_names: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        row = cls.row
        cls.name, cls.__doc__, cls.state_names = row.name, row.formula, tuple(s.name for s in row.state)
        signature = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()}
        table = {"self": inspect.Parameter.empty, "params": inspect.Parameter.empty}
        table |= {k: default for k, (default, _) in row.hyper.items()} | row.switches
        if signature != {k: v for k, v in table.items() if k in signature or k != "decoupled_weight_decay"}:
            raise TypeError(f"{cls.__name__}.__init__'s signature {signature} is not its row's {table}")

    def __init__(self, params: Params, **given: Any) -> None:
        me, row = type(self).__name__, self.row
        self.defaults = {k: _checked_value(given[k], b, f"{me}: {k}") for k, (_, b) in row.hyper.items()}
        if problem := row.rule(self.defaults):
            raise InvalidValueError(f"{me}: {problem}")
        for name, default in row.switches.items():
            self.defaults[name] = _checked_switch(given.get(name, default), name, default, me)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, Any]] = {}  # by the parameter's index in the groups' flat order
        self._params: list[tuple[Any, np.ndarray]] = []  # (what the group holds, the array updated)
        self._names: list[str] = []  # how messages call each parameter (its pytree path where nested)
        self._trees: list[GroupTree] = []  # each group's structure, for step(grads) in that structure
        groups, self._grouped = groups_of(params, me)
        if not groups:
            raise InvalidValueError(f"{me}: got an empty parameter list")
        for group in groups:
            self.add_param_group(group)
        if not self._params:
            raise InvalidValueError(f"{me}: got an empty parameter list (a pytree with no array leaf)")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add {"params": [...], hyperparameter: value, ...}; the hyperparameters left out are the
        constructor's. Other keys are kept (and ignored)."""
        me, gi = type(self).__name__, len(self.param_groups)
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise InvalidInputError(f"{me}: a param group is a dict with 'params', got {param_group!r}")
        tree = tree_of(param_group["params"], me)
        extra = {k: v for k, v in param_group.items() if k != "params"}
        for key in extra.keys() - {*self.row.hyper, *self.row.switches, *SCHEDULER_KEYS}:
            if near := difflib.get_close_matches(str(key), self.row.hyper, n=1, cutoff=0.8):
                raise InvalidValueError(  # a misspelt hyperparameter would be silently ignored
                    f"{me}: param_groups[{gi}] has {key!r}, not a hyperparameter of {me}: did you mean "
                    f"{near[0]!r}? (other keys are kept and ignored)"
                )
        leaves, treedef = adcore.tree.flatten(tree)
        group = {"params": leaves, **self.defaults, **extra}
        group.update(self._hyper(group, f"{me}: param_groups[{gi}]"))
        for name, default in self.row.switches.items():
            _checked_switch(group[name], name, default, f"{me}: param_groups[{gi}]")
        start, where = len(self._params), f" (param group {gi})" if gi else ""
        flat = isinstance(tree, list | tuple) and treedef.num_nodes == len(tree) + 1 == len(leaves) + 1
        prefix = f"param_groups[{gi}]['params']" if self._grouped or gi else "params"
        paths = adcore.tree.paths(treedef, prefix)
        names = [  # a nested tree's path names its group
            f"parameter {start + j}" + (where if flat else f" ({path})") for j, path in enumerate(paths)
        ]
        new = [(p, _array_of(p, f"{me}: {name}")) for p, name in zip(leaves, names)]
        _check_no_shared_memory([a for _, a in self._params + new], self._names + names, me)
        self.param_groups.append(group)
        self._params += new
        self._names += names
        root = None if isinstance(tree, list | tuple) else tree  # lists are copied, as torch's
        self._trees.append(GroupTree(treedef, flat, root, leaves))
        if self.row.at_construction:
            self.state |= {start + j: self._new_state(a, group, {}) for j, (_, a) in enumerate(new)}

    def step(self, grads: Sequence[Any] | None = None) -> None:
        """Update every parameter with its gradient: `grads` in the params' pytree structure (with several
        groups, a list of one tree per group), or `grads[i]` for the i-th of the groups' params in leaf
        order (None skips it), or without grads each eager Tensor's `.grad`. Nothing changes on an error."""
        me = f"{type(self).__name__}.step"
        if callable(grads) and adcore.tree.is_leaf(adcore.tree.structure(grads)):  # a Module is callable too
            raise InvalidInputError(
                f"{me}: step(closure) is not supported: compute the loss and its gradients before the step, "
                "then call step(grads), or step() after loss.backward() with eager Tensors"
            )
        hypers = [self._hyper(g, f"{me}: param_groups[{i}]") for i, g in enumerate(self.param_groups)]
        flat = [p for g in self.param_groups for p in g["params"]]
        if len(flat) != len(self._params) or any(p is not q for p, (q, _) in zip(flat, self._params)):
            raise InvalidValueError(
                f"{me}: a param group's 'params' changed; add_param_group adds parameters"
            )
        if any(p is not a and p.value is not a for p, a in self._params):
            raise InvalidValueError(f"{me}: a Tensor parameter's array was replaced since it was added")
        self._check_roots(me)
        grads = self._checked_grads(grads, me)
        kernels = importlib.import_module("adcore_kernels._optim_kernels")  # numba, on the first step
        owners = (h for g, h in zip(self.param_groups, hypers) for _ in g["params"])
        updates = [
            (i, p, g, h) for i, ((_, p), g, h) in enumerate(zip(self._params, grads, owners)) if g is not None
        ]
        for i, p, g, h in updates:
            if "eps" in h and p.dtype.type(h["eps"]) == 0:
                self._try_on_copies(kernels, i, p, g, h, me)
        for i, p, g, h in updates:
            self._update(kernels, i, p, g, h)

    def _try_on_copies(
        self, kernels: ModuleType, i: int, p: np.ndarray, g: np.ndarray, h: dict, me: str
    ) -> None:
        """With eps 0 (in p's dtype) a denominator can be 0 (0/0 where the gradient and the state are
        still 0), and the kernel raises ZeroDivisionError halfway through p: the step runs on copies
        first, so that it refuses before anything changes. (torch writes NaN into the parameter.)"""
        try:
            self._update(kernels, i, p, g, h, on_copies=True)
        except ZeroDivisionError as e:
            eps, default = h["eps"], self.row.hyper["eps"][0]
            rounded = f", 0 in {p.dtype}" if eps != 0 else ""
            raise InvalidValueError(
                f"{me}: parameter {i}: eps={eps!r}{rounded}, and a gradient that is 0 where the state is "
                f"still 0 divides 0 by 0, which would write NaN into the parameter; give eps > 0 (the "
                f"default is {default!r}). Nothing was changed."
            ) from e

    def _update(
        self, kernels: ModuleType, i: int, p: np.ndarray, g: np.ndarray, h: dict, on_copies: bool = False
    ) -> None:
        """One parameter's fused step: the state its options use made where missing, its kernel called
        (on copies of the parameter and its state, changing nothing, if `on_copies`)."""
        row, state = self.row, self.state.get(i, {})
        if on_copies:
            p, state = p.copy(), {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()}
        made = self._new_state(p, h, state)
        new = any(name != "step" for name in made)
        state |= made
        unused = np.empty(0, p.dtype)  # handed to the kernel for a state array these options leave out
        arrays = [state[s.name].reshape(-1) if s.used is None or s.used(h) else unused for s in row.state]
        t = state["step"] + 1.0 if row.counts_steps else 0.0
        scalars = [a if isinstance(a, bool) else p.dtype.type(a) for a in row.scalars(h, t, new)]
        getattr(kernels, row.kernel)(p.reshape(-1), g.reshape(-1), *arrays, *scalars)
        if on_copies:
            return
        if row.counts_steps:
            state["step"] = t
        if state:
            self.state[i] = state

    def _new_state(self, p: np.ndarray, h: dict, having: dict) -> dict[str, Any]:
        """The state torch makes for parameter `p` under the options `h`, less what it is `having`."""
        state = {"step": 0.0} if self.row.counts_steps and "step" not in having else {}
        used = (s for s in self.row.state if (s.used is None or s.used(h)) and s.name not in having)
        return state | {s.name: np.full_like(p, s.fill(h)) for s in used}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Each eager Tensor parameter's .grad to None (or, if it has one, to zeros)."""
        for p, a in self._params:
            if p is not a and p.grad is not None:
                p.grad = None if set_to_none else np.zeros_like(a)

    def state_dict(self) -> dict[str, Any]:
        """torch's layout, {"state": {index: {"step": float, name: array}}, "param_groups": [{...,
        "params": [indices]}]}, holding copies: later steps do not change it."""
        groups, start = [], 0
        for group in self.param_groups:
            n = len(group["params"])
            groups.append(
                {**{k: v for k, v in group.items() if k != "params"}, "params": list(range(start, start + n))}
            )
            start += n
        state = {
            i: {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in s.items()}
            for i, s in self.state.items()
        }
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a state_dict() of ours or of torch's (whose tensors are read with np.asarray).
        Everything is checked first; then it is copied into this optimizer's own arrays."""
        me = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise InvalidValueError(f"{me}: expected a dict with keys ['param_groups', 'state'], got {got}")
        groups, states = state_dict["param_groups"], state_dict["state"]
        if not isinstance(groups, list | tuple) or len(groups) != len(self.param_groups):
            got = f"{len(groups)} groups" if isinstance(groups, list | tuple) else type(groups).__name__
            raise InvalidValueError(
                f"{me}: param_groups holds {got}, this optimizer {len(self.param_groups)}"
            )
        index, hypers, owner = {}, [], []  # saved parameter key -> our index; each group's; index -> group
        for gi, (mine, saved) in enumerate(zip(self.param_groups, groups)):
            n, where = len(mine["params"]), f"{me}: param_groups[{gi}]"
            keys = saved.get("params") if isinstance(saved, dict) else None
            if not isinstance(keys, list | tuple) or len(keys) != n:
                raise InvalidValueError(
                    f"{where} must be a dict whose 'params' lists {n} parameter(s), got {saved!r}"
                )
            hypers.append(self._hyper(saved, where))
            index |= {key: len(owner) + j for j, key in enumerate(keys)}
            owner += [gi] * n
        if not isinstance(states, dict):
            raise InvalidValueError(
                f"{me}: state must be a dict keyed by the groups' 'params', got {states!r}"
            )
        if unknown := [k for k in states if k not in index]:
            raise InvalidValueError(
                f"{me}: state for parameter {unknown[0]!r}, which no group lists ({list(index)})"
            )
        loaded = {
            index[k]: self._checked_state(s, index[k], hypers[owner[index[k]]], f"{me}: state[{k!r}]")
            for k, s in states.items()
        }
        for group, saved, h in zip(self.param_groups, groups, hypers):  # all checked: now change things
            params = group["params"]
            group.clear()  # in place: a reference to it (a scheduler's) stays valid
            group.update({"params": params, **self.row.switches, **saved, **h}, params=params)
        for i, saved in loaded.items():  # copied into our own arrays where we have them
            for name, mine in self.state.get(i, {}).items():
                if name in saved and name != "step":
                    np.copyto(mine, saved[name])
                    saved[name] = mine
        self.state = dict(sorted(loaded.items()))

    def _checked_state(self, saved: Any, i: int, h: dict, where: str) -> dict[str, Any]:
        """A parameter's saved state, checked, as new arrays ("step" a float) in torch's order."""
        p, steps = self._params[i][1], ["step"] if self.row.counts_steps else []
        names, needed = (
            steps + list(self.state_names),
            steps + [s.name for s in self.row.state if s.used is None],
        )
        if not isinstance(saved, dict) or set(saved) - set(names) or set(needed) - set(saved):
            got = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
            raise InvalidValueError(f"{where} must hold {needed} (and may hold {names}), got {got}")
        out = {}
        for name in (n for n in names if n in saved):
            a = np.asarray(saved[name])  # (copied below: a torch tensor's __array__ takes no copy=)
            if name == "step":
                if not (a.ndim == 0 and a.dtype.kind in "iuf" and np.isfinite(a) and 0 <= a == math.floor(a)):
                    raise InvalidValueError(
                        f"{where}['step'] must be a whole number >= 0, got {saved[name]!r}"
                    )
                out[name] = float(a)
                continue
            if a.shape != p.shape or a.dtype != p.dtype:
                raise InvalidValueError(
                    f"{where}[{name!r}] has shape {a.shape} and dtype {a.dtype}; "
                    f"parameter {i} has shape {p.shape} and dtype {p.dtype}"
                )
            if not np.isfinite(a).all():  # it would turn the parameter into nan at the next step
                bad = float(a[~np.isfinite(a)].flat[0])
                raise InvalidValueError(f"{where}[{name!r}] holds {bad}; a state to continue from is finite")
            out[name] = a.copy()
        return out

    def _hyper(self, group: dict, where: str) -> dict[str, Any]:
        """A group's hyperparameters, checked, pairs as tuples; raises naming the first wrong one."""
        h = {}
        for name, (_, bound) in self.row.hyper.items():
            if name not in group:
                raise InvalidValueError(
                    f"{where} lacks hyperparameter {name!r} (it has {sorted(map(str, group))})"
                )
            h[name] = _checked_value(group[name], bound, f"{where}[{name!r}]")
        if (default := self.row.switches.get("decoupled_weight_decay")) is not None:
            _checked_switch(
                group.get("decoupled_weight_decay", default), "decoupled_weight_decay", default, where
            )
        if problem := self.row.rule(h):
            raise InvalidValueError(f"{where}: {problem}")
        return h

    def _check_roots(self, me: str) -> None:
        """A dict or registered pytree (a Module) given as params is read again: an array replaced in it
        since would no longer be what the optimizer updates (silently untrained), so it is an error."""
        for gi, tree in enumerate(self._trees):
            if tree.root is None:
                continue
            leaves, treedef = adcore.tree.flatten(tree.root)
            same = treedef == tree.treedef and all(p is q for p, q in zip(leaves, tree.leaves))
            if not same:
                was = dict(zip(adcore.tree.paths(tree.treedef), tree.leaves))
                now = dict(zip(adcore.tree.paths(treedef), leaves))
                path = next((k for k in {**was, **now} if was.get(k) is not now.get(k)), "")
                prefix = f"param_groups[{gi}]['params']" if self._grouped or gi else "params"
                raise InvalidValueError(
                    f"{me}: {prefix}{path} was replaced (or added, or removed) since the optimizer was made; "
                    "it updates the arrays it was given, in place: write into them (p[...] = new, "
                    "load_state_dict) instead of assigning new arrays, or make a new optimizer"
                )

    def _leaf_grads(self, grads: Any, me: str) -> tuple[list, Callable[[], list[str]] | None]:
        """The gradients in the parameters' order, and (for messages, made only if one is needed) their
        paths: `grads` in the params' pytree structure (with several param groups, a list of one such
        tree per group), or torch's flat list of one array (or None: skip) per parameter (no paths).
        Otherwise an error naming the path."""
        trees = self._trees
        parts = [(grads, trees[0].treedef, "grads")] if len(trees) == 1 else None
        if len(trees) > 1 and isinstance(grads, list | tuple) and len(grads) == len(trees):
            parts = [(g, t.treedef, f"grads[{k}]") for k, (g, t) in enumerate(zip(grads, trees))]
        if parts is not None:
            flat = [adcore.tree.flatten(g) for g, _, _ in parts]
            if all(td == want for (_, td), (_, want, _) in zip(flat, parts)):

                def paths() -> list[str]:
                    return [n for (_, td), (_, _, w) in zip(flat, parts) for n in adcore.tree.paths(td, w)]

                return [leaf for leaves, _ in flat for leaf in leaves], paths
        all_flat = all(t.flat for t in trees)
        if isinstance(grads, list | tuple) and (
            all_flat or all(g is None or isinstance(g, np.ndarray | np.generic) for g in grads)
        ):
            return list(grads), None
        if (
            parts is None
            or not isinstance(grads, list | tuple | dict)
            and adcore.tree.is_leaf(adcore.tree.structure(grads))
        ):
            raise InvalidInputError(
                f"{me}: grads must be a list of one array (or None) per parameter"
                + ("" if all_flat else ", or a pytree of the params' structure")
                + f", got {type(grads).__name__}"
            )
        for g, want, where in parts:
            if (problem := mismatch(g, want, where)) is not None:
                raise InvalidValueError(f"{me}: {problem}")
        raise AssertionError("unreachable: the structures differ")

    def _checked_grads(self, grads: Any, me: str) -> list[np.ndarray | None]:
        """One C-contiguous gradient (or None) per parameter; raises naming the first wrong one."""
        paths = None
        if grads is not None:
            grads, paths = self._leaf_grads(grads, me)

        def name(i: int) -> str:
            return f"gradient {i}" + (f" ({paths()[i]})" if paths else "")

        if grads is None:
            if arrays := [i for i, (p, a) in enumerate(self._params) if p is a]:
                raise InvalidInputError(
                    f"{me}: parameter {arrays[0]} is an array, with no .grad: pass step(grads)"
                )
            grads = [
                None if p.grad is None else np.asarray(getattr(p.grad, "value", p.grad))
                for p, _ in self._params
            ]
        if not isinstance(grads, list | tuple):
            raise InvalidInputError(
                f"{me}: grads must be a list of one array (or None) per parameter, got {type(grads).__name__}"
            )
        if len(grads) != len(self._params):
            raise InvalidValueError(f"{me}: got {len(grads)} gradients for {len(self._params)} parameters")
        # a NumPy scalar is a 0-d gradient (what NumPy's ufuncs return for a 0-d parameter)
        grads = [np.asarray(g) if isinstance(g, np.generic) else g for g in grads]
        for i, ((_, p), g) in enumerate(zip(self._params, grads)):
            if g is not None and not isinstance(g, np.ndarray):
                raise InvalidInputError(f"{me}: {name(i)} is a {type(g).__name__}, not a NumPy array")
            if g is not None and (g.shape != p.shape or g.dtype != p.dtype):
                raise InvalidValueError(
                    f"{me}: {name(i)} has shape {g.shape} and dtype {g.dtype}; "
                    f"{self._names[i]} has shape {p.shape} and dtype {p.dtype}"
                )
        return [None if g is None else np.ascontiguousarray(g) for g in grads]

    def __repr__(self) -> str:
        groups = "; ".join(f"{len(g['params'])} parameters, lr={g['lr']!r}" for g in self.param_groups)
        return f"{type(self).__name__}({groups})"


def _array_of(p: Any, what: str) -> np.ndarray:
    """The array a parameter is updated through: itself, or an eager leaf Tensor's; else raises."""
    if isinstance(p, Tracer):
        if getattr(p, "requires_grad", False) is not True or getattr(p, "is_leaf", False) is not True:
            raise InvalidValueError(f"{what} is a {type(p).__name__}, not a leaf with requires_grad=True")
        p = p.numpy()  # raises unless p is an eager Tensor
    if not isinstance(p, np.ndarray):
        why = (
            " (a number, or a list of numbers, cannot be updated in place)"
            if isinstance(p, REAL_TYPES)
            else ""
        )
        raise InvalidInputError(f"{what} is a {type(p).__name__}, not a NumPy array or an eager Tensor{why}")
    if p.dtype not in FLOAT_DTYPES:
        raise InvalidInputError(f"{what} has dtype {p.dtype}; only float32 and float64 are updated")
    if not p.flags.c_contiguous:
        raise InvalidValueError(
            f"{what} is not C-contiguous (strides {p.strides}); the optimizer updates its parameters "
            "in place, so keep and pass np.ascontiguousarray(p) instead"
        )
    if not p.flags.writeable:
        raise InvalidValueError(f"{what} is read-only; the optimizer updates its parameters in place")
    return p


def _check_no_shared_memory(arrays: list[np.ndarray], names: list[str], me: str) -> None:
    """Two parameters over the same memory would be updated twice per step with mixed-up state (a
    pytree holding one array twice, tied weights, is one of them: torch would sum their gradients)."""
    spans = sorted((a.__array_interface__["data"][0], a.nbytes, i) for i, a in enumerate(arrays) if a.nbytes)
    for (start, size, i), (next_start, _, j) in zip(spans, spans[1:]):
        if next_start < start + size:  # C-contiguous: each is exactly [start, start + nbytes)
            first, second = sorted((i, j))
            raise InvalidValueError(
                f"{me}: {names[first]} and {names[second]} share memory (the same array twice, or views "
                "of one): each parameter must be its own array"
            )


def _checked_switch(value: Any, name: str, default: Any, where: str) -> Any:
    """A torch implementation switch, accepted where harmless."""
    if name == "decoupled_weight_decay":
        if value is not default:
            fix = "use AdamW" if value else "use Adam"
            raise InvalidValueError(
                f"{where}: decoupled_weight_decay={value!r} is the other optimizer's; {fix}"
            )
    elif not any(value is v for v in SWITCH_VALUES[name]):
        allowed = " or ".join(map(repr, SWITCH_VALUES[name]))
        raise InvalidValueError(
            f"{where}: {name}={value!r} is not supported, only {allowed} (one fused CPU kernel)"
        )
    return value


def _checked_value(value: Any, bound: Bound, what: str) -> Any:
    """`value` as a float (a pair as a tuple, a flag as a bool) if `bound` accepts it; else raises why."""
    if bound.arity == 0:
        if isinstance(value, bool | np.bool_):
            return bool(value)
        raise InvalidInputError(f"{what} must be True or False, got {type(value).__name__} {value!r}")
    numbers = tuple(value) if bound.arity == 2 and isinstance(value, tuple | list | np.ndarray) else (value,)
    reals = len(numbers) == bound.arity and all(
        isinstance(v, REAL_TYPES) and type(v) is not bool for v in numbers
    )
    if reals and all(math.isfinite(v) for v in numbers) and bound.ok(*numbers):
        return tuple(map(float, numbers)) if bound.arity == 2 else float(value)
    if not reals:
        kind = "a pair of real numbers" if bound.arity == 2 else "a real number"
        hint = f" (write {float(value)!r}, a number, not a string)" if _is_number_text(value) else ""
        raise InvalidInputError(f"{what} must be {kind}, got {type(value).__name__} {value!r}{hint}")
    if not all(math.isfinite(v) for v in numbers):
        raise InvalidValueError(f"{what} must be finite, got {value!r}")
    raise InvalidValueError(f"{what} must be {bound.says}, got {value!r}")


def _is_number_text(v: Any) -> bool:
    try:
        return isinstance(v, str) and math.isfinite(float(v))
    except ValueError:
        return False
