"""adcore_kernels.optim: torch.optim's API and update rules, checked without torch.

Each optimizer of a table of cases (several param groups with their own hyperparameters,
weight decay and maximize wherever the optimizer has them) against torch's update rules
written out in plain NumPy (`Reference`, whose agreement with torch itself is checked in
test_optim_torch.py); the seed's formulas where torch's differ; param groups, None
gradients, eager Tensors, state_dict round trips, and the checks on hyperparameters,
parameters, gradients and state dicts (typed errors naming the optimizer and the thing,
nothing changed afterwards).
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from adcore_kernels import optim

import adcore
from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError

NAMES = ("sgd", "adam", "adamw", "adagrad", "rmsprop", "adadelta", "adamax", "rprop")
CLASS_OF = {
    "sgd": "SGD",
    "adam": "Adam",
    "adamw": "AdamW",
    "adagrad": "Adagrad",
    "rmsprop": "RMSprop",
    "adadelta": "Adadelta",
    "adamax": "Adamax",
    "rprop": "Rprop",
}

# torch.optim's defaults (torch 2.13), the implementation switches left out.
DEFAULTS = {
    "SGD": dict(lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False),
    "Adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False),
    "AdamW": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, maximize=False),
    "Adagrad": dict(
        lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, maximize=False
    ),
    "RMSprop": dict(
        lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, maximize=False
    ),
    "Adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False),
    "Adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False),
    "Rprop": dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False),
}
# The keys torch's param groups hold besides the hyperparameters: accepted, never required.
SWITCHES = {"foreach", "fused", "capturable", "differentiable", "decoupled_weight_decay"}

# ----------------------------------------------------------------------------- the cases
# id: (class, constructor keywords (the defaults of every group), overrides of group 0 (params 0
# and 1), overrides of group 1 (param 2)). Learning rates are small enough for every case to stay
# finite on Rosenbrock; a group with maximize=True is handed the gradient of -f (see `grads_of`).
CASES = {
    "sgd": ("SGD", dict(lr=2e-4, weight_decay=0.01), {}, dict(lr=1e-4, weight_decay=0)),
    "sgd-momentum": ("SGD", dict(lr=2e-4, momentum=0.9), {}, dict(momentum=0.5, weight_decay=0.1)),
    "sgd-nesterov": (
        "SGD",
        dict(lr=2e-4, momentum=0.9, nesterov=True),
        dict(weight_decay=0.01),
        dict(lr=1e-4, nesterov=False, momentum=0.5),
    ),
    "sgd-dampening-maximize": (
        "SGD",
        dict(lr=2e-4, momentum=0.8, dampening=0.3, weight_decay=0.01, maximize=True),
        {},
        dict(maximize=False, dampening=0.0),
    ),
    "adam": ("Adam", dict(lr=1e-2, weight_decay=0.01), {}, dict(lr=5e-3, betas=(0.8, 0.99), eps=1e-6)),
    "adam-amsgrad": (
        "Adam",
        dict(lr=1e-2, amsgrad=True, maximize=True),
        {},
        dict(amsgrad=False, maximize=False),
    ),
    "adamw": ("AdamW", dict(lr=1e-2, weight_decay=0.1), {}, dict(lr=5e-3, weight_decay=0.01)),
    "adamw-amsgrad": (
        "AdamW",
        dict(lr=1e-2, amsgrad=True, maximize=True),
        {},
        dict(betas=(0.8, 0.99), maximize=False, weight_decay=0),
    ),
    "adagrad": (
        "Adagrad",
        dict(lr=5e-2, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.01),
        {},
        dict(lr_decay=0, maximize=True, eps=1e-8),  # torch reads initial_accumulator_value from the
        # constructor alone, for every group: a group's own value would be ignored there
    ),
    "rmsprop": (
        "RMSprop",
        dict(lr=1e-3, alpha=0.9, weight_decay=0.01),
        {},
        dict(momentum=0.9, centered=True),
    ),
    "rmsprop-momentum-centered": (
        "RMSprop",
        dict(lr=1e-3, momentum=0.5, centered=True, maximize=True),
        {},
        dict(centered=False, maximize=False, weight_decay=0.1),
    ),
    "adadelta": (
        "Adadelta",
        dict(lr=1.0, weight_decay=0.01),
        {},
        dict(lr=0.5, rho=0.95, eps=1e-5, maximize=True),
    ),
    "adamax": ("Adamax", dict(lr=1e-2, weight_decay=0.01), {}, dict(betas=(0.8, 0.99), maximize=True)),
    "rprop": (
        "Rprop",
        dict(lr=1e-3),
        {},
        dict(lr=2e-3, etas=(0.4, 1.5), step_sizes=(1e-5, 0.1), maximize=True),
    ),
    "rprop-clamped": ("Rprop", dict(lr=1e-2, step_sizes=(1e-4, 5e-3)), {}, dict(step_sizes=(2e-2, 1.0))),
}


def groups_of(params: list, case: str) -> list[dict]:
    _, _, first, second = CASES[case]
    return [{"params": params[:2], **first}, {"params": params[2:], **second}]


def make(case: str, params: list):
    """Our optimizer of `case` over `params` (three arrays), in two param groups."""
    cls, ctor, _, _ = CASES[case]
    return getattr(optim, cls)(groups_of(params, case), **ctor)


def group_hyper(case: str) -> list[dict]:
    """The hyperparameters of each group of `case`, torch's defaults filled in."""
    cls, ctor, first, second = CASES[case]
    return [{**DEFAULTS[cls], **ctor, **first}, {**DEFAULTS[cls], **ctor, **second}]


def signs(case: str) -> list[float]:
    """-1 for the parameters of a group that maximizes (they get the gradient of -f), else 1."""
    first, second = group_hyper(case)
    return [-1.0 if first["maximize"] else 1.0] * 2 + [-1.0 if second["maximize"] else 1.0]


# ----------------------------------------------------------------------------- problems
# Three parameters each, independent: f = Σ f_i(params[i]).
_rng = np.random.default_rng(1)
CURVATURES = [_rng.uniform(0.5, 3.0, shape) for shape in ((3, 4), (5,), (2, 2))]
TARGETS = [_rng.uniform(-2.0, 2.0, c.shape) for c in CURVATURES]
ROSENBROCK_STARTS = [
    np.stack([_rng.uniform(-1.3, 1.3, n), _rng.uniform(-0.5, 1.5, n)], axis=1) for n in (4, 1, 3)
]
ROSENBROCK_STARTS[1][0] = (-1.2, 1.0)


