"""adcore-kernels: numba kernels for adcore (seed 001's 卷积算子 and 优化方法).

- ops, registered through the "adcore" hooks with their vjp, jvp and sympy rules:
  `conv2d` (algorithms direct, im2col, fft, winograd, auto), `max_pool2d`, `avg_pool2d`;
- `adcore_kernels.optim`: torch.optim's SGD, Adam, AdamW, Adagrad, RMSprop, Adadelta, Adamax
  and Rprop (torch's signatures, param groups, state dicts), each step one fused numba kernel
  updating the parameters in place, also reachable as `adcore.optimizer("adam", params, **hyper)`;
- `adcore_kernels.optim_functional`: the same optimizers in optax's form over pytrees
  (`adam(lr=...)` -> init, update; `apply_updates`), bit for bit the in-place steps;
- `adcore_kernels.lr_scheduler`: torch's StepLR, CosineAnnealingLR and OneCycleLR over their param groups.

Importing this package compiles nothing and does not import numba: each kernel compiles
on its first call (`cache=True`, so later processes load it from numba's cache).
"""

from __future__ import annotations

from adcore_kernels import optim, optim_functional
from adcore_kernels.ops import avg_pool2d, conv2d, max_pool2d

__all__ = ["avg_pool2d", "conv2d", "max_pool2d", "optim", "optim_functional"]
