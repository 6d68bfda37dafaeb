"""adcore_kernels.optim: each fused kernel against seed 001's formula written out in plain NumPy,
the learning-rate placement of momentum SGD, Nesterov's look-ahead point, state_dict round
trips, and the checks on parameters and gradients."""

from __future__ import annotations

import os

import numba
import numpy as np
import pytest
from adcore_kernels import optim
from adcore_kernels._optim_kernels import PARALLEL_FROM

import adcore
from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError

NAMES = ("sgd", "momentum", "nesterov", "rprop", "rmsprop", "adagrad", "adadelta", "adam", "adamax")
DTYPES = (np.float64, np.float32)

# Hyperparameters the runs use, passed both to the optimizer and to its reference (so the
# reference does not lean on the class's defaults); weight decay wherever there is one.
HYPER = {
    "sgd": dict(lr=1e-3, weight_decay=0.01),
    "momentum": dict(lr=1e-3, momentum=0.9, weight_decay=0.01),
    "nesterov": dict(lr=1e-3, momentum=0.9, weight_decay=0.01),
    "rprop": dict(lr=1e-3, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)),
    "rmsprop": dict(lr=1e-3, alpha=0.9, eps=1e-8, weight_decay=0.01),
    "adagrad": dict(lr=5e-2, eps=1e-10, weight_decay=0.01),
    "adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.01),
    "adam": dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    "adamax": dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
}


# ----------------------------------------------------------------------------- the seed's formulas
# One function per optimizer: (w, g, s, h, t) updates parameter w and its state dict s in
# place, unfused, from the seed's formula (plus the L2 term g + λw and the ε the class
# docstrings document). t is the step number, from 1. State starts at zero (Rprop: α = lr).
def seed_sgd(w, g, s, h, t):
    w -= h["lr"] * (g + h["weight_decay"] * w)


def seed_momentum(w, g, s, h, t):  # PyTorch's placement, as the seed recommends
    s["delta"] = h["momentum"] * s["delta"] - g - h["weight_decay"] * w
    w += h["lr"] * s["delta"]


def torch_form_nesterov(w, g, s, h, t):  # the seed's own form is checked in test_nesterov_*
    g = g + h["weight_decay"] * w
    s["delta"] = h["momentum"] * s["delta"] - g
    w += h["lr"] * (h["momentum"] * s["delta"] - g)


def seed_rprop(w, g, s, h, t):
    (eta_minus, eta_plus), (step_min, step_max) = h["etas"], h["step_sizes"]
    agreement = g * s["previous"]
    grown = np.minimum(s["step_size"] * eta_plus, step_max)
    shrunk = np.maximum(s["step_size"] * eta_minus, step_min)
    s["step_size"] = np.where(agreement > 0, grown, np.where(agreement < 0, shrunk, s["step_size"]))
    w -= s["step_size"] * np.sign(g)
    s["previous"] = g.copy()


def seed_rmsprop(w, g, s, h, t):
    g = g + h["weight_decay"] * w
    s["mean_square"] = h["alpha"] * s["mean_square"] + (1 - h["alpha"]) * g**2
    w -= h["lr"] * (g / (np.sqrt(s["mean_square"]) + h["eps"]))


def seed_adagrad(w, g, s, h, t):
    g = g + h["weight_decay"] * w
    s["sum_square"] = s["sum_square"] + g**2
    w -= h["lr"] * (g / (np.sqrt(s["sum_square"]) + h["eps"]))


def seed_adadelta(w, g, s, h, t):
    g = g + h["weight_decay"] * w
    rho, eps = h["rho"], h["eps"]
    s["mean_square"] = rho * s["mean_square"] + (1 - rho) * g**2
    v = np.sqrt(s["mean_square_delta"] + eps) / np.sqrt(s["mean_square"] + eps) * g  # RMS[v]_{t-1}/RMS[g]_t g
    s["mean_square_delta"] = rho * s["mean_square_delta"] + (1 - rho) * v**2
    w -= h["lr"] * v


def seed_adam(w, g, s, h, t):
    g = g + h["weight_decay"] * w
    (b1, b2), eps = h["betas"], h["eps"]
    s["m"] = b1 * s["m"] + (1 - b1) * g
    s["v"] = b2 * s["v"] + (1 - b2) * g**2
    w -= h["lr"] * np.sqrt(1 - b2**t) / (1 - b1**t) * (s["m"] / (np.sqrt(s["v"]) + eps))


