"""Learning-rate schedulers with torch.optim.lr_scheduler's names, defaults and sequences (torch 2.13).

    from adcore_kernels.optim import SGD
    from adcore_kernels.lr_scheduler import OneCycleLR

    opt = SGD([w], lr=0.1, momentum=0.9)
    sched = OneCycleLR(opt, max_lr=1.0, total_steps=len(batches))
    for batch in batches:
        opt.step(grads(batch))
        sched.step()                                # after the optimizer's step, as in torch

A scheduler only reads and writes `optimizer.param_groups`, a list of dicts with an "lr"
(and, for OneCycleLR's cycle_momentum, a "momentum" or a "betas"), so it drives any
adcore_kernels optimizer, several param groups each with its own lr, over a list or a pytree,
and the functional form's state (`StepLR(state, ...)`: `optim_functional` update reads
`state.param_groups`, which the states it returns share). As in torch:
- Construction is step 0: each group gets "initial_lr" (its lr, unless it has one;
  OneCycleLR sets its own with "max_lr" and "min_lr"), `base_lrs` are those, and the lr of
  epoch 0 is written. `last_epoch=k >= 0` resumes a run: every group must hold "initial_lr".
- `step()` advances `last_epoch` by one and writes each group's lr; `get_last_lr()` reads them.
  StepLR and CosineAnnealingLR use torch's chainable (recursive) form: they scale the group's
  current lr, so a change made to it from outside carries on, exactly as in torch.
- `state_dict()` is everything but the optimizer, under torch's keys; `load_state_dict`
  takes it or a torch scheduler's (whose flags `_is_initial` and `_get_lr_called_within_step`
  are ignored). Not supported: torch's deprecated `step(epoch)`.
A bad argument is an InvalidInputError (wrong type) or an InvalidValueError (wrong value)
naming the scheduler and the argument, raised before anything has changed.
"""

from __future__ import annotations

import copy
import math
from numbers import Integral, Real
from typing import Any, ClassVar

from adcore.errors import InvalidInputError, InvalidValueError

TORCH_FLAGS = ("_is_initial", "_get_lr_called_within_step")  # in torch's state_dicts; no state here
BASE_STATE = ("base_lrs", "last_epoch", "_step_count", "_last_lr")


