"""adcore_kernels.optim over pytrees: params given as model.parameters(), a dict, nested lists/tuples,
namedtuples, a registered class or an adcore_nn Module, updated in place; step(grads) in the params'
structure or torch's flat list. Each of the eight optimizers against the list form bit for bit
(float32 and float64, several steps, state dicts in torch's layout), and the errors: a structure
mismatch, a leaf that is not a float array, a replaced leaf, each typed and naming the leaf's path,
nothing changed afterwards and the next step the one the list form takes."""

from __future__ import annotations

import re

import numpy as np
import optimizer_trees
import pytest
from adcore_kernels import optim
from optimizer_trees import CONFIGS, Layer

import adcore
import adcore.numpy as anp
from adcore.errors import AdcoreError, InvalidInputError, InvalidValueError


def tree_start(dtype) -> dict:
    return optimizer_trees.tree_start(dtype, seed=7)


def grad_of(p: np.ndarray) -> np.ndarray:
    """A gradient that depends on the parameter, so trajectories diverge if a step differs."""
    return (np.sin(3 * p) + 0.1 * p).astype(p.dtype)


def tree_grads(tree):
    return adcore.tree.map(grad_of, tree)


def state_arrays_equal(a: dict, b: dict) -> bool:
    """Two state_dicts equal bit for bit: same layout, same numbers, same arrays."""
    if a["param_groups"] != b["param_groups"] or a["state"].keys() != b["state"].keys():
        return False
    for i in a["state"]:
        s, t = a["state"][i], b["state"][i]
        if s.keys() != t.keys():
            return False
        for k in s:
            same = (
                np.array_equal(s[k], t[k]) and s[k].dtype == t[k].dtype
                if isinstance(s[k], np.ndarray)
                else s[k] == t[k]
            )
            if not same:
                return False
    return True


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_pytree_takes_the_list_forms_steps_bit_for_bit(name, dtype):
    cls, hyper = optim.OPTIMIZERS[name], CONFIGS[name]
    tree = tree_start(dtype)
    flat = [p.copy() for p in adcore.tree.leaves(tree)]
    assert len(flat) == 5
    tree_opt, list_opt = cls(tree, **hyper), cls(flat, **hyper)
    leaves = adcore.tree.leaves(tree)
    for _ in range(6):
        tree_opt.step(tree_grads(tree))
        list_opt.step([grad_of(p) for p in flat])
    for p, q in zip(adcore.tree.leaves(tree), flat):
        assert p.dtype == dtype and np.array_equal(p, q)
    assert all(p is q for p, q in zip(adcore.tree.leaves(tree), leaves))  # in place: the same arrays
    assert not np.array_equal(flat[0], tree_start(dtype)["enc"][0].w)  # it did move
    assert state_arrays_equal(tree_opt.state_dict(), list_opt.state_dict())  # torch's layout, as the list's


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_flat_grads_and_tree_grads_are_the_same_step_and_none_skips(name):
    cls, hyper = optim.OPTIMIZERS[name], CONFIGS[name]
    a, b, flat = tree_start(np.float64), tree_start(np.float64), adcore.tree.leaves(tree_start(np.float64))
    opt_a, opt_b, opt_flat = cls(a, **hyper), cls(b, **hyper), cls(flat, **hyper)
    for t in range(4):
        skip = t == 1  # the flat form's None skips a parameter (and its step count)
        ga = [None if skip and i == 2 else g for i, g in enumerate(adcore.tree.leaves(tree_grads(a)))]
        opt_a.step(ga)
        opt_flat.step([None if skip and i == 2 else grad_of(p) for i, p in enumerate(flat)])
        if not skip:
            opt_b.step(tree_grads(b))
    for p, q in zip(adcore.tree.leaves(a), flat):
        assert np.array_equal(p, q)
    assert state_arrays_equal(opt_a.state_dict(), opt_flat.state_dict())
    if name != "sgd":
        assert [s["step"] for s in opt_a.state_dict()["state"].values()] == [4.0, 4.0, 3.0, 4.0, 4.0]


