"""torch.optim's optimizers as data: one table row each, run by the one `Optimizer` class.

    from adcore_kernels.optim import SGD, Adam     # or adcore.optimizer("sgd", params, lr=1e-2, ...)

    opt = SGD([w, b], lr=1e-2, momentum=0.9, nesterov=True)     # torch's names, defaults and checks
    opt = Adam([{"params": [w]}, {"params": [b], "lr": 1e-3}])  # param groups, as in torch
    opt = Adam(model.parameters())  # or any pytree: Adam({"w": w, "b": [b]}), Adam(model)
    opt.step(grads_tree)           # grads in the params' structure (adcore.grad's), updated in place
    opt.step([grad_w, grad_b])     # or one gradient (or None: skip) per parameter, in leaf order
    opt.step()                     # with eager Tensors (adcore_reverse.Tensor): reads each .grad
    opt.param_groups[1]["lr"] = 1e-4                   # read, and checked, at every step
    torch_optimizer.load_state_dict(opt.state_dict())  # torch's layout, both ways

ROWS is the table: per optimizer its fused numba kernel (`_optim_kernels`), torch's
hyperparameters with their defaults and bounds, its implementation switches, its state
(torch's names, how each starts), the kernel's scalars from a group and the parameter's step
count, and its formula, which is the class's docstring: torch 2.13's update, in torch's order
of operations (float64 agrees with torch to rounding), and how seed 001's differs. `_optimizer`
holds the class that runs a row and its checks; each class here spells out torch's signature.
Importing this module imports no numba: the kernels compile (cache=True) on the first step.
`optim_functional` has the same optimizers in optax's form (init, update, apply_updates).
"""

from __future__ import annotations

from adcore_kernels._optimizer import Bound, Optimizer, Params, Row, State

FLAG = Bound(lambda v: True, "True or False", 0)
REAL = Bound(lambda v: True, "a real number")
AT_LEAST_0 = Bound(lambda v: v >= 0, ">= 0")
IN_0_1 = Bound(lambda v: 0 <= v <= 1, "in [0, 1]")
BETAS = Bound(lambda b1, b2: 0 <= b1 < 1 and 0 <= b2 < 1, "a pair (beta1, beta2), each in [0, 1)", 2)
ETAS = Bound(lambda lo, hi: 0 < lo < 1 < hi, "a pair (eta-, eta+) with 0 < eta- < 1 < eta+", 2)
STEP_SIZES = Bound(lambda lo, hi: 0 <= lo <= hi, "a pair (min, max) with 0 <= min <= max", 2)


def _sign(h: dict) -> float:
    return -1.0 if h["maximize"] else 1.0


def _weight(w: float) -> tuple[bool, float]:
    """A lerp weight w as the kernels take it: w, or from the end with −(1 − w) as torch's lerp for w ≥ 0.5."""
    return (False, w) if abs(w) < 0.5 else (True, -(1 - w))


def _adam(h: dict, t: float, decoupled: bool) -> tuple:
    (b1, b2), lr, wd = h["betas"], h["lr"], h["weight_decay"]
    decay, l2 = (1 - lr * wd, 0.0) if decoupled else (1.0, wd)
    return (
        _sign(h),
        decay,
        l2,
        *_weight(1 - b1),
        b2,
        1 - b2,
        1 / (1 - b2**t) ** 0.5,
        lr / (1 - b1**t),
        h["eps"],
    )


