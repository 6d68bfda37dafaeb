"""adcore_nn's full backward hooks against torch's own, same weights, same hooks: what they receive,
what a replacement does to the inputs' and parameters' gradients, the order (skipped, saying so,
where torch is not installed; test_backward_hooks.py checks the same by hand everywhere)."""

from __future__ import annotations

import warnings

import adcore_nn
import numpy as np
import pytest
from adcore_nn import Module, Parameter

import adcore
import adcore.numpy as anp

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the comparisons with its hooks are skipped"
)

RNG = np.random.default_rng(598)


class Affine(Module):
    def __init__(self, weight: np.ndarray, bias: np.ndarray) -> None:
        super().__init__()
        self.weight = Parameter(weight.copy())
        self.bias = Parameter(bias.copy())

    def forward(self, x):
        return x @ self.weight + self.bias


class Tanh(Module):
    def forward(self, x):
        return anp.tanh(x)


class Net(Module):
    def __init__(self, w1, b1, w2, b2) -> None:
        super().__init__()
        self.fc1 = Affine(w1, b1)
        self.act = Tanh()
        self.fc2 = Affine(w2, b2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MulAdd(Module):
    def forward(self, a, b, c):
        return a * b + c


class TorchMulAdd(torch.nn.Module):
    def forward(self, a, b, c):
        return a * b + c


WEIGHTS = (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(4, 2)), RNG.normal(size=2))
X = RNG.normal(size=(5, 3))


def torch_net():
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.from_numpy(WEIGHTS[0].T))
        net[0].bias.copy_(torch.from_numpy(WEIGHTS[1]))
        net[2].weight.copy_(torch.from_numpy(WEIGHTS[2].T))
        net[2].bias.copy_(torch.from_numpy(WEIGHTS[3]))
    return net


def both(register):
    """Our gradients and torch's for sum(net(x)**2), with `register(first, last)` called on each
    model's two Affine/Linear layers: (ours, torch's), each a dict of arrays."""
    ours = Net(*WEIGHTS)
    register(ours.fc1, ours.fc2)
    g_net, g_x = adcore.grad(lambda m, x: anp.sum(m(x) ** 2), argnums=(0, 1))(ours, X)
    theirs = torch_net()
    register(theirs[0], theirs[2])
    x = torch.from_numpy(X.copy()).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "no inputs require gradients" notice
        (theirs(x) ** 2).sum().backward()
    mine = {
        "fc1.weight": g_net.fc1.weight,
        "fc1.bias": g_net.fc1.bias,
        "fc2.weight": g_net.fc2.weight,
        "fc2.bias": g_net.fc2.bias,
        "x": g_x,
    }
    torch_grads = {
        "fc1.weight": theirs[0].weight.grad.numpy().T,
        "fc1.bias": theirs[0].bias.grad.numpy(),
        "fc2.weight": theirs[2].weight.grad.numpy().T,
        "fc2.bias": theirs[2].bias.grad.numpy(),
        "x": x.grad.numpy(),
    }
    return mine, torch_grads


def numpy_of(values):
    return tuple(
        None if v is None else np.asarray(v.detach().numpy() if hasattr(v, "detach") else v) for v in values
    )


def assert_same(mine, theirs):
    assert mine.keys() == theirs.keys()
    for name in mine:
        assert np.allclose(mine[name], theirs[name], rtol=1e-12, atol=1e-12), name


def test_hooks_see_what_torchs_see():
    seen = {"ours": [], "torch": []}

    def register(first, last):
        key = "torch" if isinstance(first, torch.nn.Module) else "ours"
        last.register_full_backward_pre_hook(lambda m, go: seen[key].append(("pre", numpy_of(go))))
        for layer in (first, last):
            layer.register_full_backward_hook(
                lambda m, gi, go: seen[key].append(("hook", numpy_of(gi), numpy_of(go)))
            )

    assert_same(*both(register))
    assert [s[0] for s in seen["ours"]] == [s[0] for s in seen["torch"]] == ["pre", "hook", "hook"]
    for mine, theirs in zip(seen["ours"], seen["torch"]):
        for a, b in zip(mine[1:], theirs[1:]):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                assert np.allclose(u, v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "hooks",
    [
        "pre-hook zeros grad_output",
        "pre-hook triples grad_output",
        "hook doubles grad_input",
        "hook on the first layer doubles grad_input",
    ],
)
def test_replacements_change_the_gradients_as_torchs(hooks):
    def register(first, last):
        if hooks == "pre-hook zeros grad_output":
            last.register_full_backward_pre_hook(lambda m, go: tuple(g * 0 for g in go))
        elif hooks == "pre-hook triples grad_output":
            last.register_full_backward_pre_hook(lambda m, go: tuple(g * 3 for g in go))
        elif hooks == "hook doubles grad_input":
            last.register_full_backward_hook(lambda m, gi, go: tuple(g * 2 for g in gi))
        else:
            first.register_full_backward_hook(lambda m, gi, go: tuple(g * 2 for g in gi))

    assert_same(*both(register))


