"""A module's full backward hooks (adcore_nn.backward_hooks): torch's signatures, order, replacement
and removal; grad_input is the gradient of the module's own inputs (pytorch#598); the parameters'
gradients stay right; checkpoint, hessian, vmap; every backend fires them or refuses, typed.
Hand-computed values throughout (torch's own hooks are compared in test_backward_hooks_torch.py)."""

from __future__ import annotations

import adcore_nn
import numpy as np
import pytest
from adcore_nn import Module, Parameter

import adcore
import adcore.numpy as anp

RNG = np.random.default_rng(36)


class Affine(Module):
    """x @ weight + bias, by hand (the layers are another helper's)."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = Parameter(RNG.normal(size=(n_in, n_out)))
        self.bias = Parameter(RNG.normal(size=n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class Tanh(Module):
    def forward(self, x):
        return anp.tanh(x)


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Affine(3, 4)
        self.act = Tanh()
        self.fc2 = Affine(4, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MulAdd(Module):
    """forward(a, b, c) = a * b + c: the last op takes one of the three inputs (pytorch#598)."""

    def forward(self, a, b, c):
        return a * b + c


X = RNG.normal(size=(5, 3))


def loss(model, x):
    return anp.sum(model(x) ** 2)


def by_hand(net, x):
    """The gradients of loss(net, x) and the cotangents at each layer, computed by hand."""
    h = x @ net.fc1.weight + net.fc1.bias
    a = np.tanh(h)
    out = a @ net.fc2.weight + net.fc2.bias
    g_out = 2 * out
    g_a = g_out @ net.fc2.weight.T
    g_h = g_a * (1 - a**2)
    return {
        "out": out,
        "g_out": g_out,
        "g_a": g_a,
        "g_h": g_h,
        "g_x": g_h @ net.fc1.weight.T,
        "fc2.weight": a.T @ g_out,
        "fc2.bias": g_out.sum(0),
        "fc1.weight": x.T @ g_h,
        "fc1.bias": g_h.sum(0),
    }


def grads(net, x=X, **options):
    g_net, g_x = adcore.grad(loss, argnums=(0, 1), **options)(net, x)
    return {
        "fc1.weight": g_net.fc1.weight,
        "fc1.bias": g_net.fc1.bias,
        "fc2.weight": g_net.fc2.weight,
        "fc2.bias": g_net.fc2.bias,
        "x": g_x,
    }


def test_hooks_receive_torchs_arguments_with_the_right_values():
    net = Net()
    seen = []
    net.fc2.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", m, go)))
    net.fc2.register_full_backward_hook(lambda m, gi, go: seen.append(("hook", m, gi, go)))
    got = grads(net)
    want = by_hand(net, X)
    assert [s[0] for s in seen] == ["pre", "hook"]
    _, module, grad_output = seen[0]
    assert isinstance(module, Affine)
    assert type(grad_output) is tuple and len(grad_output) == 1
    assert np.allclose(grad_output[0], want["g_out"])
    _, _, grad_input, grad_output = seen[1]
    assert type(grad_input) is tuple and len(grad_input) == 1
    assert np.allclose(grad_input[0], want["g_a"])  # the module's input, not its last op's (+ bias)
    assert np.allclose(grad_output[0], want["g_out"])
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        assert np.allclose(got[name], want[name])
    assert np.allclose(got["x"], want["g_x"])


def test_grad_input_is_the_gradient_of_the_modules_own_three_inputs_pytorch_598():
    module = MulAdd()
    seen = []
    module.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    a, b, c = RNG.normal(size=(3, 4))
    g = adcore.grad(lambda a, b, c: anp.sum(module(a, b, c) ** 2), argnums=(0, 1, 2))(a, b, c)
    out = a * b + c
    want = (2 * out * b, 2 * out * a, 2 * out)  # d/da, d/db, d/dc of sum((a*b + c)**2)
    ((grad_input, grad_output),) = seen
    assert len(grad_input) == 3  # torch's old hook gave the last op's two: (grad of a*b, grad of c)
    for got, expected in zip(grad_input, want):
        assert np.allclose(got, expected)
    assert np.allclose(grad_output[0], 2 * out)
    for got, expected in zip(g, want):
        assert np.allclose(got, expected)


def test_observing_hooks_leave_every_gradient_as_it_was():
    net = Net()
    before = grads(net)
    for module in net.modules():
        module.register_full_backward_pre_hook(lambda m, go: None)
        module.register_full_backward_hook(lambda m, gi, go: None)
    after = grads(net)
    for name, value in before.items():
        assert np.array_equal(after[name], value), name


def test_a_hook_doubling_grad_input_doubles_what_reaches_earlier_layers_only():
    net = Net()
    before = grads(net)
    net.fc2.register_full_backward_hook(lambda m, gi, go: tuple(2 * g for g in gi))
    after = grads(net)
    for name in ("fc1.weight", "fc1.bias", "x"):  # upstream of fc2's input: doubled
        assert np.allclose(after[name], 2 * before[name]), name
    for name in ("fc2.weight", "fc2.bias"):  # fc2's own parameters: computed before the hook
        assert np.allclose(after[name], before[name]), name


def test_a_pre_hook_replacing_grad_output_reaches_inputs_and_parameters_as_torchs():
    net = Net()
    before = grads(net)
    handle = net.fc2.register_full_backward_pre_hook(lambda m, go: tuple(np.zeros_like(g) for g in go))
    after = grads(net)
    for name, value in after.items():  # torch: the replaced grad_output flows through the module
        assert not np.any(value), name
    handle.remove()
    net.fc2.register_full_backward_pre_hook(lambda m, go: tuple(3 * g for g in go))
    tripled = grads(net)
    for name, value in before.items():
        assert np.allclose(tripled[name], 3 * value), name


def test_order_global_first_then_the_modules_prepend_and_removal():
    net = Net()
    order = []
    handles = [
        net.fc2.register_full_backward_hook(lambda m, gi, go: order.append("hook 1")),
        net.fc2.register_full_backward_hook(lambda m, gi, go: order.append("hook 2")),
        net.fc2.register_full_backward_hook(lambda m, gi, go: order.append("hook 0"), prepend=True),
        net.fc2.register_full_backward_pre_hook(lambda m, go: order.append("pre 1")),
        net.fc2.register_full_backward_pre_hook(lambda m, go: order.append("pre 0"), prepend=True),
    ]
    global_hook = adcore_nn.register_module_full_backward_hook(
        lambda m, gi, go: order.append(f"global hook {type(m).__name__}")
    )
    global_pre = adcore_nn.register_module_full_backward_pre_hook(
        lambda m, go: order.append(f"global pre {type(m).__name__}")
    )
    try:
        grads(net)
    finally:
        global_hook.remove()
        global_pre.remove()
    # torch's order: outer module first on the way back; per module the global pre-hooks, its own
    # pre-hooks, then (after the pullback through it) the global hooks and its own hooks
    assert order == [
        "global pre Net",
        "global pre Affine",
        "pre 0",
        "pre 1",
        "global hook Affine",
        "hook 0",
        "hook 1",
        "hook 2",
        "global pre Tanh",
        "global hook Tanh",
        "global pre Affine",
        "global hook Affine",
        "global hook Net",
    ]
    order.clear()
    grads(net)  # the global hooks are gone
    assert order == ["pre 0", "pre 1", "hook 0", "hook 1", "hook 2"]
    for handle in handles:
        handle.remove()
    order.clear()
    grads(net)
    assert order == []


def test_an_input_without_a_gradient_is_none_and_a_value_for_it_is_an_error():
    net = Net()
    seen = []
    net.fc1.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
    adcore.grad(lambda model: loss(model, X))(net)  # x is data: no gradient for it
    assert seen == [(None,)]
    net.fc1.register_full_backward_hook(lambda m, gi, go: (np.ones_like(X),))
    with pytest.raises(
        adcore.InvalidValueError, match=r"Affine.*<lambda>.*grad_input\[0\].*no gradient flows"
    ):
        adcore.grad(lambda model: loss(model, X))(net)


class Mixed(Module):
    """Positional arguments that are no float arrays, a keyword array, a pytree output."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = Parameter(RNG.normal(size=3))

    def forward(self, x, index, pair, *, shift):
        y = x * self.scale + shift
        return {"y": y[index], "both": (anp.sin(y), index)}


def test_positional_arguments_that_are_no_float_arrays_are_none_and_keyword_gradients_flow():
    module = Mixed()
    x, shift, pair = RNG.normal(size=3), RNG.normal(size=3), (RNG.normal(size=3), "label")

    def f(model, x, shift, first):
        out = module_call(model, x, (first, "label"), shift)
        return anp.sum(out["y"] ** 2) + anp.sum(out["both"][0]) + anp.sum(first)

    def module_call(model, x, pair, shift):
        return model(x, np.array([2, 0]), pair, shift=shift)

    before = adcore.grad(f, argnums=(0, 1, 2, 3))(module, x, shift, pair[0])
    seen = []
    module.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    after = adcore.grad(f, argnums=(0, 1, 2, 3))(module, x, shift, pair[0])
    assert np.allclose(after[0].scale, before[0].scale)
    for got, want in zip(after[1:], before[1:]):
        assert np.allclose(got, want)
    ((grad_input, grad_output),) = seen
    assert len(grad_input) == 3 and grad_input[1] is None and grad_input[2] is None
    y = x * module.scale + shift
    g_y = np.zeros(3)
    g_y[[2, 0]] = 2 * y[[2, 0]]
    g_y += np.cos(y)
    assert np.allclose(grad_input[0], g_y * module.scale)
    assert len(grad_output) == 3  # the output's leaves, in its pytree order: both[0], both[1], y
    assert np.allclose(grad_output[0], np.ones(3)) and grad_output[1] is None
    assert np.allclose(grad_output[2], 2 * y[[2, 0]])


BAD_HOOKS = {
    "not a tuple": (
        lambda m, gi, go: gi[0],
        adcore.InvalidOutputError,
        "ndarray; it returns None or a tuple of 1",
    ),
    "too few": (
        lambda m, gi, go: (),
        adcore.InvalidOutputError,
        "0 grad_input entries; the module's call has 1",
    ),
    "wrong shape": (lambda m, gi, go: (gi[0][:2],), adcore.InvalidValueError, r"shape \(2, 4\)"),
    "wrong dtype": (lambda m, gi, go: (gi[0].astype(np.float32),), adcore.InvalidValueError, "float32"),
    "not an array": (lambda m, gi, go: ([[0.0]],), adcore.InvalidOutputError, "list as grad_input"),
}


@pytest.mark.parametrize("case", sorted(BAD_HOOKS))
def test_a_wrong_replacement_is_a_typed_error_naming_module_and_hook_and_the_next_call_works(case):
    hook, error, message = BAD_HOOKS[case]
    net = Net()
    before = grads(net)

    def bad_hook(m, gi, go):
        return hook(m, gi, go)

    handle = net.fc2.register_full_backward_hook(bad_hook)
    with pytest.raises(error, match=f"module Affine: backward hook .*bad_hook returned.*{message}"):
        grads(net)
    handle.remove()
    after = grads(net)
    for name, value in before.items():
        assert np.array_equal(after[name], value)


def test_a_wrong_pre_hook_replacement_is_a_typed_error():
    net = Net()

    def shrinks(m, go):
        return (go[0][:1],)

    handle = net.fc2.register_full_backward_pre_hook(shrinks)
    with pytest.raises(
        adcore.InvalidValueError, match=r"module Affine: backward pre-hook .*shrinks.*grad_output\[0\]"
    ):
        grads(net)
    handle.remove()
    handle = net.fc2.register_full_backward_pre_hook(lambda m, go: go + go)
    with pytest.raises(
        adcore.InvalidOutputError, match="returned 2 grad_output entries; the module's call has 1"
    ):
        grads(net)
    handle.remove()
    assert np.allclose(grads(net)["x"], by_hand(net, X)["g_x"])


def test_a_plain_call_fires_nothing():
    net = Net()
    fired = []
    net.register_full_backward_hook(lambda m, gi, go: fired.append(1))
    assert np.allclose(net(X), by_hand(net, X)["out"])
    assert fired == []


def counting(net):
    fired = []
    for name, module in net.named_modules():
        module.register_full_backward_hook(lambda m, gi, go, name=name: fired.append(name))
    return fired


def test_under_checkpoint_the_hooks_fire_once_and_the_gradients_are_right():
    net = Net()
    want = by_hand(net, X)
    fired = counting(net)
    g_net, g_x = adcore.grad(
        lambda m, x: anp.sum(adcore.checkpoint(lambda m, x: m(x))(m, x) ** 2), argnums=(0, 1)
    )(net, X)
    assert sorted(fired) == sorted(["", "fc1", "act", "fc2"])
    assert np.allclose(g_x, want["g_x"]) and np.allclose(g_net.fc1.weight, want["fc1.weight"])


def test_under_hessian_the_hooks_fire_once_in_the_inner_reverse_sweep():
    net = Net()
    x = X[:2]
    plain = adcore.hessian(lambda x: loss(net, x))(x)
    fired = counting(net)
    hooked = adcore.hessian(lambda x: loss(net, x))(x)  # forward over reverse
    assert sorted(fired) == sorted(["", "fc1", "act", "fc2"])  # once each, on traced cotangents
    assert np.allclose(hooked, plain)
    net.fc1.register_full_backward_hook(lambda m, gi, go: tuple(2 * g for g in gi))
    doubled = adcore.hessian(lambda x: loss(net, x))(x)  # the hook is part of the gradient differentiated
    assert np.allclose(doubled, 2 * plain)


def test_under_vmap_of_grad_the_hooks_fire_once_on_the_batch():
    net = Net()
    xs = np.stack([X, 2 * X, -X])
    fired = counting(net)
    per_example = adcore.vmap(adcore.grad(lambda x: loss(net, x)))(xs)
    assert sorted(fired) == sorted(["", "fc1", "act", "fc2"])
    for x, g in zip(xs, per_example):
        assert np.allclose(g, by_hand(net, x)["g_x"])


def test_grad_of_vmap_is_a_typed_refusal():
    net = Net()
    net.register_full_backward_hook(lambda m, gi, go: None)
    xs = np.stack([X, 2 * X])
    with pytest.raises(
        adcore.UnsupportedByBackendError, match=r"module Net.*vmap inside a derivative.*vmap\(grad"
    ):
        adcore.grad(lambda xs: anp.sum(adcore.vmap(lambda x: loss(net, x))(xs)))(xs)
    assert np.allclose(adcore.grad(lambda x: loss(net, x))(X), by_hand(net, X)["g_x"])  # the next call works


def test_a_jacobian_by_pullbacks_and_vjp_fire_them():
    net = Net()
    fired = counting(net)
    out, pullback = adcore.vjp(lambda x: net(x), X)
    assert fired == []  # the forward alone
    (g_x,) = pullback(2 * out)
    assert np.allclose(g_x, by_hand(net, X)["g_x"]) and len(fired) == 4
    fired.clear()
    jac = adcore.jacobian(lambda x: net(x))(X[:1])
    assert jac.shape == (1, 2, 1, 3) and fired  # once per pullback, or once for a vmapped batch of them


def test_every_backend_fires_them_with_the_right_values_or_refuses_typed():
    outcome = {}
    for name in adcore.backends():
        backend = adcore.get_backend(name)
        for variant, options in (backend.variants or {None: {}}).items():
            label = name if variant is None else f"{name}/{variant}"
            net = Net()
            want = by_hand(net, X)
            seen = []
            net.fc2.register_full_backward_hook(lambda m, gi, go, seen=seen: seen.append(gi))
            try:
                got = grads(net, backend=name, **options)
            except adcore.UnsupportedByBackendError as e:
                message = str(e)
                assert "module Affine" in message and f"backend {label!r}" in message, label
                assert "backend='reverse'" in message and seen == [], label
                outcome[label] = "refused"
                continue
            assert len(seen) == 1 and np.allclose(seen[0][0], want["g_a"]), label
            for key in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
                assert np.allclose(got[key], want[key]), (label, key)
            assert np.allclose(got["x"], want["g_x"]), label
            outcome[label] = "fired"
    expected = {
        "reverse": "fired",
        "source/reverse": "fired",
        "source/forward": "refused",
        "forward": "refused",
        "numeric": "refused",
        "symbolic": "refused",
        "sparsity": "refused",
    }
    assert {k: v for k, v in outcome.items() if k in expected} == {
        k: v for k, v in expected.items() if k in outcome
    }
    assert outcome.get("reverse") == "fired"


@pytest.mark.parametrize(
    ("call", "backend"),
    [
        (lambda f, x: adcore.jvp(f, (x,), (np.ones_like(x),)), "forward"),
        (lambda f, x: adcore.grad(f, backend="forward")(x), "forward"),
        (lambda f, x: adcore.grad(f, backend="numeric")(x), "numeric"),
        (lambda f, x: adcore.grad(f, backend="symbolic")(x), "symbolic"),
        (lambda f, x: adcore.hessian(f, outer="reverse", inner="forward")(x), "forward"),
    ],
)
def test_where_no_vjp_runs_the_refusal_names_module_backend_and_the_way_out(call, backend):
    net = Net()
    net.fc1.register_full_backward_pre_hook(lambda m, go: None)
    with pytest.raises(adcore.UnsupportedByBackendError) as info:
        call(lambda x: loss(net, x), X[:1])
    message = str(info.value)
    assert "module Affine" in message and f"backend {backend!r}" in message and "backend='reverse'" in message


class Scaled(Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.weight = Parameter(np.ones(2))
        self.factor = factor

    def forward(self, x):
        return self.weight * x * self.factor


def test_two_models_of_one_architecture_keep_their_own_hooks_and_attributes():
    """adcore caches a function's flat form by its arguments' structure: a second model of the same
    architecture must not run with the first one's hooks or attributes (a silent wrong gradient)."""

    def total(model, x):
        return anp.sum(model(x))

    x = np.ones(2)
    tenfold, plain = Scaled(10.0), Scaled(1.0)
    assert np.allclose(adcore.grad(total)(tenfold, x).weight, 10.0)
    assert np.allclose(adcore.grad(total)(plain, x).weight, 1.0)
    fired = []
    tenfold.register_full_backward_hook(lambda m, gi, go: fired.append("tenfold"))
    plain.register_full_backward_hook(lambda m, gi, go: fired.append("plain"))
    adcore.grad(total)(tenfold, x)
    adcore.grad(total)(plain, x)
    assert fired == ["tenfold", "plain"]
    gradient = adcore.grad(total)(plain, x)
    assert adcore.tree.structure(gradient) == adcore.tree.structure(plain)  # a model's gradient is its shape


def test_hooks_may_not_write_into_their_arguments_and_the_next_call_works():
    """torch: a hook must not modify its arguments. A cotangent may be the array the backward pass
    hands on elsewhere, so a write in place would change another gradient: a typed error instead."""
    net = Net()
    want = by_hand(net, X)

    def doubles_in_place(m, gi, go):
        gi[0][...] *= 2

    handle = net.fc2.register_full_backward_hook(doubles_in_place)
    with pytest.raises(adcore.InvalidValueError, match="Affine: backward hook .*doubles_in_place wrote into"):
        grads(net)
    handle.remove()
    handle = net.fc2.register_full_backward_pre_hook(lambda m, go: go[0].fill(0.0))
    with pytest.raises(adcore.InvalidValueError, match="backward pre-hook .* must not modify its arguments"):
        grads(net)
    handle.remove()
    assert np.allclose(grads(net)["x"], want["g_x"])


def test_grad_output_is_of_what_the_call_returns_after_forward_hooks_as_torchs():
    layer = Affine(3, 2)
    seen = []
    layer.register_forward_hook(lambda m, args, out: out * 3)
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    value, g_x = adcore.value_and_grad(lambda x: anp.sum(layer(x) ** 2))(X)
    y = 3 * (X @ layer.weight + layer.bias)
    ((grad_input, grad_output),) = seen
    assert np.allclose(grad_output[0], 2 * y)  # the cotangent of the hooked output
    assert np.allclose(grad_input[0], 2 * y @ layer.weight.T * 3)  # through the forward hook's * 3
    assert np.allclose(g_x, grad_input[0]) and np.isclose(value, np.sum(y**2))


class Complex(Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = Parameter(RNG.normal(size=3))

    def forward(self, x):
        return anp.exp(1j * x * self.weight)


def test_a_complex_output_is_refused_not_passed_through_underived():
    module = Complex()
    before = adcore.grad(lambda m, x: anp.sum(anp.real(m(x))))(module, X[0])
    module.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(
        adcore.InvalidOutputError, match=r"module Complex .* complex array .*anp.real, anp.imag"
    ):
        adcore.grad(lambda m, x: anp.sum(anp.real(m(x))))(module, X[0])
    assert np.allclose(before.weight, -np.sin(X[0] * module.weight) * X[0])


def test_hooks_fire_under_functional_call_with_the_parameters_given():
    net = Net()
    params = dict(net.named_parameters())

    def f(p, x):
        return anp.sum(adcore_nn.functional_call(net, p, (x,)) ** 2)

    before = adcore.grad(f)(params, X)
    net.fc2.register_full_backward_hook(lambda m, gi, go: tuple(2 * g for g in gi))
    after = adcore.grad(f)(params, X)
    for name in ("fc1.weight", "fc1.bias"):
        assert np.allclose(after[name], 2 * before[name]), name
    for name in ("fc2.weight", "fc2.bias"):
        assert np.allclose(after[name], before[name]), name
