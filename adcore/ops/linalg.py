"""matmul, with NumPy's batch broadcasting and 1-d promotion."""

from __future__ import annotations

import numpy as np

from adcore.spec import OpSpec, fixed_samples

# including the seeds' matrix broadcasting case: a 2x1 matmul b 4x1x3
_MATMUL_SHAPES = (
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 1), (4, 1, 3)),
    ((5, 2, 3), (3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
)

matmul = OpSpec(
    "matmul",
    np.matmul,
    nin=2,
    numpy=(np.matmul,),
    samples=fixed_samples(*((shapes, {}) for shapes in _MATMUL_SHAPES)),
)
