"""Nine optimizers with the update rules of seed 001 (优化方法), in the style of torch.optim.

    from adcore_kernels.optim import Adam          # or adcore.optimizer("adam", params, lr=1e-2)

    opt = Adam([w, b], lr=1e-2)                    # float32/float64, C-contiguous, writeable arrays
    for batch in batches:
        opt.step([grad_w, grad_b])                 # updates w and b in place
    opt.param_groups[0]["lr"] = 1e-3               # takes effect at the next step
    saved = opt.state_dict()                       # ... Adam([w, b]).load_state_dict(saved)

Each optimizer is one fused numba kernel per parameter: it reads the parameter, its
gradient and its state once and writes the parameter and the state once, on all of numba's
threads (on the calling thread alone for a parameter under 2^15 elements, where waking the
others costs more than they save). The kernels live in `_optim_kernels`, imported on the
first `.step()`, so importing this module does not import numba.

Conventions, as in torch.optim unless a class docstring says otherwise:
- Hyperparameters are torch's names and defaults. They live in `param_groups[0]`, a dict
  read at every step: assigning `opt.param_groups[0]["lr"]` is the one way to change the
  learning rate (or any hyperparameter) mid-run. There is a single group (no per-group
  hyperparameters), and it holds hyperparameters only, not the parameters.
- Each hyperparameter must be a finite real number (or a pair of them) in its range, and is
  checked wherever it can come in: at construction, at every `step` (a value assigned into
  `param_groups` since) and in `load_state_dict`. A wrong type (lr="0.1") is an
  InvalidInputError (a TypeError), a wrong value (lr=inf, nan, -1) an InvalidValueError (a
  ValueError); both name the optimizer and the hyperparameter, and nothing has changed.
- `weight_decay` λ is L2 regularisation added to the gradient, g ← g + λw, before the update.
- `state_dict()` is {"optimizer": name, "step": t, "param_groups": [hyperparameters],
  "state": [{state name: array}, one dict per parameter]}, holding copies (unlike torch's
  references), so it does not change as the optimizer goes on. `load_state_dict` checks
  everything before changing anything, then copies into the optimizer's own arrays.
- Parameters are checked at construction: a NumPy array, float32 or float64, C-contiguous,
  writeable, sharing no memory with another parameter; otherwise an error names the
  optimizer and the parameter's index. Nothing is ever copied behind your back.
- Gradients are checked before any parameter is touched: one per parameter, an array of the
  parameter's shape and dtype. A non-contiguous gradient is read through a contiguous copy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any, ClassVar, NamedTuple

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Bound(NamedTuple):
    """What one hyperparameter may be: a finite real number (or a pair of them) that `ok` accepts."""

    ok: Callable[..., bool]  # called with the number, or with the pair's two numbers
    says: str  # completes "lr must be ..."
    pair: bool = False


AT_LEAST_0 = Bound(lambda v: v >= 0, ">= 0")
IN_0_1 = Bound(lambda v: 0 <= v <= 1, "in [0, 1]")
BETAS = Bound(lambda b1, b2: 0 <= b1 < 1 and 0 <= b2 < 1, "a pair (beta1, beta2), each in [0, 1)", pair=True)
ETAS = Bound(lambda lo, hi: 0 < lo < 1 < hi, "a pair (eta-, eta+) with 0 < eta- < 1 < eta+", pair=True)
STEP_SIZES = Bound(lambda lo, hi: 0 <= lo <= hi, "a pair (min, max) with 0 <= min <= max", pair=True)


def _kernels() -> ModuleType:
    """The numba kernels module, imported (numba with it) on the first step."""
    from adcore_kernels import _optim_kernels

    return _optim_kernels


class Optimizer:
    """What the nine share: checked parameters, per-parameter state arrays, a step count.

    A subclass sets `name` (its registered name), `bounds` (its hyperparameters and what
    each may be), `state_names` (its state arrays, each the shape and dtype of its
    parameter, starting at zero) and `_update`, which calls its kernel on one parameter.
    """

    name: ClassVar[str]
    bounds: ClassVar[dict[str, Bound]]
    state_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: Iterable[np.ndarray], **hyper: Any) -> None:
        me = type(self).__name__
        hyper = _checked_group(hyper, self.bounds, me, "{}")
        self.params: list[np.ndarray] = _checked_params(params, me)
        self.param_groups: list[dict[str, Any]] = [hyper]
        self.state: list[dict[str, np.ndarray]] = [
            {name: np.zeros_like(p) for name in self.state_names} for p in self.params
        ]
        self.step_count = 0

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """Update every parameter in place with its gradient (`grads[i]` for `params[i]`)."""
        grads = self._checked_grads(grads)
        hyper = self._checked_param_groups(self.param_groups, f"{type(self).__name__}.step")
        kernels = _kernels()
        self.step_count += 1
        for p, g, state in zip(self.params, grads, self.state):
            flat_state = [state[name].reshape(-1) for name in self.state_names]
            with kernels.threads_for(p.size):
                self._update(kernels, p.reshape(-1), g.reshape(-1), *flat_state, hyper=hyper, f=p.dtype.type)

    def _update(
        self, kernels: ModuleType, p: np.ndarray, g: np.ndarray, *state: np.ndarray, hyper, f
    ) -> None:
        """Call this optimizer's kernel on one flat parameter; `f` converts a scalar to its dtype."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """A copy of everything the next steps depend on; see the module docstring for its layout."""
        return {
            "optimizer": self.name,
            "step": self.step_count,
            "param_groups": [dict(group) for group in self.param_groups],
            "state": [{name: a.copy() for name, a in state.items()} for state in self.state],
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a `state_dict()` of the same optimizer over parameters of the same shapes."""
        hyper = self._check_state_dict(state_dict)
        for mine, saved in zip(self.state, state_dict["state"]):
            for name in self.state_names:
                np.copyto(mine[name], saved[name])
        group = self.param_groups[0]  # updated in place: a reference to it stays valid
        group.clear()
        group.update(hyper)
        self.step_count = int(state_dict["step"])

    def _checked_param_groups(self, groups: Any, where: str) -> dict[str, Any]:
        """The one group's hyperparameters, checked (pairs as tuples); raises naming the bad one."""
        if not (isinstance(groups, list) and len(groups) == 1 and isinstance(groups[0], dict)):
            raise InvalidInputError(
                f"{where}: param_groups must be a list of one dict of hyperparameters, got {groups!r}"
            )
        return _checked_group(groups[0], self.bounds, where, "param_groups[0][{!r}]")

    def _check_state_dict(self, state_dict: dict[str, Any]) -> dict[str, Any]:
        """Raises unless `state_dict` can be loaded whole; returns its checked hyperparameters."""
        me = f"{type(self).__name__}.load_state_dict"
        keys = {"optimizer", "step", "param_groups", "state"}
        if not isinstance(state_dict, dict) or set(state_dict) != keys:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise InvalidValueError(f"{me}: expected a dict with keys {sorted(keys)}, got {got}")
        if state_dict["optimizer"] != self.name:
            raise InvalidValueError(
                f"{me}: this is the state of optimizer {state_dict['optimizer']!r}, not {self.name!r}"
            )
        step = state_dict["step"]
        if not isinstance(step, int | np.integer) or isinstance(step, bool) or step < 0:
            raise InvalidValueError(f"{me}: step must be an int >= 0, got {step!r}")
        hyper = self._checked_param_groups(state_dict["param_groups"], me)
        states = state_dict["state"]
        if not isinstance(states, list) or len(states) != len(self.params):
            got = len(states) if isinstance(states, list) else type(states).__name__
            raise InvalidValueError(
                f"{me}: state for {got} parameters, this optimizer has {len(self.params)}"
            )
        for i, (p, saved) in enumerate(zip(self.params, states)):
            if not isinstance(saved, dict) or set(saved) != set(self.state_names):
                got = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
                raise InvalidValueError(
                    f"{me}: state of parameter {i} must have {sorted(self.state_names)}, got {got}"
                )
            for name, a in saved.items():
                if not isinstance(a, np.ndarray) or a.shape != p.shape or a.dtype != p.dtype:
                    got = f"{a.shape} {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__
                    raise InvalidValueError(
                        f"{me}: state {name!r} of parameter {i} is {got}; "
                        f"expected {p.shape} {p.dtype}, the shape and dtype of the parameter"
                    )
                if not np.isfinite(a).all():  # it would turn the parameter into nan at the next step
                    raise InvalidValueError(
                        f"{me}: state {name!r} of parameter {i} holds {a[~np.isfinite(a)].flat[0]}; "
                        "a state the optimizer can continue from is finite (was it saved after a diverged step?)"
                    )
        return hyper

    def _checked_grads(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The gradients, C-contiguous; raises, naming the first wrong one, before any update."""
        me = type(self).__name__
        if not isinstance(grads, list | tuple):
            raise InvalidInputError(
                f"{me}.step: grads must be a list with one array per parameter, got {type(grads).__name__}"
            )
        if len(grads) != len(self.params):
            raise InvalidValueError(
                f"{me}.step: got {len(grads)} gradients for {len(self.params)} parameters"
            )
        checked = []
        for i, (p, g) in enumerate(zip(self.params, grads)):
            if not isinstance(g, np.ndarray):
                raise InvalidInputError(f"{me}.step: gradient {i} is a {type(g).__name__}, not a NumPy array")
            if g.shape != p.shape or g.dtype != p.dtype:
                raise InvalidValueError(
                    f"{me}.step: gradient {i} has shape {g.shape} and dtype {g.dtype}; "
                    f"parameter {i} expects shape {p.shape} and dtype {p.dtype}"
                )
            checked.append(np.ascontiguousarray(g))
        return checked

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v!r}" for k, v in self.param_groups[0].items())
        return f"{type(self).__name__}({hyper}; {len(self.params)} parameters, step {self.step_count})"


def _checked_params(params: Iterable[np.ndarray], optimizer: str) -> list[np.ndarray]:
    """The parameters as a list, each usable in place; else an error naming the bad one."""
    if isinstance(params, np.ndarray):
        raise InvalidInputError(
            f"{optimizer}: params must be a list of arrays, e.g. {optimizer}([w]), not one array"
        )
    params = list(params)
    if not params:
        raise InvalidValueError(f"{optimizer}: got an empty parameter list")
    for i, p in enumerate(params):
        if not isinstance(p, np.ndarray):
            raise InvalidInputError(f"{optimizer}: parameter {i} is a {type(p).__name__}, not a NumPy array")
        if p.dtype not in FLOAT_DTYPES:
            raise InvalidInputError(
                f"{optimizer}: parameter {i} has dtype {p.dtype}; only float32 and float64 are updated"
            )
        if not p.flags.c_contiguous:
            raise InvalidValueError(
                f"{optimizer}: parameter {i} is not C-contiguous (strides {p.strides}); the optimizer updates "
                "its parameters in place, so keep and pass np.ascontiguousarray(p) instead"
            )
        if not p.flags.writeable:
            raise InvalidValueError(
                f"{optimizer}: parameter {i} is read-only; the optimizer updates its parameters in place"
            )
    _check_no_shared_memory(params, optimizer)
    return params


def _check_no_shared_memory(params: list[np.ndarray], optimizer: str) -> None:
    """Two parameters over the same memory would be updated twice per step with mixed-up state."""
    spans = sorted(
        (p.__array_interface__["data"][0], p.nbytes, i) for i, p in enumerate(params) if p.nbytes
    )  # C-contiguous, so each parameter is exactly [start, start + nbytes)
    for (start, size, i), (next_start, _, j) in zip(spans, spans[1:]):
        if next_start < start + size:
            raise InvalidValueError(f"{optimizer}: parameters {min(i, j)} and {max(i, j)} share memory")


def _checked_group(group: dict[str, Any], bounds: dict[str, Bound], where: str, label: str) -> dict[str, Any]:
    """`group` checked against `bounds` (every name, nothing else), pairs made tuples; `label`
    formats a name for the message ("{}" at construction, "param_groups[0][{!r}]" after)."""
    if set(group) != set(bounds):
        unknown, missing = sorted(set(group) - set(bounds)), sorted(set(bounds) - set(group))
        raise InvalidValueError(
            f"{where}: hyperparameters {sorted(group)} do not match this optimizer's {sorted(bounds)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
            + (f" (missing: {', '.join(missing)})" if missing else "")
        )
    checked = {}
    for name, bound in bounds.items():  # the common case, every value fine, kept cheap: it runs at each step
        value = group[name]
        numbers = tuple(value) if bound.pair and isinstance(value, tuple | list | np.ndarray) else (value,)
        if not (len(numbers) == 1 + bound.pair and all(map(_is_finite_real, numbers)) and bound.ok(*numbers)):
            _refuse(value, numbers, bound, f"{where}: {label.format(name)}", name)
        checked[name] = numbers if bound.pair else value
    return checked


REAL_TYPES = (int, float, np.integer, np.floating)


def _is_finite_real(v: Any) -> bool:
    return isinstance(v, REAL_TYPES) and type(v) is not bool and math.isfinite(v)


def _refuse(value: Any, numbers: tuple, bound: Bound, what: str, name: str) -> None:
    """Raise the error that says why `value` is not a hyperparameter `bound` accepts."""
    if len(numbers) != 1 + bound.pair or not all(
        isinstance(v, REAL_TYPES) and type(v) is not bool for v in numbers
    ):
        kind = "a pair of real numbers" if bound.pair else "a real number"
        hint = f" (write {name}={float(value)!r}, a number, not a string)" if _is_number_text(value) else ""
        raise InvalidInputError(f"{what} must be {kind}, got {type(value).__name__} {value!r}{hint}")
    if not all(math.isfinite(v) for v in numbers):
        raise InvalidValueError(f"{what} must be finite, got {value!r}")
    raise InvalidValueError(f"{what} must be {bound.says}, got {value!r}")


def _is_number_text(v: Any) -> bool:
    try:
        return isinstance(v, str) and math.isfinite(float(v))
    except ValueError:
        return False


# ----------------------------------------------------------------------------- SGD and momentum
class SGD(Optimizer):
    """Plain SGD: w ← w − α(g + λw). torch.optim.SGD with momentum=0.

    Hyperparameters: lr α = 1e-3, weight_decay λ = 0.
    """

    name = "sgd"
    bounds = {"lr": AT_LEAST_0, "weight_decay": AT_LEAST_0}

    def __init__(self, params: Iterable[np.ndarray], lr: float = 1e-3, weight_decay: float = 0.0) -> None:
        super().__init__(params, lr=lr, weight_decay=weight_decay)

    def _update(self, kernels, p, g, *, hyper, f):
        kernels.sgd(p, g, f(hyper["lr"]), f(hyper["weight_decay"]))


class Momentum(Optimizer):
    """Momentum SGD with PyTorch's placement of the learning rate (seed: Momentum SGD):

        Δw ← ρΔw − g − λw
        w  ← w + αΔw

    The seed's naive form, Δw ← ρΔw − αg, w ← w + Δw, gives the same steps while α is
    constant, but there α only scales the new gradient: after a learning-rate change the
    velocity keeps the old scale for many steps (Goyal et al. 2017). Here α scales the
    whole step, so a change of `param_groups[0]["lr"]` takes effect at once, and the weight
    decay is not multiplied into the velocity separately from α.

    Hyperparameters: lr α = 1e-3, momentum ρ = 0.9, weight_decay λ = 0. torch.optim.SGD(
    momentum=ρ, dampening=0) takes the same steps (its momentum_buffer is −Δw); torch's
    momentum default is 0, which is plain SGD, so this class defaults to 0.9.
    State: "delta" (Δw).
    """

    name = "momentum"
    bounds = {"lr": AT_LEAST_0, "momentum": IN_0_1, "weight_decay": AT_LEAST_0}
    state_names = ("delta",)

    def __init__(
        self, params: Iterable[np.ndarray], lr: float = 1e-3, momentum: float = 0.9, weight_decay: float = 0.0
    ) -> None:
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay)

    def _update(self, kernels, p, g, delta, *, hyper, f):
        kernels.momentum(p, g, delta, f(hyper["lr"]), f(hyper["momentum"]), f(hyper["weight_decay"]))


class Nesterov(Momentum):
    """Nesterov accelerated gradient, in PyTorch's form (seed: Nesterov Accelerated Gradient):

        Δw ← ρΔw − g − λw        with g the gradient at the parameters w as given
        w  ← w + α(ρΔw − g − λw)

    The seed's form keeps w and evaluates the gradient at the look-ahead point w + ρΔw:
    Δw ← ρΔw − α∇L(w + ρΔw), w ← w + Δw. This class keeps the look-ahead point itself as
    the parameters: starting from the same w with Δw = 0 and a constant α (λ = 0), its
    parameters after every step equal the seed's w + ρΔw exactly, and its Δw is the seed's
    divided by α. The learning rate sits where Momentum puts it, so a change is immediate.

    Hyperparameters: lr α = 1e-3, momentum ρ = 0.9, weight_decay λ = 0, as
    torch.optim.SGD(momentum=ρ, nesterov=True). State: "delta" (Δw).
    """

    name = "nesterov"

    def _update(self, kernels, p, g, delta, *, hyper, f):
        kernels.nesterov(p, g, delta, f(hyper["lr"]), f(hyper["momentum"]), f(hyper["weight_decay"]))


# ----------------------------------------------------------------------------- sign-based
class Rprop(Optimizer):
    """Resilient propagation, per the seed: each element has its own step size α.

        α ← min(α·η+, α_max)   if g·g_prev > 0
        α ← max(α·η−, α_min)   if g·g_prev < 0      (α unchanged otherwise)
        w ← w − α·sgn(g)        g_prev ← g

    Hyperparameters (torch's): lr = 1e-2 is every α at construction (changing
    `param_groups[0]["lr"]` later has no effect, as in torch), etas (η−, η+) = (0.5, 1.2),
    step_sizes (α_min, α_max) = (1e-6, 50). No weight decay, as in torch.
    Differs from torch.optim.Rprop: after a sign change torch sets g to 0 (no step and no
    sign comparison at the next step, "iRprop−"); the seed, and this class, step with
    −α·sgn(g) and remember g. State: "previous" (g_prev), "step_size" (α).
    """

    name = "rprop"
    bounds = {"lr": AT_LEAST_0, "etas": ETAS, "step_sizes": STEP_SIZES}
    state_names = ("previous", "step_size")

    def __init__(
        self,
        params: Iterable[np.ndarray],
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50.0),
    ) -> None:
        super().__init__(params, lr=lr, etas=etas, step_sizes=step_sizes)
        for state in self.state:
            state["step_size"].fill(lr)

    def _update(self, kernels, p, g, previous, step_size, *, hyper, f):
        (eta_minus, eta_plus), (step_min, step_max) = hyper["etas"], hyper["step_sizes"]
        kernels.rprop(p, g, previous, step_size, f(eta_minus), f(eta_plus), f(step_min), f(step_max))


# ----------------------------------------------------------------------------- adaptive
class RMSprop(Optimizer):
    """RMSprop (seed: RMSprop), with torch's ε:

        MS ← δ·MS + (1 − δ)g²            with g ← g + λw
        w  ← w − α·g / (sqrt(MS) + ε)

    The seed divides by sqrt(MS) alone; ε (torch's, outside the root) keeps a zero
    gradient from dividing by zero. Hyperparameters (torch's names and defaults): lr α =
    1e-2, alpha δ = 0.99, eps = 1e-8, weight_decay λ = 0; torch's momentum and centered
    variants are not offered. State: "mean_square" (MS).
    """

    name = "rmsprop"
    bounds = {"lr": AT_LEAST_0, "alpha": IN_0_1, "eps": AT_LEAST_0, "weight_decay": AT_LEAST_0}
    state_names = ("mean_square",)

    def __init__(
        self,
        params: Iterable[np.ndarray],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay)

    def _update(self, kernels, p, g, mean_square, *, hyper, f):
        alpha = hyper["alpha"]
        kernels.rmsprop(
            p,
            g,
            mean_square,
            f(hyper["lr"]),
            f(alpha),
            f(1 - alpha),
            f(hyper["eps"]),
            f(hyper["weight_decay"]),
        )


class Adagrad(Optimizer):
    """AdaGrad (seed: AdaGrad), with torch's ε:

        S ← S + g²                        with g ← g + λw
        w ← w − α·g / (sqrt(S) + ε)

    The seed divides by sqrt(S) alone; ε is torch's. Hyperparameters: lr α = 1e-2,
    eps = 1e-10, weight_decay λ = 0; torch's lr_decay and initial_accumulator_value are not
    offered (change `param_groups[0]["lr"]` for a decay). State: "sum_square" (S).
    """

    name = "adagrad"
    bounds = {"lr": AT_LEAST_0, "eps": AT_LEAST_0, "weight_decay": AT_LEAST_0}
    state_names = ("sum_square",)

    def __init__(
        self, params: Iterable[np.ndarray], lr: float = 1e-2, eps: float = 1e-10, weight_decay: float = 0.0
    ) -> None:
        super().__init__(params, lr=lr, eps=eps, weight_decay=weight_decay)

    def _update(self, kernels, p, g, sum_square, *, hyper, f):
        kernels.adagrad(p, g, sum_square, f(hyper["lr"]), f(hyper["eps"]), f(hyper["weight_decay"]))


class Adadelta(Optimizer):
    """AdaDelta (seed: AdaDelta), RMS[x] = sqrt(E[x²] + ε):

        E[g²] ← ρE[g²] + (1 − ρ)g²        with g ← g + λw
        Δ     ← RMS[Δ]_{t−1} / RMS[g]_t · g
        E[Δ²] ← ρE[Δ²] + (1 − ρ)Δ²
        w     ← w − αΔ

    The seed has no α (it is 1, torch's default); as in torch, α scales the step but not
    the Δ accumulated in E[Δ²]. Hyperparameters (torch's): lr α = 1.0, rho ρ = 0.9,
    eps = 1e-6, weight_decay λ = 0. State: "mean_square" (E[g²]), "mean_square_delta" (E[Δ²]).
    """

    name = "adadelta"
    bounds = {"lr": AT_LEAST_0, "rho": IN_0_1, "eps": AT_LEAST_0, "weight_decay": AT_LEAST_0}
    state_names = ("mean_square", "mean_square_delta")

    def __init__(
        self,
        params: Iterable[np.ndarray],
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)

    def _update(self, kernels, p, g, mean_square, mean_square_delta, *, hyper, f):
        rho = hyper["rho"]
        kernels.adadelta(
            p,
            g,
            mean_square,
            mean_square_delta,
            f(hyper["lr"]),
            f(rho),
            f(1 - rho),
            f(hyper["eps"]),
            f(hyper["weight_decay"]),
        )


class Adam(Optimizer):
    """Adam (seed: Adaptive Moments Estimation), t the step count starting at 1:

        m ← β1·m + (1 − β1)g              with g ← g + λw (L2, not AdamW)
        v ← β2·v + (1 − β2)g²
        w ← w − α·sqrt(1 − β2^t)/(1 − β1^t) · m/(sqrt(v) + ε)

    Differs from torch.optim.Adam in where ε sits: this is the seed's (and the paper's
    "efficient") form; torch adds ε to the bias-corrected sqrt(v/(1 − β2^t)), which is
    this with ε·sqrt(1 − β2^t) in place of ε. Hyperparameters (torch's): lr α = 1e-3,
    betas (β1, β2) = (0.9, 0.999), eps = 1e-8, weight_decay λ = 0; no amsgrad.
    State: "m", "v".
    """

    name = "adam"
    bounds = {"lr": AT_LEAST_0, "betas": BETAS, "eps": AT_LEAST_0, "weight_decay": AT_LEAST_0}
    state_names = ("m", "v")

    def __init__(
        self,
        params: Iterable[np.ndarray],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def _update(self, kernels, p, g, m, v, *, hyper, f):
        (beta1, beta2), t = hyper["betas"], self.step_count
        step_size = hyper["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
        kernels.adam(
            p,
            g,
            m,
            v,
            f(step_size),
            f(beta1),
            f(1 - beta1),
            f(beta2),
            f(1 - beta2),
            f(hyper["eps"]),
            f(hyper["weight_decay"]),
        )


class Adamax(Optimizer):
    """AdaMax (seed: AdaMax), Adam with the infinity norm, t the step count starting at 1:

        m ← β1·m + (1 − β1)g              with g ← g + λw
        u ← max(β2·u, |g|)
        w ← w − α/(1 − β1^t) · m/(u + ε)

    Differs from torch.optim.Adamax in where ε sits: torch takes u ← max(β2·u, |g| + ε)
    and divides by u; the seed (and this class) keeps ε out of u. Hyperparameters
    (torch's): lr α = 2e-3, betas (β1, β2) = (0.9, 0.999), eps = 1e-8, weight_decay λ = 0.
    State: "m", "u".
    """

    name = "adamax"
    bounds = {"lr": AT_LEAST_0, "betas": BETAS, "eps": AT_LEAST_0, "weight_decay": AT_LEAST_0}
    state_names = ("m", "u")

    def __init__(
        self,
        params: Iterable[np.ndarray],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def _update(self, kernels, p, g, m, u, *, hyper, f):
        (beta1, beta2), t = hyper["betas"], self.step_count
        step_size = hyper["lr"] / (1 - beta1**t)
        kernels.adamax(
            p,
            g,
            m,
            u,
            f(step_size),
            f(beta1),
            f(1 - beta1),
            f(beta2),
            f(hyper["eps"]),
            f(hyper["weight_decay"]),
        )


OPTIMIZERS: dict[str, type[Optimizer]] = {
    cls.name: cls for cls in (SGD, Momentum, Nesterov, Rprop, RMSprop, Adagrad, Adadelta, Adam, Adamax)
}
