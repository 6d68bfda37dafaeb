"""adcore_kernels.optim_functional: the eight optimizers in optax's form over pytrees, against the
in-place list form bit for bit (float32 and float64), nothing changed in place, the state a pytree in
torch's state_dict layout (pickled, loaded into the in-place optimizer and back), the schedulers
driving it through state.param_groups, and updates that are new values, not deltas: arithmetic on
them and applying them to other params are typed errors."""

from __future__ import annotations

import copy
import inspect
import pickle
import re

import numpy as np
import optimizer_trees
import pytest
from adcore_kernels import optim
from adcore_kernels import optim_functional as optf
from adcore_kernels.lr_scheduler import CosineAnnealingLR, OneCycleLR, StepLR
from optimizer_trees import CONFIGS, Layer

import adcore
import adcore.numpy as anp
from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError


def tree_start(dtype) -> dict:
    return optimizer_trees.tree_start(dtype, seed=11)


def grad_of(p: np.ndarray) -> np.ndarray:
    return np.asarray(np.sin(3 * p) + 0.1 * p, dtype=p.dtype)


def tree_grads(tree):
    return adcore.tree.map(grad_of, tree)


def copies(tree):
    return adcore.tree.map(np.copy, tree)


def functional_run(name, hyper, params, steps, scheduler=None):
    """`steps` functional steps from `params`; returns the params, the state and the lrs used."""
    tx = getattr(optf, name)(**hyper)
    state = tx.init(params)
    sched = scheduler(state) if scheduler else None
    lrs = []
    for _ in range(steps):
        lrs.append(state.param_groups[0]["lr"])
        updates, state = tx.update(tree_grads(params), state, params)
        params = optf.apply_updates(params, updates)
        if sched:
            sched.step()
    return params, state, lrs


def list_run(name, hyper, params, steps, scheduler=None):
    flat = [p.copy() for p in adcore.tree.leaves(params)]
    opt = optim.OPTIMIZERS[name](flat, **hyper)
    sched = scheduler(opt) if scheduler else None
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step([grad_of(p) for p in flat])
        if sched:
            sched.step()
    return flat, opt, lrs


def same_state(state: optf.OptState, saved: dict) -> bool:
    """A functional state and an in-place state_dict, equal bit for bit (torch's layout both)."""
    if state.param_groups != saved["param_groups"] or state.state.keys() != saved["state"].keys():
        return False
    for i, s in state.state.items():
        t = saved["state"][i]
        if s.keys() != t.keys():
            return False
        for k, v in s.items():
            if isinstance(v, np.ndarray) and not (np.array_equal(v, t[k]) and v.dtype == t[k].dtype):
                return False
            if not isinstance(v, np.ndarray) and v != t[k]:
                return False
    return True


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_functional_form_takes_the_list_forms_steps_bit_for_bit(name, dtype):
    start = tree_start(dtype)
    params, state, _ = functional_run(name, CONFIGS[name], copies(start), 6)
    flat, opt, _ = list_run(name, CONFIGS[name], start, 6)
    for p, q in zip(adcore.tree.leaves(params), flat):
        assert p.dtype == dtype and np.array_equal(p, q)
    assert not np.array_equal(flat[0], start["enc"][0].w)  # it did move
    assert same_state(state, opt.state_dict())
    assert isinstance(params["enc"][0], Layer) and params["enc"][1].b is None  # the params' structure


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_nothing_is_changed_in_place_and_the_results_are_new_arrays(name):
    tx = getattr(optf, name)(**CONFIGS[name])
    params = tree_start(np.float64)
    state = tx.init(params)
    updates, state = tx.update(tree_grads(params), state, params)  # a state with arrays in it
    params = optf.apply_updates(params, updates)
    kept_params, kept_state = copy.deepcopy(params), copy.deepcopy(state)
    grads = tree_grads(params)
    updates, new_state = tx.update(grads, state, params)
    new_params = optf.apply_updates(params, updates)
    for p, q in zip(adcore.tree.leaves(params), adcore.tree.leaves(kept_params)):
        assert np.array_equal(p, q)
    assert same_state(state, kept_state._asdict())
    old_arrays = adcore.tree.leaves(params) + [
        a for a in adcore.tree.leaves(state) if isinstance(a, np.ndarray)
    ]
    for a in adcore.tree.leaves(new_params) + [
        a for a in adcore.tree.leaves(new_state) if isinstance(a, np.ndarray)
    ]:
        assert not any(np.shares_memory(a, b) for b in old_arrays)
    assert new_state.param_groups is state.param_groups  # shared, for a scheduler (documented)


