"""adcore_kernels.lr_scheduler: each scheduler's lr (and OneCycleLR's momentum or beta1) sequence
against torch.optim.lr_scheduler's over a whole run with two param groups of different lr,
state_dict round trips (ours and torch's), resuming with last_epoch, and the typed errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from adcore_kernels import lr_scheduler
from adcore_kernels.lr_scheduler import CosineAnnealingLR, OneCycleLR, StepLR

from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError


class Groups:
    """The stand-in optimizer: a scheduler only reads and writes param_groups."""

    def __init__(self, *groups: dict) -> None:
        self.param_groups = [dict(g) for g in groups]


def sgd_groups() -> Groups:
    return Groups({"lr": 0.1, "momentum": 0.9}, {"lr": 0.03, "momentum": 0.9})


def adam_groups() -> Groups:
    return Groups({"lr": 0.1, "betas": (0.9, 0.999)}, {"lr": 0.03, "betas": (0.9, 0.99)})


# (scheduler, its arguments, steps in the run, the momentum key it cycles or None)
RUNS = [
    ("StepLR", dict(step_size=7, gamma=0.5), 50, None),
    ("StepLR", dict(step_size=1), 12, None),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=1e-3), 45, None),  # past T_max: it climbs back
    ("CosineAnnealingLR", dict(T_max=7), 30, None),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=40), 40, "momentum"),
    ("OneCycleLR", dict(max_lr=[1.0, 0.2], total_steps=40, three_phase=True), 40, "momentum"),
    ("OneCycleLR", dict(max_lr=0.5, epochs=4, steps_per_epoch=9, anneal_strategy="linear"), 36, "betas"),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=25, pct_start=0.4, div_factor=10.0), 25, "betas"),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=30, cycle_momentum=False), 30, None),
]


def torch_optimizer(torch, key: str | None):
    """torch's optimizer with the stand-in's two groups (Adam's betas where OneCycleLR cycles them)."""
    w, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(1))
    if key == "betas":
        groups = [
            {"params": [w], "lr": 0.1, "betas": (0.9, 0.999)},
            {"params": [b], "lr": 0.03, "betas": (0.9, 0.99)},
        ]
        return torch.optim.Adam(groups)
    return torch.optim.SGD([{"params": [w], "lr": 0.1}, {"params": [b], "lr": 0.03}], momentum=0.9)


def group_values(groups: list[dict], key: str | None) -> list[float]:
    values = [g["lr"] for g in groups]
    if key == "betas":
        values += [v for g in groups for v in g["betas"]]
    elif key == "momentum":
        values += [g["momentum"] for g in groups]
    return values


@pytest.mark.parametrize(("name", "kwargs", "steps", "key"), RUNS)
def test_sequence_matches_torch(name, kwargs, steps, key):
    torch = pytest.importorskip("torch")
    theirs_opt = torch_optimizer(torch, key)
    mine_opt = adam_groups() if key == "betas" else sgd_groups()
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kwargs)
    mine = getattr(lr_scheduler, name)(mine_opt, **kwargs)
    seen = set()
    for step in range(steps + 1):  # the construction's epoch 0, then `steps` steps
        np.testing.assert_allclose(mine.get_last_lr(), theirs.get_last_lr(), rtol=1e-12, atol=0)
        got, expected = group_values(mine_opt.param_groups, key), group_values(theirs_opt.param_groups, key)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, err_msg=f"step {step}")
        assert mine.last_epoch == theirs.last_epoch == step
        seen.add(tuple(mine.get_last_lr()))
        if step < steps:
            theirs_opt.step()  # (no gradients: only keeps torch from warning about the order)
            theirs.step()
            mine.step()
    assert len(seen) > steps // 8  # the lr did move
    assert mine_opt.param_groups[0]["initial_lr"] == theirs_opt.param_groups[0]["initial_lr"]