def quadratic_start(dtype) -> list[np.ndarray]:
    """f = ½ Σ c (w - t)²: a matrix, a vector and a 2x2, minimum away from zero."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal(c.shape).astype(dtype) for c in CURVATURES]


def quadratic_grads(params: list[np.ndarray]) -> list[np.ndarray]:
    return [(c * (p - t)).astype(p.dtype) for c, t, p in zip(CURVATURES, TARGETS, params)]


def rosenbrock_start(dtype) -> list[np.ndarray]:
    """Each row (x, y) of each parameter one Rosenbrock problem (1 - x)² + 100 (y - x²)²."""
    return [s.astype(dtype) for s in ROSENBROCK_STARTS]


def rosenbrock_grads(params: list[np.ndarray]) -> list[np.ndarray]:
    grads = []
    for p in params:
        x, y = p[:, 0], p[:, 1]
        grads.append(
            np.stack([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)], axis=1).astype(p.dtype)
        )
    return grads


PROBLEMS = {
    "quadratic": (quadratic_start, quadratic_grads),
    "rosenbrock": (rosenbrock_start, rosenbrock_grads),
}


def grads_of(problem: str, params: list[np.ndarray], case: str) -> list[np.ndarray]:
    return [s * g for s, g in zip(signs(case), PROBLEMS[problem][1](params))]


# ----------------------------------------------------------------------------- torch's rules in NumPy
# One function per optimizer, as torch 2.13's single-tensor implementation writes it (the
# order of the operations kept): (p, g, s, h) updates parameter p and its state s (torch's
# state names, "step" a float) in place with gradient g and the group's hyperparameters h.
def lerp(a, b, w):
    return a + w * (b - a)


def ref_sgd(p, g, s, h):
    g = -g if h["maximize"] else g
    if h["weight_decay"] != 0:
        g = g + h["weight_decay"] * p
    if h["momentum"] != 0:
        if "momentum_buffer" not in s:
            s["momentum_buffer"] = g.copy()
        else:
            s["momentum_buffer"] = s["momentum_buffer"] * h["momentum"] + (1 - h["dampening"]) * g
        g = g + h["momentum"] * s["momentum_buffer"] if h["nesterov"] else s["momentum_buffer"]
    p += -h["lr"] * g


def ref_adam(p, g, s, h, decoupled=False):
    g = -g if h["maximize"] else g
    s["step"] += 1
    if h["weight_decay"] != 0:
        if decoupled:
            p *= 1 - h["lr"] * h["weight_decay"]
        else:
            g = g + h["weight_decay"] * p
    (b1, b2), t = h["betas"], s["step"]
    s["exp_avg"][...] = lerp(s["exp_avg"], g, 1 - b1)
    s["exp_avg_sq"][...] = s["exp_avg_sq"] * b2 + (1 - b2) * g * g
    step_size = h["lr"] / (1 - b1**t)
    bias_correction2_sqrt = (1 - b2**t) ** 0.5
    if h["amsgrad"]:
        np.maximum(s["max_exp_avg_sq"], s["exp_avg_sq"], out=s["max_exp_avg_sq"])
        denom = np.sqrt(s["max_exp_avg_sq"]) / bias_correction2_sqrt + h["eps"]
    else:
        denom = np.sqrt(s["exp_avg_sq"]) / bias_correction2_sqrt + h["eps"]
    p += -step_size * (s["exp_avg"] / denom)


def ref_adamw(p, g, s, h):
    ref_adam(p, g, s, h, decoupled=True)


def ref_adagrad(p, g, s, h):
    g = -g if h["maximize"] else g
    s["step"] += 1
    if h["weight_decay"] != 0:
        g = g + h["weight_decay"] * p
    clr = h["lr"] / (1 + (s["step"] - 1) * h["lr_decay"])
    s["sum"] += g * g
    p += -clr * (g / (np.sqrt(s["sum"]) + h["eps"]))


def ref_rmsprop(p, g, s, h):
    g = -g if h["maximize"] else g
    s["step"] += 1
    if h["weight_decay"] != 0:
        g = g + h["weight_decay"] * p
    alpha = h["alpha"]
    s["square_avg"][...] = s["square_avg"] * alpha + (1 - alpha) * g * g
    if h["centered"]:
        s["grad_avg"][...] = lerp(s["grad_avg"], g, 1 - alpha)
        avg = np.sqrt(s["square_avg"] - s["grad_avg"] * s["grad_avg"])
    else:
        avg = np.sqrt(s["square_avg"])
    avg = avg + h["eps"]
    if h["momentum"] > 0:
        s["momentum_buffer"][...] = s["momentum_buffer"] * h["momentum"] + g / avg
        p += -h["lr"] * s["momentum_buffer"]
    else:
        p += -h["lr"] * (g / avg)


def ref_adadelta(p, g, s, h):
    g = -g if h["maximize"] else g
    s["step"] += 1
    if h["weight_decay"] != 0:
        g = g + h["weight_decay"] * p
    rho, eps = h["rho"], h["eps"]
    s["square_avg"][...] = s["square_avg"] * rho + (1 - rho) * g * g
    std = np.sqrt(s["square_avg"] + eps)
    delta = np.sqrt(s["acc_delta"] + eps) / std * g
    s["acc_delta"][...] = s["acc_delta"] * rho + (1 - rho) * delta * delta
    p += -h["lr"] * delta


def ref_adamax(p, g, s, h):
    g = -g if h["maximize"] else g
    s["step"] += 1
    if h["weight_decay"] != 0:
        g = g + h["weight_decay"] * p
    (b1, b2), eps = h["betas"], h["eps"]
    s["exp_avg"][...] = lerp(s["exp_avg"], g, 1 - b1)
    np.maximum(s["exp_inf"] * b2, np.abs(g) + eps, out=s["exp_inf"])
    clr = h["lr"] / (1 - b1 ** s["step"])
    p += -clr * (s["exp_avg"] / s["exp_inf"])


def ref_rprop(p, g, s, h):
    g = -g if h["maximize"] else g
    s["step"] += 1
    (eta_minus, eta_plus), (step_min, step_max) = h["etas"], h["step_sizes"]
    sign = np.sign(g * s["prev"])
    factor = np.where(sign > 0, eta_plus, np.where(sign < 0, eta_minus, 1.0)).astype(p.dtype)
    s["step_size"][...] = np.clip(s["step_size"] * factor, step_min, step_max)
    g = np.where(sign < 0, 0, g).astype(p.dtype)  # iRprop-: no step after a sign change
    p += -(np.sign(g) * s["step_size"])
    s["prev"][...] = g


REFERENCE_STEP = {
    "SGD": ref_sgd,
    "Adam": ref_adam,
    "AdamW": ref_adamw,
    "Adagrad": ref_adagrad,
    "RMSprop": ref_rmsprop,
    "Adadelta": ref_adadelta,
    "Adamax": ref_adamax,
    "Rprop": ref_rprop,
}


def reference_state(cls: str, p: np.ndarray, h: dict) -> dict:
    """A parameter's state before its first step, torch's names (SGD's buffer comes at the first step)."""
    zeros = np.zeros_like
    if cls == "SGD":
        return {}
    if cls in ("Adam", "AdamW"):
        s = {"step": 0.0, "exp_avg": zeros(p), "exp_avg_sq": zeros(p)}
        return {**s, "max_exp_avg_sq": zeros(p)} if h["amsgrad"] else s
    if cls == "Adagrad":
        return {"step": 0.0, "sum": np.full_like(p, h["initial_accumulator_value"])}
    if cls == "RMSprop":
        s = {"step": 0.0, "square_avg": zeros(p)}
        s.update({"momentum_buffer": zeros(p)} if h["momentum"] > 0 else {})
        return {**s, "grad_avg": zeros(p)} if h["centered"] else s
    if cls == "Adadelta":
        return {"step": 0.0, "square_avg": zeros(p), "acc_delta": zeros(p)}
    if cls == "Adamax":
        return {"step": 0.0, "exp_avg": zeros(p), "exp_inf": zeros(p)}
    assert cls == "Rprop"
    return {"step": 0.0, "prev": zeros(p), "step_size": np.full_like(p, h["lr"])}


class Reference:
    """torch's optimizer `cls` over `params` in the groups of `case`, in plain NumPy."""

    def __init__(self, case: str, params: list[np.ndarray]) -> None:
        self.cls = CASES[case][0]
        self.params = params
        self.hyper = [group_hyper(case)[0]] * 2 + [group_hyper(case)[1]]
        self.state = [reference_state(self.cls, p, h) for p, h in zip(params, self.hyper)]

    def step(self, grads: list) -> None:
        for p, g, s, h in zip(self.params, grads, self.state, self.hyper):
            if g is not None:
                REFERENCE_STEP[self.cls](p, g, s, h)


# ----------------------------------------------------------------------------- helpers
def tolerance(dtype) -> dict:
    return dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)


