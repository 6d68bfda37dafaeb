"""Every op's impl keeps float32 inputs float32 (the conformance suite then checks derivatives)."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_cases


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_in_float32_out(op, sample):
    out = op.impl(*sample.args, **sample.params)
    assert np.result_type(out) == np.float32, f"{op.name} returned {np.result_type(out)} for float32 inputs"