def seed_adamax(w, g, s, h, t):
    g = g + h["weight_decay"] * w
    (b1, b2), eps = h["betas"], h["eps"]
    s["m"] = b1 * s["m"] + (1 - b1) * g
    s["u"] = np.maximum(b2 * s["u"], np.abs(g))
    w -= h["lr"] / (1 - b1**t) * (s["m"] / (s["u"] + eps))


SEED = {
    "sgd": seed_sgd,
    "momentum": seed_momentum,
    "nesterov": torch_form_nesterov,
    "rprop": seed_rprop,
    "rmsprop": seed_rmsprop,
    "adagrad": seed_adagrad,
    "adadelta": seed_adadelta,
    "adam": seed_adam,
    "adamax": seed_adamax,
}


# ----------------------------------------------------------------------------- problems
CURVATURES = [np.random.default_rng(1).uniform(0.5, 3.0, shape) for shape in ((3, 4), (5,))]


def quadratic_start(dtype):
    """Two parameters, a matrix and a vector, for f = ½ Σ c·w²."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal(c.shape).astype(dtype) for c in CURVATURES]


def quadratic_grads(params):
    return [(c * p).astype(p.dtype) for c, p in zip(CURVATURES, params)]


def rosenbrock(w):
    return (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2


def rosenbrock_start(dtype):
    return [np.array([-1.2, 1.0], dtype=dtype)]


def rosenbrock_grads(params):
    x, y = params[0]
    return [np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)], dtype=params[0].dtype)]


PROBLEMS = {
    "quadratic": (quadratic_start, quadratic_grads),
    "rosenbrock": (rosenbrock_start, rosenbrock_grads),
}


def tolerance(dtype):
    return dict(rtol=1e-11, atol=1e-13) if dtype == np.float64 else dict(rtol=2e-4, atol=1e-5)


def seed_state(name, params):
    state = [{n: np.zeros_like(p) for n in optim.OPTIMIZERS[name].state_names} for p in params]
    if name == "rprop":
        for s in state:
            s["step_size"][...] = HYPER["rprop"]["lr"]
    return state


def run(opt, grads_of, steps):
    for _ in range(steps):
        opt.step(grads_of(opt.params))


# ----------------------------------------------------------------------------- the formulas
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("name", NAMES)
def test_kernel_follows_the_seed_formula(name, problem, dtype):
    start, grads_of = PROBLEMS[problem]
    opt = optim.OPTIMIZERS[name](start(dtype), **HYPER[name])
    ref, ref_state = start(dtype), seed_state(name, start(dtype))
    for t in range(1, 101):
        for w, g, s in zip(ref, grads_of(ref), ref_state):
            SEED[name](w, g, s, HYPER[name], t)
        opt.step(grads_of(opt.params))
    assert opt.step_count == 100
    for p, w, state, s, p0 in zip(opt.params, ref, opt.state, ref_state, start(dtype)):
        assert p.dtype == dtype and not np.allclose(p, p0, rtol=0, atol=1e-3)  # it moved
        np.testing.assert_allclose(p, w, **tolerance(dtype))
        for key in s:
            assert state[key].dtype == dtype
            np.testing.assert_allclose(state[key], s[key], **tolerance(dtype), err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_large_parameters_take_the_parallel_path_with_the_same_result(name):
    """Parameters from PARALLEL_FROM elements run on all of numba's threads, smaller ones on one;
    the thread count the caller set is left as it was."""
    rng = np.random.default_rng(2)
    curvature = rng.uniform(0.5, 3.0, PARALLEL_FROM + 7)
    start = rng.standard_normal(PARALLEL_FROM + 7)
    opt = optim.OPTIMIZERS[name]([start.copy(), start[:100].copy()], **HYPER[name])
    ref, ref_state = [start.copy(), start[:100].copy()], seed_state(name, [start, start[:100]])
    threads = numba.get_num_threads()
    for t in range(1, 11):
        grads = [curvature * ref[0], curvature[:100] * ref[1]]
        for w, g, s in zip(ref, grads, ref_state):
            SEED[name](w, g, s, HYPER[name], t)
        opt.step([curvature * opt.params[0], curvature[:100] * opt.params[1]])
    assert numba.get_num_threads() == threads
    for p, w in zip(opt.params, ref):
        np.testing.assert_allclose(p, w, **tolerance(np.float64))
    np.testing.assert_array_equal(opt.params[0][:100], opt.params[1])  # same numbers, either path


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_nesterov_keeps_the_seeds_look_ahead_point(dtype):
    """Seed: Δw ← ρΔw − α∇L(w + ρΔw), w ← w + Δw. The class's parameters are w + ρΔw."""
    lr, rho = 1e-3, 0.9
    w, delta = rosenbrock_start(dtype)[0], np.zeros(2, dtype)
    opt = optim.Nesterov(rosenbrock_start(dtype), lr=lr, momentum=rho)
    for _ in range(100):
        delta = rho * delta - lr * rosenbrock_grads([w + rho * delta])[0]
        w = w + delta
        opt.step(rosenbrock_grads(opt.params))
        np.testing.assert_allclose(opt.params[0], w + rho * delta, **tolerance(dtype))
        np.testing.assert_allclose(lr * opt.state[0]["delta"], delta, **tolerance(dtype))
    assert rosenbrock(opt.params[0]) < rosenbrock(rosenbrock_start(np.float64)[0]) / 10


