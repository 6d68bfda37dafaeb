"""Sequential, ModuleList and ModuleDict (torch.nn's): submodules held in `_modules` under torch's keys.

Their submodules are children as any module's, so named_parameters/state_dict read "0.weight",
"blocks.1.bias", "heads.cls.weight", and the pytree holds them in the same order. An index out of
range is Python's IndexError (the sequence protocol, as torch's); other misuse is a typed error.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any

from adcore.errors import InvalidInputError, InvalidValueError
from adcore_nn.module import Module

__all__ = ["ModuleDict", "ModuleList", "Sequential"]


def _module(container: str, module: Any) -> Module:
    if not isinstance(module, Module):
        raise InvalidInputError(f"{container}: holds Modules only, got {type(module).__name__}")
    return module


def _abs_index(idx: Any, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _indent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first, *(" " * spaces + line for line in rest)])


class _Numbered(Module):
    """What Sequential and ModuleList share: submodules under the keys "0", "1", ... ."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def _renumber(self) -> None:
        # keys stay 0..n-1 after a deletion, as torch's
        self._modules = OrderedDict(zip((str(i) for i in range(len(self._modules))), self._modules.values()))

    def append(self, module: Module) -> Any:
        """Add module at the end."""
        self.add_module(str(len(self)), _module(type(self).__name__, module))
        return self

    def insert(self, index: int, module: Module) -> Any:
        """Put module before position index."""
        _module(type(self).__name__, module)
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, modules: Iterable[Module]) -> Any:
        """Append each module of an iterable."""
        if not isinstance(modules, Iterable):
            raise InvalidInputError(
                f"{type(self).__name__}.extend should be called with an iterable, but got {type(modules).__name__}"
            )
        for module in modules:
            self.append(module)
        return self

    def pop(self, key: int | slice) -> Any:
        """Remove and return the module(s) at key."""
        v = self[key]
        del self[key]
        return v

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(idx, len(self))), _module(type(self).__name__, module))

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        self._renumber()


class Sequential(_Numbered):
    """Modules called in order, each on the previous one's output: Sequential(*modules) or
    Sequential(OrderedDict(name=module)) (then the names are the keys)."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, _module("Sequential", module))
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), _module("Sequential", module))

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return next(islice(self._modules.values(), _abs_index(idx, len(self)), None))

    def __setitem__(self, idx: int, module: Module) -> None:
        key = next(islice(self._modules, _abs_index(idx, len(self)), None))
        setattr(self, key, _module("Sequential", module))

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_abs_index(idx, len(keys))]]:
            delattr(self, key)
        self._renumber()

    def __add__(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise InvalidValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is given."
            )
        return Sequential(*self, *other)

    def __iadd__(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise InvalidValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is given."
            )
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def __mul__(self, other: int) -> Sequential:
        if isinstance(other, bool) or not isinstance(other, int):
            raise InvalidInputError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise InvalidValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(_Numbered):
    """A list of modules (no forward of its own): indexing, slicing (a new ModuleList), append, extend,
    insert, pop, +, +=."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(chain(self, other))

    def __repr__(self) -> str:
        """torch's: runs of equal reprs shown once, as "(0-2): 3 x Linear(...)"."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return type(self).__name__ + "()"
        runs: list[list[Any]] = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_indent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs]
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules under string keys (no forward of its own), with dict's methods."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, _module("ModuleDict", module))

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under key."""
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or an iterable of (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise InvalidInputError(
                "ModuleDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(modules).__name__}"
            )
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable) or isinstance(pair, (str, Module)):
                raise InvalidInputError(
                    f"ModuleDict update sequence element #{j} should be a (key, module) pair; is {type(pair).__name__}"
                )
            pair = tuple(pair)
            if len(pair) != 2:
                raise InvalidValueError(
                    f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required"
                )
            self[pair[0]] = pair[1]