def assert_state_close(actual, desired, dtype, what: str = "") -> None:
    """A state array to `tolerance` relative to its largest element (a moment average that passes
    near zero keeps only the absolute error of its larger neighbours)."""
    tol = tolerance(dtype)
    scale = float(np.max(np.abs(desired), initial=0.0))
    np.testing.assert_allclose(
        actual, desired, rtol=tol["rtol"], atol=tol["atol"] + tol["rtol"] * scale, err_msg=what
    )


def state_arrays(opt) -> dict:
    """{(parameter index, state name): array} of a state_dict, "step" as a float."""
    return {(i, k): v for i, s in opt.state_dict()["state"].items() for k, v in s.items()}


def assert_same_state(a: dict, b: dict) -> None:
    """Two state_dicts equal exactly: keys at every level, hyperparameters, state arrays and steps."""
    assert a.keys() == b.keys() == {"state", "param_groups"}
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for i in a["state"]:
        sa, sb = a["state"][i], b["state"][i]
        assert sa.keys() == sb.keys(), i
        for k in sa:
            assert np.asarray(sa[k]).dtype == np.asarray(sb[k]).dtype and np.array_equal(sa[k], sb[k]), (i, k)


def run(opt, problem: str, case: str, steps: int) -> None:
    for _ in range(steps):
        opt.step(grads_of(problem, all_params(opt), case))


def all_params(opt) -> list:
    """The parameters in the flat order of the groups (the order of step's gradients)."""
    return [p for group in opt.param_groups for p in group["params"]]