def test_construction_sets_initial_lr_and_epoch_0():
    opt = sgd_groups()
    sched = StepLR(opt, step_size=2, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == sched.base_lrs == [0.1, 0.03]
    assert sched.last_epoch == 0 and sched.get_last_lr() == [0.1, 0.03]
    sched.step(), sched.step()
    assert sched.get_last_lr() == [0.05, 0.015] == [g["lr"] for g in opt.param_groups]
    opt.param_groups[0]["lr"] = 1.0  # chainable, as torch's: a change from outside carries on
    sched.step(), sched.step()
    assert opt.param_groups[0]["lr"] == 0.5


def test_get_last_lr_is_a_copy():
    sched = CosineAnnealingLR(sgd_groups(), T_max=5)
    sched.get_last_lr()[0] = 99.0
    assert sched.get_last_lr() == [0.1, 0.03]


def advance(sched, opt, n: int) -> None:
    for _ in range(n):
        opt.step()
        sched.step()


def lrs_of_run(sched, n: int) -> list[list[float]]:
    out = []
    for _ in range(n):
        sched.step()
        out.append(sched.get_last_lr() + group_values(sched.optimizer.param_groups, None))
    return out


@pytest.mark.parametrize(("name", "kwargs", "steps", "key"), RUNS)
def test_state_dict_round_trip(name, kwargs, steps, key):
    make = adam_groups if key == "betas" else sgd_groups
    cls = getattr(lr_scheduler, name)
    first = cls(make(), **kwargs)
    for _ in range(steps // 2):
        first.step()
    saved = first.state_dict()
    opt = Groups(*first.optimizer.param_groups)  # the optimizer's groups, as its own state_dict restores them
    second = cls(make(), **kwargs)
    second.optimizer = opt
    second.load_state_dict(saved)
    first.step()  # the saved state is a copy: later steps do not change it
    assert saved["last_epoch"] == steps // 2
    assert second.state_dict() == saved
    second.step()
    rest = steps - steps // 2 - 1
    assert lrs_of_run(first, rest) == lrs_of_run(second, rest)


@pytest.mark.parametrize(("name", "kwargs", "steps", "key"), RUNS)
def test_torch_state_dict_both_ways(name, kwargs, steps, key):
    torch = pytest.importorskip("torch")
    theirs_opt = torch_optimizer(torch, key)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kwargs)
    advance(theirs, theirs_opt, steps // 2)
    mine_opt = Groups(*({k: v for k, v in g.items() if k != "params"} for g in theirs_opt.param_groups))
    mine = getattr(lr_scheduler, name)(adam_groups() if key == "betas" else sgd_groups(), **kwargs)
    mine.optimizer = mine_opt
    mine.load_state_dict(theirs.state_dict())  # torch's -> ours
    restored_opt = torch_optimizer(torch, key)  # ours -> torch's
    restored = getattr(torch.optim.lr_scheduler, name)(restored_opt, **kwargs)
    restored_opt.load_state_dict(theirs_opt.state_dict())
    restored.load_state_dict(mine.state_dict())
    for _ in range(steps - steps // 2):
        for opt, sched in ((theirs_opt, theirs), (restored_opt, restored), (mine_opt, mine)):
            if opt is not mine_opt:
                opt.step()
            sched.step()
        assert mine.get_last_lr() == theirs.get_last_lr() == restored.get_last_lr()
        assert group_values(mine_opt.param_groups, key) == group_values(theirs_opt.param_groups, key)


@pytest.mark.parametrize("last_epoch", [0, 4, 6])
@pytest.mark.parametrize(
    ("name", "kwargs"), [("StepLR", dict(step_size=3)), ("CosineAnnealingLR", dict(T_max=8))]
)
def test_resuming_with_last_epoch_matches_torch(name, kwargs, last_epoch):
    torch = pytest.importorskip("torch")
    theirs_opt = torch_optimizer(torch, None)
    mine_opt = sgd_groups()
    for opt in (theirs_opt, mine_opt):
        for group, lr in zip(opt.param_groups, (0.2, 0.05)):
            group["initial_lr"] = lr
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, last_epoch=last_epoch, **kwargs)
    mine = getattr(lr_scheduler, name)(mine_opt, last_epoch=last_epoch, **kwargs)
    assert mine.base_lrs == [0.2, 0.05]
    for _ in range(12):
        assert mine.last_epoch == theirs.last_epoch
        np.testing.assert_allclose(mine.get_last_lr(), theirs.get_last_lr(), rtol=1e-12, atol=0)
        theirs_opt.step(), theirs.step(), mine.step()


# ---------------------------------------------------------------------------------------- errors
def check_error(error, match, make, *args, **kwargs):
    """`make(*args, **kwargs)` raises `error` matching `match`, an AdcoreError."""
    with pytest.raises(error, match=match) as caught:
        make(*args, **kwargs)
    assert isinstance(caught.value, AdcoreError)


VALUE, TYPE = InvalidValueError, InvalidInputError
ONE = dict(max_lr=1, total_steps=9)  # OneCycleLR's required arguments, for the rows that vary another


@pytest.mark.parametrize(
    ("error", "match", "cls", "kwargs"),
    [
        (VALUE, "StepLR: step_size must be an int >= 1", StepLR, dict(step_size=0)),
        (TYPE, "StepLR: step_size must be an int", StepLR, dict(step_size=1.5)),
        (TYPE, "StepLR: gamma must be a finite real", StepLR, dict(step_size=2, gamma="0.1")),
        (VALUE, "StepLR: gamma must be a finite real", StepLR, dict(step_size=2, gamma=np.nan)),
        (VALUE, "StepLR: last_epoch must be an int >= -1", StepLR, dict(step_size=2, last_epoch=-2)),
        (VALUE, "CosineAnnealingLR: T_max must be an int >= 1", CosineAnnealingLR, dict(T_max=0)),
        (VALUE, "CosineAnnealingLR: eta_min", CosineAnnealingLR, dict(T_max=3, eta_min=np.inf)),
        (VALUE, "OneCycleLR: give total_steps, or epochs", OneCycleLR, dict(max_lr=1.0)),
        (VALUE, "OneCycleLR: give total_steps", OneCycleLR, dict(max_lr=1.0, epochs=3)),
        (VALUE, "OneCycleLR: total_steps must be", OneCycleLR, dict(max_lr=1.0, total_steps=0)),
        (VALUE, "OneCycleLR: epochs must be", OneCycleLR, dict(max_lr=1.0, epochs=-1, steps_per_epoch=3)),
        (TYPE, "OneCycleLR: steps_per_epoch", OneCycleLR, dict(max_lr=1, epochs=2, steps_per_epoch=2.0)),
        (VALUE, "OneCycleLR: pct_start must be a number in", OneCycleLR, ONE | dict(pct_start=1.5)),
        (VALUE, "OneCycleLR: anneal_strategy must be", OneCycleLR, ONE | dict(anneal_strategy="exp")),
        (
            VALUE,
            "OneCycleLR: max_lr has 3 values for 2 param groups",
            OneCycleLR,
            ONE | dict(max_lr=[1, 2, 3]),
        ),
        (
            VALUE,
            r"OneCycleLR: max_lr\[1\] must be a finite number > 0",
            OneCycleLR,
            ONE | dict(max_lr=[1, 0]),
        ),
        (VALUE, "OneCycleLR: div_factor", OneCycleLR, ONE | dict(div_factor=0.0)),
        (TYPE, "OneCycleLR: three_phase must be True or False", OneCycleLR, ONE | dict(three_phase=1)),
        (VALUE, "OneCycleLR: base_momentum has 3 values", OneCycleLR, ONE | dict(base_momentum=[0.8] * 3)),
        # pct_start * total_steps == 1: the warm-up would be 0 / 0 at step 0 (torch: ZeroDivisionError)
        (
            VALUE,
            "phase 0 of the schedule zero steps long",
            OneCycleLR,
            dict(max_lr=1, total_steps=10, pct_start=0.1),
        ),
        (VALUE, "phase 1 of the schedule zero steps long", OneCycleLR, ONE | dict(pct_start=1.0)),
    ],
)
def test_bad_arguments_are_typed_errors_and_change_nothing(error, match, cls, kwargs):
    opt = sgd_groups()
    before = copy.deepcopy(opt.param_groups)
    check_error(error, match, cls, opt, **kwargs)
    assert opt.param_groups == before


@pytest.mark.parametrize("optimizer", [object(), Groups(), type("G", (), {"param_groups": [1]})()])
def test_not_an_optimizer(optimizer):
    check_error(InvalidInputError, "StepLR: optimizer must have param_groups", StepLR, optimizer, step_size=2)


def test_group_without_lr_or_with_a_bad_one():
    check_error(InvalidValueError, r"param_groups\[1\] has no 'lr'", StepLR, Groups({"lr": 0.1}, {}), 3)
    check_error(InvalidInputError, r"param_groups\[0\]\['lr'\] must be", StepLR, Groups({"lr": "0.1"}), 3)


def test_resuming_needs_initial_lr():
    opt = sgd_groups()
    check_error(
        InvalidValueError, r"param_groups \[0, 1\] have no 'initial_lr'", StepLR, opt, 3, last_epoch=5
    )
    assert "initial_lr" not in opt.param_groups[0]


def test_cycle_momentum_needs_momentum_or_betas():
    opt = Groups({"lr": 0.1}, {"lr": 0.2})
    check_error(
        InvalidValueError,
        "cycle_momentum=True needs an optimizer with 'momentum' or 'betas'",
        OneCycleLR,
        opt,
        1.0,
        10,
    )
    assert opt.param_groups == [{"lr": 0.1}, {"lr": 0.2}]
    OneCycleLR(opt, 1.0, 10, cycle_momentum=False)  # fine without


def test_stepping_past_total_steps_changes_nothing():
    opt = sgd_groups()
    sched = OneCycleLR(opt, max_lr=1.0, total_steps=5)
    for _ in range(5):
        sched.step()
    before, groups = sched.state_dict(), copy.deepcopy(opt.param_groups)
    check_error(InvalidValueError, "OneCycleLR: step 6 is past total_steps=5", sched.step)
    assert sched.state_dict() == before and opt.param_groups == groups


def test_a_bad_lr_set_between_steps_changes_nothing():
    opt = sgd_groups()
    sched = CosineAnnealingLR(opt, T_max=10)
    opt.param_groups[1]["lr"] = "fast"
    check_error(InvalidInputError, r"CosineAnnealingLR: param_groups\[1\]\['lr'\] must be", sched.step)
    assert sched.last_epoch == 0 and opt.param_groups[0]["lr"] == 0.1


def test_a_param_group_added_later_is_refused():
    opt = sgd_groups()
    sched = StepLR(opt, 2)
    opt.param_groups.append({"lr": 1.0})
    check_error(InvalidValueError, "has 3 param groups, this scheduler was made for 2", sched.step)


def test_one_cycle_groups_must_keep_its_keys():
    opt = sgd_groups()
    sched = OneCycleLR(opt, 1.0, 10)
    del opt.param_groups[0]["max_lr"]
    check_error(InvalidValueError, r"OneCycleLR: param_groups\[0\] has no 'max_lr'", sched.step)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda sd: sd.pop("gamma"), InvalidValueError, r"missing: \['gamma'\]"),
        (lambda sd: sd.update(extra=1), InvalidValueError, r"unknown: \['extra'\]"),
        (lambda sd: sd.update(step_size=0), InvalidValueError, "step_size must be an int >= 1"),
        (lambda sd: sd.update(base_lrs=[0.1]), InvalidValueError, "base_lrs has 1 values for 2 param groups"),
        (lambda sd: sd.update(_last_lr=(0.1, 0.2)), InvalidInputError, "_last_lr must be a list"),
        (lambda sd: sd.update(last_epoch=-1), InvalidValueError, "last_epoch must be an int >= 0"),
    ],
)
def test_load_state_dict_checks_before_changing(change, error, match):
    sched = StepLR(sgd_groups(), 3)
    sched.step()
    saved = sched.state_dict()
    bad = copy.deepcopy(saved)
    change(bad)
    check_error(error, f"StepLR.load_state_dict: .*{match}", sched.load_state_dict, bad)
    check_error(InvalidInputError, "expected a dict", sched.load_state_dict, [1])
    assert sched.state_dict() == saved


