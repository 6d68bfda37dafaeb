"""adcore_nn.data: datasets, samplers, collation and a DataLoader with torch.utils.data's semantics."""

from __future__ import annotations
