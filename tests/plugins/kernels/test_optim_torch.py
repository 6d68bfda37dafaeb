"""adcore_kernels.optim against torch.optim itself: every case of test_optim's table step for step
(float64 to 1e-12 over 100 steps, float32 loosely), the state_dict's layout, state dicts passed
both ways between the two, param groups changed mid-run, None gradients, the constructors'
signatures, and test_optim's NumPy reference of torch's rules."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from adcore_kernels import optim
from plugins.kernels.test_optim import (
    CASES,
    DEFAULTS,
    PROBLEMS,
    SWITCHES,
    Reference,
    all_params,
    assert_state_close,
    grads_of,
    groups_of,
    make,
    signs,
    tolerance,
)

torch = pytest.importorskip("torch")


def torch_make(case: str, params: list[np.ndarray]):
    """torch's optimizer of `case` over copies of `params`, in the same two groups."""
    cls, ctor, _, _ = CASES[case]
    tensors = [torch.tensor(p, requires_grad=True) for p in params]
    return getattr(torch.optim, cls)(groups_of(tensors, case), **ctor)


def torch_params(opt) -> list[np.ndarray]:
    return [p.detach().numpy() for group in opt.param_groups for p in group["params"]]


def torch_step(opt, grads: list) -> None:
    tensors = [p for group in opt.param_groups for p in group["params"]]
    for p, g in zip(tensors, grads):
        p.grad = None if g is None else torch.from_numpy(np.array(g))
    opt.step()


def torch_run(opt, problem: str, case: str, steps: int) -> None:
    for _ in range(steps):
        torch_step(opt, grads_of(problem, torch_params(opt), case))


def as_numpy(v):
    return v.detach().numpy() if isinstance(v, torch.Tensor) else v


def assert_like_torchs(ours: dict, theirs: dict, dtype=np.float64) -> None:
    """Our state_dict has torch's layout and values: keys at every level (torch's implementation
    switches aside), state names, "step" a float, arrays close, groups' "params" index lists."""
    assert ours.keys() == theirs.keys() == {"state", "param_groups"}
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for mine, its in zip(ours["param_groups"], theirs["param_groups"]):
        assert set(mine) - SWITCHES == set(its) - SWITCHES
        assert {k: v for k, v in mine.items() if k not in SWITCHES} == {
            k: v for k, v in its.items() if k not in SWITCHES
        }
    assert ours["state"].keys() == theirs["state"].keys()
    for i, state in ours["state"].items():
        assert state.keys() == theirs["state"][i].keys(), i
        for k, v in state.items():
            if k == "step":
                assert type(v) is float and v == float(theirs["state"][i][k]), (i, v)
            else:
                assert isinstance(v, np.ndarray)
                assert_state_close(v, as_numpy(theirs["state"][i][k]), dtype, f"{i} {k}")


def to_torch(state_dict: dict) -> dict:
    """Our state_dict in torch's terms: the arrays as tensors (torch.from_numpy)."""
    return {
        "state": {
            i: {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in s.items()}
            for i, s in state_dict["state"].items()
        },
        "param_groups": [dict(g) for g in state_dict["param_groups"]],
    }


# ----------------------------------------------------------------------------- step for step
@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("case", CASES)
def test_matches_torch_step_for_step_in_float64(case, problem):
    start = PROBLEMS[problem][0]
    ours, theirs = make(case, start(np.float64)), torch_make(case, start(np.float64))
    for _ in range(100):
        ours.step(grads_of(problem, all_params(ours), case))
        torch_run(theirs, problem, case, 1)
        for p, q in zip(all_params(ours), torch_params(theirs)):
            np.testing.assert_allclose(p, q, **tolerance(np.float64))
    assert all(np.isfinite(p).all() for p in all_params(ours))
    assert_like_torchs(ours.state_dict(), theirs.state_dict())


@pytest.mark.parametrize("case", CASES)
def test_matches_torch_in_float32(case):
    start = PROBLEMS["rosenbrock"][0]
    ours, theirs = make(case, start(np.float32)), torch_make(case, start(np.float32))
    for _ in range(10):
        ours.step(grads_of("rosenbrock", all_params(ours), case))
        torch_run(theirs, "rosenbrock", case, 1)
    for p, q in zip(all_params(ours), torch_params(theirs)):
        assert p.dtype == q.dtype == np.float32
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    assert_like_torchs(ours.state_dict(), theirs.state_dict(), np.float32)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("case", CASES)
def test_the_numpy_reference_is_torch(case, problem):
    """test_optim checks us against `Reference` where torch is missing: here it is checked against torch."""
    start = PROBLEMS[problem][0]
    ref, theirs = Reference(case, start(np.float64)), torch_make(case, start(np.float64))
    for _ in range(100):
        ref.step(grads_of(problem, ref.params, case))
        torch_run(theirs, problem, case, 1)
    for p, q in zip(ref.params, torch_params(theirs)):
        np.testing.assert_allclose(p, q, **tolerance(np.float64))
    state = theirs.state_dict()["state"]
    for i, s in enumerate(ref.state):
        assert s.keys() == state.get(i, {}).keys()
        for k, v in s.items():
            assert_state_close(v, as_numpy(state[i][k]), np.float64, f"{i} {k}")


