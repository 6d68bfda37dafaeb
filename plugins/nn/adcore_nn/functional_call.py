"""functional_call: run a module with other parameters and buffers (torch.func.functional_call).

    out = functional_call(model, {"fc.weight": w, "fc.bias": b}, (x,))
    grads = adcore.grad(lambda p: anp.sum(functional_call(model, p, (x,))))(dict(model.named_parameters()))

The module itself is not changed: the call runs on a rebuilt copy holding the given arrays (and
sharing the module's hooks and the other buffers). A key that names no parameter or buffer is an
error (a misspelt key would otherwise leave the module's own array in place without a word).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adcore.errors import InvalidInputError, InvalidValueError
from adcore_nn.module import Module, _checked_parameter


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Any] | tuple[Mapping[str, Any], ...],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """module(*args, **kwargs) with the named parameters and buffers replaced by the given arrays.

    Keys are `named_parameters()`/`named_buffers()` names ("0.weight"). tie_weights: an array
    registered under several names (tied weights) is replaced under all of them by one entry.
    strict: every parameter and buffer must be given."""
    if not isinstance(module, Module):
        raise InvalidInputError(f"functional_call: expected an adcore_nn.Module, got {type(module).__name__}")
    me = f"functional_call({module._get_name()})"
    given = _merged(parameter_and_buffer_dicts, me)
    names = _registered_names(module)
    if unknown := [k for k in given if k not in names]:
        raise InvalidValueError(
            f"{me}: {unknown} name no parameter or buffer of the module (it has {sorted(names)})"
        )
    if tie_weights:
        given = _tied(names, given, me)
    if strict and (missing := sorted(k for k in names if k not in given)):
        raise InvalidValueError(f"{me}: strict=True and no value was given for {missing}")
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    return _replaced(module, given, "")(*args, **(kwargs or {}))


def _merged(dicts: Any, me: str) -> dict[str, Any]:
    dicts = dicts if isinstance(dicts, tuple | list) else (dicts,)
    merged: dict[str, Any] = {}
    for d in dicts:
        if not isinstance(d, Mapping):
            raise InvalidInputError(f"{me}: expected a dict of name -> array, got {type(d).__name__}")
        if twice := [k for k in d if k in merged]:
            raise InvalidValueError(f"{me}: {twice} appear in more than one of the dicts")
        merged.update(d)
    return merged


def _registered_names(module: Module) -> dict[str, int]:
    """Every parameter and buffer name (tied ones included) -> the id of the array it holds."""
    names = {}
    for registry in ("_parameters", "_buffers"):
        for prefix, sub in module.named_modules(remove_duplicate=False):
            dot = f"{prefix}." if prefix else ""
            for name, value in getattr(sub, registry).items():
                if value is not None:
                    names[dot + name] = id(value)
    return names


def _tied(names: dict[str, int], given: dict[str, Any], me: str) -> dict[str, Any]:
    """`given` with each replaced array's other names added; two different values for one tied
    array are an error."""
    by_array: dict[int, tuple[str, Any]] = {}
    for key, value in given.items():
        first = by_array.setdefault(names[key], (key, value))
        if first[1] is not value:
            raise InvalidValueError(
                f"{me}: {first[0]!r} and {key!r} are tied (one array) but were given different values"
            )
    tied = dict(given)
    for key, array_id in names.items():
        if key not in tied and array_id in by_array:
            tied[key] = by_array[array_id][1]
    return tied


def _replaced(module: Module, given: dict[str, Any], prefix: str) -> Module:
    """A rebuilt copy of `module` (and of its submodules) with the given arrays in place."""
    dot = f"{prefix}." if prefix else ""
    new = module._rebuilt([*module._parameters.values(), *module._modules.values()])
    for name in new._parameters:
        if dot + name in given:
            new._parameters[name] = _checked_parameter(module, dot + name, given[dot + name])
    if any(dot + name in given for name in module._buffers):
        new.__dict__["_buffers"] = {
            name: given.get(dot + name, value) for name, value in module._buffers.items()
        }
    for name, child in new._modules.items():
        if child is not None:
            new._modules[name] = _replaced(child, given, dot + name)
    return new
