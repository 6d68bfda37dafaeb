"""Every op's impl keeps float32 inputs float32 (the conformance suite then checks derivatives)."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_cases

# ops whose NumPy function computes in float64 whatever its inputs (docs/conventions.md)
FLOAT64_BY_DESIGN = {"float_power"}


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_in_float32_out(op, sample):
    out = op.impl(*sample.args, **sample.params)
    expected = np.float64 if op.name in FLOAT64_BY_DESIGN else np.float32
    # a complex result (an fft, eigenvalues) of float32 inputs is complex64: float32 parts
    precision = np.finfo(np.result_type(out)).dtype
    assert precision == expected, f"{op.name} returned {np.result_type(out)} for float32 inputs"