def test_momentum_learning_rate_change_takes_effect_at_once():
    """The seed's point: with α outside the velocity the whole next step scales with the new α;
    the naive v ← ρv − αg, w ← w + v keeps the old velocity and barely changes its step."""
    lr, new_lr, rho = 1e-3, 1e-4, 0.9
    opt = optim.Momentum(rosenbrock_start(np.float64), lr=lr, momentum=rho)
    w, v = rosenbrock_start(np.float64)[0], np.zeros(2)
    for _ in range(20):  # the two forms agree while α is constant
        opt.step(rosenbrock_grads(opt.params))
        v = rho * v - lr * rosenbrock_grads([w])[0]
        w = w + v
    np.testing.assert_allclose(opt.params[0], w, rtol=1e-12)

    twin = optim.Momentum([opt.params[0].copy()], lr=lr, momentum=rho)
    twin.load_state_dict(opt.state_dict())
    before = opt.params[0].copy()
    twin.step(rosenbrock_grads(twin.params))
    step_with_old_lr = twin.params[0] - before

    opt.param_groups[0]["lr"] = new_lr
    opt.step(rosenbrock_grads(opt.params))
    np.testing.assert_allclose(opt.params[0] - before, new_lr / lr * step_with_old_lr, rtol=1e-10)

    naive_step = rho * v - new_lr * rosenbrock_grads([w])[0]  # mostly the old velocity ρv
    assert np.linalg.norm(naive_step) > 5 * np.linalg.norm(new_lr / lr * step_with_old_lr)


def test_every_hyperparameter_is_read_at_each_step():
    a = optim.Adam(rosenbrock_start(np.float64), lr=1e-2)
    b = optim.Adam(rosenbrock_start(np.float64), lr=1e-2)
    run(a, rosenbrock_grads, 3)
    run(b, rosenbrock_grads, 3)
    a.param_groups[0]["betas"] = (0.5, 0.9)
    c = optim.Adam([b.params[0].copy()])
    c.load_state_dict({**b.state_dict(), "param_groups": [dict(a.param_groups[0])]})
    run(a, rosenbrock_grads, 1)
    run(b, rosenbrock_grads, 1)
    run(c, rosenbrock_grads, 1)
    assert np.array_equal(a.params[0], c.params[0]) and not np.array_equal(a.params[0], b.params[0])


def test_defaults_are_torchs():
    """torch.optim's defaults (torch 2.x), except Momentum/Nesterov's momentum (torch: 0 = plain SGD)."""
    w = [np.zeros(3)]
    expected = {
        "sgd": dict(lr=1e-3, weight_decay=0.0),
        "momentum": dict(lr=1e-3, momentum=0.9, weight_decay=0.0),
        "nesterov": dict(lr=1e-3, momentum=0.9, weight_decay=0.0),
        "rprop": dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)),
        "rmsprop": dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0),
        "adagrad": dict(lr=1e-2, eps=1e-10, weight_decay=0.0),
        "adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0),
        "adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0),
        "adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0),
    }
    assert sorted(optim.OPTIMIZERS) == sorted(NAMES)
    for name, cls in optim.OPTIMIZERS.items():
        assert cls.name == name and cls(w).param_groups == [expected[name]], name