# ----------------------------------------------------------------------------- the update rules
@pytest.mark.parametrize("dtype", (np.float64, np.float32), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("case", CASES)
def test_each_step_follows_torchs_rule(case, problem, dtype):
    """100 steps, every parameter after every step and the state at the end, against `Reference`."""
    start = PROBLEMS[problem][0]
    opt, ref = make(case, start(dtype)), Reference(case, start(dtype))
    for _ in range(100):
        grads = grads_of(problem, ref.params, case)
        ref.step(grads)
        opt.step(grads_of(problem, all_params(opt), case))
        for p, w in zip(all_params(opt), ref.params):
            np.testing.assert_allclose(p, w, **tolerance(dtype))
    saved = opt.state_dict()["state"]
    for i, (p, s, p0) in enumerate(zip(all_params(opt), ref.state, start(dtype))):
        assert p.dtype == dtype and np.isfinite(p).all()
        assert not np.allclose(p, p0, rtol=0, atol=1e-4)  # it moved
        assert saved.get(i, {}).keys() == s.keys(), i  # no entry for a parameter without state
        for k, v in s.items():
            if k == "step":
                assert saved[i][k] == v == 100.0 and type(saved[i][k]) is float
            else:
                assert saved[i][k].dtype == dtype
                assert_state_close(saved[i][k], v, dtype, f"{i} {k}")


@pytest.mark.parametrize("case", CASES)
def test_large_parameters_take_the_same_steps_as_small_ones(case):
    """A parameter of 2^16 elements runs on all of numba's threads, a small one on this thread alone:
    the same numbers either way, with every option of the case's first group."""
    rng = np.random.default_rng(2)
    curvature, start = rng.uniform(0.5, 3.0, 1 << 16), rng.standard_normal(1 << 16)
    cls, ctor, first, _ = CASES[case]
    opt = getattr(optim, cls)([start.copy(), start[:100].copy()], **{**ctor, **first})
    for _ in range(10):
        big, small = all_params(opt)
        opt.step([curvature * big, curvature[:100] * small])
    big, small = all_params(opt)
    assert not np.array_equal(small, start[:100])
    np.testing.assert_array_equal(big[:100], small)


@pytest.mark.parametrize("case", CASES)
def test_a_gradient_that_is_the_parameter_itself_is_read_before_the_parameter_is_written(case):
    """f = ½|w|² has gradient w: handing over the parameter array itself gives the steps of a copy."""
    aliased, copied = make(case, quadratic_start(np.float64)), make(case, quadratic_start(np.float64))
    for _ in range(5):
        aliased.step(all_params(aliased))
        copied.step([p.copy() for p in all_params(copied)])
    for p, q, p0 in zip(all_params(aliased), all_params(copied), quadratic_start(np.float64)):
        assert np.array_equal(p, q) and not np.array_equal(p, p0)


def test_defaults_and_registered_names_are_torchs():
    assert sorted(optim.OPTIMIZERS) == sorted(NAMES)
    for name, cls in optim.OPTIMIZERS.items():
        assert cls.__name__ == CLASS_OF[name]
        opt = cls([np.zeros(3)])
        (group,) = opt.param_groups
        assert {k: v for k, v in group.items() if k not in SWITCHES | {"params"}} == DEFAULTS[cls.__name__], (
            name
        )
        assert len(group["params"]) == 1
    assert not hasattr(optim, "Momentum") and not hasattr(optim, "Nesterov")


@pytest.mark.parametrize("name", NAMES)
def test_each_class_documents_torchs_formula_and_the_seeds(name):
    """The class docstring is its table row's formula: torch's update and how seed 001's differs."""
    doc = optim.OPTIMIZERS[name].__doc__ or ""
    assert "torch" in doc and re.search("seed", doc, re.IGNORECASE), doc


def test_float32_stays_float32_and_0d_and_empty_parameters_work():
    scalar, empty, vector = np.array(2.0, np.float32), np.zeros((0, 3), np.float32), np.ones(4, np.float64)
    opt = optim.Adam([scalar, empty, vector], lr=0.1)
    opt.step([np.array(1.0, np.float32), np.zeros((0, 3), np.float32), np.ones(4)])
    assert scalar.dtype == np.float32 and scalar.shape == () and empty.shape == (0, 3)
    np.testing.assert_allclose(scalar, 1.9, rtol=1e-6)  # Adam's first step is lr·sgn(g), up to ε
    np.testing.assert_allclose(vector, 0.9, rtol=1e-6)


def test_a_non_contiguous_gradient_is_read_in_the_parameters_order():
    a, b = optim.SGD([np.zeros((3, 2))], lr=1.0), optim.SGD([np.zeros((3, 2))], lr=1.0)
    g = np.arange(6.0).reshape(2, 3)
    a.step([g.T])
    b.step([np.ascontiguousarray(g.T)])
    (pa,), (pb,) = all_params(a), all_params(b)
    assert np.array_equal(pa, -g.T) and np.array_equal(pa, pb)


# ----------------------------------------------------------------------------- the seed's formulas
# Seed 001 (docs/kernels.md's table) where torch differs: the documented relations.
def test_adam_with_eps_zero_is_the_seeds_formula():
    """Seed: w ← w − α·sqrt(1 − β2^t)/(1 − β1^t)·m/(sqrt(v) + ε); torch adds ε to sqrt(v)/sqrt(1 − β2^t).
    With ε = 0 they are one formula."""
    lr, (b1, b2) = 1e-2, (0.9, 0.999)
    opt = optim.Adam(rosenbrock_start(np.float64), lr=lr, eps=0.0)
    w = rosenbrock_start(np.float64)
    m, v = [np.zeros_like(p) for p in w], [np.zeros_like(p) for p in w]
    for t in range(1, 101):
        for wi, gi, mi, vi in zip(w, rosenbrock_grads(w), m, v):
            mi[...] = b1 * mi + (1 - b1) * gi
            vi[...] = b2 * vi + (1 - b2) * gi**2
            wi -= lr * np.sqrt(1 - b2**t) / (1 - b1**t) * (mi / np.sqrt(vi))
        opt.step(rosenbrock_grads(all_params(opt)))
    for p, wi in zip(all_params(opt), w):
        np.testing.assert_allclose(p, wi, rtol=1e-10)


def test_adamax_with_eps_zero_is_the_seeds_formula():
    """Seed: u ← max(β2·u, |g|), w ← w − α/(1 − β1^t)·m/(u + ε); torch puts ε inside the max."""
    lr, (b1, b2) = 1e-2, (0.9, 0.999)
    opt = optim.Adamax(rosenbrock_start(np.float64), lr=lr, eps=0.0)
    w = rosenbrock_start(np.float64)
    m, u = [np.zeros_like(p) for p in w], [np.zeros_like(p) for p in w]
    for t in range(1, 101):
        for wi, gi, mi, ui in zip(w, rosenbrock_grads(w), m, u):
            mi[...] = b1 * mi + (1 - b1) * gi
            ui[...] = np.maximum(b2 * ui, np.abs(gi))
            wi -= lr / (1 - b1**t) * (mi / ui)
        opt.step(rosenbrock_grads(all_params(opt)))
    for p, wi in zip(all_params(opt), w):
        np.testing.assert_allclose(p, wi, rtol=1e-10)


def test_rprop_is_irprop_minus_and_the_seeds_rprop_until_a_sign_change():
    """Seed: α grows or shrinks with the sign of g·g_prev and w ← w − α·sgn(g) always. torch (and we):
    after a sign change no step, and g_prev ← 0, so the next step compares with nothing."""
    w = np.array([0.0])
    opt = optim.Rprop([w], lr=0.1, etas=(0.5, 2.0), step_sizes=(1e-3, 10.0))
    expected = [  # (gradient, step size after the step, w after the step)
        (1.0, 0.1, -0.1),  # first step: nothing to compare with
        (1.0, 0.2, -0.3),  # same sign: α·2, the seed's step too
        (3.0, 0.4, -0.7),
        (-1.0, 0.2, -0.7),  # sign change: α/2, but no step (the seed would step to -0.5)
        (-1.0, 0.2, -0.5),  # previous g was set to 0: α unchanged, a step
        (-2.0, 0.4, -0.1),
    ]
    for g, step_size, after in expected:
        opt.step([np.array([g])])
        state = opt.state_dict()["state"][0]
        np.testing.assert_allclose(state["step_size"], [step_size], rtol=1e-15)
        np.testing.assert_allclose(w, [after], rtol=1e-14)
    assert state["step"] == 6.0


def test_sgd_momentum_is_the_seeds_momentum_while_lr_is_constant_and_an_lr_change_is_immediate():
    """Seed: Δw ← ρΔw − αg, w ← w + Δw. torch's buffer is −Δw/α, so the steps agree while α is constant;
    a new α scales the whole next step at once (the seed's velocity would keep the old scale)."""
    lr, new_lr, rho = 1e-4, 1e-5, 0.9
    opt = optim.SGD(rosenbrock_start(np.float64), lr=lr, momentum=rho)
    w, v = rosenbrock_start(np.float64), [np.zeros_like(p) for p in ROSENBROCK_STARTS]
    for _ in range(20):
        opt.step(rosenbrock_grads(all_params(opt)))
        for wi, vi, gi in zip(w, v, rosenbrock_grads(w)):
            vi[...] = rho * vi - lr * gi
            wi += vi
    for p, wi in zip(all_params(opt), w):
        np.testing.assert_allclose(p, wi, rtol=1e-12)

    twin = optim.SGD([p.copy() for p in all_params(opt)], lr=lr, momentum=rho)
    twin.load_state_dict(opt.state_dict())
    before = [p.copy() for p in all_params(opt)]
    twin.step(rosenbrock_grads(all_params(twin)))
    opt.param_groups[0]["lr"] = new_lr
    opt.step(rosenbrock_grads(all_params(opt)))
    for p, q, b in zip(all_params(opt), all_params(twin), before):
        np.testing.assert_allclose(p - b, new_lr / lr * (q - b), rtol=1e-10)


def test_sgd_nesterov_keeps_the_seeds_look_ahead_point():
    """Seed: Δw ← ρΔw − α∇L(w + ρΔw), w ← w + Δw. torch's parameters are the seed's w + ρΔw."""
    lr, rho = 1e-4, 0.9
    opt = optim.SGD(rosenbrock_start(np.float64), lr=lr, momentum=rho, nesterov=True)
    w, delta = rosenbrock_start(np.float64), [np.zeros_like(p) for p in ROSENBROCK_STARTS]
    for _ in range(100):
        for wi, di, gi in zip(w, delta, rosenbrock_grads([wi + rho * di for wi, di in zip(w, delta)])):
            di[...] = rho * di - lr * gi
            wi += di
        opt.step(rosenbrock_grads(all_params(opt)))
        for p, wi, di in zip(all_params(opt), w, delta):
            np.testing.assert_allclose(p, wi + rho * di, rtol=1e-10)


# ----------------------------------------------------------------------------- param groups
def test_param_groups_are_torchs_layout_holding_the_arrays_themselves():
    params = quadratic_start(np.float64)
    opt = make("sgd-nesterov", params)
    assert isinstance(opt.param_groups, list) and len(opt.param_groups) == 2
    for group, hyper, mine in zip(opt.param_groups, group_hyper("sgd-nesterov"), (params[:2], params[2:])):
        assert all(p is q for p, q in zip(group["params"], mine)) and len(group["params"]) == len(mine)
        assert {k: v for k, v in group.items() if k not in SWITCHES | {"params"}} == hyper


def test_a_hyperparameter_changed_in_one_group_takes_effect_at_the_next_step():
    params, ref_params = quadratic_start(np.float64), quadratic_start(np.float64)
    opt, ref = make("adam", params), Reference("adam", ref_params)
    for t in range(20):
        if t == 5:
            opt.param_groups[1]["lr"] = 0.05
            ref.hyper[2] = {**ref.hyper[2], "lr": 0.05}
        if t == 10:
            opt.param_groups[0]["betas"] = (0.5, 0.9)
            ref.hyper[:2] = [{**ref.hyper[0], "betas": (0.5, 0.9)}] * 2
        ref.step(quadratic_grads(ref_params))
        opt.step(quadratic_grads(params))
    for p, w in zip(params, ref_params):
        np.testing.assert_allclose(p, w, rtol=1e-12, atol=1e-14)


def test_extra_keys_in_a_group_are_kept_and_ignored():
    params, ref_params = quadratic_start(np.float64), quadratic_start(np.float64)
    opt = optim.SGD([{"params": params[:2], "initial_lr": 0.1, "note": "x"}, {"params": params[2:]}], lr=0.1)
    opt.param_groups[1]["max_lr"] = 1.0  # as a scheduler adds
    ref = optim.SGD([{"params": ref_params[:2]}, {"params": ref_params[2:]}], lr=0.1)
    for _ in range(3):
        opt.step(quadratic_grads(params))
        ref.step(quadratic_grads(ref_params))
    assert opt.param_groups[0]["initial_lr"] == 0.1 and opt.param_groups[1]["max_lr"] == 1.0
    assert all(np.array_equal(p, q) for p, q in zip(params, ref_params))


def test_adagrad_fills_each_groups_sum_with_that_groups_initial_accumulator_value():
    a, b = np.zeros(2), np.zeros(2)  # torch would fill b's sum with the constructor's 0 and take 0.9
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 1.0}], lr=0.1)
    opt.step([np.ones(2), np.ones(2)])
    np.testing.assert_allclose(a, -0.1 / (1.0 + 1e-10) * np.ones(2), rtol=1e-12)  # eps = 1e-10
    np.testing.assert_allclose(b, -0.1 / (np.sqrt(2.0) + 1e-10) * np.ones(2), rtol=1e-12)


