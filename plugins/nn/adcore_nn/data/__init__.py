"""adcore_nn.data: datasets, samplers, collation and a DataLoader with torch.utils.data's semantics."""

from __future__ import annotations

from adcore_nn.data.collate import default_collate as default_collate
from adcore_nn.data.collate import default_convert as default_convert
from adcore_nn.data.dataset import ArrayDataset as ArrayDataset
from adcore_nn.data.dataset import ConcatDataset as ConcatDataset
from adcore_nn.data.dataset import Dataset as Dataset
from adcore_nn.data.dataset import IterableDataset as IterableDataset
from adcore_nn.data.dataset import Subset as Subset
from adcore_nn.data.dataset import random_split as random_split
from adcore_nn.data.fetch import item_rng as item_rng
from adcore_nn.data.loader import DataLoader as DataLoader
from adcore_nn.data.sampler import BatchSampler as BatchSampler
from adcore_nn.data.sampler import RandomSampler as RandomSampler
from adcore_nn.data.sampler import Sampler as Sampler
from adcore_nn.data.sampler import SequentialSampler as SequentialSampler
from adcore_nn.data.sampler import SubsetRandomSampler as SubsetRandomSampler
from adcore_nn.data.shared import SerializedList as SerializedList
from adcore_nn.data.worker_info import WorkerInfo as WorkerInfo
from adcore_nn.data.worker_info import get_worker_info as get_worker_info
from adcore_nn.data.workers import WorkerError as WorkerError
from adcore_nn.data.workers import WorkerTimeoutError as WorkerTimeoutError
