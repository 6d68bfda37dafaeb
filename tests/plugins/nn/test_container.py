"""adcore_nn.Sequential, ModuleList, ModuleDict: torch's methods, keys, and submodules in the pytree."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from adcore_nn.activation import ReLU, Tanh
from adcore_nn.container import ModuleDict, ModuleList, Sequential
from adcore_nn.linear import Linear
from adcore_nn.module import Module
from nn_layer_checks import assert_backends_agree, assert_matches_torch, torch_or_skip

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError


def lin(i, o, seed=0):
    return Linear(i, o, dtype=np.float64, generator=np.random.default_rng(seed))


def mlp():
    return Sequential(lin(3, 4, 0), ReLU(), lin(4, 2, 1))


def test_sequential_calls_in_order_and_keys_are_torchs():
    model = mlp()
    x = np.random.default_rng(5).standard_normal((2, 3))
    expected = model[2](model[1](model[0](x)))
    np.testing.assert_array_equal(model(x), expected)
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    named = Sequential(OrderedDict([("fc", lin(3, 4)), ("act", Tanh())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]
    assert named.fc is named[0]
    assert repr(Sequential(Linear(2, 3), ReLU())) == (
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n)"
    )


def test_sequential_indexing_slicing_len_iter_append_insert_delete():
    model = mlp()
    assert len(model) == 3 and [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear"]
    assert model[-1] is model[2]
    head = model[:2]
    assert isinstance(head, Sequential) and list(head.state_dict()) == ["0.weight", "0.bias"]
    assert head[0] is model[0]
    model.append(Tanh())
    assert len(model) == 4 and isinstance(model[3], Tanh)
    del model[1]
    assert [type(m).__name__ for m in model] == ["Linear", "Linear", "Tanh"]
    assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]  # renumbered
    model.insert(1, ReLU())
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear", "Tanh"]
    model[3] = ReLU()
    assert isinstance(model.pop(3), ReLU) and len(model) == 3
    assert len(model + Sequential(Tanh())) == 4 and len(model * 2) == 6
    model += Sequential(Tanh())
    assert len(model) == 4
    model.extend([ReLU()])
    assert len(model) == 5
    with pytest.raises(IndexError, match="index 5 is out of range"):
        model[5]
    with pytest.raises(InvalidInputError, match="Sequential: holds Modules only, got ufunc"):
        Sequential(np.tanh)
    with pytest.raises(InvalidValueError, match="supports only objects of Sequential class"):
        model + [ReLU()]
    assert len(model) == 5


def test_a_sequential_is_a_pytree_with_a_model_shaped_gradient_on_each_backend():
    model = mlp()
    x = np.random.default_rng(5).standard_normal((2, 3))
    g = adcore.grad(lambda m: anp.sum(m(x) ** 2))(model)
    assert isinstance(g, Sequential) and g[0].weight.shape == (4, 3) and g[2].bias.shape == (2,)
    assert list(dict(g.named_parameters())) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert_backends_agree(model, x, ("forward",))


def test_module_list_methods_and_keys():
    layers = ModuleList([lin(3, 3, i) for i in range(3)])
    assert len(layers) == 3 and list(layers.state_dict())[:2] == ["0.weight", "0.bias"]
    assert layers[-1] is layers[2]
    tail = layers[1:]
    assert isinstance(tail, ModuleList) and list(tail.state_dict()) == [
        "0.weight",
        "0.bias",
        "1.weight",
        "1.bias",
    ]
    layers.append(ReLU())
    layers.insert(0, Tanh())
    assert [type(m).__name__ for m in layers] == ["Tanh", "Linear", "Linear", "Linear", "ReLU"]
    del layers[0]
    assert list(layers.state_dict())[0] == "0.weight"
    layers[3] = Tanh()
    assert isinstance(layers.pop(-1), Tanh) and len(layers) == 3
    layers += [ReLU()]
    assert len(layers + ModuleList([Tanh()])) == 5
    layers.extend([Tanh()])
    assert len(layers) == 5
    with pytest.raises(InvalidInputError, match="extend should be called with an iterable"):
        layers.extend(3)
    with pytest.raises(IndexError):
        layers[7]
    assert repr(ModuleList([ReLU(), ReLU(), Tanh()])) == "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)"
    assert repr(ModuleList()) == "ModuleList()"


def test_module_dict_methods_and_keys():
    heads = ModuleDict({"cls": lin(4, 2), "reg": lin(4, 1)})
    assert list(heads) == ["cls", "reg"] and "cls" in heads and len(heads) == 2
    assert list(heads.state_dict()) == ["cls.weight", "cls.bias", "reg.weight", "reg.bias"]
    heads["act"] = ReLU()
    heads.update([("out", Tanh())])
    assert list(heads.keys()) == ["cls", "reg", "act", "out"]
    assert [k for k, _ in heads.items()] == list(heads) and len(list(heads.values())) == 4
    assert isinstance(heads.pop("act"), ReLU) and "act" not in heads
    with pytest.raises(InvalidValueError, match="has length 3; 2 is required"):
        heads.update([("a", ReLU(), 1)])
    with pytest.raises(InvalidInputError, match="ModuleDict: holds Modules only"):
        heads["x"] = 3
    heads.clear()
    assert len(heads) == 0
    assert repr(ModuleDict({"a": ReLU()})) == "ModuleDict(\n  (a): ReLU()\n)"


class Net(Module):
    def __init__(self):
        super().__init__()
        self.blocks = ModuleList([lin(3, 3, 0), lin(3, 3, 1)])
        self.heads = ModuleDict({"out": lin(3, 2, 2)})

    def forward(self, x):
        for block in self.blocks:
            x = anp.tanh(block(x))
        return self.heads["out"](x)


def test_containers_inside_a_module_are_in_the_pytree_and_state_dict():
    net = Net()
    assert list(net.state_dict()) == [
        "blocks.0.weight",
        "blocks.0.bias",
        "blocks.1.weight",
        "blocks.1.bias",
        "heads.out.weight",
        "heads.out.bias",
    ]
    x = np.random.default_rng(1).standard_normal((2, 3))
    g = adcore.grad(lambda m: anp.sum(m(x)))(net)
    assert g.blocks[1].weight.shape == (3, 3) and g.heads["out"].bias.shape == (2,)
    assert_backends_agree(net, x, ("forward",))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sequential_matches_torch(dtype):
    torch = torch_or_skip()
    model = Sequential(Linear(3, 5, dtype=dtype), ReLU(), Linear(5, 2, dtype=dtype), Tanh())
    torch_model = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2), torch.nn.Tanh()
    )
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(dtype)
    assert_matches_torch(model, torch_model, x)


def test_layers_compose_under_vmap_as_a_loop():
    model = Sequential(lin(3, 4), ReLU(), lin(4, 2, 1))
    x = np.random.default_rng(0).standard_normal((5, 3))
    np.testing.assert_allclose(adcore.vmap(model)(x), np.stack([model(v) for v in x]), rtol=1e-14)


def test_a_torch_state_dict_loads_and_gives_torchs_output():
    torch = torch_or_skip()
    torch.manual_seed(0)
    torch_model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    model = Sequential(lin(3, 5), Tanh(), lin(5, 2, 1))
    model.load_state_dict({k: v.numpy() for k, v in torch_model.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3))
    np.testing.assert_allclose(model(x), torch_model(torch.from_numpy(x)).detach().numpy(), rtol=1e-12)
