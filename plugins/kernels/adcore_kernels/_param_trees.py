"""How the optimizers read a pytree of parameters: which param groups a `params` argument stands
for (torch's list, param group dicts, model.parameters(), or any pytree: a dict, nested
lists/tuples, namedtuples, a registered class such as an adcore_nn Module), each group's
structure, and what differs between a gradient tree and the params' structure (naming a path).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

import adcore
from adcore.core import Tracer
from adcore.errors import InvalidInputError


class GroupTree(NamedTuple):
    """A param group's structure: its treedef, whether it is a flat list of parameters (torch's form),
    the container to read again at each step (a dict or a registered pytree; lists are copied), and
    the leaves it held."""

    treedef: Any
    flat: bool
    root: Any
    leaves: list


def groups_of(params: Any, me: str) -> tuple[list[dict[str, Any]], bool]:
    """The param groups `params` stands for, and whether it was torch's list of group dicts."""
    usage = (
        f"{me}: params must be an iterable of arrays (or eager Tensors), of param group dicts, or a pytree "
        f"of arrays (a dict, nested lists/tuples, a Module), e.g. {me}([w, b]), got {type(params).__name__}"
    )
    if isinstance(params, np.ndarray | Tracer | str):
        raise InvalidInputError(usage)
    if isinstance(params, dict):
        if "params" in params:
            raise InvalidInputError(f"{me}: one param group goes in a list, {me}([{{'params': ...}}])")
        return [{"params": params}], False
    if not isinstance(params, list | tuple) and adcore.tree.is_leaf(adcore.tree.structure(params)):
        if not isinstance(params, Iterable):
            raise InvalidInputError(usage)
        params = list(params)  # model.parameters(), or any other iterator
        if params and all(isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], str) for i in params):
            raise InvalidInputError(
                f"{me}: got (name, parameter) pairs (torch's named_parameters()); pass model.parameters(), "
                "or the model itself (a pytree), instead: the state dict numbers parameters as torch's"
            )
    if isinstance(params, list | tuple):
        groups = [isinstance(item, dict) and "params" in item for item in params]
        if params and all(groups):
            return list(params), True
        if any(groups):
            raise InvalidInputError(
                f"{me}: params mixes param group dicts (with 'params') and parameters: give a list of "
                "param groups, or the parameters alone"
            )
        if not params:
            return [], False
    return [{"params": params}], False


def tree_of(params: Any, me: str) -> Any:
    """A param group's 'params' as a pytree: a single array is a one-item list, an iterator a list."""
    if isinstance(params, np.ndarray | Tracer):
        return [params]
    if isinstance(params, list | tuple | dict) or not adcore.tree.is_leaf(adcore.tree.structure(params)):
        return params
    if isinstance(params, str) or not isinstance(params, Iterable):
        raise InvalidInputError(
            f"{me}: a param group's 'params' is a list (or a pytree) of arrays, got {type(params).__name__}"
        )
    return list(params)


def mismatch(grads: Any, want: Any, where: str) -> str | None:
    """What differs between the structure of `grads` and `want` (the params'), naming a path; None if alike."""
    _, got = adcore.tree.flatten(grads)
    if got == want:
        return None
    have, need = adcore.tree.paths(got), adcore.tree.paths(want)
    if missing := [p for p in need if p not in set(have)]:
        return (
            f"{where}{missing[0]} is missing: the params have a parameter there (grads must have the "
            "params' structure; to skip a parameter, pass torch's flat list with None in its place)"
        )
    if extra := [p for p in have if p not in set(need)]:
        return f"{where}{extra[0]} is a leaf where the params have none"
    return (
        f"{where} has the params' leaves but other containers: {where} is {got}, the params are {want} "
        "(a tuple for a list, another class, or other dict keys)"
    )
