"""The symbolic backend refuses complex values, typed as unsupported (what conformance counts as
such) and naming the op, rather than computing with the real part alone."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import MissingRuleError, UnsupportedByBackendError


@pytest.mark.parametrize(
    ("f", "x", "op"),
    [
        (lambda z: anp.abs(z) ** 2, 1 + 2j, "'add'|'multiply'"),  # a complex argument, joined as x + 1j*y
        (lambda x: anp.real(x * (1 + 1j)), np.array([1.0, 2.0]), "'multiply'"),  # a complex constant
        (lambda x: anp.abs(anp.exp(1j * x)), 0.5, "'multiply'"),
        (lambda x: anp.exp(1j * x), np.array([0.5]), "'multiply'"),  # a complex output
    ],
    ids=["complex-argument", "complex-constant", "complex-intermediate", "complex-output"],
)
def test_a_complex_value_inside_f_is_refused_naming_the_op(f, x, op):
    with pytest.raises(
        UnsupportedByBackendError, match=rf"op ({op}) got a complex value.*reverse, forward or numeric"
    ):
        adcore.jacobian(f, backend="symbolic")(x)
    # the next call works
    assert adcore.grad(lambda x: x**2, backend="symbolic")(3.0) == 6.0


def test_an_op_with_complex_results_of_real_inputs_has_no_rule():
    with pytest.raises((MissingRuleError, UnsupportedByBackendError)):
        adcore.grad(lambda x: anp.sum(anp.abs(np.fft.rfft(x)) ** 2), backend="symbolic")(np.ones(4))