def test_grad_input_of_three_inputs_where_the_last_op_takes_one_pytorch_598():
    a, b, c = RNG.normal(size=(3, 4))
    ours, theirs = [], []
    module = MulAdd()
    module.register_full_backward_hook(lambda m, gi, go: ours.append(numpy_of(gi)))
    adcore.grad(lambda a, b, c: anp.sum(module(a, b, c) ** 2), argnums=(0, 1, 2))(a, b, c)
    torch_module = TorchMulAdd()
    torch_module.register_full_backward_hook(lambda m, gi, go: theirs.append(numpy_of(gi)))
    ta, tb, tc = (torch.from_numpy(v.copy()).requires_grad_() for v in (a, b, c))
    (torch_module(ta, tb, tc) ** 2).sum().backward()
    (mine,), (torchs,) = ours, theirs
    out = a * b + c
    assert len(mine) == len(torchs) == 3
    for u, v, w in zip(mine, torchs, (2 * out * b, 2 * out * a, 2 * out)):
        assert np.allclose(u, v) and np.allclose(u, w)


def test_an_input_without_gradient_is_none_as_in_torch():
    ours, theirs = [], []

    def register(first, last):
        seen = theirs if isinstance(first, torch.nn.Module) else ours
        first.register_full_backward_hook(lambda m, gi, go: seen.append(gi))

    module = Net(*WEIGHTS)
    register(module.fc1, module.fc2)
    adcore.grad(lambda m: anp.sum(m(X) ** 2))(module)
    net = torch_net()
    register(net[0], net[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (net(torch.from_numpy(X)) ** 2).sum().backward()
    assert ours == theirs == [(None,)]


def test_the_order_of_global_module_and_prepended_hooks_is_torchs():
    orders = {}
    for key, register_global in (
        (
            "ours",
            (adcore_nn.register_module_full_backward_pre_hook, adcore_nn.register_module_full_backward_hook),
        ),
        (
            "torch",
            (
                torch.nn.modules.module.register_module_full_backward_pre_hook,
                torch.nn.modules.module.register_module_full_backward_hook,
            ),
        ),
    ):
        order = orders[key] = []
        handles = [
            register_global[0](lambda m, go, order=order: order.append("global pre")),
            register_global[1](lambda m, gi, go, order=order: order.append("global hook")),
        ]

        def register(first, last, order=order):
            last.register_full_backward_hook(lambda m, gi, go: order.append("hook 1"))
            last.register_full_backward_hook(lambda m, gi, go: order.append("hook 0"), prepend=True)
            last.register_full_backward_pre_hook(lambda m, go: order.append("pre 1"))
            last.register_full_backward_pre_hook(lambda m, go: order.append("pre 0"), prepend=True)

        try:
            if key == "ours":
                module = Net(*WEIGHTS)
                register(module.fc1, module.fc2)
                adcore.grad(lambda x, module=module: anp.sum(module(x) ** 2))(X)
            else:
                net = torch_net()
                register(net[0], net[2])
                (net(torch.from_numpy(X).requires_grad_()) ** 2).sum().backward()
        finally:
            for handle in handles:
                handle.remove()
    # torch's Sequential and our Net are both hooked (global hooks) around the same three layers
    assert orders["ours"] == orders["torch"]
    assert orders["ours"][:5] == ["global pre", "global pre", "pre 0", "pre 1", "global hook"]


def test_a_forward_hook_replacing_the_output_is_inside_the_hooked_call_as_in_torch():
    ours, theirs = [], []
    layer = Affine(WEIGHTS[0], WEIGHTS[1])
    layer.register_forward_hook(lambda m, args, out: out * 3)
    layer.register_full_backward_hook(lambda m, gi, go: ours.append(numpy_of(gi) + numpy_of(go)))
    g_x = adcore.grad(lambda x: anp.sum(layer(x) ** 2))(X)
    linear = torch_net()[0]
    linear.register_forward_hook(lambda m, args, out: out * 3)
    linear.register_full_backward_hook(lambda m, gi, go: theirs.append(numpy_of(gi) + numpy_of(go)))
    x = torch.from_numpy(X.copy()).requires_grad_()
    (linear(x) ** 2).sum().backward()
    (mine,), (torchs,) = ours, theirs
    for u, v in zip(mine, torchs):
        assert np.allclose(u, v, rtol=1e-12, atol=1e-12)
    assert np.allclose(g_x, x.grad.numpy())