def test_a_generator_of_parameters_is_torchs_list():
    flat, again = adcore.tree.leaves(tree_start(np.float64)), adcore.tree.leaves(tree_start(np.float64))
    opt, twin = optim.Adam(p for p in flat), optim.Adam(list(again))
    for _ in range(3):
        opt.step([grad_of(p) for p in flat])
        twin.step([grad_of(p) for p in again])
    assert all(np.array_equal(p, q) for p, q in zip(flat, again))
    assert opt.param_groups[0]["params"][0] is flat[0]


def test_grads_from_adcore_grad_of_a_dict_drive_the_pytree_optimizer():
    rng = np.random.default_rng(3)
    params = {"w": rng.standard_normal((3, 2)), "b": [np.zeros(2)]}
    x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    flat = [params["b"][0].copy(), params["w"].copy()]  # leaf order: keys sorted

    def loss(p, x, y):
        return anp.mean((x @ p["w"] + p["b"][0] - y) ** 2)

    opt, twin = optim.SGD(params, lr=0.1, momentum=0.9), optim.SGD(flat, lr=0.1, momentum=0.9)
    first = loss(params, x, y)
    for _ in range(5):
        opt.step(adcore.grad(loss)(params, x, y))
        g = adcore.grad(loss)({"w": flat[1], "b": [flat[0]]}, x, y)
        twin.step([g["b"][0], g["w"]])
    assert loss(params, x, y) < first
    assert np.array_equal(params["w"], flat[1]) and np.array_equal(params["b"][0], flat[0])


class Pair:
    """A registered pytree class, as a Module is: its leaves are its two arrays, by name."""

    def __init__(self, u, v):
        self.u, self.v = u, v


adcore.tree.register(Pair, lambda p: ((p.u, p.v), None, ("u", "v")), lambda _, kids: Pair(*kids))


def test_a_registered_class_is_updated_in_place_and_a_replaced_leaf_is_refused():
    pair, flat = Pair(np.ones(3), np.full(2, 2.0)), [np.ones(3), np.full(2, 2.0)]
    opt, twin = optim.RMSprop(pair, lr=0.1), optim.RMSprop(flat, lr=0.1)
    opt.step(Pair(np.ones(3), np.ones(2)))
    twin.step([np.ones(3), np.ones(2)])
    assert np.array_equal(pair.u, flat[0]) and np.array_equal(pair.v, flat[1])
    before, state = (pair.u, pair.v.copy()), opt.state_dict()
    pair.u = pair.u * 1.0  # a new array: the optimizer would go on updating the old one
    with pytest.raises(InvalidValueError, match=r"params\.u was replaced") as raised:
        opt.step(Pair(np.ones(3), np.ones(2)))
    assert "RMSprop.step" in str(raised.value)
    assert np.array_equal(pair.v, before[1]) and state_arrays_equal(opt.state_dict(), state)
    pair.u = before[0]  # put back: the next step is the list form's
    opt.step(Pair(np.ones(3), np.ones(2)))
    twin.step([np.ones(3), np.ones(2)])
    assert np.array_equal(pair.u, flat[0]) and np.array_equal(pair.v, flat[1])


class Model(Pair):
    """Callable, as a Module is: its gradient (the same class) is not a step(closure)."""

    def __call__(self, x):
        return self.u.sum() * x


adcore.tree.register(Model, lambda p: ((p.u, p.v), None, ("u", "v")), lambda _, kids: Model(*kids))


def test_a_callable_pytree_gradient_is_not_taken_for_a_closure():
    model = Model(np.ones(3), np.ones(2))
    opt = optim.SGD(model, lr=0.5)
    opt.step(Model(np.ones(3), np.full(2, 2.0)))
    np.testing.assert_array_equal(model.u, 0.5)
    np.testing.assert_array_equal(model.v, 0.0)
    with pytest.raises(InvalidInputError, match="step\\(closure\\) is not supported"):
        opt.step(lambda: 1.0)