@pytest.mark.parametrize(
    "hyper", [dict(lr=-1.0), dict(betas=(0.9, 1.0)), dict(eps=-1e-8), dict(weight_decay=-0.1)]
)
def test_bad_hyperparameters_raise(hyper):
    with pytest.raises(InvalidValueError, match=f"Adam: {next(iter(hyper))}"):
        optim.Adam([np.zeros(3)], **hyper)


def test_float32_stays_float32_and_0d_and_empty_parameters_work():
    scalar, empty, vector = np.array(2.0, np.float32), np.zeros((0, 3), np.float32), np.ones(4, np.float64)
    opt = optim.Adam([scalar, empty, vector], lr=0.1)
    opt.step([np.array(1.0, np.float32), np.zeros((0, 3), np.float32), np.ones(4)])
    assert scalar.dtype == np.float32 and scalar.shape == () and empty.shape == (0, 3)
    np.testing.assert_allclose(scalar, 1.9, rtol=1e-6)  # Adam's first step is lr·sgn(g), up to ε
    np.testing.assert_allclose(vector, 0.9, rtol=1e-6)


# ----------------------------------------------------------------------------- state_dict
@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_continues_bit_identically(name):
    start, grads_of = PROBLEMS["quadratic"]
    straight = optim.OPTIMIZERS[name](start(np.float32), **HYPER[name])
    run(straight, grads_of, 5)
    checkpoint, saved = [p.copy() for p in straight.params], straight.state_dict()
    run(straight, grads_of, 5)
    assert saved["step"] == 5  # a copy: the later steps did not change it

    restored = optim.OPTIMIZERS[name](checkpoint)  # default hyperparameters, until the load
    restored.load_state_dict(saved)
    assert restored.param_groups == straight.param_groups
    run(restored, grads_of, 5)
    assert restored.step_count == straight.step_count == 10
    for a, b in zip(restored.params, straight.params):
        assert np.array_equal(a, b)
    assert_same_state(restored.state_dict(), straight.state_dict())


def assert_same_state(a, b):
    assert a.keys() == b.keys() and a["optimizer"] == b["optimizer"] and a["step"] == b["step"]
    assert a["param_groups"] == b["param_groups"]
    assert [s.keys() for s in a["state"]] == [s.keys() for s in b["state"]]
    for sa, sb in zip(a["state"], b["state"]):
        for key in sa:
            assert sa[key].dtype == sb[key].dtype and np.array_equal(sa[key], sb[key]), key


def stepped_adam():
    opt = optim.Adam([np.ones((2, 3)), np.ones(4)], lr=0.1)
    run(opt, quadratic_like_grads, 2)
    return opt


def quadratic_like_grads(params):
    return [p * (i + 1.0) for i, p in enumerate(params)]


def wrong_state_dict(what):
    """A state dict that `stepped_adam()` must refuse whole, and a fragment of the message."""
    other = optim.Adam([np.ones((2, 3)), np.ones(4)], lr=0.5)
    run(other, quadratic_like_grads, 3)
    good = other.state_dict()  # differs from stepped_adam()'s everywhere, so a partial load shows
    if what == "another optimizer":
        return optim.Momentum([np.ones((2, 3)), np.ones(4)]).state_dict(), "optimizer 'momentum', not 'adam'"
    if what == "another optimizer's state":
        adamax = optim.Adamax([np.ones((2, 3)), np.ones(4)]).state_dict()
        return {**adamax, "optimizer": "adam"}, "state of parameter 0 must have"
    if what == "second shape":
        other_shapes = optim.Adam([np.ones((2, 3)), np.ones(5)]).state_dict()
        return {
            **good,
            "state": good["state"][:1] + other_shapes["state"][1:],
        }, r"parameter 1 is \(5,\) float64"
    if what == "dtype":
        other_dtypes = optim.Adam([np.ones((2, 3)), np.ones(4, np.float32)]).state_dict()
        return {**good, "state": other_dtypes["state"]}, "parameter 1 is .* float32"
    if what == "count":
        return {**good, "state": good["state"][:1]}, "state for 1 parameters, this optimizer has 2"
    if what == "hyperparameters":
        return {**good, "param_groups": [{"lr": 0.1}]}, "hyperparameters"
    if what == "missing key":
        return {k: v for k, v in good.items() if k != "step"}, "keys"
    assert what == "step"
    return {**good, "step": -1}, "step must be an int"


