"""adcore_nn.data: datasets, samplers, collation and a DataLoader with torch.utils.data's semantics."""

from __future__ import annotations

from adcore_nn.data.shared import SerializedList as SerializedList
from adcore_nn.data.workers import WorkerError as WorkerError
from adcore_nn.data.workers import WorkerTimeoutError as WorkerTimeoutError