@pytest.mark.parametrize(
    ("cls", "typo", "meant"),
    [("SGD", "lrr", "lr"), ("SGD", "momentom", "momentum"), ("Adam", "weight_decy", "weight_decay")],
)
def test_a_misspelt_hyperparameter_in_a_group_is_refused_not_ignored(cls, typo, meant):
    w = np.zeros(3)
    with pytest.raises(InvalidValueError, match=rf"param_groups\[1\] has '{typo}'.*did you mean '{meant}'"):
        getattr(optim, cls)([{"params": [np.zeros(2)]}, {"params": [w], typo: 0.5}], lr=0.1)
    opt = getattr(optim, cls)([{"params": [w]}], lr=0.1)
    with pytest.raises(InvalidValueError, match=f"did you mean '{meant}'"):
        opt.add_param_group({"params": [np.zeros(2)], typo: 0.5})
    assert len(opt.param_groups) == 1  # nothing added


def test_add_param_group_joins_the_next_steps():
    params, ref_params = quadratic_start(np.float64), quadratic_start(np.float64)
    opt = optim.Adam([params[0]], lr=1e-2)
    ref = Reference("adam", ref_params)
    ref.hyper = [
        {**DEFAULTS["Adam"], "lr": 1e-2},
        {**DEFAULTS["Adam"], "lr": 1e-3},
        {**DEFAULTS["Adam"], "lr": 0.1},
    ]
    for p, s, h in zip(ref_params, ref.state, ref.hyper):
        s.update(reference_state("Adam", p, h))
    for t in range(10):
        if t == 3:
            opt.add_param_group({"params": [params[1]], "lr": 1e-3})
            opt.add_param_group({"params": [params[2]], "lr": 0.1})
        grads = quadratic_grads(ref_params)
        ref.step(grads if t >= 3 else [grads[0], None, None])
        opt.step(quadratic_grads(params)[: 1 if t < 3 else 3])
    assert len(opt.param_groups) == 3 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    for p, w in zip(params, ref_params):
        np.testing.assert_allclose(p, w, rtol=1e-12, atol=1e-14)
    assert [s["step"] for s in opt.state_dict()["state"].values()] == [10.0, 7.0, 7.0]


def test_add_param_group_refuses_a_parameter_already_there_and_changes_nothing():
    params = quadratic_start(np.float64)
    opt = optim.SGD([params[0]], lr=0.1)
    for bad in ({"params": [params[0]]}, {"params": [params[1]], "lr": -1.0}, {"lr": 0.1}):
        with pytest.raises(AdcoreError) as raised:
            opt.add_param_group(bad)
        assert isinstance(raised.value, ValueError | TypeError) and "SGD" in str(raised.value)
        assert len(opt.param_groups) == 1


@pytest.mark.parametrize("case", ["sgd-momentum", "adam", "adagrad", "rprop"])
def test_a_none_gradient_skips_that_parameter_and_its_step_count(case):
    params, ref_params = quadratic_start(np.float64), quadratic_start(np.float64)
    opt, ref = make(case, params), Reference(case, ref_params)
    for t in range(12):
        grads, ref_grads = grads_of("quadratic", params, case), grads_of("quadratic", ref_params, case)
        if t % 3 == 1:
            grads[1] = ref_grads[1] = None
        if t < 4:
            grads[2] = ref_grads[2] = None
        before = params[1].copy()
        opt.step(grads)
        ref.step(ref_grads)
        if grads[1] is None:
            assert np.array_equal(params[1], before)
        for p, w in zip(params, ref_params):
            np.testing.assert_allclose(p, w, rtol=1e-12, atol=1e-14)
    state = opt.state_dict()["state"]
    if CASES[case][0] != "SGD":
        assert [state[i]["step"] for i in range(3)] == [12.0, 8.0, 8.0]


