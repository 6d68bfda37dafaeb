"""A Module is a pytree of its parameters: model-shaped gradients on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import Module, Parameter, functional_call

import adcore
import adcore.numpy as anp
from adcore.conformance import abilities
from adcore.errors import InvalidValueError

X = np.linspace(-1.0, 1.0, 10).reshape(5, 2)
Y = np.array([0.3, -0.2, 0.5, 0.1, -0.4])


class Layer(Module):
    def __init__(self, n_in: int, n_out: int, seed: int) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.weight = Parameter(rng.standard_normal((n_out, n_in)))
        self.bias = Parameter(rng.standard_normal(n_out))

    def forward(self, x):
        return anp.matmul(x, anp.transpose(self.weight)) + self.bias


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = Layer(2, 3, seed=1)
        self.out = Layer(3, 1, seed=2)
        self.register_buffer("shift", np.array(0.25))

    def forward(self, x):
        return self.out(anp.tanh(self.hidden(x)))[:, 0] + self.shift


def loss(model, x, y):
    return anp.sum((model(x) - y) ** 2)


def loss_of_arrays(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1.T + b1)
    return np.sum(((h @ w2.T + b2)[:, 0] + 0.25 - y) ** 2)


def analytic(net: Net) -> dict:
    """The gradient of `loss` by hand (backpropagation written out)."""
    w1, b1, w2, b2 = net.hidden.weight, net.hidden.bias, net.out.weight, net.out.bias
    h = np.tanh(X @ w1.T + b1)
    r = 2 * ((h @ w2.T + b2)[:, 0] + 0.25 - Y)
    dh = np.outer(r, w2[0]) * (1 - h**2)
    return {
        "hidden.weight": dh.T @ X,
        "hidden.bias": dh.sum(0),
        "out.weight": (r @ h)[None, :],
        "out.bias": np.array([r.sum()]),
    }


def test_flatten_and_unflatten_round_trip_with_paths():
    net = Net()
    leaves, treedef = adcore.tree.flatten(net)
    assert [leaf is p for leaf, p in zip(leaves, net.parameters(), strict=True)] == [True] * 4
    assert adcore.tree.paths(treedef) == [".hidden.weight", ".hidden.bias", ".out.weight", ".out.bias"]
    rebuilt = adcore.tree.unflatten(treedef, [leaf * 2 for leaf in leaves])
    assert type(rebuilt) is Net and rebuilt.shift is net.shift  # buffers shared
    np.testing.assert_array_equal(rebuilt.out.bias, net.out.bias * 2)
    assert adcore.tree.structure(rebuilt) == treedef  # a gradient has the model's structure


@pytest.mark.parametrize("backend", abilities.columns(adcore.backends()))
def test_grad_of_a_loss_of_a_model_is_model_shaped_on_every_backend(backend):
    name, _, variant = backend.partition("/")
    options = {"mode": variant} if variant else {}
    if name == "sparsity":
        pytest.skip("sparsity's Jacobians are dependency patterns, not derivatives: checked below")
    net = Net()
    g = adcore.grad(loss, backend=name, **options)(net, X, Y)
    assert type(g) is Net
    rtol = 1e-6 if name == "numeric" else 1e-10
    for path, want in analytic(net).items():
        got = g.get_parameter(path)
        assert got is not net.get_parameter(path)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-9, err_msg=f"{backend}: {path}")


def test_a_sparsity_pattern_of_a_model_is_model_shaped():
    if "sparsity" not in adcore.backends():
        pytest.skip("adcore-sparsity is not installed")
    g = adcore.grad(loss, backend="sparsity")(Net(), X, Y)
    assert type(g) is Net and all(np.all(p == 1) for p in g.parameters())


def test_the_gradient_equals_the_network_written_as_a_function_of_arrays():
    net = Net()
    g = adcore.grad(loss)(net, X, Y)
    want = adcore.grad(loss_of_arrays, argnums=(0, 1, 2, 3))(*net.parameters(), X, Y)
    for got, w in zip(g.parameters(), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-13)


def test_writing_into_the_gradient_does_not_change_the_model():
    net = Net()
    g = adcore.grad(loss)(net, X, Y)
    before = net.hidden.weight.copy()
    g.hidden.weight[...] = 0
    np.testing.assert_array_equal(net.hidden.weight, before)


def test_argnums_has_aux_value_and_grad_hessian_and_vmap_over_a_model():
    net = Net()
    g_net, g_x = adcore.grad(loss, argnums=(0, 1))(net, X, Y)
    assert type(g_net) is Net and g_x.shape == X.shape
    (value, aux), g = adcore.value_and_grad(lambda m: (loss(m, X, Y), m(X)), has_aux=True)(net)
    assert value == pytest.approx(loss_of_arrays(*net.parameters(), X, Y), rel=1e-14)
    np.testing.assert_array_equal(aux, net(X))
    h = adcore.hessian(lambda m: loss(m, X, Y))(net)
    assert h.out.bias.out.bias.shape == (1, 1)  # a model of models
    np.testing.assert_allclose(h.out.bias.out.bias, [[2 * len(Y)]], rtol=1e-12)
    per_example = adcore.vmap(adcore.grad(loss), in_axes=(None, 0, 0))(net, X[:, None, :], Y[:, None])
    np.testing.assert_allclose(per_example.out.bias.sum(0), g.out.bias, rtol=1e-12)


class Scaled(Module):
    """A forward that reads non-leaf state: the training flag and a plain attribute."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.w = Parameter(np.ones(2))
        self.factor = factor

    def forward(self, x):
        return self.w * x * (self.factor if self.training else 1.0)