@pytest.mark.parametrize(
    "what",
    ["another optimizer", "another optimizer's state", "second shape", "dtype", "count", "hyperparameters"]
    + ["missing key", "step"],
)
def test_loading_a_wrong_state_raises_and_changes_nothing(what):
    opt = stepped_adam()
    before = opt.state_dict()
    state_dict, message = wrong_state_dict(what)
    with pytest.raises(InvalidValueError, match=message):
        opt.load_state_dict(state_dict)
    assert_same_state(opt.state_dict(), before)


# ----------------------------------------------------------------------------- parameters and gradients
def bad_params():
    frozen = np.ones(3)
    frozen.flags.writeable = False
    base = np.ones(8)
    return [
        ("non-contiguous", np.ones((4, 4))[:, ::2], ValueError, "not C-contiguous"),
        ("transposed", np.ones((3, 2)).T, ValueError, "not C-contiguous"),
        ("integer", np.ones(3, dtype=np.int64), TypeError, "dtype int64"),
        ("float16", np.ones(3, dtype=np.float16), TypeError, "dtype float16"),
        ("read-only", frozen, ValueError, "read-only"),
        ("list", [1.0, 2.0], TypeError, "is a list, not a NumPy array"),
        ("overlapping", base[2:6], ValueError, "parameters 1 and 2 share memory"),
    ], base


@pytest.mark.parametrize("name", NAMES)
def test_unusable_parameters_raise_at_construction(name):
    cls = optim.OPTIMIZERS[name]
    cases, base = bad_params()
    for what, bad, error, message in cases:
        params = [np.zeros(2), bad, base] if what == "overlapping" else [np.zeros(2), bad]
        with pytest.raises(error, match=message) as raised:
            cls(params)
        assert isinstance(raised.value, AdcoreError), what
        assert str(raised.value).startswith(f"{cls.__name__}: "), what
        if what != "overlapping":
            assert "parameter 1 " in str(raised.value), what
    with pytest.raises(TypeError, match="a list of arrays"):
        cls(np.zeros(3))
    with pytest.raises(ValueError, match="empty parameter list"):
        cls([])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "bad_grad, error, message",
    [
        (
            np.ones(5),
            ValueError,
            r"gradient 1 has shape \(5,\) and dtype float64; parameter 1 expects shape \(4,\)",
        ),
        (np.ones(4, np.float32), ValueError, "gradient 1 has shape .* dtype float32; .* dtype float64"),
        ([1.0, 1.0, 1.0, 1.0], TypeError, "gradient 1 is a list"),
    ],
    ids=["shape", "dtype", "list"],
)
def test_a_wrong_gradient_raises_and_changes_nothing(name, bad_grad, error, message):
    cls = optim.OPTIMIZERS[name]
    opt, twin = cls([np.ones((2, 3)), np.ones(4)]), cls([np.ones((2, 3)), np.ones(4)])
    run(opt, quadratic_like_grads, 2)
    run(twin, quadratic_like_grads, 2)
    before = opt.state_dict()
    params_before = [p.copy() for p in opt.params]
    with pytest.raises(error, match=message) as raised:
        opt.step([np.ones((2, 3)), bad_grad])
    assert isinstance(raised.value, AdcoreError)
    assert str(raised.value).startswith(f"{cls.__name__}.step: ")
    with pytest.raises(ValueError, match="got 1 gradients for 2 parameters"):
        opt.step([np.ones((2, 3))])
    assert all(np.array_equal(p, q) for p, q in zip(opt.params, params_before))
    assert_same_state(opt.state_dict(), before)

    run(opt, quadratic_like_grads, 1)  # the next good step is the step it would have taken
    run(twin, quadratic_like_grads, 1)
    assert all(np.array_equal(p, q) for p, q in zip(opt.params, twin.params))
    assert not np.array_equal(opt.params[1], params_before[1])


def test_a_non_contiguous_gradient_is_read_in_the_parameters_order():
    a, b = optim.SGD([np.zeros((3, 2))], lr=1.0), optim.SGD([np.zeros((3, 2))], lr=1.0)
    g = np.arange(6.0).reshape(2, 3)
    a.step([g.T])
    b.step([np.ascontiguousarray(g.T)])
    assert np.array_equal(a.params[0], -g.T) and np.array_equal(a.params[0], b.params[0])