def test_read_only_and_non_contiguous_params_are_fine_as_nothing_is_written():
    frozen = np.linspace(-1, 1, 6)
    frozen.flags.writeable = False
    params = {"a": frozen, "b": np.ones((4, 4))[:, ::2]}
    tx = optf.adam(lr=0.1)
    updates, _ = tx.update(tree_grads(params), tx.init(params), params)
    new = optf.apply_updates(params, updates)
    flat = [frozen.copy(), np.ascontiguousarray(params["b"])]
    optim.Adam(flat, lr=0.1).step([grad_of(p) for p in flat])
    assert np.array_equal(new["a"], flat[0]) and np.array_equal(new["b"], flat[1])


# ----------------------------------------------------------------------------- updates are not deltas
def one_update():
    params = tree_start(np.float64)
    tx = optf.adamw(lr=0.1)
    updates, state = tx.update(tree_grads(params), tx.init(params), params)
    return params, updates


@pytest.mark.parametrize(
    "misuse",
    [
        lambda u: 0.5 * u,
        lambda u: u * 0.5,
        lambda u: np.float32(0.5) * u,
        lambda u: u + u,
        lambda u: -u,
        lambda u: u / 2,
        lambda u: np.asarray(u),
        lambda u: np.multiply(u, 2.0),
        lambda u: np.clip(u, -1, 1),
        lambda u: adcore.tree.map(lambda x: 0.5 * x, u),
        lambda u: list(u),
    ],
    ids=["rmul", "mul", "np-scalar", "add", "neg", "div", "asarray", "ufunc", "clip", "tree-map", "iter"],
)
def test_arithmetic_on_updates_is_refused_not_a_silently_different_optimizer(misuse):
    params, updates = one_update()
    with pytest.raises(InvalidInputError, match="not deltas"):
        misuse(updates)
    optf.apply_updates(params, updates)  # still usable afterwards


def test_updates_apply_only_to_the_params_they_were_computed_from():
    params, updates = one_update()
    same = copy.deepcopy(params)  # equal bit for bit: the same result
    a, b = optf.apply_updates(params, updates), optf.apply_updates(same, updates)
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(a), adcore.tree.leaves(b)))
    other = copies(params)
    other["head"][0][0] += 1.0
    with pytest.raises(
        InvalidValueError, match=r"params\['head'\]\[0\] is not the array update\(\) computed"
    ):
        optf.apply_updates(other, updates)
    with pytest.raises(InvalidValueError, match=r"params\['extra'\] is a leaf where the params have none"):
        optf.apply_updates({**params, "extra": np.ones(2)}, updates)
    with pytest.raises(InvalidInputError, match="new values, not deltas"):
        optf.apply_updates(params, adcore.tree.map(np.zeros_like, params))
    assert "not deltas" in repr(updates)


# ----------------------------------------------------------------------------- the state
def test_the_state_is_a_pytree_in_torchs_layout_that_pickles_and_continues_bit_for_bit():
    hyper = CONFIGS["adam"]
    params, state, _ = functional_run("adam", hyper, tree_start(np.float64), 3)
    assert all(isinstance(x, np.ndarray | float | int | bool) for x in adcore.tree.leaves(state))
    assert list(state._asdict()) == ["state", "param_groups"]
    assert state.param_groups[0]["params"] == [0, 1, 2, 3, 4]
    assert list(state.state[0]) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    restored = pickle.loads(pickle.dumps(state))
    tx = optf.adam(**hyper)
    u1, s1 = tx.update(tree_grads(params), state, params)
    u2, s2 = tx.update(tree_grads(params), restored, params)
    a, b = optf.apply_updates(params, u1), optf.apply_updates(params, u2)
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(a), adcore.tree.leaves(b)))
    assert same_state(s1, s2._asdict())


def test_the_state_moves_between_the_functional_and_the_in_place_form():
    hyper = CONFIGS["rmsprop"]
    params, state, _ = functional_run("rmsprop", hyper, tree_start(np.float64), 3)
    flat = [p.copy() for p in adcore.tree.leaves(params)]
    opt = optim.RMSprop(flat, **hyper)
    opt.load_state_dict(state._asdict())  # functional -> in place
    tx = optf.rmsprop(**hyper)
    for _ in range(2):
        updates, state = tx.update(tree_grads(params), state, params)
        params = optf.apply_updates(params, updates)
        opt.step([grad_of(p) for p in flat])
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(params), flat))
    state = optf.OptState(**opt.state_dict())  # in place -> functional
    updates, state = tx.update(tree_grads(params), state, params)
    opt.step([grad_of(p) for p in flat])
    assert all(
        np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(optf.apply_updates(params, updates)), flat)
    )