def test_load_state_dict_checks_one_cycle_phases():
    sched = OneCycleLR(sgd_groups(), 1.0, 10)
    bad = sched.state_dict()
    bad["_schedule_phases"][0]["start_lr"] = "lr"
    check_error(
        InvalidValueError, r"_schedule_phases\[0\] is not a OneCycleLR phase", sched.load_state_dict, bad
    )


# ------------------------------------------------------------- with adcore_kernels.optim's optimizers
REAL = [
    ("SGD", dict(lr=0.1, momentum=0.9), "OneCycleLR", dict(max_lr=0.3, total_steps=30)),
    ("SGD", dict(lr=0.1), "OneCycleLR", dict(max_lr=0.3, total_steps=30)),  # momentum 0 -> cycled from 0.95
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), "StepLR", dict(step_size=5, gamma=0.5)),
    ("Adam", dict(lr=0.05), "OneCycleLR", dict(max_lr=0.1, total_steps=30, three_phase=True)),
    ("AdamW", dict(lr=0.05, amsgrad=True), "CosineAnnealingLR", dict(T_max=10, eta_min=1e-3)),
    ("RMSprop", dict(lr=0.01, momentum=0.5), "OneCycleLR", dict(max_lr=0.02, total_steps=30)),
]


def quadratic_grad(w: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The gradient of ½ wᵀAw − Σw: a coupled quadratic, so every coordinate's trajectory differs."""
    return a @ w - 1.0


@pytest.mark.parametrize(("cls_name", "hyper", "sched_name", "sched_kwargs"), REAL)
def test_with_adcore_optimizers_the_run_matches_torch(cls_name, hyper, sched_name, sched_kwargs):
    torch = pytest.importorskip("torch")
    from adcore_kernels import optim

    rng = np.random.default_rng(3)
    q = rng.standard_normal((4, 4))
    a_w, a_b = q @ q.T / 4 + np.eye(4), np.diag([1.0, 2.0, 3.0])
    w, b = rng.standard_normal(4), rng.standard_normal(3)
    w0 = w.copy()
    tw, tb = (torch.tensor(v.copy(), requires_grad=True) for v in (w, b))
    groups = lambda p, q: [{"params": [p]}, {"params": [q], "lr": hyper["lr"] / 3}]  # noqa: E731
    mine_opt = getattr(optim, cls_name)(groups(w, b), **hyper)
    theirs_opt = getattr(torch.optim, cls_name)(groups(tw, tb), **hyper)
    mine = getattr(lr_scheduler, sched_name)(mine_opt, **sched_kwargs)
    theirs = getattr(torch.optim.lr_scheduler, sched_name)(theirs_opt, **sched_kwargs)
    for step in range(30):
        mine_opt.step([quadratic_grad(w, a_w), quadratic_grad(b, a_b)])
        with torch.no_grad():
            tw.grad = torch.from_numpy(quadratic_grad(tw.numpy(), a_w))
            tb.grad = torch.from_numpy(quadratic_grad(tb.numpy(), a_b))
        theirs_opt.step()
        mine.step()
        theirs.step()
        np.testing.assert_allclose(mine.get_last_lr(), theirs.get_last_lr(), rtol=1e-12, atol=0)
        np.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=f"step {step}")
        np.testing.assert_allclose(b, tb.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=f"step {step}")
    assert np.abs(w - w0).max() > 0.1  # the run did move the parameters