# ----------------------------------------------------------------------------- through adcore
@pytest.fixture
def kernels_plugin(register_plugin, monkeypatch):
    """The registry with adcore_kernels.plugin added by hand, the installed entry point (if any) blocked,
    so the test sees the module's hooks whether or not the distribution is pip-installed."""
    from adcore_kernels import plugin

    monkeypatch.setenv("ADCORE_BLOCK_PLUGINS", "kernels")
    return register_plugin(plugin, "kernels_by_hand")


def test_adcore_optimizer_is_the_same_adam(kernels_plugin):
    assert set(NAMES) <= set(adcore.optimizers())
    via_adcore = adcore.optimizer("adam", rosenbrock_start(np.float64), lr=0.05, weight_decay=0.01)
    direct = optim.Adam(rosenbrock_start(np.float64), lr=0.05, weight_decay=0.01)
    assert type(via_adcore) is optim.Adam
    for _ in range(50):
        via_adcore.step(rosenbrock_grads(via_adcore.params))
        direct.step(rosenbrock_grads(direct.params))
        assert np.array_equal(via_adcore.params[0], direct.params[0])


def test_an_unknown_optimizer_name_suggests_the_right_one(kernels_plugin):
    with pytest.raises(adcore.UnknownOptimizerError, match="did you mean 'adagrad'"):
        adcore.optimizer("adagard", [np.zeros(3)])


def test_a_forked_child_can_step_after_its_parent_ran_the_parallel_kernels():
    """GNU OpenMP kills a forked child that runs a parallel kernel; the workqueue layer does not."""
    big = np.ones(1 << 16, np.float32)  # above PARALLEL_FROM: numba's threads run
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


# ----------------------------------------------------------------------------- hyperparameters, wherever they come in
# (issue 15): a wrong type is an InvalidInputError (a TypeError), a wrong value an
# InvalidValueError (a ValueError), at construction, at step (after an assignment into
# param_groups) and in load_state_dict; the optimizer is unchanged and the next good call works.
BAD_VALUES = [
    ("lr", "0.1", InvalidInputError, r"lr must be a real number, got str '0.1' \(write lr=0.1"),
    ("lr", True, InvalidInputError, "lr must be a real number, got bool"),
    ("lr", None, InvalidInputError, "lr must be a real number, got NoneType"),
    ("lr", float("inf"), InvalidValueError, "lr must be finite, got inf"),
    ("lr", float("nan"), InvalidValueError, "lr must be finite, got nan"),
    ("lr", -1e-3, InvalidValueError, "lr must be >= 0"),
]
PAIR_BAD_VALUES = {
    "adam": ("betas", (0.9, float("nan")), InvalidValueError, "betas must be finite"),
    "adamax": ("betas", 0.9, InvalidInputError, "betas must be a pair of real numbers"),
    "rprop": ("step_sizes", (1e-6, float("inf")), InvalidValueError, "step_sizes must be finite"),
    "momentum": ("momentum", 1.5, InvalidValueError, r"momentum must be in \[0, 1\]"),
    "rmsprop": ("eps", "1e-8", InvalidInputError, "eps must be a real number"),
    "adadelta": ("rho", np.nan, InvalidValueError, "rho must be finite"),
    "adagrad": ("weight_decay", [0.1], InvalidInputError, "weight_decay must be a real number"),
    "sgd": ("weight_decay", -np.inf, InvalidValueError, "weight_decay must be finite"),
    "nesterov": ("lr", np.float64(np.inf), InvalidValueError, "lr must be finite"),
}


def bad_values(name):
    return BAD_VALUES + [PAIR_BAD_VALUES[name]]


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_hyperparameter_is_refused_at_construction(name):
    cls = optim.OPTIMIZERS[name]
    for key, value, error, message in bad_values(name):
        with pytest.raises(error, match=f"^{cls.__name__}: {message}"):
            cls([np.zeros(3)], **{**HYPER[name], key: value})
    cls([np.zeros(3)], **HYPER[name]).step([np.ones(3)])  # the next good construction works