def test_adagrads_state_is_made_at_init_and_hyperparameters_come_from_the_state():
    params = {"w": np.ones(3)}
    tx = optf.adagrad(initial_accumulator_value=0.5)
    state = tx.init(params)
    assert np.array_equal(state.state[0]["sum"], np.full(3, 0.5)) and state.state[0]["step"] == 0.0
    state.param_groups[0]["lr"] = 0.0  # update reads the state's hyperparameters
    updates, _ = tx.update({"w": np.ones(3)}, state, params)
    assert np.array_equal(optf.apply_updates(params, updates)["w"], np.ones(3))


# ----------------------------------------------------------------------------- schedulers
SCHEDULERS = {
    "step": (lambda o: StepLR(o, step_size=2, gamma=0.5), ["sgd", "adam", "rmsprop"]),
    "cosine": (lambda o: CosineAnnealingLR(o, T_max=4, eta_min=1e-3), ["adamw", "adagrad", "adadelta"]),
    "one-cycle": (lambda o: OneCycleLR(o, max_lr=0.05, total_steps=8), ["sgd", "adam", "adamax"]),
    "one-cycle-lr-only": (
        lambda o: OneCycleLR(o, max_lr=0.05, total_steps=8, cycle_momentum=False),
        ["rprop"],
    ),
}


@pytest.mark.parametrize(
    "kind, name", [(kind, name) for kind, (_, names) in SCHEDULERS.items() for name in names], ids=str
)
def test_a_scheduler_drives_the_functional_form_as_the_list_form(kind, name):
    scheduler = SCHEDULERS[kind][0]
    start = tree_start(np.float64)
    params, state, lrs = functional_run(name, CONFIGS[name], copies(start), 8, scheduler)
    flat, opt, list_lrs = list_run(name, CONFIGS[name], start, 8, scheduler)
    assert lrs == list_lrs and len(set(lrs)) > 1  # the same lr sequence, which does change
    for p, q in zip(adcore.tree.leaves(params), flat):
        assert np.array_equal(p, q)
    assert same_state(state, opt.state_dict())  # with initial_lr, max_lr, momentum/betas as written


def test_the_in_place_pytree_form_takes_a_scheduler_too():
    tree, flat = tree_start(np.float64), adcore.tree.leaves(tree_start(np.float64))
    opt, twin = optim.SGD(tree, lr=0.1, momentum=0.9), optim.SGD(flat, lr=0.1, momentum=0.9)
    s1, s2 = OneCycleLR(opt, max_lr=0.2, total_steps=6), OneCycleLR(twin, max_lr=0.2, total_steps=6)
    for _ in range(6):
        opt.step(tree_grads(tree))
        twin.step([grad_of(p) for p in flat])
        s1.step()
        s2.step()
    assert s1.get_last_lr() == s2.get_last_lr()
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(tree), flat))


