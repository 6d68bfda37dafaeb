"""Side-by-side benchmark of adcore-kernels: numba conv2d against torch, fused optimizers against torch.optim.

Run by hand (not part of the tests):  python benchmarks/bench_kernels.py [conv|optim]

1. conv2d (`kernels_conv.py`): float32 N=8, C=64, 32x32, 64 filters 3x3, padding 1,
   forward and forward + both gradients for each algorithm and `auto`, against
   torch.nn.functional.conv2d and its autograd, in several printed runs with their median
   and OK/MISS against the targets; `auto`'s crossover table over channels, kernel sizes
   and strides; first-call compile time and a second process's cached time.
2. optimizers (`kernels_optim.py`): each optimizer's step on 10^7 float32 parameters, ms
   and effective GB/s, against torch.optim (default, foreach, fused); compile times.

Each section also runs alone (`python benchmarks/kernels_conv.py`). torch is optional
(`pip install torch==2.13.0`): without it its columns say "not installed".
"""

from __future__ import annotations

import sys

import kernels_conv
import kernels_optim

SECTIONS = {"conv": kernels_conv.main, "optim": kernels_optim.main}

if __name__ == "__main__":
    for name in sys.argv[1:] or SECTIONS:
        SECTIONS[name]()