def _int(me: str, name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise InvalidInputError(f"{me}: {name} must be an int, got {value!r}")
    if value < minimum:
        raise InvalidValueError(f"{me}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _real(me: str, name: str, value: Any, ok=lambda v: True, says: str = "a finite real number") -> float:
    if not isinstance(value, Real) or isinstance(value, bool):
        raise InvalidInputError(f"{me}: {name} must be {says}, got {value!r}")
    if not (math.isfinite(value) and ok(value)):
        raise InvalidValueError(f"{me}: {name} must be {says}, got {value!r}")
    return value


def _reals(me: str, name: str, values: Any, count: int, **bound) -> list[float]:
    """One checked number per param group; a single number is used for every group (torch's form)."""
    if not isinstance(values, list | tuple):
        values = [values] * count
    if len(values) != count:
        raise InvalidValueError(f"{me}: {name} has {len(values)} values for {count} param groups")
    return [_real(me, f"{name}[{i}]", v, **bound) for i, v in enumerate(values)]


def _bool(me: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{me}: {name} must be True or False, got {value!r}")
    return value


class LRScheduler:
    """What the three share: the param groups, the epoch count and the state; a subclass gives
    `_lrs`, its formula, and `_check(me, state)` for the arguments it keeps (`state_keys`)."""

    state_keys: ClassVar[tuple[str, ...]] = ()
    missing_ok: ClassVar[dict[str, Any]] = {}  # keys a torch state_dict may lack, with their value

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        me = type(self).__name__
        groups = _param_groups(optimizer, me)
        fresh = _int(me, "last_epoch", last_epoch, minimum=-1) == -1
        missing = [i for i, group in enumerate(groups) if "initial_lr" not in group]
        if missing and not fresh:
            raise InvalidValueError(
                f"{me}: last_epoch={last_epoch} resumes a run, but param_groups {missing} have no "
                "'initial_lr' (load the optimizer's saved state first, or start with last_epoch=-1)"
            )
        initial = [group.get("initial_lr", group["lr"]) for group in groups]
        self.base_lrs = [_real(me, f"param_groups[{i}]['initial_lr']", lr) for i, lr in enumerate(initial)]
        for group, lr in zip(groups, initial):
            group["initial_lr"] = lr
        self.optimizer = optimizer
        self.last_epoch = last_epoch
        self._step_count = 0
        self._advance(initial=True)

    def step(self) -> None:
        """Move to the next epoch (or batch): write each param group's lr for it."""
        self._advance(initial=False)

    def get_last_lr(self) -> list[float]:
        """The lr of each param group as this scheduler last wrote it."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """A copy of the scheduler's state (torch's keys), without the optimizer."""
        return copy.deepcopy({key: getattr(self, key) for key in self.state_keys + BASE_STATE})

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a `state_dict()` of this kind of scheduler, ours or torch's."""
        me = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise InvalidInputError(f"{me}: expected a dict, got {type(state_dict).__name__}")
        state = self.missing_ok | {k: v for k, v in state_dict.items() if k not in TORCH_FLAGS}
        expected = set(self.state_keys + BASE_STATE)
        if set(state) != expected:
            raise InvalidValueError(
                f"{me}: keys {sorted(state)} do not match this scheduler's {sorted(expected)}"
                f" (unknown: {sorted(set(state) - expected)}, missing: {sorted(expected - set(state))})"
            )
        count = len(_param_groups(self.optimizer, me))
        for name in ("base_lrs", "_last_lr"):
            if not isinstance(state[name], list):
                raise InvalidInputError(f"{me}: {name} must be a list, got {type(state[name]).__name__}")
            _reals(me, name, state[name], count)
        _int(me, "last_epoch", state["last_epoch"], minimum=0)
        _int(me, "_step_count", state["_step_count"], minimum=0)
        self._check(me, state)
        self.__dict__.update(copy.deepcopy(state))

    def _advance(self, initial: bool) -> None:
        """Compute the next epoch's values for every group, then write them (nothing on an error)."""
        groups = _param_groups(self.optimizer, type(self).__name__)
        if len(groups) != len(self.base_lrs):
            raise InvalidValueError(
                f"{type(self).__name__}: the optimizer has {len(groups)} param groups, this scheduler "
                f"was made for {len(self.base_lrs)}; make a new scheduler after add_param_group"
            )
        epoch = self.last_epoch + 1
        updates = self._updates(epoch, groups, initial)
        for group, update in zip(groups, updates):
            group.update(update)
        self.last_epoch, self._step_count = epoch, self._step_count + 1
        self._last_lr = [group["lr"] for group in groups]

    def _updates(self, epoch: int, groups: list[dict], initial: bool) -> list[dict[str, Any]]:
        return [{"lr": lr} for lr in self._lrs(epoch, groups, initial)]

    def _lrs(self, epoch: int, groups: list[dict], initial: bool) -> list[float]:
        """Each group's lr at `epoch`; `initial` at construction (torch's _is_initial)."""
        raise NotImplementedError

    def _check(self, me: str, state: dict[str, Any]) -> None:
        """Raise unless `state` holds valid values of this scheduler's `state_keys`."""
        raise NotImplementedError


def _param_groups(optimizer: Any, me: str) -> list[dict[str, Any]]:
    groups = getattr(optimizer, "param_groups", None)
    if not (isinstance(groups, list) and groups and all(isinstance(g, dict) for g in groups)):
        raise InvalidInputError(
            f"{me}: optimizer must have param_groups, a non-empty list of dicts (an adcore_kernels.optim "
            f"optimizer), got a {type(optimizer).__name__}"
        )
    for i, group in enumerate(groups):
        if "lr" not in group:
            raise InvalidValueError(f"{me}: param_groups[{i}] has no 'lr'")
        _real(me, f"param_groups[{i}]['lr']", group["lr"])
    return groups


class StepLR(LRScheduler):
    """lr × gamma every `step_size` epochs: lr_t = initial_lr · gamma^⌊t / step_size⌋."""

    state_keys = ("step_size", "gamma")

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self._check(type(self).__name__, {"step_size": step_size, "gamma": gamma})
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def _check(self, me: str, state: dict[str, Any]) -> None:
        _int(me, "step_size", state["step_size"], minimum=1)
        _real(me, "gamma", state["gamma"])

    def _lrs(self, epoch: int, groups: list[dict], initial: bool) -> list[float]:
        if epoch == 0 or epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]


class CosineAnnealingLR(LRScheduler):
    """lr_t = eta_min + (initial_lr − eta_min)(1 + cos(π t / T_max)) / 2, as torch computes it:
    each step scales the current lr by the ratio of consecutive cosine terms (and past T_max,
    where the cosine climbs back, adds the step that the ratio cannot express at its zero)."""

    state_keys = ("T_max", "eta_min")

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self._check(type(self).__name__, {"T_max": T_max, "eta_min": eta_min})
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def _check(self, me: str, state: dict[str, Any]) -> None:
        _int(me, "T_max", state["T_max"], minimum=1)
        _real(me, "eta_min", state["eta_min"])

    def _lrs(self, epoch: int, groups: list[dict], initial: bool) -> list[float]:
        t_max, eta_min = self.T_max, self.eta_min
        if initial:
            return [group["lr"] for group in groups]
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            rise = (1 - math.cos(math.pi / t_max)) / 2
            return [group["lr"] + (base - eta_min) * rise for base, group in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * epoch / t_max)) / (1 + math.cos(math.pi * (epoch - 1) / t_max))
        return [ratio * (group["lr"] - eta_min) + eta_min for group in groups]


