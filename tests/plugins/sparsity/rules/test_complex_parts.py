"""The sparsity rules of real, imag, conj and angle (adcore_sparsity/rules/complex_parts.py): at
every sample, against reverse mode's Jacobian, and by hand on real and complex inputs."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from adcore_sparsity.rules import RULES
from plugins.sparsity.rule_check import check_op, dense_pattern

PARTS = ["real", "imag", "conj", "angle"]
IDENTITY = np.eye(3, dtype=bool)


def pattern(name: str, z, **params) -> np.ndarray:
    """The rule's pattern for z (an array, or an Unknown for a global one) of 3 elements."""
    (dep,) = RULES[name](Unknown((3,), np.float64), z, **params)
    return dense_pattern(dep, 3, 3)


@pytest.mark.parametrize("name", PARTS)
def test_rule_holds_at_every_sample(name):
    assert check_op(name) > 0


@pytest.mark.parametrize(
    "name, order", [("real", "linear"), ("imag", "linear"), ("conj", "linear"), ("angle", "nonlinear")]
)
def test_orders(name, order):
    assert RULES[name].order == order and RULES[name].exact


@pytest.mark.parametrize(
    "name, real_has", [("real", True), ("imag", False), ("conj", True), ("angle", False)]
)
def test_a_real_input(name, real_has):
    """real and conj pass a real x on; imag is 0 and angle a step on it."""
    for x in (np.array([-1.0, 0.0, 2.0]), Unknown((3,), np.float64)):
        np.testing.assert_array_equal(
            pattern(name, x), IDENTITY if real_has else np.zeros((3, 3), dtype=bool)
        )


@pytest.mark.parametrize("name", PARTS)
def test_a_complex_input_is_the_identity_pattern(name):
    """Also at z = 0, where angle's first derivative is 0 but its rule's second is not."""
    for z in (np.array([1 + 2j, 0j, -3.0 + 0j]), Unknown((3,), np.complex128)):
        np.testing.assert_array_equal(pattern(name, z), IDENTITY)
    np.testing.assert_array_equal(pattern("angle", np.array([1j, 0j, 2.0 + 0j]), deg=True), IDENTITY)