def test_a_dict_whose_leaf_is_replaced_or_added_is_refused():
    params = {"w": np.ones(3)}
    opt = optim.SGD(params, lr=0.1)
    params["w"] = np.zeros(3)
    with pytest.raises(InvalidValueError, match=r"params\['w'\] was replaced"):
        opt.step({"w": np.ones(3)})
    params["w"] = opt.param_groups[0]["params"][0]
    params["extra"] = np.ones(2)
    with pytest.raises(InvalidValueError, match=r"params\['extra'\] was replaced \(or added"):
        opt.step({"w": np.ones(3)})
    del params["extra"]
    opt.step({"w": np.ones(3)})
    np.testing.assert_array_equal(params["w"], 0.9)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_param_groups_of_pytrees_take_a_list_of_trees_or_the_flat_list(name):
    cls, hyper = optim.OPTIMIZERS[name], CONFIGS[name]
    t1, t2 = tree_start(np.float64), {"x": np.linspace(-1, 1, 4)}
    u1, u2 = tree_start(np.float64), {"x": np.linspace(-1, 1, 4)}
    groups = lambda a, b: [{"params": a}, {"params": b, "lr": hyper["lr"] / 2}]  # noqa: E731
    opt, twin = cls(groups(t1, t2), **hyper), cls(groups(u1, u2), **hyper)
    for _ in range(3):
        opt.step([tree_grads(t1), tree_grads(t2)])
        twin.step([grad_of(p) for p in adcore.tree.leaves([u1, u2])])
    assert all(
        np.array_equal(p, q) for p, q in zip(adcore.tree.leaves([t1, t2]), adcore.tree.leaves([u1, u2]))
    )
    assert [g["params"] for g in opt.state_dict()["param_groups"]] == [[0, 1, 2, 3, 4], [5]]
    with pytest.raises(InvalidValueError, match=r"grads\[1\]\['x'\] is missing"):
        opt.step([tree_grads(t1), {"y": np.ones(4)}])


def test_the_pytree_state_dict_is_torchs_layout_and_loads_into_the_list_form():
    tree, flat = tree_start(np.float64), adcore.tree.leaves(tree_start(np.float64))
    opt = optim.Adam(tree, lr=0.01, amsgrad=True)
    opt.step(tree_grads(tree))
    saved = opt.state_dict()
    assert list(saved) == ["state", "param_groups"] and saved["param_groups"][0]["params"] == [0, 1, 2, 3, 4]
    assert list(saved["state"][0]) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    twin = optim.Adam(flat, lr=0.01, amsgrad=True)
    np.copyto(flat[0], tree["enc"][0].w)
    for p, q in zip(flat, adcore.tree.leaves(tree)):
        np.copyto(p, q)
    twin.load_state_dict(saved)
    opt.step(tree_grads(tree))
    twin.step([grad_of(p) for p in flat])
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(tree), flat))


def test_the_pytree_state_dict_loads_into_torch():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the comparison with torch is skipped"
    )
    tree = tree_start(np.float64)
    opt = optim.AdamW(tree, lr=0.01)
    opt.step(tree_grads(tree))
    tparams = [torch.nn.Parameter(torch.tensor(p)) for p in adcore.tree.leaves(tree)]
    topt = torch.optim.AdamW(tparams, lr=0.01)
    topt.load_state_dict(
        {
            "state": {
                i: {k: torch.tensor(v) for k, v in s.items()} for i, s in opt.state_dict()["state"].items()
            },
            "param_groups": opt.state_dict()["param_groups"],
        }
    )
    for p, g in zip(tparams, adcore.tree.leaves(tree_grads(tree))):
        p.grad = torch.tensor(g)
    topt.step()
    opt.step(tree_grads(tree))
    for p, q in zip(adcore.tree.leaves(tree), tparams):
        np.testing.assert_allclose(p, q.detach().numpy(), rtol=1e-12, atol=1e-15)


