"""adcore_nn: modules with torch.nn.Module's surface and hooks, layers, losses; adcore_nn.data loads data.

    import adcore
    import adcore_nn as nn

    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss, grads = adcore.value_and_grad(lambda m: nn.CrossEntropyLoss()(m(x), y))(model)
    grads[0].weight      # a model-shaped gradient: the module is a pytree of its parameters

Parameters are plain NumPy arrays; a module is a pytree whose leaves are its parameters.
"""

from __future__ import annotations

from adcore_nn import init
from adcore_nn.activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from adcore_nn.container import ModuleDict, ModuleList, Sequential
from adcore_nn.conv import AvgPool2d, Conv2d, MaxPool2d
from adcore_nn.dropout import Dropout
from adcore_nn.flatten import Flatten, Unflatten
from adcore_nn.functional_call import functional_call
from adcore_nn.hooks import (
    RemovableHandle,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from adcore_nn.init import manual_seed
from adcore_nn.linear import Identity, Linear
from adcore_nn.loss import CrossEntropyLoss, MSELoss, NLLLoss
from adcore_nn.module import Module, Parameter
from adcore_nn.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from adcore_nn.sparse import Embedding

__all__ = [
    "GELU",
    "AvgPool2d",
    "Conv2d",
    "Embedding",
    "Flatten",
    "Identity",
    "Linear",
    "LogSoftmax",
    "MaxPool2d",
    "ModuleDict",
    "ModuleList",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "Unflatten",
    "init",
    "manual_seed",
    "CrossEntropyLoss",
    "MSELoss",
    "NLLLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Dropout",
    "LayerNorm",
    "Module",
    "Parameter",
    "RemovableHandle",
    "functional_call",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
]
