"""What forward-mode generated code calls besides runtime.py's helpers."""

from __future__ import annotations

from typing import Any

import numpy as np


def tangent_into(v: Any, t: Any) -> Any:
    """The tangent to write into dv where `v[i] = a` wrote a: a's tangent t, or 0.0 when v holds
    integers or booleans (the written value is rounded: its derivative is zero, not t rounded)."""
    dtype = getattr(v, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        return 0.0
    return t