# ----------------------------------------------------------------------------- eager Tensors
def test_eager_tensors_step_reads_grad_and_matches_the_array_run():
    from adcore_reverse import Tensor

    arrays, plain = quadratic_start(np.float64), quadratic_start(np.float64)
    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    opt, twin = make("adam", tensors), make("adam", plain)
    for _ in range(10):
        loss = sum(np.sum(c * (w - t) ** 2) / 2 for c, t, w in zip(CURVATURES, TARGETS, tensors))
        loss.backward()
        opt.step()
        opt.zero_grad()
        assert all(w.grad is None for w in tensors)
        twin.step(quadratic_grads(plain))
    for w, a, p in zip(tensors, arrays, plain):
        assert w.value is a  # updated in place
        np.testing.assert_allclose(a, p, rtol=1e-12, atol=1e-14)


def test_eager_tensors_a_none_grad_is_skipped_and_zero_grad_can_zero():
    from adcore_reverse import Tensor

    a, b = np.ones(3), np.ones(2)
    wa, wb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    opt = optim.SGD([wa, wb], lr=0.5)
    np.sum(wa * wa).backward()  # wb.grad stays None
    opt.step()
    np.testing.assert_allclose(a, 0.0)  # 1 - 0.5 * 2
    np.testing.assert_array_equal(b, 1.0)
    opt.zero_grad(set_to_none=False)
    assert np.array_equal(wa.grad, np.zeros(3))


def test_only_eager_leaf_tensors_that_require_grad_are_parameters():
    from adcore_reverse import Tensor

    w = Tensor(np.ones(3), requires_grad=True)
    for bad in (Tensor(np.ones(3)), w * 2.0):
        with pytest.raises(InvalidValueError, match="requires_grad") as raised:
            optim.SGD([bad])
        assert "SGD" in str(raised.value) and "parameter 0" in str(raised.value)


# ----------------------------------------------------------------------------- state_dict
@pytest.mark.parametrize("case", CASES)
def test_state_dict_round_trip_continues_bit_identically(case):
    straight = make(case, quadratic_start(np.float32))
    run(straight, "quadratic", case, 5)
    checkpoint, saved = [p.copy() for p in all_params(straight)], straight.state_dict()
    run(straight, "quadratic", case, 5)
    assert all(s.get("step", 5.0) == 5.0 for s in saved["state"].values())  # a copy: later steps left it

    cls = CASES[case][0]  # default hyperparameters, until the load
    restored = getattr(optim, cls)([{"params": checkpoint[:2]}, {"params": checkpoint[2:]}])
    restored.load_state_dict(saved)
    run(restored, "quadratic", case, 5)
    for a, b in zip(all_params(restored), all_params(straight)):
        assert np.array_equal(a, b)
    assert all(p is q for p, q in zip(all_params(restored), checkpoint))  # the live arrays kept
    assert_same_state(restored.state_dict(), straight.state_dict())


