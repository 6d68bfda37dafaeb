"""adcore.tree.register of a class already registered: a typed error naming it (issue 32, class 10)."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError


class _Pair:
    def __init__(self, w, b):
        self.w, self.b = w, b


adcore.tree.register(_Pair, lambda p: ((p.w, p.b), None), lambda _, children: _Pair(*children))


@pytest.mark.parametrize("cls", [_Pair, dict])
def test_registering_a_class_twice_is_refused_naming_it(cls):
    with pytest.raises(AdcoreError, match=f"'{cls.__qualname__}' is already a pytree node") as caught:
        adcore.tree.register(cls, lambda p: ((), None), lambda _, children: None)
    assert isinstance(caught.value, ValueError)
    # the first registration stays in force: d/dw sum(w^2 + b) = 2w, d/db = 1
    g = adcore.grad(lambda p: np.sum(p.w**2 + p.b))(_Pair(np.array([1.0, 2.0]), np.zeros(2)))
    np.testing.assert_array_equal(g.w, [2.0, 4.0])
    np.testing.assert_array_equal(g.b, [1.0, 1.0])
