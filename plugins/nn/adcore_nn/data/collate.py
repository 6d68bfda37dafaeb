"""torch's default_collate and default_convert for NumPy: items become batches with the batch dimension first.

default_collate's rules (torch's, with np.ndarray for Tensor):
  arrays and NumPy scalars -> np.stack (a new array, batch dim first); Python floats -> float64
  array, ints -> int64, bools -> bool; str/bytes -> the list; mappings -> the same mapping type of
  collated values; namedtuples -> the namedtuple of collated fields; other tuples -> a LIST of
  collated fields (torch's, so `x, y = batch` unpacks either); lists -> a list of collated positions.
Stricter than torch where torch would return a silently changed value or an obscure error: items
must have the same structure (type, keys, length), arrays the same shape AND dtype (torch's stack
would promote, so one odd item changes the batch's dtype); a mismatch is a typed error naming the
item index and the path to the field (e.g. `['image']`, `[1]`).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any

import numpy as np

from adcore.errors import InvalidInputError, InvalidValueError

__all__ = ["default_collate", "default_convert"]


def _where(path: tuple) -> str:
    return "".join(f"[{key!r}]" for key in path) or "the item"


def _kind(x: Any) -> str:
    """The collation rule an item falls under (numpy scalars are arrays, as in torch)."""
    if isinstance(x, (str, bytes)):  # before arrays: np.str_ is a str, kept as torch keeps it
        return "str"
    if isinstance(x, (np.ndarray, np.generic)):
        return "array"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, numbers.Integral):
        return "int"
    if isinstance(x, numbers.Real):
        return "float"
    if isinstance(x, Mapping):
        return "mapping"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return "namedtuple"
    if isinstance(x, Sequence):
        return "sequence"
    return "other"


def _unsupported(elem: Any, path: tuple) -> InvalidInputError:
    return InvalidInputError(
        "default_collate: batch must contain numpy arrays, numbers, strings, dicts or lists; found "
        f"{type(elem).__name__} at {_where(path)}. Pass a collate_fn that handles it."
    )


def _collate(batch: list, path: tuple) -> Any:
    elem = batch[0]
    kind = _kind(elem)
    same_type = type(elem)
    for i, x in enumerate(batch):
        if type(x) is same_type:  # the common case, cheap: same type, same rule
            continue
        other = _kind(x)
        if other != kind or kind in ("mapping", "namedtuple"):
            raise InvalidInputError(
                f"default_collate: item {i} of the batch has a {type(x).__name__} at {_where(path)} where "
                f"item 0 has a {type(elem).__name__}; every item must have the same structure"
            )
    if kind == "array":
        return _stack(batch, path)
    if kind == "float":
        return np.array(batch, dtype=np.float64)
    if kind == "int":
        return np.array(batch, dtype=np.int64)
    if kind == "bool":
        return np.array(batch, dtype=np.bool_)
    if kind == "str":
        return batch
    if kind == "mapping":
        return _collate_mapping(batch, path)
    if kind == "namedtuple":
        return type(elem)(*(_collate(list(f), (*path, i)) for i, f in enumerate(_transpose(batch, path))))
    if kind == "sequence":
        fields = [_collate(list(f), (*path, i)) for i, f in enumerate(_transpose(batch, path))]
        if isinstance(elem, tuple):
            return fields  # torch returns a list for tuples
        if isinstance(elem, MutableSequence):
            clone = copy.copy(elem)
            clone[:] = fields
            return clone
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise _unsupported(elem, path)


def _stack(batch: list, path: tuple) -> np.ndarray:
    first = batch[0]  # an ndarray or a NumPy scalar: both have .shape and .dtype
    if first.dtype.kind in "SUO":  # torch's rule: no strings or objects in a stacked batch
        raise _unsupported(first, path) from None
    for i, a in enumerate(batch):
        if a.shape != first.shape or a.dtype != first.dtype:
            raise InvalidValueError(
                f"default_collate: item {i} of the batch has an array of shape {a.shape} and dtype "
                f"{a.dtype} at {_where(path)} where item 0 has shape {first.shape} and dtype "
                f"{first.dtype}; items are stacked, so they must agree (pad or cast in the dataset, "
                "or pass a collate_fn)"
            )
    return np.stack(batch)


def _transpose(batch: list, path: tuple) -> list[tuple]:
    size = len(batch[0])
    for i, x in enumerate(batch):
        if len(x) != size:
            raise InvalidValueError(
                f"default_collate: item {i} of the batch has a {type(x).__name__} of length {len(x)} at "
                f"{_where(path)} where item 0's has length {size}; each element in list of batch "
                "should be of equal size"
            )
    return list(zip(*batch))


def _collate_mapping(batch: list, path: tuple) -> Any:
    elem = batch[0]
    keys = list(elem)
    for i, x in enumerate(batch):
        if set(x) != set(keys):
            raise InvalidValueError(
                f"default_collate: item {i} of the batch has keys {sorted(map(repr, x))} at {_where(path)} "
                f"where item 0 has {sorted(map(repr, keys))}; every item must have the same keys"
            )
    values = {key: _collate([x[key] for x in batch], (*path, key)) for key in keys}
    if isinstance(elem, MutableMapping):
        clone = copy.copy(elem)
        clone.update(values)
        return clone
    try:
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch: list) -> Any:
    """Merge a list of items into a batch, batch dimension first (torch's default_collate)."""
    if not isinstance(batch, Sequence) or isinstance(batch, (str, bytes)) or len(batch) == 0:
        raise InvalidInputError(
            f"default_collate: batch must be a non-empty list of items, got {type(batch).__name__}"
            f"{' of length 0' if isinstance(batch, Sequence) else ''}"
        )
    return _collate(list(batch), ())


def default_convert(data: Any) -> Any:
    """torch's default_convert (the collate for batch_size=None): NumPy scalars become 0-d arrays,
    containers are converted field by field (tuples to lists, as torch's), all else unchanged."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, np.generic):
        return data if data.dtype.kind in "SUO" else np.asarray(data)
    if isinstance(data, Mapping):
        values = {key: default_convert(data[key]) for key in data}
        if isinstance(data, MutableMapping):
            clone = copy.copy(data)
            clone.update(values)
            return clone
        try:
            return type(data)(values)
        except TypeError:
            return values
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(d) for d in data]
        if isinstance(data, MutableSequence):
            clone = copy.copy(data)
            clone[:] = converted
            return clone
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data