def test_state_dict_layout_is_torchs():
    opt = make("adam-amsgrad", quadratic_start(np.float64))
    assert opt.state_dict() == {"state": {}, "param_groups": opt.state_dict()["param_groups"]}
    run(opt, "quadratic", "adam-amsgrad", 2)
    saved = opt.state_dict()
    assert saved.keys() == {"state", "param_groups"}
    assert [g["params"] for g in saved["param_groups"]] == [[0, 1], [2]]
    for group, hyper in zip(saved["param_groups"], group_hyper("adam-amsgrad")):
        assert {k: v for k, v in group.items() if k not in SWITCHES | {"params"}} == hyper
    assert sorted(saved["state"]) == [0, 1, 2]
    assert set(saved["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert set(saved["state"][2]) == {"step", "exp_avg", "exp_avg_sq"}  # group 1: amsgrad=False
    assert type(saved["state"][0]["step"]) is float and saved["state"][0]["step"] == 2.0
    live = opt.state_dict()["state"][0]["exp_avg"].copy()
    saved["state"][0]["exp_avg"][...] = 123.0  # a copy, not a view of the live state
    assert np.array_equal(opt.state_dict()["state"][0]["exp_avg"], live)


def stepped_adam(lr: float = 0.1, steps: int = 2):
    opt = optim.Adam([np.ones((2, 3)), np.ones(4)], lr=lr)
    for _ in range(steps):
        opt.step([p * (i + 1.0) for i, p in enumerate(all_params(opt))])
    return opt


def wrong_state_dict(what: str) -> tuple[dict, str]:
    """A state dict that `stepped_adam()` must refuse whole, and a pattern its message must match
    (alternatives where either of two things may be named first)."""
    good = stepped_adam(lr=0.5, steps=3).state_dict()  # differs everywhere, so a partial load shows
    two = [np.ones((2, 3)), np.ones(4)]
    if what == "sgd's":
        sgd = optim.SGD(two, momentum=0.9)
        sgd.step([np.ones((2, 3)), np.ones(4)])
        return sgd.state_dict(), "momentum|dampening|nesterov|betas|amsgrad|eps"
    if what == "adamax's":
        adamax = optim.Adamax(two)
        adamax.step([np.ones((2, 3)), np.ones(4)])
        return {**adamax.state_dict(), "param_groups": good["param_groups"]}, "exp_inf|exp_avg_sq"
    if what == "shape":
        other = optim.Adam([np.ones((2, 3)), np.ones(5)])
        other.step([np.ones((2, 3)), np.ones(5)])
        return {**good, "state": {0: good["state"][0], 1: other.state_dict()["state"][1]}}, r"\(5,\)|\(4,\)"
    if what == "missing state":
        state = {0: good["state"][0], 1: {"step": 3.0, "exp_avg": good["state"][1]["exp_avg"]}}
        return {**good, "state": state}, "exp_avg_sq"
    if what == "unknown state":
        state = {0: good["state"][0], 1: {**good["state"][1], "momentum_buffer": np.ones(4)}}
        return {**good, "state": state}, "momentum_buffer"
    if what == "count":
        return {**good, "param_groups": [{**good["param_groups"][0], "params": [0]}]}, "param"
    if what == "index":
        return {**good, "state": {0: good["state"][0], 7: good["state"][1]}}, "7"
    if what == "nan":
        state = {i: dict(s) for i, s in good["state"].items()}
        state[1]["exp_avg_sq"] = state[1]["exp_avg_sq"].copy()
        state[1]["exp_avg_sq"][2] = np.nan
        return {**good, "state": state}, "nan|finite"
    if what == "inf":
        state = {i: dict(s) for i, s in good["state"].items()}
        state[0]["exp_avg"] = np.full((2, 3), np.inf)
        return {**good, "state": state}, "inf"  # or "finite"
    if what == "step":
        return {**good, "state": {0: good["state"][0], 1: {**good["state"][1], "step": -1.0}}}, "step"
    if what == "hyperparameter":
        return {**good, "param_groups": [{**good["param_groups"][0], "lr": float("nan")}]}, "lr"
    assert what == "keys"
    return {"state": good["state"]}, "param_groups"


@pytest.mark.parametrize(
    "what",
    ["sgd's", "adamax's", "shape", "missing state", "unknown state", "count", "index", "nan", "inf"]
    + ["step", "hyperparameter", "keys"],
)
def test_loading_a_wrong_state_raises_and_changes_nothing(what):
    opt = stepped_adam()
    before, params = opt.state_dict(), [p.copy() for p in all_params(opt)]
    state_dict, pattern = wrong_state_dict(what)
    with pytest.raises(AdcoreError) as raised:
        opt.load_state_dict(state_dict)
    assert isinstance(raised.value, InvalidValueError | InvalidInputError)
    assert "Adam" in str(raised.value) and re.search(pattern, str(raised.value)), str(raised.value)
    assert_same_state(opt.state_dict(), before)
    assert all(np.array_equal(p, q) for p, q in zip(all_params(opt), params))
    opt.load_state_dict(stepped_adam(lr=0.5, steps=3).state_dict())  # the next good load works
    assert opt.param_groups[0]["lr"] == 0.5


# ----------------------------------------------------------------------------- hyperparameters
# torch's validation, as typed errors naming the optimizer and the hyperparameter.
BAD_HYPER = [
    ("SGD", dict(lr=-1e-3), InvalidValueError, "lr"),
    ("SGD", dict(lr="0.1"), InvalidInputError, "lr"),
    ("SGD", dict(lr=True), InvalidInputError, "lr"),
    ("SGD", dict(lr=None), InvalidInputError, "lr"),
    ("SGD", dict(lr=float("nan")), InvalidValueError, "lr"),
    ("SGD", dict(lr=float("inf")), InvalidValueError, "lr"),
    ("SGD", dict(momentum=-0.1), InvalidValueError, "momentum"),
    ("SGD", dict(weight_decay=-0.1), InvalidValueError, "weight_decay"),
    ("SGD", dict(nesterov=True), InvalidValueError, "nesterov"),  # needs momentum > 0
    ("SGD", dict(nesterov=True, momentum=0.9, dampening=0.1), InvalidValueError, "nesterov"),
    ("SGD", dict(differentiable=True), InvalidValueError, "differentiable"),
    ("Adam", dict(betas=(0.9, 1.0)), InvalidValueError, "betas"),
    ("Adam", dict(betas=(-0.1, 0.999)), InvalidValueError, "betas"),
    ("Adam", dict(betas=(0.9, float("nan"))), InvalidValueError, "betas"),
    ("Adam", dict(betas=0.9), InvalidInputError, "betas"),
    ("Adam", dict(eps=-1e-8), InvalidValueError, "eps"),
    ("Adam", dict(weight_decay=-0.1), InvalidValueError, "weight_decay"),
    ("Adam", dict(capturable=True), InvalidValueError, "capturable"),
    ("Adam", dict(decoupled_weight_decay=True), InvalidValueError, "AdamW"),
    ("AdamW", dict(betas=(1.0, 0.999)), InvalidValueError, "betas"),
    ("AdamW", dict(lr=-1.0), InvalidValueError, "lr"),
    ("Adagrad", dict(lr_decay=-0.1), InvalidValueError, "lr_decay"),
    ("Adagrad", dict(initial_accumulator_value=-1.0), InvalidValueError, "initial_accumulator_value"),
    ("Adagrad", dict(eps=-1.0), InvalidValueError, "eps"),
    ("RMSprop", dict(alpha=-0.1), InvalidValueError, "alpha"),
    ("RMSprop", dict(momentum=-0.1), InvalidValueError, "momentum"),
    ("RMSprop", dict(eps="1e-8"), InvalidInputError, "eps"),
    ("Adadelta", dict(rho=1.5), InvalidValueError, "rho"),
    ("Adadelta", dict(rho=np.nan), InvalidValueError, "rho"),
    ("Adamax", dict(betas=(0.9, 1.5)), InvalidValueError, "betas"),
    ("Adamax", dict(eps=-1.0), InvalidValueError, "eps"),
    ("Rprop", dict(etas=(1.5, 1.2)), InvalidValueError, "etas"),
    ("Rprop", dict(etas=(0.5, 0.9)), InvalidValueError, "etas"),
    ("Rprop", dict(step_sizes=(1e-6, float("inf"))), InvalidValueError, "step_sizes"),
    ("Rprop", dict(lr=-0.1), InvalidValueError, "lr"),
]


@pytest.mark.parametrize("cls, hyper, error, word", BAD_HYPER, ids=lambda v: str(v)[:30])
def test_a_bad_hyperparameter_is_refused_at_construction(cls, hyper, error, word):
    with pytest.raises(error) as raised:
        getattr(optim, cls)([np.zeros(3)], **hyper)
    assert cls in str(raised.value) and word in str(raised.value), str(raised.value)


@pytest.mark.parametrize("cls", sorted(DEFAULTS))
def test_torchs_implementation_switches_are_accepted_where_harmless(cls):
    ok = {"foreach": None, "differentiable": False}
    ok.update({"fused": True} if cls in ("SGD", "Adam", "AdamW", "Adagrad") else {})
    ok.update({"capturable": False} if cls != "SGD" and cls != "Adagrad" else {})
    for key, value in ok.items():
        opt, plain = getattr(optim, cls)([np.ones(3)], **{key: value}), getattr(optim, cls)([np.ones(3)])
        opt.step([np.ones(3)])
        plain.step([np.ones(3)])
        assert np.array_equal(all_params(opt)[0], all_params(plain)[0]), key
    for value in (True, False):
        getattr(optim, cls)([np.ones(3)], foreach=value)


@pytest.mark.parametrize(
    "key, value, error",
    [
        ("lr", -1.0, InvalidValueError),
        ("lr", "0.1", InvalidInputError),
        ("lr", float("nan"), InvalidValueError),
        ("betas", (0.9, 1.0), InvalidValueError),
        ("eps", -1.0, InvalidValueError),
    ],
)
def test_a_bad_value_assigned_into_param_groups_is_refused_at_the_next_step(key, value, error):
    params, twin_params = quadratic_start(np.float64), quadratic_start(np.float64)
    opt, twin = make("adam", params), make("adam", twin_params)
    run(opt, "quadratic", "adam", 2)
    run(twin, "quadratic", "adam", 2)
    before, values = opt.state_dict(), [p.copy() for p in params]
    good = opt.param_groups[1][key]
    opt.param_groups[1][key] = value
    with pytest.raises(error) as raised:
        opt.step(quadratic_grads(params))
    assert "Adam" in str(raised.value) and key in str(raised.value), str(raised.value)
    assert all(np.array_equal(p, q) for p, q in zip(params, values))  # group 0 was not stepped either
    opt.param_groups[1][key] = good
    assert_same_state(opt.state_dict(), before)
    run(opt, "quadratic", "adam", 1)  # the next good step is the one the twin takes
    run(twin, "quadratic", "adam", 1)
    assert all(np.array_equal(p, q) for p, q in zip(params, twin_params))


def test_nesterov_is_checked_in_every_group_and_at_every_step():
    with pytest.raises(InvalidValueError, match="nesterov"):
        optim.SGD([{"params": [np.ones(3)]}, {"params": [np.ones(2)], "nesterov": True}], momentum=0)
    opt = optim.SGD([np.ones(3)], lr=0.1, momentum=0.9, nesterov=True)
    opt.step([np.ones(3)])
    before = opt.state_dict()
    opt.param_groups[0]["dampening"] = 0.5
    with pytest.raises(InvalidValueError, match="SGD.*nesterov"):
        opt.step([np.ones(3)])
    opt.param_groups[0]["dampening"] = 0
    assert_same_state(opt.state_dict(), before)


# ----------------------------------------------------------------------------- parameters and gradients
def bad_params():
    frozen = np.ones(3)
    frozen.flags.writeable = False
    base = np.ones(8)
    return [
        ("non-contiguous", np.ones((4, 4))[:, ::2], InvalidValueError, "not C-contiguous"),
        ("transposed", np.ones((3, 2)).T, InvalidValueError, "not C-contiguous"),
        ("integer", np.ones(3, dtype=np.int64), InvalidInputError, "int64"),
        ("float16", np.ones(3, dtype=np.float16), InvalidInputError, "float16"),
        ("read-only", frozen, InvalidValueError, "read-only"),
        ("list", [1.0, 2.0], InvalidInputError, "list"),
        ("overlapping", base[2:6], InvalidValueError, "share memory"),
    ], base


@pytest.mark.parametrize("name", NAMES)
def test_unusable_parameters_raise_at_construction(name):
    cls = optim.OPTIMIZERS[name]
    cases, base = bad_params()
    for what, bad, error, message in cases:
        params = [np.zeros(2), bad, base] if what == "overlapping" else [np.zeros(2), bad]
        with pytest.raises(error, match=message) as raised:
            cls(params)
        assert cls.__name__ in str(raised.value), what
        if what != "overlapping":
            assert "parameter 1" in str(raised.value), what
        with pytest.raises(error, match=message):  # inside a param group too
            cls([{"params": [np.zeros(2)]}, {"params": params[1:], "lr": 0.1}])
    with pytest.raises(InvalidInputError):
        cls(np.zeros(3))
    with pytest.raises(InvalidValueError, match="empty"):
        cls([])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "grads, error, word",
    [
        ([np.ones((2, 3)), np.ones(5)], InvalidValueError, "(5,)"),
        ([np.ones((2, 3)), np.ones(4, np.float32)], InvalidValueError, "float32"),
        ([np.ones((2, 3)), [1.0, 1.0, 1.0, 1.0]], InvalidInputError, "list"),
        ([np.ones((2, 3))], InvalidValueError, "1"),
        ([np.ones((2, 3)), np.ones(4), np.ones(4)], InvalidValueError, "3"),
        ((np.ones((2, 3)) for _ in range(2)), InvalidInputError, "generator"),
    ],
    ids=["shape", "dtype", "list", "too-few", "too-many", "generator"],
)
def test_a_wrong_gradient_raises_and_changes_nothing(name, grads, error, word):
    cls = optim.OPTIMIZERS[name]
    opt, twin = cls([np.ones((2, 3)), np.ones(4)]), cls([np.ones((2, 3)), np.ones(4)])
    for o in (opt, twin):
        o.step([np.ones((2, 3)), np.full(4, 2.0)])
    before, values = opt.state_dict(), [p.copy() for p in all_params(opt)]
    with pytest.raises(error) as raised:
        opt.step(grads)
    assert cls.__name__ in str(raised.value) and word in str(raised.value), str(raised.value)
    assert all(np.array_equal(p, q) for p, q in zip(all_params(opt), values))
    assert_same_state(opt.state_dict(), before)
    for o in (opt, twin):  # the next good step is the step it would have taken
        o.step([np.ones((2, 3)), np.full(4, 2.0)])
    assert all(np.array_equal(p, q) for p, q in zip(all_params(opt), all_params(twin)))


def test_step_without_gradients_on_plain_arrays_or_with_a_closure_raises():
    opt = optim.Adam([np.ones(3)])
    with pytest.raises(AdcoreError) as raised:
        opt.step()
    assert "Adam" in str(raised.value) and "grad" in str(raised.value)
    with pytest.raises(InvalidInputError, match="before"):
        opt.step(lambda: 1.0)
    np.testing.assert_array_equal(all_params(opt)[0], 1.0)
    assert opt.state_dict()["state"] == {}


# ----------------------------------------------------------------------------- through adcore
@pytest.fixture
def kernels_plugin(register_plugin, monkeypatch):
    """The registry with adcore_kernels.plugin added by hand, the installed entry point (if any) blocked,
    so the test sees the module's hooks whether or not the distribution is pip-installed."""
    from adcore_kernels import plugin

    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "kernels")
    return register_plugin(plugin, "kernels_by_hand")