def test_a_cached_derivative_runs_each_model_with_its_own_current_state():
    # adcore caches f's flat form by the arguments' structure and rebuilds modules from the cached
    # skeleton: a second model, or the model after eval(), must not run with the first one's state
    g = adcore.grad(lambda m: anp.sum(m(np.ones(2))))
    np.testing.assert_array_equal(g(Scaled(2.0)).w, [2.0, 2.0])
    np.testing.assert_array_equal(g(Scaled(5.0)).w, [5.0, 5.0])
    model = Scaled(3.0)
    copy = adcore.tree.map(lambda p: p, model)  # a rebuilt copy (as a functional update makes)
    np.testing.assert_array_equal(g(copy).w, [3.0, 3.0])
    model.eval()
    np.testing.assert_array_equal(g(model).w, [1.0, 1.0])
    model.train()
    model.factor = 7.0
    np.testing.assert_array_equal(g(model).w, [7.0, 7.0])


def test_eval_inside_a_derivative_is_refused_not_lost_and_the_next_call_works():
    # the derivative calls a rebuilt copy: eval() there would leave the user's model in training
    # mode without a word (torch's model.eval() inside a function changes the model)
    net = Net()

    def evaluated(m, x, y):
        m.eval()
        return loss(m, x, y)

    with pytest.raises(InvalidValueError, match=r"Net\.eval\(\) inside a derivative"):
        adcore.grad(evaluated)(net, X, Y)
    assert net.training
    keeps_mode = adcore.grad(lambda m, x, y: loss(m.train(), x, y))(net, X, Y)  # no change: allowed
    np.testing.assert_allclose(keeps_mode.out.bias, analytic(net)["out.bias"], rtol=1e-10)
    net.eval()
    np.testing.assert_allclose(
        adcore.grad(evaluated)(net, X, Y).out.bias, analytic(net)["out.bias"], rtol=1e-10
    )
    assert not net.training


class Counting(Module):
    """Keeps a running sum of its weight in a buffer, updated in forward."""

    def __init__(self, concrete: bool) -> None:
        super().__init__()
        self.w = Parameter(np.ones(2))
        self.register_buffer("total", np.zeros(2))
        self.concrete = concrete

    def forward(self, x):
        new = self.total + self.w
        self.total = adcore.concrete(new) if self.concrete else new
        return anp.sum(self.w * x)