# ----------------------------------------------------------------------------- errors
def wrong_grads():
    good = tree_grads(tree_start(np.float64))
    missing = {**good, "head": good["head"][:1]}
    extra = {**good, "more": np.ones(2)}
    tuple_for_list = {**good, "enc": tuple(good["enc"])}
    int_leaf = {**good, "head": (good["head"][0].astype(np.int64), good["head"][1])}
    number_leaf = {**good, "head": (good["head"][0], 1.0)}
    shape = {**good, "head": (np.ones(3), good["head"][1])}
    return [
        ("missing", missing, InvalidValueError, r"grads\['head'\]\[1\] is missing"),
        ("extra", extra, InvalidValueError, r"grads\['more'\] is a leaf where the params have none"),
        ("containers", tuple_for_list, InvalidValueError, r"other containers"),
        ("int", int_leaf, InvalidValueError, r"grads\['head'\]\[0\]\) has shape \(2,\) and dtype int64"),
        ("number", number_leaf, InvalidInputError, r"grads\['head'\]\[1\]\) is a float, not a NumPy array"),
        ("shape", shape, InvalidValueError, r"params\['head'\]\[0\]\) has shape \(2,\)"),
        (
            "generator",
            (g for g in [1]),
            InvalidInputError,
            r"or a pytree of the params' structure, got generator",
        ),
        ("dict", {"enc": good["enc"]}, InvalidValueError, r"grads\['head'\]\[0\] is missing"),
    ]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_wrong_gradient_tree_raises_naming_the_path_and_changes_nothing(name):
    cls, hyper = optim.OPTIMIZERS[name], CONFIGS[name]
    tree, twin_tree = tree_start(np.float64), tree_start(np.float64)
    opt, twin = cls(tree, **hyper), cls(twin_tree, **hyper)
    opt.step(tree_grads(tree))
    twin.step(tree_grads(twin_tree))
    for what, grads, error, pattern in wrong_grads():
        values, state = [p.copy() for p in adcore.tree.leaves(tree)], opt.state_dict()
        with pytest.raises(error) as raised:
            opt.step(grads)
        assert isinstance(raised.value, AdcoreError) and f"{cls.__name__}.step" in str(raised.value)
        assert re.search(pattern, str(raised.value)), (what, str(raised.value))
        assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(tree), values)), what
        assert state_arrays_equal(opt.state_dict(), state), what
    opt.step(tree_grads(tree))  # the next good step is the one the twin takes
    twin.step(tree_grads(twin_tree))
    assert all(np.array_equal(p, q) for p, q in zip(adcore.tree.leaves(tree), adcore.tree.leaves(twin_tree)))


def bad_trees():
    frozen = np.ones(3)
    frozen.flags.writeable = False
    shared = np.ones(4)
    return [
        (
            {"a": np.ones(2), "b": [np.ones(3, np.int64)]},
            InvalidInputError,
            r"parameter 1 \(params\['b'\]\[0\]\) has dtype int64",
        ),
        (
            {"a": np.ones(2), "b": Layer(np.ones(2), 0.5)},
            InvalidInputError,
            r"parameter 2 \(params\['b'\]\.b\) is a float",
        ),
        (
            {"a": np.ones((4, 4))[:, ::2]},
            InvalidValueError,
            r"parameter 0 \(params\['a'\]\) is not C-contiguous",
        ),
        (
            {"a": np.ones(2), "z": (frozen,)},
            InvalidValueError,
            r"parameter 1 \(params\['z'\]\[0\]\) is read-only",
        ),
        (
            {"a": shared, "b": {"c": shared[1:]}},
            InvalidValueError,
            r"params\['a'\]\) and parameter 1 \(params\['b'\]\['c'\]\) share memory",
        ),
        ({"a": np.ones(2), "s": "text"}, InvalidInputError, r"params\['s'\]\) is a str"),
        ({"params": [np.ones(2)], "lr": 0.1}, InvalidInputError, r"one param group goes in a list"),
        ([{"params": [np.ones(2)]}, np.ones(2)], InvalidInputError, r"mixes param group dicts"),
        ({}, InvalidValueError, r"empty"),
        ({"a": None}, InvalidValueError, r"empty"),
        (np.ones(3), InvalidInputError, r"pytree of arrays"),
        (((n, p) for n, p in [("w", np.ones(2))]), InvalidInputError, r"named_parameters\(\)\); pass model"),
    ]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_an_unusable_pytree_of_parameters_raises_naming_the_leaf(name):
    cls = optim.OPTIMIZERS[name]
    for params, error, pattern in bad_trees():
        with pytest.raises(error) as raised:
            cls(params)
        assert cls.__name__ in str(raised.value) and re.search(pattern, str(raised.value)), str(raised.value)
    with pytest.raises(InvalidInputError, match=r"param_groups\[1\]\['params'\]\['b'\]\) has dtype int64"):
        cls([{"params": {"a": np.ones(2)}}, {"params": {"b": np.ones(2, np.int64)}}])


