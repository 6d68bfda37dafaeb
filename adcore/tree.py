"""Pytrees: nested containers of arrays that adcore's API differentiates over, on optree.

A pytree is a nested dict, list, tuple or namedtuple (or a class registered here) whose
leaves are arrays or Python numbers; `None` is "no value", an empty subtree with no leaf
(as in JAX). Dict entries are taken in sorted key order, so two dicts with the same keys
have the same structure whatever their insertion order. Registrations live in optree's
namespace "adcore", so they do not change how other optree users see a class.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from adcore.core import Tracer
from adcore.errors import InvalidInputError, InvalidValueError

# optree is imported by the first pytree call, not by `import adcore`: a grad of plain arrays
# needs none of it (each function imports it; after the first, that is a dictionary look-up).
if TYPE_CHECKING:
    from optree import PyTreeSpec as TreeDef

NAMESPACE = "adcore"


def __getattr__(name: str) -> Any:
    if name == "TreeDef":  # optree's PyTreeSpec, imported when first asked for
        import optree

        return optree.PyTreeSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _child_entry() -> type:
    """The path entry of a registered class's children (an optree class, so made on first use)."""
    import optree

    class _ChildEntry(optree.GetAttrEntry):
        """A registered class's child in a path: `.w` where flatten names its children, else its
        position, `[<child 1>]` (optree numbers the children of the two-item form)."""

        __slots__ = ()

        def __call__(self, obj: Any) -> Any:
            if isinstance(self.entry, str):
                return super().__call__(obj)
            return optree.tree_flatten_one_level(obj, none_is_leaf=False, namespace=NAMESPACE)[0][self.entry]

        def codify(self, node: str = "") -> str:
            return super().codify(node) if isinstance(self.entry, str) else f"{node}[<child {self.entry}>]"

    return _ChildEntry


def register(cls: type, flatten: Callable[[Any], tuple], unflatten: Callable[[Any, Iterable], Any]) -> type:
    """Make instances of `cls` pytree nodes (JAX's `register_pytree_node` contract):
    `flatten(obj) -> (children, aux_data)` or `(children, aux_data, names)`, names being how
    messages call each child (`.w`); `unflatten(aux_data, children) -> obj`. Returns cls."""

    def flatten_named(obj: Any) -> tuple:
        flat = flatten(obj)
        return flat if len(flat) == 3 else (flat[0], flat[1], None)

    import optree

    try:
        return optree.register_pytree_node(
            cls, flatten_named, unflatten, path_entry_type=_child_entry(), namespace=NAMESPACE
        )
    except ValueError as e:  # optree's: already registered, or a built-in container
        raise InvalidValueError(
            f"adcore.tree.register: {getattr(cls, '__qualname__', cls)!r} is already a pytree node "
            f"({e}): register each class once, where it is defined; its first registration stays in force"
        ) from e


def register_dataclass(cls: type) -> type:
    """Make a dataclass a pytree node whose children are its init fields, by name. Returns cls
    (so it works as a decorator under `@dataclasses.dataclass`)."""
    if not dataclasses.is_dataclass(cls):
        raise InvalidInputError(
            f"adcore.tree.register_dataclass: {cls!r} is not a dataclass; decorate it with "
            "@dataclasses.dataclass first, or register it with adcore.tree.register(cls, flatten, unflatten)"
        )
    names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return register(
        cls,
        lambda obj: (tuple(getattr(obj, n) for n in names), None, names),
        lambda _, children: cls(**dict(zip(names, children))),
    )


def flatten(tree: Any) -> tuple[list, TreeDef]:
    """The leaves of `tree` (in a fixed order: dict keys sorted) and its structure."""
    import optree

    return optree.tree_flatten(tree, none_is_leaf=False, namespace=NAMESPACE)


def unflatten(treedef: TreeDef, leaves: Iterable) -> Any:
    """The tree of structure `treedef` with these leaves."""
    import optree

    return optree.tree_unflatten(treedef, leaves)


def structure(tree: Any) -> TreeDef:
    import optree

    return optree.tree_structure(tree, none_is_leaf=False, namespace=NAMESPACE)


def leaves(tree: Any) -> list:
    import optree

    return optree.tree_leaves(tree, none_is_leaf=False, namespace=NAMESPACE)


def map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """f applied to each leaf of `tree` (and the leaves at the same places in `rest`)."""
    import optree

    try:
        return optree.tree_map(f, tree, *rest, none_is_leaf=False, namespace=NAMESPACE)
    except ValueError as e:  # optree's: the trees' structures differ (f's own errors pass through)
        if rest and any(structure(other) != structure(tree) for other in rest):
            raise InvalidValueError(
                f"adcore.tree.map: the trees do not have one structure ({e}); give trees with the "
                "same containers, keys and registered nodes (two models: map over dicts of their "
                "parameters, e.g. dict(model.named_parameters()))"
            ) from e
        raise


def children(tree: Any) -> tuple[list, tuple]:
    """A container's children and their keys (a dict's keys, field names, positions), in the order
    `leaves` walks them (an OrderedDict's own, any other dict's sorted)."""
    import optree

    kids, _, entries, _ = optree.tree_flatten_one_level(tree, none_is_leaf=False, namespace=NAMESPACE)
    return kids, tuple(entries)


def paths(treedef: TreeDef, prefix: str = "") -> list[str]:
    """Each leaf's path as a string for messages: `paths(structure(p), "argument 0")` gives
    `"argument 0['layers'][1]['w']"`."""
    import optree

    return [accessor.codify(prefix) for accessor in optree.treespec_accessors(treedef)]


def is_leaf(treedef: TreeDef) -> bool:
    """Whether the tree is one leaf (an array or number, not a container)."""
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def check_leaves(leaves: list, treedef: TreeDef, where: str) -> None:
    """Every leaf must be an array, a tracer or a number: anything else (a string, an
    unregistered object) is an InvalidInputError naming its path."""
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, (np.ndarray, np.generic, Tracer, numbers.Number)):
            path = paths(treedef, where)[i]
            raise InvalidInputError(
                f"{path} is {type(leaf).__name__} {leaf!r:.60}, not an array or a number: a pytree's "
                "leaves are arrays or numbers (None for no value). Pass it as an argument outside "
                "argnums, or, if it holds arrays, register its class with adcore.tree.register "
                "(or adcore.tree.register_dataclass)"
            )