@pytest.mark.parametrize("name", NAMES)
def test_adcore_optimizer_is_the_class(kernels_plugin, name):
    assert set(NAMES) <= set(adcore.optimizers())
    assert not {"momentum", "nesterov"} & set(adcore.optimizers())
    via_adcore = adcore.optimizer(name, rosenbrock_start(np.float64), lr=1e-4, maximize=False)
    direct = getattr(optim, CLASS_OF[name])(rosenbrock_start(np.float64), lr=1e-4)
    assert type(via_adcore) is type(direct)
    for _ in range(20):
        via_adcore.step(rosenbrock_grads(all_params(via_adcore)))
        direct.step(rosenbrock_grads(all_params(direct)))
    for p, q, p0 in zip(all_params(via_adcore), all_params(direct), ROSENBROCK_STARTS):
        assert np.array_equal(p, q) and not np.array_equal(p, p0)


def test_an_unknown_optimizer_name_suggests_the_right_one(kernels_plugin):
    with pytest.raises(adcore.UnknownOptimizerError, match="did you mean 'adagrad'"):
        adcore.optimizer("adagard", [np.zeros(3)])


def test_a_forked_child_can_step_after_its_parent_ran_the_parallel_kernels():
    """GNU OpenMP kills a forked child that runs a parallel kernel; the workqueue layer does not."""
    big = np.ones(1 << 16, np.float32)  # numba's threads run
    optim.Adam([big], lr=0.1).step([np.ones_like(big)])
    pid = os.fork()
    if pid == 0:  # the child: step, and report through the exit code
        try:
            child = np.ones(1 << 16, np.float32)
            optim.Adam([child], lr=0.1).step([np.ones_like(child)])
            os._exit(0 if np.array_equal(child, big) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