def test_add_param_group_takes_a_pytree_and_step_then_takes_a_list_of_trees():
    tree, extra = {"w": np.ones(3)}, {"v": [np.ones(2)]}
    opt = optim.SGD(tree, lr=0.1)
    opt.add_param_group({"params": extra, "lr": 0.5})
    opt.step([{"w": np.ones(3)}, {"v": [np.ones(2)]}])
    np.testing.assert_array_equal(tree["w"], 0.9)
    np.testing.assert_array_equal(extra["v"][0], 0.5)
    with pytest.raises(InvalidInputError, match=r"param_groups\[2\]\['params'\]\['b'\]\) has dtype int64"):
        opt.add_param_group({"params": {"b": np.ones(2, np.int64)}})
    assert len(opt.param_groups) == 2


def test_tied_weights_twice_in_a_tree_are_refused_not_stepped_twice():
    w = np.ones(3)
    with pytest.raises(
        InvalidValueError, match=r"params\['embed'\]\) and parameter 1 \(params\['out'\]\) share"
    ):
        optim.Adam({"embed": w, "out": w})


# ----------------------------------------------------------------------------- adcore_nn modules
def nn_module():
    """adcore_nn's Module and Parameter, or a skip while adcore_nn.module is not in this tree."""
    nn = pytest.importorskip("adcore_nn.module", reason="adcore_nn.module (issue 36) is not in this tree yet")
    return nn.Module, nn.Parameter


def tiny_model(dtype):
    Module, Parameter = nn_module()

    class Affine(Module):
        def __init__(self, n_in, n_out, bias=True, seed=0):
            super().__init__()
            rng = np.random.default_rng(seed)
            self.weight = Parameter(rng.uniform(-1, 1, (n_out, n_in)).astype(dtype))
            self.bias = Parameter(rng.uniform(-1, 1, n_out).astype(dtype)) if bias else None

        def forward(self, x):
            y = x @ anp.transpose(self.weight)
            return y if self.bias is None else y + self.bias

    class MLP(Module):
        def __init__(self):
            super().__init__()
            self.fc1 = Affine(3, 5, seed=1)
            self.fc2 = Affine(5, 2, bias=False, seed=2)

        def forward(self, x):
            return self.fc2(anp.tanh(self.fc1(x)))

    return MLP()


def mse(model, x, y):
    return anp.mean((model(x) - y) ** 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_module_and_its_parameters_take_the_list_forms_steps_bit_for_bit(name, dtype):
    cls, hyper = optim.OPTIMIZERS[name], CONFIGS[name]
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((8, 3)).astype(dtype), rng.standard_normal((8, 2)).astype(dtype)
    models = [tiny_model(dtype) for _ in range(3)]
    weight = models[0].fc1.weight
    opts = [
        cls(models[0], **hyper),
        cls(models[1].parameters(), **hyper),
        cls(list(models[2].parameters()), **hyper),
    ]
    for _ in range(4):
        for model, opt in zip(models, opts):
            g = adcore.grad(mse)(model, x, y)  # a model-shaped gradient
            assert type(g) is type(model) and g.fc2.bias is None
            opt.step(g if opt is opts[0] else adcore.tree.leaves(g))
    assert models[0].fc1.weight is weight  # updated in place
    for leaves in zip(*(list(m.parameters()) for m in models)):
        assert leaves[0].dtype == dtype and all(np.array_equal(leaves[0], p) for p in leaves[1:])
    assert not np.array_equal(weight, tiny_model(dtype).fc1.weight)
    assert state_arrays_equal(opts[0].state_dict(), opts[2].state_dict())


def test_a_module_whose_parameter_is_replaced_or_whose_grads_are_misshapen_is_refused():
    model = tiny_model(np.float64)
    opt = optim.SGD(model, lr=0.1)
    x, y = np.ones((2, 3)), np.zeros((2, 2))
    g = adcore.grad(mse)(model, x, y)
    with pytest.raises(InvalidValueError, match=r"grads\.fc1\.weight is missing|grads.*other containers"):
        opt.step({"fc1": g.fc1.weight})
    kept = model.fc1.weight
    model.fc1.weight = kept.copy()  # a new array: the optimizer would update the old one
    with pytest.raises(InvalidValueError, match=r"params\.fc1\.weight was replaced"):
        opt.step(g)
    model.fc1.weight = kept
    opt.step(g)
    np.testing.assert_array_equal(model.fc1.weight, tiny_model(np.float64).fc1.weight - 0.1 * g.fc1.weight)
