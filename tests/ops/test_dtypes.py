"""Every op's impl keeps float32 inputs float32 (the conformance suite then checks derivatives)."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_cases

# ops whose NumPy function computes in float64 whatever its inputs (docs/conventions.md)
FLOAT64_BY_DESIGN = {"float_power"}
# ops whose value, as NumPy's (SciPy's), follows a float64 param (quantile's q, diff's prepend/append)
# or a Python-number argument (gammainc's a, yn's n: SciPy's loop is float64): float32 where NumPy's
# is (tests/ops/test_numpy_equivalence.py checks the value against NumPy's)
FOLLOWS_NUMPY = {"quantile": np.quantile, "percentile": np.percentile, "diff": np.diff}
FOLLOWS_SCIPY = ("gammainc", "gammaincc", "yn")


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_in_float32_out(op, sample):
    out = op.impl(*sample.args, **sample.params)
    expected = np.float64 if op.name in FLOAT64_BY_DESIGN else np.float32
    if op.name in FOLLOWS_NUMPY:
        expected = np.result_type(FOLLOWS_NUMPY[op.name](*sample.args, **sample.params))
        assert expected == np.float32 or sample.params, "float32 alone stays float32"
    if op.name in FOLLOWS_SCIPY:
        import scipy.special

        expected = np.result_type(getattr(scipy.special, op.name)(*sample.args))
        numbers = any(isinstance(a, (int, float)) for a in sample.args)
        assert expected == np.float32 or numbers, "float32 arrays alone stay float32"
    # a complex result (an fft, eigenvalues) of float32 inputs is complex64: float32 parts
    precision = np.finfo(np.result_type(out)).dtype
    assert precision == expected, f"{op.name} returned {np.result_type(out)} for float32 inputs"