# ----------------------------------------------------------------------------- state dicts
@pytest.mark.parametrize("case", CASES)
def test_state_dict_layout_is_torchs_before_and_after_steps(case):
    start = PROBLEMS["quadratic"][0]
    ours, theirs = make(case, start(np.float64)), torch_make(case, start(np.float64))
    assert_like_torchs(ours.state_dict(), theirs.state_dict())  # Adagrad's state is there already
    ours.step(grads_of("quadratic", all_params(ours), case))
    torch_run(theirs, "quadratic", case, 1)
    assert_like_torchs(ours.state_dict(), theirs.state_dict())


@pytest.mark.parametrize("case", CASES)
def test_ours_loaded_into_torch_continues_as_ours(case):
    start = PROBLEMS["rosenbrock"][0]
    ours = make(case, start(np.float64))
    for _ in range(5):
        ours.step(grads_of("rosenbrock", all_params(ours), case))
    cls = CASES[case][0]
    tensors = [torch.tensor(p, requires_grad=True) for p in all_params(ours)]
    theirs = getattr(torch.optim, cls)([{"params": tensors[:2]}, {"params": tensors[2:]}])
    theirs.load_state_dict(to_torch(ours.state_dict()))
    for _ in range(10):
        ours.step(grads_of("rosenbrock", all_params(ours), case))
        torch_run(theirs, "rosenbrock", case, 1)
        for p, q in zip(all_params(ours), torch_params(theirs)):
            np.testing.assert_allclose(p, q, **tolerance(np.float64))
    assert_like_torchs(ours.state_dict(), theirs.state_dict())


@pytest.mark.parametrize("case", CASES)
def test_torchs_loaded_into_ours_continues_as_torch(case):
    start = PROBLEMS["rosenbrock"][0]
    theirs = torch_make(case, start(np.float64))
    torch_run(theirs, "rosenbrock", case, 5)
    cls = CASES[case][0]
    params = [p.copy() for p in torch_params(theirs)]
    ours = getattr(optim, cls)([{"params": params[:2]}, {"params": params[2:]}])  # default hyperparameters
    ours.load_state_dict(theirs.state_dict())
    assert all(p is q for p, q in zip(all_params(ours), params))
    for _ in range(10):
        ours.step(grads_of("rosenbrock", all_params(ours), case))
        torch_run(theirs, "rosenbrock", case, 1)
        for p, q in zip(all_params(ours), torch_params(theirs)):
            np.testing.assert_allclose(p, q, **tolerance(np.float64))
    assert_like_torchs(ours.state_dict(), theirs.state_dict())


# ----------------------------------------------------------------------------- param groups
def test_a_learning_rate_and_betas_changed_mid_run_act_as_in_torch():
    start = PROBLEMS["quadratic"][0]
    ours, theirs = make("adamw", start(np.float64)), torch_make("adamw", start(np.float64))
    for t in range(30):
        for opt in (ours, theirs):
            if t == 5:
                opt.param_groups[1]["lr"] = 0.05
            if t == 10:
                opt.param_groups[0]["betas"] = (0.5, 0.9)
                opt.param_groups[0]["weight_decay"] = 0.5
        ours.step(grads_of("quadratic", all_params(ours), "adamw"))
        torch_run(theirs, "quadratic", "adamw", 1)
        for p, q in zip(all_params(ours), torch_params(theirs)):
            np.testing.assert_allclose(p, q, **tolerance(np.float64))


@pytest.mark.parametrize("case", ["sgd-momentum", "adam-amsgrad", "adagrad", "rmsprop", "rprop"])
def test_none_gradients_and_an_added_group_act_as_in_torch(case):
    start, cls = PROBLEMS["quadratic"][0], CASES[case][0]
    extra = np.linspace(-1.0, 1.0, 6)
    ours, theirs = make(case, start(np.float64)), torch_make(case, start(np.float64))
    for t in range(15):
        if t == 4:
            ours.add_param_group({"params": [extra.copy()], "lr": 1e-3})
            theirs.add_param_group({"params": [torch.tensor(extra, requires_grad=True)], "lr": 1e-3})
        grads = grads_of("quadratic", torch_params(theirs)[:3], case) + (
            [] if t < 4 else [torch_params(theirs)[3]]
        )
        ours_grads = grads_of("quadratic", all_params(ours)[:3], case) + (
            [] if t < 4 else [all_params(ours)[3]]
        )
        for g in (grads, ours_grads):
            if t % 3 == 1:
                g[1] = None
            if t < 6:
                g[2] = None
        ours.step(ours_grads)
        torch_step(theirs, grads)
        for p, q in zip(all_params(ours), torch_params(theirs)):
            np.testing.assert_allclose(p, q, **tolerance(np.float64))
    assert_like_torchs(ours.state_dict(), theirs.state_dict())
    if cls != "SGD":
        assert [ours.state_dict()["state"][i]["step"] for i in range(4)] == [15.0, 10.0, 9.0, 11.0]
    assert signs(case)  # the table's maximize groups get -grad, so every run above descends


# ----------------------------------------------------------------------------- the constructors
@pytest.mark.parametrize("cls", sorted(DEFAULTS))
def test_constructor_signature_is_torchs(cls):
    """The same hyperparameters in the same order with the same defaults (torch's switches aside)."""

    def hyper(f):
        return [
            (p.name, p.default)
            for p in inspect.signature(f).parameters.values()
            if p.name not in SWITCHES | {"self"}
        ]

    assert hyper(getattr(optim, cls).__init__) == hyper(getattr(torch.optim, cls).__init__)
    theirs = getattr(torch.optim, cls)([torch.zeros(3, requires_grad=True)]).param_groups[0]
    assert {k: v for k, v in theirs.items() if k not in SWITCHES | {"params"}} == DEFAULTS[cls]