@pytest.mark.parametrize("name", NAMES)
def test_a_bad_value_assigned_into_param_groups_is_refused_at_the_next_step(name):
    cls = optim.OPTIMIZERS[name]
    opt, twin = cls([np.ones(4)], **HYPER[name]), cls([np.ones(4)], **HYPER[name])
    run(opt, quadratic_like_grads, 2)
    run(twin, quadratic_like_grads, 2)
    for key, value, error, message in bad_values(name):
        before, params = opt.state_dict(), [p.copy() for p in opt.params]
        good = opt.param_groups[0][key]
        opt.param_groups[0][key] = value
        where = f"^{cls.__name__}.step: param_groups\\[0\\]\\['{key}'\\] "
        with pytest.raises(error, match=where + message.removeprefix(key + " ")):
            opt.step([np.ones(4)])
        opt.param_groups[0][key] = good
        assert np.array_equal(opt.params[0], params[0]) and opt.step_count == before["step"]
        assert_same_state(opt.state_dict(), before)
    run(opt, quadratic_like_grads, 1)  # the next good step is the one the twin takes
    run(twin, quadratic_like_grads, 1)
    assert np.array_equal(opt.params[0], twin.params[0])


def test_a_misnamed_or_missing_hyperparameter_in_param_groups_is_refused():
    opt = optim.SGD([np.ones(3)], lr=0.1)
    opt.param_groups[0]["momentum"] = 0.9  # SGD has none: silently ignoring it would mislead
    with pytest.raises(InvalidValueError, match=r"SGD.step: hyperparameters .* \(unknown: momentum\)"):
        opt.step([np.ones(3)])
    del opt.param_groups[0]["momentum"], opt.param_groups[0]["lr"]
    with pytest.raises(InvalidValueError, match=r"\(missing: lr\)"):
        opt.step([np.ones(3)])
    opt.param_groups = [{"lr": 0.1, "weight_decay": 0.0}, {"lr": 0.2, "weight_decay": 0.0}]
    with pytest.raises(InvalidInputError, match="param_groups must be a list of one dict"):
        opt.step([np.ones(3)])
    opt.param_groups = [{"lr": 0.5, "weight_decay": 0.0}]
    opt.step([np.ones(3)])
    np.testing.assert_allclose(opt.params[0], 0.5)  # 1 - 0.5 * 1


def test_a_pair_given_as_a_list_or_array_is_stored_as_a_tuple():
    opt = optim.Adam([np.ones(3)], betas=[0.8, 0.99])
    assert opt.param_groups[0]["betas"] == (0.8, 0.99)
    opt.param_groups[0]["betas"] = np.array([0.5, 0.9])
    opt.step([np.ones(3)])  # read as the pair (0.5, 0.9)
    np.testing.assert_allclose(opt.params[0], 1 - 1e-3, rtol=1e-6)  # Adam's first step: lr * sgn(g)


@pytest.mark.parametrize(
    "change, error, message",
    [
        (
            lambda d: d["param_groups"][0].update(lr=float("nan")),
            InvalidValueError,
            r"\['lr'\] must be finite",
        ),
        (
            lambda d: d["param_groups"][0].update(lr="0.1"),
            InvalidInputError,
            r"\['lr'\] must be a real number",
        ),
        (
            lambda d: d["param_groups"][0].update(betas=(0.9, 1.0)),
            InvalidValueError,
            r"\['betas'\] must be a pair \(beta1",
        ),
        (
            lambda d: d["state"][1]["v"].__setitem__(2, np.nan),
            InvalidValueError,
            "state 'v' of parameter 1 holds nan",
        ),
        (
            lambda d: d["state"][0]["m"].__setitem__(0, np.inf),
            InvalidValueError,
            "state 'm' of parameter 0 holds inf",
        ),
        (lambda d: d.update(step=True), InvalidValueError, "step must be an int"),
    ],
    ids=["nan-lr", "str-lr", "betas", "nan-state", "inf-state", "bool-step"],
)
def test_a_bad_value_in_a_state_dict_is_refused_and_changes_nothing(change, error, message):
    opt = stepped_adam()
    before = opt.state_dict()
    saved = stepped_adam().state_dict()
    change(saved)
    with pytest.raises(error, match=message):
        opt.load_state_dict(saved)
    assert_same_state(opt.state_dict(), before)
    opt.load_state_dict(stepped_adam().state_dict())  # the next good load works
    run(opt, quadratic_like_grads, 1)
    assert all(np.isfinite(p).all() for p in opt.params)