def test_a_traced_value_assigned_to_a_buffer_is_refused_not_leaked_into_the_model():
    model = Counting(concrete=False)
    with pytest.raises(InvalidValueError, match="buffer 'total' was assigned a traced value"):
        adcore.grad(lambda m: m(np.full(2, 3.0)))(model)
    assert type(model.total) is np.ndarray
    np.testing.assert_array_equal(model.total, [0.0, 0.0])
    model.concrete = True
    np.testing.assert_array_equal(adcore.grad(lambda m: m(np.full(2, 3.0)))(model).w, [3.0, 3.0])
    assert type(model.total) is np.ndarray
    np.testing.assert_array_equal(model.total, [1.0, 1.0])
    # a buffer passed to functional_call is the copy's own: a traced update of it stays allowed
    model.concrete = False
    g = adcore.grad(lambda t: anp.sum(functional_call(model, {"total": t}, (np.ones(2),)) + t))(np.zeros(2))
    np.testing.assert_array_equal(g, [1.0, 1.0])
    np.testing.assert_array_equal(model.total, [1.0, 1.0])


def test_a_model_and_its_gradient_and_copies_have_one_structure_another_model_not():
    net = Net()
    g = adcore.grad(loss)(net, X, Y)
    copy = adcore.tree.map(lambda p, d: p - 0.1 * d, net, g)
    assert adcore.tree.structure(g) == adcore.tree.structure(net) == adcore.tree.structure(copy)
    assert adcore.tree.structure(Net()) != adcore.tree.structure(net)


def test_jacobian_jvp_vjp_and_vmap_over_stacked_models():
    net = Net()
    jac = adcore.jacobian(lambda m: m(X))(net)
    assert type(jac) is Net and jac.hidden.weight.shape == (len(X), 3, 2)
    np.testing.assert_allclose(jac.out.bias[:, 0], np.ones(len(X)), rtol=1e-14)  # d out / d its bias
    g = adcore.grad(loss)(net, X, Y)
    ones = adcore.tree.map(np.ones_like, net)
    _, directional = adcore.jvp(lambda m: loss(m, X, Y), (net,), (ones,))
    assert directional == pytest.approx(sum(np.sum(leaf) for leaf in adcore.tree.leaves(g)), rel=1e-12)
    _, pullback = adcore.vjp(lambda m: loss(m, X, Y), net)
    (pulled,) = pullback(np.array(1.0))
    np.testing.assert_allclose(pulled.hidden.weight, g.hidden.weight, rtol=1e-14)
    # an ensemble: the same model with stacked parameters, one row per member
    doubled = adcore.tree.map(lambda p: 2 * p, net)
    stacked = adcore.tree.map(lambda a, b: np.stack([a, b]), net, doubled)
    outputs = adcore.vmap(lambda m: m(X))(stacked)
    np.testing.assert_allclose(outputs[0], net(X), rtol=1e-14)
    np.testing.assert_allclose(outputs[1], doubled(X), rtol=1e-14)


class Gain(Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(np.array([1.0, 2.0]))

    def forward(self, x):
        return self.w * x


class TiedGains(Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = Gain()
        self.b = self.a  # one submodule under two names: one parameter, torch's tied weights

    def forward(self, x):
        return self.b(anp.tanh(self.a(x)))


def test_tied_parameters_are_refused_as_a_pytree_and_a_parameter_dict_gives_torch_s_gradient():
    model, x = TiedGains(), np.array([0.5, -1.0])

    def loss_of(m):
        return anp.sum(m(x) ** 2)

    # as leaves, a.w and b.w would each get a partial gradient, not the array's one gradient
    with pytest.raises(InvalidValueError, match=r"TiedGains: parameters 'a.w' and 'b.w' are one array"):
        adcore.grad(loss_of)(model)
    with pytest.raises(InvalidValueError, match="tied weights"):
        adcore.tree.leaves(model)
    grads = adcore.grad(lambda p: loss_of_params(model, p, x))(dict(model.named_parameters()))
    assert list(grads) == ["a.w"]
    w = model.a.w  # by hand: L = sum((w * tanh(w x))^2), dL/dw = 2 y (tanh(wx) + w x (1 - tanh(wx)^2))
    t = np.tanh(w * x)
    np.testing.assert_allclose(grads["a.w"], 2 * w * t * (t + w * x * (1 - t**2)), rtol=1e-14)
    assert np.array_equal(model(x), functional_call(model, dict(model.named_parameters()), (x,)))


def loss_of_params(model, params, x):
    return anp.sum(functional_call(model, params, (x,)) ** 2)