ONE_CYCLE_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")
PHASE_KEYS = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")


def _anneal(strategy: str, start: float, end: float, pct: float) -> float:
    """From `start` at pct 0 to `end` at pct 1, torch's arithmetic."""
    if strategy == "cos":
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from max_lr/div_factor up to max_lr over pct_start of total_steps,
    then down to initial_lr/final_div_factor (three_phase: back to initial_lr first); momentum
    (or beta1) moves the opposite way between max_momentum and base_momentum."""

    state_keys = ("total_steps", "_schedule_phases", "_anneal_func_type", "cycle_momentum", "use_beta1")
    missing_ok = {"use_beta1": False}  # torch sets it only with cycle_momentum

    def __init__(
        self,
        optimizer: Any,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        me = type(self).__name__
        groups = _param_groups(optimizer, me)
        if total_steps is not None:
            total_steps = _int(me, "total_steps", total_steps, minimum=1)
        elif epochs is not None and steps_per_epoch is not None:
            total_steps = _int(me, "epochs", epochs, 1) * _int(me, "steps_per_epoch", steps_per_epoch, 1)
        else:
            raise InvalidValueError(f"{me}: give total_steps, or epochs and steps_per_epoch")
        pct_start = _real(me, "pct_start", pct_start, lambda v: 0 <= v <= 1, "a number in [0, 1]")
        positive = dict(ok=lambda v: v > 0, says="a finite number > 0")
        max_lrs = _reals(me, "max_lr", max_lr, len(groups), **positive)
        div_factor = _real(me, "div_factor", div_factor, **positive)
        final_div_factor = _real(me, "final_div_factor", final_div_factor, **positive)
        use_beta1 = "betas" in groups[0]
        if _bool(me, "cycle_momentum", cycle_momentum):
            if not use_beta1 and "momentum" not in groups[0]:
                raise InvalidValueError(
                    f"{me}: cycle_momentum=True needs an optimizer with 'momentum' or 'betas' in its "
                    "param_groups (SGD, RMSprop, Adam, AdamW, Adamax); pass cycle_momentum=False"
                )
            max_momenta = _reals(me, "max_momentum", max_momentum, len(groups))
            base_momenta = _reals(me, "base_momentum", base_momentum, len(groups))
        ends = [pct_start * total_steps - 1, total_steps - 1]
        names = [("initial_lr", "max_lr", "max_momentum", "base_momentum")]
        if _bool(me, "three_phase", three_phase):
            ends.insert(1, 2 * pct_start * total_steps - 2)
            names += [("max_lr", "initial_lr", "base_momentum", "max_momentum")]
            names += [("initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            names += [("max_lr", "min_lr", "base_momentum", "max_momentum")]
        ends[:-1] = [float(end) for end in ends[:-1]]  # torch's types, so state_dicts compare equal
        phases = [dict(zip(PHASE_KEYS, (end, *keys))) for end, keys in zip(ends, names)]
        state = {"total_steps": total_steps, "_schedule_phases": phases, "_anneal_func_type": anneal_strategy}
        self._check(me, state | {"cycle_momentum": cycle_momentum, "use_beta1": use_beta1})
        if last_epoch == -1:
            for group, top in zip(groups, max_lrs):
                group.update(initial_lr=top / div_factor, max_lr=top)
                group["min_lr"] = group["initial_lr"] / final_div_factor
            if cycle_momentum:
                for group, top, base in zip(groups, max_momenta, base_momenta):
                    group.update(self._momentum(group, top, use_beta1), max_momentum=top, base_momentum=base)
        self.total_steps, self._schedule_phases = total_steps, phases
        self._anneal_func_type, self.cycle_momentum, self.use_beta1 = (
            anneal_strategy,
            cycle_momentum,
            use_beta1,
        )
        super().__init__(optimizer, last_epoch)

    def _check(self, me: str, state: dict[str, Any]) -> None:
        _int(me, "total_steps", state["total_steps"], minimum=1)
        if state["_anneal_func_type"] not in ("cos", "linear"):
            raise InvalidValueError(
                f"{me}: anneal_strategy must be 'cos' or 'linear', got {state['_anneal_func_type']!r}"
            )
        _bool(me, "cycle_momentum", state["cycle_momentum"])
        _bool(me, "use_beta1", state["use_beta1"])
        phases = state["_schedule_phases"]
        if not (isinstance(phases, list) and phases and all(isinstance(p, dict) for p in phases)):
            raise InvalidInputError(
                f"{me}: _schedule_phases must be a non-empty list of dicts, got {phases!r}"
            )
        start = 0.0
        for i, phase in enumerate(phases):
            if set(phase) != set(PHASE_KEYS) or any(phase[k] not in ONE_CYCLE_KEYS for k in PHASE_KEYS[1:]):
                raise InvalidValueError(f"{me}: _schedule_phases[{i}] is not a OneCycleLR phase: {phase!r}")
            end = _real(me, f"_schedule_phases[{i}]['end_step']", phase["end_step"])
            if end == start:  # its pct would be 0 / 0 (torch: ZeroDivisionError when it is reached)
                raise InvalidValueError(
                    f"{me}: pct_start and total_steps={state['total_steps']} make phase {i} of the schedule "
                    f"zero steps long (it ends at step {end}, where it starts); choose another pct_start"
                )
            start = end

    @staticmethod
    def _momentum(group: dict[str, Any], value: float, use_beta1: bool) -> dict[str, Any]:
        return {"betas": (value, *group["betas"][1:])} if use_beta1 else {"momentum": value}

    def _updates(self, epoch: int, groups: list[dict], initial: bool) -> list[dict[str, Any]]:
        me = type(self).__name__
        if epoch > self.total_steps:
            raise InvalidValueError(
                f"{me}: step {epoch} is past total_steps={self.total_steps}; the cycle is over "
                "(make a new scheduler, or give a larger total_steps)"
            )
        needed = ONE_CYCLE_KEYS if self.cycle_momentum else ONE_CYCLE_KEYS[:3]
        for i, group in enumerate(groups):
            for key in needed:
                if key not in group:
                    raise InvalidValueError(
                        f"{me}: param_groups[{i}] has no {key!r} (was it made by OneCycleLR?)"
                    )
                _real(me, f"param_groups[{i}][{key!r}]", group[key])
        start = 0.0
        for i, phase in enumerate(self._schedule_phases):  # the phase `epoch` falls in
            if epoch <= phase["end_step"] or i == len(self._schedule_phases) - 1:
                pct = (epoch - start) / (phase["end_step"] - start)
                break
            start = phase["end_step"]
        updates = []
        for group in groups:
            update = {
                "lr": _anneal(self._anneal_func_type, group[phase["start_lr"]], group[phase["end_lr"]], pct)
            }
            if self.cycle_momentum:
                momentum = _anneal(
                    self._anneal_func_type, group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                )
                update |= self._momentum(group, momentum, self.use_beta1)
            updates.append(update)
        return updates
