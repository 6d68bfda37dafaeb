"""adcore_nn: modules with torch.nn.Module's surface and hooks, layers, losses; adcore_nn.data loads data.

    import adcore
    import adcore_nn as nn

    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss, grads = adcore.value_and_grad(lambda m: nn.CrossEntropyLoss()(m(x), y))(model)
    grads[0].weight      # a model-shaped gradient: the module is a pytree of its parameters

Parameters are plain NumPy arrays; a module is a pytree whose leaves are its parameters.
"""

from __future__ import annotations
