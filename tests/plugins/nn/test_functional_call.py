"""functional_call: torch.func's contract, the module unchanged, no key silently ignored."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import Module, Parameter, functional_call

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError


class Inner(Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(np.array([1.0, 2.0]))
        self.register_buffer("offset", np.array([0.5, 0.5]))

    def forward(self, x):
        return x * self.w + self.offset


class Outer(Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()
        self.v = Parameter(np.array(3.0))

    def forward(self, x, power=1):
        return anp.sum(self.inner(x) ** power) * self.v


X = np.array([1.0, -1.0])


def test_the_given_parameters_and_buffers_are_used_and_the_module_is_unchanged():
    m = Outer()
    before = {k: v.copy() for k, v in m.state_dict().items()}
    out = functional_call(m, {"inner.w": np.array([3.0, 4.0]), "inner.offset": np.zeros(2)}, X, {"power": 2})
    assert out == pytest.approx((9 + 16) * 3.0)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    assert m(X) == pytest.approx((1.5 - 1.5) * 3.0)


def test_several_dicts_and_args_as_a_tuple():
    m = Outer()
    out = functional_call(m, ({"inner.w": np.ones(2)}, {"v": np.array(1.0)}), (X,))
    assert out == pytest.approx(1.5 - 0.5)
    with pytest.raises(InvalidValueError, match=r"\['v'\] appear in more than one"):
        functional_call(m, ({"v": np.array(1.0)}, {"v": np.array(2.0)}), (X,))


def test_grad_through_functional_call_of_a_parameter_dict():
    m = Outer()
    params = dict(m.named_parameters())
    g = adcore.grad(lambda p: functional_call(m, p, (X,)))(params)
    assert sorted(g) == ["inner.w", "v"]
    np.testing.assert_allclose(g["inner.w"], X * 3.0)  # d/dw sum(x w + 0.5) v
    np.testing.assert_allclose(g["v"], np.sum(X * m.inner.w + 0.5))


def test_a_misspelt_key_is_an_error_not_ignored():
    with pytest.raises(InvalidValueError, match=r"\['inner.wieght'\] name no parameter or buffer"):
        functional_call(Outer(), {"inner.wieght": np.ones(2)}, (X,))


def test_strict_needs_every_parameter_and_buffer():
    with pytest.raises(InvalidValueError, match=r"strict=True.*\['inner.offset', 'inner.w'\]"):
        functional_call(Outer(), {"v": np.array(1.0)}, (X,), strict=True)


def test_tied_weights_are_replaced_together():
    class Both(Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = Inner(), Inner()
            self.b.w = Parameter(self.a.w)  # one array under two names

        def forward(self, x):
            return self.a(x), self.b(x)

    both, new = Both(), np.array([7.0, 8.0])
    a, b = functional_call(both, {"a.w": new}, (X,))
    np.testing.assert_array_equal(a - 0.5, X * new)
    np.testing.assert_array_equal(b - 0.5, X * new)  # the tied name follows
    a, b = functional_call(both, {"a.w": new}, (X,), tie_weights=False)
    np.testing.assert_array_equal(b - 0.5, X * both.b.w)
    with pytest.raises(InvalidValueError, match="tied"):
        functional_call(both, {"a.w": new, "b.w": new + 1}, (X,))


def test_a_bad_module_or_value_is_a_typed_error():
    with pytest.raises(InvalidInputError, match="expected an adcore_nn.Module"):
        functional_call(lambda x: x, {}, (X,))
    with pytest.raises(InvalidInputError, match="'inner.w' must be a float32 or float64"):
        functional_call(Outer(), {"inner.w": np.array([1, 2])}, (X,))