# ----------------------------------------------------------------------------- with adcore.grad
def test_a_model_trains_with_grads_from_adcore_grad():
    rng = np.random.default_rng(5)
    params = {"w": rng.standard_normal((3, 1)), "b": np.zeros(1)}
    x = rng.standard_normal((32, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3

    def loss(p):
        return anp.mean((x @ p["w"] + p["b"] - y) ** 2)

    tx = optf.adam(lr=0.1)
    state, first = tx.init(params), loss(params)
    for _ in range(100):
        updates, state = tx.update(adcore.grad(loss)(params), state, params)
        params = optf.apply_updates(params, updates)
    assert loss(params) < first / 100


# ----------------------------------------------------------------------------- errors and signature
def test_each_transformation_has_its_classes_hyperparameters_and_defaults():
    for name, cls in optim.OPTIMIZERS.items():
        signature = inspect.signature(getattr(optf, name))
        assert list(signature.parameters) == list(cls.row.hyper)
        assert {k: p.default for k, p in signature.parameters.items()} == {
            k: d for k, (d, _) in cls.row.hyper.items()
        }
        assert cls.__doc__ in getattr(optf, name).__doc__


@pytest.mark.parametrize(
    "make, error, pattern",
    [
        (lambda: optf.adam(lr=-1.0), InvalidValueError, r"Adam: lr must be >= 0"),
        (lambda: optf.sgd(nesterov=True), InvalidValueError, r"nesterov"),
        (lambda: optf.adam(learning_rate=0.1), InvalidInputError, r"adam: .*learning_rate.*\['lr', 'betas'"),
        (lambda: optf.adam(fused=True), InvalidInputError, r"fused"),
    ],
)
def test_a_bad_hyperparameter_is_refused_when_the_transformation_is_made(make, error, pattern):
    with pytest.raises(error) as raised:
        make()
    assert re.search(pattern, str(raised.value)), str(raised.value)


def wrong_calls(params, grads, state):
    ints = {**params, "head": (params["head"][0].astype(np.int64), params["head"][1])}
    return [
        ("missing grad", ({**grads, "head": grads["head"][:1]}, state, params), InvalidValueError, r"grads\['head'\]\[1\] is missing"),
        ("int grad", ({**grads, "head": (grads["head"][0].astype(np.int64), grads["head"][1])}, state, params), InvalidValueError, r"grads\['head'\]\[0\]\) has shape \(2,\) and dtype int64"),
        ("int param", (grads, state, ints), InvalidInputError, r"adam.update: params\['head'\]\[0\] is an array of dtype int64"),
        ("number param", (grads, state, {**params, "head": (params["head"][0], 1.0)}), InvalidInputError, r"params\['head'\]\[1\] is a float"),
        ("state", (grads, state._asdict(), params), InvalidInputError, r"state must be the OptState"),
        ("other optimizer's state", (grads, optf.sgd().init(params), params), InvalidValueError, r"lacks hyperparameter"),
        ("lr", (grads, state._replace(param_groups=[{**state.param_groups[0], "lr": -1.0}]), params), InvalidValueError, r"lr"),
        ("no params", (grads, state, None), InvalidInputError, r"adam.update: params is None"),
        ("fewer params", (grads["enc"], state, params["enc"]), InvalidValueError, r"3 parameter"),
    ]  # fmt: skip


def test_a_wrong_call_to_update_raises_naming_the_leaf_and_changes_nothing():
    tx = optf.adam(lr=0.1, amsgrad=True)
    params = tree_start(np.float64)
    updates, state = tx.update(tree_grads(params), tx.init(params), params)
    params = optf.apply_updates(params, updates)
    grads = tree_grads(params)
    kept_params, kept_state = copy.deepcopy(params), copy.deepcopy(state)
    for what, args, error, pattern in wrong_calls(params, grads, state):
        with pytest.raises(error) as raised:
            tx.update(*args)
        assert isinstance(raised.value, AdcoreError) and re.search(pattern, str(raised.value)), (
            what,
            raised.value,
        )
        assert all(
            np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(params), adcore.tree.leaves(kept_params))
        )
        assert same_state(state, kept_state._asdict()), what
    updates, state = tx.update(grads, state, params)  # the next good call is the list form's step
    flat = [p.copy() for p in adcore.tree.leaves(kept_params)]
    opt = optim.Adam(flat, lr=0.1, amsgrad=True)
    opt.load_state_dict(kept_state._asdict())
    opt.step(adcore.tree.leaves(grads))
    new = optf.apply_updates(params, updates)
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(new), flat))
    with pytest.raises(InvalidInputError, match=r"params\['w'\] is a str"):
        tx.init({"w": "weights"})
    with pytest.raises(InvalidValueError, match="empty"):
        tx.init({})


# ----------------------------------------------------------------------------- adcore_nn modules
def test_a_module_is_a_functional_optimizers_params_and_is_not_changed():
    nn = pytest.importorskip("adcore_nn.module", reason="adcore_nn.module (issue 36) is not in this tree yet")

    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(np.linspace(-1, 1, 6).reshape(2, 3))
            self.bias = nn.Parameter(np.zeros(2))

        def forward(self, x):
            return x @ anp.transpose(self.weight) + self.bias

    def loss(model, x, y):
        return anp.mean((model(x) - y) ** 2)

    model, twin, x = Affine(), Affine(), np.ones((4, 3))
    y = np.linspace(0, 1, 8).reshape(4, 2)
    before = [p.copy() for p in model.parameters()]
    opt, tx = optim.AdamW(list(twin.parameters()), lr=0.1), optf.adamw(lr=0.1)  # the list form
    state, new = tx.init(model), model
    for _ in range(3):
        updates, state = tx.update(adcore.grad(loss)(new, x, y), state, new)
        new = optf.apply_updates(new, updates)
        opt.step(adcore.tree.leaves(adcore.grad(loss)(twin, x, y)))
    assert type(new) is Affine and new is not model
    assert all(np.array_equal(p, q) for p, q in zip(model.parameters(), before))  # the model is not changed
    assert all(np.array_equal(p, q) for p, q in zip(new.parameters(), twin.parameters()))
    assert not np.array_equal(new.weight, model.weight)