ADAM_HYPER = {"lr": (1e-3, AT_LEAST_0), "betas": ((0.9, 0.999), BETAS), "eps": (1e-8, AT_LEAST_0)}
ADAM_STATE = (State("exp_avg"), State("exp_avg_sq"), State("max_exp_avg_sq", lambda h: h["amsgrad"]))
SEED_ADAM = """Seed 001 (the paper's efficient form) divides by sqrt(v) + ε: torch's update with
ε·sqrt(1 − β2^t) in place of ε; the same at ε = 0."""
_ALL4 = dict.fromkeys(("foreach", "capturable", "differentiable", "fused"))
# fmt: off
ROWS: dict[str, Row] = {
    "sgd": Row(
        "sgd", "sgd",
        {"lr": (1e-3, AT_LEAST_0), "momentum": (0, AT_LEAST_0), "dampening": (0, REAL),
         "weight_decay": (0, AT_LEAST_0), "nesterov": (False, FLAG), "maximize": (False, FLAG)},
        {"foreach": None, "differentiable": False, "fused": None},
        (State("momentum_buffer", lambda h: h["momentum"] != 0),),
        lambda h, t, new: (_sign(h), h["lr"], h["weight_decay"], h["momentum"], 1 - h["dampening"],
                           h["momentum"] != 0, h["nesterov"], new),
        """SGD, torch.optim.SGD's update (μ momentum, τ dampening, λ weight_decay, α lr):

    g ← ±∇ + λw   (− with maximize)
    b ← g at b's first step, else μb + (1 − τ)g        (with μ ≠ 0)
    g ← g + μb with nesterov, else b                     (with μ ≠ 0)
    w ← w − αg

Seed 001's momentum, Δw ← ρΔw − αg, w ← w + Δw, takes the same steps (Δw = −αb) while α is
constant and τ = 0; here a new α scales the next step at once. The seed's Nesterov takes ∇ at
the look-ahead w + ρΔw: torch's form (and this) keeps that point as the parameters.
State: momentum_buffer (b; with μ ≠ 0, from the first step).""",
        rule=lambda h: "nesterov=True needs momentum > 0 and dampening == 0"
        if h["nesterov"] and (h["momentum"] <= 0 or h["dampening"] != 0) else None,
        counts_steps=False,
    ),
    "adam": Row(
        "adam", "adam",
        {**ADAM_HYPER, "weight_decay": (0, AT_LEAST_0), "amsgrad": (False, FLAG), "maximize": (False, FLAG)},
        {**_ALL4, "capturable": False, "differentiable": False, "decoupled_weight_decay": False},
        ADAM_STATE,
        lambda h, t, new: (*_adam(h, t, decoupled=False), h["amsgrad"]),
        f"""Adam, torch.optim.Adam's update (t the parameter's step, from 1; λ weight_decay as L2):

    g ← ±∇ + λw;   m ← lerp(m, g, 1 − β1);   v ← β2·v + (1 − β2)g²
    v̂ ← max(v̂, v) with amsgrad, else v
    w ← w − α/(1 − β1^t) · m / (sqrt(v̂)/sqrt(1 − β2^t) + ε)

{SEED_ADAM}
State: step, exp_avg (m), exp_avg_sq (v), max_exp_avg_sq (v̂, with amsgrad).""",
    ),
    "adamw": Row(
        "adamw", "adam",
        {**ADAM_HYPER, "weight_decay": (1e-2, AT_LEAST_0), "amsgrad": (False, FLAG), "maximize": (False, FLAG)},
        {**_ALL4, "capturable": False, "differentiable": False, "decoupled_weight_decay": True},
        ADAM_STATE,
        lambda h, t, new: (*_adam(h, t, decoupled=True), h["amsgrad"]),
        f"""AdamW, torch.optim.AdamW's update: Adam's with the weight decay decoupled from the gradient,

    w ← (1 − αλ)·w  first, then Adam's step with g = ±∇ (no λw in g)

{SEED_ADAM} The seed has no AdamW. State: as Adam's.""",
    ),
    "adagrad": Row(
        "adagrad", "adagrad",
        {"lr": (1e-2, AT_LEAST_0), "lr_decay": (0, AT_LEAST_0), "weight_decay": (0, AT_LEAST_0),
         "initial_accumulator_value": (0, AT_LEAST_0), "eps": (1e-10, AT_LEAST_0), "maximize": (False, FLAG)},
        {"foreach": None, "differentiable": False, "fused": None},
        (State("sum", fill=lambda h: h["initial_accumulator_value"]),),
        lambda h, t, new: (_sign(h), h["weight_decay"], h["lr"] / (1 + (t - 1) * h["lr_decay"]), h["eps"]),
        """Adagrad, torch.optim.Adagrad's update (t the parameter's step, from 1):

    g ← ±∇ + λw;   S ← S + g²;   w ← w − α/(1 + (t − 1)·lr_decay) · g / (sqrt(S) + ε)

Seed 001 divides by sqrt(S) alone and has no lr_decay (the same at ε = 0, lr_decay = 0).
A group's own initial_accumulator_value fills its parameters' S; torch fills every group's from
the constructor's value, ignoring the group's (the same when no group overrides it).
State: step, sum (S; from construction, filled with initial_accumulator_value).""",
        at_construction=True,
    ),
    "rmsprop": Row(
        "rmsprop", "rmsprop",
        {"lr": (1e-2, AT_LEAST_0), "alpha": (0.99, AT_LEAST_0), "eps": (1e-8, AT_LEAST_0),
         "weight_decay": (0, AT_LEAST_0), "momentum": (0, AT_LEAST_0), "centered": (False, FLAG),
         "maximize": (False, FLAG)},
        {"capturable": False, "foreach": None, "differentiable": False},
        (State("square_avg"), State("momentum_buffer", lambda h: h["momentum"] > 0),
         State("grad_avg", lambda h: h["centered"])),
        lambda h, t, new: (_sign(h), h["weight_decay"], h["alpha"], 1 - h["alpha"], *_weight(1 - h["alpha"]),
                           h["eps"], h["lr"], h["momentum"], h["centered"], h["momentum"] > 0),
        """RMSprop, torch.optim.RMSprop's update (δ alpha, μ momentum):

    g ← ±∇ + λw;   MS ← δ·MS + (1 − δ)g²;   d ← sqrt(MS) + ε
    centered: ḡ ← lerp(ḡ, g, 1 − δ), d ← sqrt(MS − ḡ²) + ε
    μ > 0: b ← μb + g/d, w ← w − αb;   else w ← w − α·g/d

Seed 001 divides by sqrt(MS) alone (the same at ε = 0) and has no momentum or centered form.
State: step, square_avg (MS), momentum_buffer (b, with μ > 0), grad_avg (ḡ, centered).""",
    ),
    "adadelta": Row(
        "adadelta", "adadelta",
        {"lr": (1.0, AT_LEAST_0), "rho": (0.9, IN_0_1), "eps": (1e-6, AT_LEAST_0),
         "weight_decay": (0, AT_LEAST_0), "maximize": (False, FLAG)},
        {"foreach": None, "capturable": False, "differentiable": False},
        (State("square_avg"), State("acc_delta")),
        lambda h, t, new: (_sign(h), h["weight_decay"], h["rho"], 1 - h["rho"], h["eps"], h["lr"]),
        """Adadelta, torch.optim.Adadelta's update, RMS[x] = sqrt(E[x²] + ε):

    g ← ±∇ + λw;   E[g²] ← ρE[g²] + (1 − ρ)g²;   Δ ← RMS[Δ]/RMS[g] · g
    E[Δ²] ← ρE[Δ²] + (1 − ρ)Δ²;   w ← w − αΔ

Seed 001's, whose α is 1 (torch's default). State: step, square_avg (E[g²]), acc_delta (E[Δ²]).""",
    ),
    "adamax": Row(
        "adamax", "adamax",
        {**ADAM_HYPER, "lr": (2e-3, AT_LEAST_0), "weight_decay": (0, AT_LEAST_0), "maximize": (False, FLAG)},
        {"foreach": None, "differentiable": False, "capturable": False},
        (State("exp_avg"), State("exp_inf")),
        lambda h, t, new: (_sign(h), h["weight_decay"], *_weight(1 - h["betas"][0]), h["betas"][1], h["eps"],
                           h["lr"] / (1 - h["betas"][0] ** t)),
        """Adamax, torch.optim.Adamax's update (t the parameter's step, from 1):

    g ← ±∇ + λw;   m ← lerp(m, g, 1 − β1);   u ← max(β2·u, |g| + ε);   w ← w − α/(1 − β1^t) · m/u

Seed 001 keeps ε out of the max, u ← max(β2·u, |g|), and divides by u + ε (the same at ε = 0).
State: step, exp_avg (m), exp_inf (u).""",
    ),
    "rprop": Row(
        "rprop", "rprop",
        {"lr": (1e-2, AT_LEAST_0), "etas": ((0.5, 1.2), ETAS), "step_sizes": ((1e-6, 50), STEP_SIZES),
         "maximize": (False, FLAG)},
        {"capturable": False, "foreach": None, "differentiable": False},
        (State("prev"), State("step_size", fill=lambda h: h["lr"])),
        lambda h, t, new: (_sign(h), *h["etas"], *h["step_sizes"]),
        """Rprop, torch.optim.Rprop's update (iRprop−), per element, g = ±∇:

    s ← clamp(s·η+, min, max) if g·g_prev > 0;  clamp(s·η−, min, max) if < 0;  clamp(s, min, max) if 0
    after a sign change (g·g_prev < 0): g ← 0, so no step, and g_prev ← 0
    w ← w − s·sgn(g);   g_prev ← g

Seed 001's Rprop steps and remembers g after a sign change too (the same until one). s starts at
lr; changing lr later has no effect. No weight decay. State: step, prev (g_prev), step_size (s).""",
    ),
}
# fmt: on


