"""adcore_nn.Module: registration, the tree walks, train/eval, casts, state dicts with torch's keys."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from adcore_nn import Module, Parameter

import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError, UnsupportedFunctionError


class Affine(Module):
    def __init__(self, n_in: int, n_out: int, dtype=np.float64) -> None:
        super().__init__()
        self.weight = Parameter(np.arange(n_in * n_out, dtype=dtype).reshape(n_out, n_in) / 10)
        self.bias = Parameter(np.ones(n_out, dtype))
        self.register_buffer("calls", np.zeros((), np.int64))
        self.register_buffer("scratch", np.zeros(2), persistent=False)

    def forward(self, x):
        return anp.matmul(x, anp.transpose(self.weight)) + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}"


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Affine(3, 4)
        self.fc2 = Affine(4, 2)
        self.scale = Parameter(np.array(2.0))

    def forward(self, x):
        return self.fc2(anp.tanh(self.fc1(x))) * self.scale


def test_attributes_register_parameters_buffers_and_submodules_in_order():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale",
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
    ]
    assert [n for n, _ in net.named_buffers()] == ["fc1.calls", "fc1.scratch", "fc2.calls", "fc2.scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "fc2"]
    assert list(net.children()) == [net.fc1, net.fc2]
    assert type(net.fc1.weight) is np.ndarray  # the array itself, never a subclass
    assert net.get_parameter("fc2.bias") is net.fc2.bias
    assert net.get_submodule("fc1") is net.fc1
    assert net.get_buffer("fc1.calls") is net.fc1.calls


def test_parameters_are_the_arrays_so_writing_them_changes_the_module():
    net = Net()
    next(iter(net.fc1.parameters()))[0, 0] = 5.0
    assert net.fc1.weight[0, 0] == 5.0


def test_a_shared_submodule_and_a_tied_parameter_are_listed_once():
    net = Net()
    net.again = net.fc1
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "fc2"]
    assert len(list(net.parameters())) == 5
    assert len(list(net.named_parameters(remove_duplicate=False))) == 7


def test_the_forward_is_numpy_s_values():
    net, x = Net(), np.linspace(-1, 1, 6).reshape(2, 3)
    h = np.tanh(x @ net.fc1.weight.T + net.fc1.bias)
    np.testing.assert_array_equal(net(x), (h @ net.fc2.weight.T + net.fc2.bias) * 2.0)


def test_train_eval_and_apply_reach_every_submodule():
    net = Net()
    assert net.eval() is net and not any(m.training for m in net.modules())
    assert all(m.training for m in net.train().modules())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Affine", "Affine", "Net"]  # children first, as torch
    with pytest.raises(InvalidInputError, match="mode must be a bool"):
        net.train("no")


def test_float_and_double_cast_parameters_and_float_buffers():
    net = Net().float()
    assert {p.dtype for p in net.parameters()} == {np.dtype(np.float32)}
    assert net.fc1.calls.dtype == np.int64 and net.fc1.scratch.dtype == np.float32
    assert {p.dtype for p in net.double().parameters()} == {np.dtype(np.float64)}


def test_type_casts_every_buffer_and_casts_keep_tied_parameters_tied():
    net = Net().type(np.float32)
    assert net.fc1.calls.dtype == np.float32 and net.fc1.weight.dtype == np.float32  # as torch's .type()
    with pytest.raises(InvalidValueError, match="Net.type: parameters are float32 or float64"):
        net.type(np.int32)
    assert net.fc1.weight.dtype == np.float32  # unchanged by the refused cast
    net = Net()
    net.fc2.scale = Parameter(net.fc1.bias)  # one array, a parameter of two modules
    net.float()
    assert net.fc1.bias is net.fc2.scale and net.fc1.bias.dtype == np.float32


def test_a_name_a_property_holds_is_refused_not_shadowed():
    # torch's KeyError "attribute already exists": registered, the array would hide behind the
    # property and self.scale would read the property's value
    class Scaled(Module):
        @property
        def scale(self):
            return 2.0

    model = Scaled()
    with pytest.raises(InvalidValueError, match="'scale' already exists"):
        model.scale = Parameter(np.ones(2))
    with pytest.raises(InvalidValueError, match="'scale' already exists"):
        model.register_buffer("scale", np.ones(2))
    assert model.scale == 2.0 and not model._parameters and not model._buffers
    model.other = Parameter(np.ones(2))
    assert list(model._parameters) == ["other"]


def test_loading_into_a_read_only_array_is_refused_before_anything_changes():
    class Two(Module):
        def __init__(self):
            super().__init__()
            self.a = Parameter(np.zeros(2))
            self.b = Parameter(np.broadcast_to(np.zeros(1), (2,)))  # a read-only view

    model = Two()
    with pytest.raises(InvalidValueError, match="'?b'? is a read-only array.*Nothing was changed"):
        model.load_state_dict({"a": np.ones(2), "b": np.ones(2)})
    np.testing.assert_array_equal(model.a, [0.0, 0.0])
    model.load_state_dict({"a": np.ones(2), "b": np.full(2, 2.0)}, assign=True)
    np.testing.assert_array_equal(model.b, [2.0, 2.0])
    model.load_state_dict({"a": np.ones(2), "b": np.full(2, 3.0)})
    np.testing.assert_array_equal(model.b, [3.0, 3.0])


def test_bad_registrations_are_typed_errors_and_leave_the_module_as_it_was():
    net = Net()
    with pytest.raises(InvalidInputError, match="'weight' must be a float32 or float64"):
        net.fc1.weight = np.zeros((4, 3), np.int64)
    assert net.fc1.weight.dtype == np.float64
    with pytest.raises(InvalidInputError, match="child module 'fc1'"):
        net.fc1 = 3
    with pytest.raises(InvalidValueError, match="without '.'"):
        net.register_parameter("a.b", np.zeros(1))
    with pytest.raises(InvalidValueError, match="already exists"):
        net.register_buffer("forward", np.zeros(1))

    class Forgot(Module):
        def __init__(self):
            self.w = Parameter(np.zeros(1))

    with pytest.raises(InvalidValueError, match=r"super\(\).__init__\(\)"):
        Forgot()
    with pytest.raises(UnsupportedFunctionError, match="register_full_backward_hook"):
        net.register_backward_hook(lambda *a: None)
    assert net(np.ones((1, 3))).shape == (1, 2)  # the next call works


def test_a_frozen_parameter_is_refused_not_silently_trained():
    # torch's Parameter(requires_grad=False) gets no gradient; here it would get one, and an optimizer
    # over the model would update it
    with pytest.raises(InvalidValueError, match="register_buffer"):
        Parameter(np.zeros(2), requires_grad=False)
    assert Parameter(np.zeros(2), requires_grad=True).data.shape == (2,)


def test_assigning_none_and_deleting():
    net = Net()
    net.fc1.bias = None
    assert "fc1.bias" not in dict(net.named_parameters())
    assert "fc1.bias" not in net.state_dict()
    del net.fc2
    assert [n for n, _ in net.named_children()] == ["fc1"]
    with pytest.raises(AttributeError, match="no attribute 'fc2'"):
        net.fc2  # noqa: B018


def test_repr_is_torch_s_layout():
    assert repr(Net()) == (
        "Net(\n  (fc1): Affine(in_features=3, out_features=4)\n  (fc2): Affine(in_features=4, out_features=2)\n)"
    )


def test_repr_nests_and_indents_as_torch_s():
    class Linear(Affine):  # torch's name and extra_repr, so the reprs can be compared
        def extra_repr(self) -> str:
            return super().extra_repr() + ", bias=True"

    class Multi(Module):  # a multi-line extra_repr is indented under the name
        def extra_repr(self) -> str:
            return "a=1\nb=2"

    class Block(Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Net()
            self.proj = Linear(2, 2)
            self.multi = Multi()
            self.add_module("empty", None)

    want = (
        "Block(\n"
        "  (inner): Net(\n"
        "    (fc1): Affine(in_features=3, out_features=4)\n"
        "    (fc2): Affine(in_features=4, out_features=2)\n"
        "  )\n"
        "  (proj): Linear(in_features=2, out_features=2, bias=True)\n"
        "  (multi): Multi(\n    a=1\n    b=2\n  )\n"
        "  (empty): None\n"
        ")"
    )
    assert repr(Block()) == want
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written repr above still runs"
    )
    nested = torch.nn.Module()
    nested.proj = torch.nn.Linear(2, 2)
    nested.register_module("empty", None)
    mine = Module()
    mine.proj = Linear(2, 2)
    mine.add_module("empty", None)
    assert repr(mine) == repr(nested)


def test_state_dict_has_torch_s_keys_as_copies_without_non_persistent_buffers():
    net = Net()
    state = net.state_dict()
    assert list(state) == [
        "scale",
        "fc1.weight",
        "fc1.bias",
        "fc1.calls",
        "fc2.weight",
        "fc2.bias",
        "fc2.calls",
    ]
    state["fc1.weight"][0, 0] = 99.0
    assert net.fc1.weight[0, 0] == 0.0
    assert net.state_dict(keep_vars=True)["fc1.weight"] is net.fc1.weight


def test_load_state_dict_round_trips_in_place_and_casts():
    source, target = Net(), Net()
    for p in source.parameters():
        p += 1.5
    weight = target.fc1.weight
    result = target.load_state_dict(source.state_dict())
    assert result == ([], [])
    assert target.fc1.weight is weight  # copied into the existing array (an optimizer holds it)
    for (name, a), (_, b) in zip(source.state_dict().items(), target.state_dict().items(), strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    target.load_state_dict({k: v.astype(np.float32) for k, v in source.state_dict().items()})
    assert target.fc1.weight.dtype == np.float64


def test_load_state_dict_errors_list_the_keys_and_change_nothing():
    net = Net()
    before = net.state_dict()
    bad = OrderedDict(before)
    del bad["fc2.bias"]
    bad["fc3.weight"] = np.zeros(1)
    bad["fc1.weight"] = bad["fc1.weight"] + 1
    with pytest.raises(
        InvalidValueError, match=r"missing keys \['fc2.bias'\], unexpected keys \['fc3.weight'\]"
    ):
        net.load_state_dict(bad)
    bad = OrderedDict(before, **{"fc1.weight": np.zeros((3, 4)), "fc1.bias": np.full(4, 7.0)})
    with pytest.raises(InvalidValueError, match=r"size mismatch for fc1.weight.*\(3, 4\).*\(4, 3\)"):
        net.load_state_dict(bad)
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)  # fc1.bias was not loaded either
    partial = net.load_state_dict({"scale": np.array(3.0), "extra": np.zeros(1)}, strict=False)
    assert net.scale == 3.0 and partial.unexpected_keys == ["extra"] and "fc1.weight" in partial.missing_keys


def test_a_torch_state_dict_loads():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-built round trips above still run"
    )
    torch_net = torch.nn.Sequential()
    torch_net.add_module("fc1", torch.nn.Linear(3, 4).double())
    torch_net.add_module("fc2", torch.nn.Linear(4, 2).double())
    torch_state = {k: v.detach().numpy() for k, v in torch_net.state_dict().items()}
    net = Net()
    result = net.load_state_dict({"scale": np.array(1.0), **torch_state}, strict=False)
    assert result.missing_keys == ["fc1.calls", "fc2.calls"] and result.unexpected_keys == []
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    with torch.no_grad():
        want = torch_net[1](torch.tanh(torch_net[0](torch.from_numpy(x)))).numpy()
    np.testing.assert_allclose(net(x), want, rtol=1e-12)


def test_a_shared_submodule_is_in_the_state_dict_under_every_name_as_torch_s():
    # torch's state_dict does not drop shared submodules: a tied torch model's state dict has both
    net = Net()
    net.again = net.fc1
    keys = list(net.state_dict())
    assert keys == ["scale", "fc1.weight", "fc1.bias", "fc1.calls", "fc2.weight", "fc2.bias", "fc2.calls",
                    "again.weight", "again.bias", "again.calls"]  # fmt: skip
    state = net.state_dict()
    state["again.weight"] = state["again.weight"] + 1
    result = net.load_state_dict(state)  # strict: every name matches
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(net.fc1.weight, state["again.weight"])  # the last name wins, as torch's
    del net.again
    net.fc2.tied = Parameter(net.fc1.bias)  # one array, a parameter of two modules
    state = net.state_dict()
    state["fc2.tied"] = state["fc2.tied"] + 1
    net.load_state_dict(state, assign=True)
    assert net.fc2.tied is net.fc1.bias and net.fc1.bias is not state["fc2.tied"]  # a copy, kept tied
    np.testing.assert_array_equal(net.fc1.bias, state["fc2.tied"])  # the last key's value


def test_a_tied_torch_state_dict_loads_strictly():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-built tied state dict above still runs"
    )

    class TorchTied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(3, 4).double()
            self.again = self.fc1

    class Tied(Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = Affine(3, 4)
            self.again = self.fc1

    torch_state = {k: v.detach().numpy() for k, v in TorchTied().state_dict().items()}
    tied = Tied()
    tied.fc1._buffers.pop("calls")  # torch's Linear has no buffer
    assert list(tied.state_dict()) == list(torch_state)
    result = tied.load_state_dict(torch_state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(tied.again.weight, torch_state["fc1.weight"])