# Each class: its row, and torch 2.13's signature (hyperparameters in torch's order, then torch's
# implementation switches, accepted where harmless); Optimizer checks the two agree.
class SGD(Optimizer):
    row = ROWS["sgd"]

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class Adam(Optimizer):
    row = ROWS["adam"]

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class AdamW(Optimizer):
    row = ROWS["adamw"]

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class Adagrad(Optimizer):
    row = ROWS["adagrad"]

    def __init__(self, params: Params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, *, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class RMSprop(Optimizer):
    row = ROWS["rmsprop"]

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, *,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class Adadelta(Optimizer):
    row = ROWS["adadelta"]

    def __init__(self, params: Params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, *, foreach: bool | None = None, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class Adamax(Optimizer):
    row = ROWS["adamax"]

    def __init__(self, params: Params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, *, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


class Rprop(Optimizer):
    row = ROWS["rprop"]

    def __init__(self, params: Params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:  # fmt: skip
        Optimizer.__init__(**locals())


OPTIMIZERS: dict[str, type[Optimizer]] = {
    cls.name: cls for cls in (SGD, Adam, AdamW, Adagrad, RMSprop, Adadelta, Adamax, Rprop)
}
__all__ = ["Optimizer", "OPTIMIZERS", "ROWS", *(cls.__name__ for cls in OPTIMIZERS.values())]
