"""What adcore.check_grads differentiates: f of the float leaves of its arguments (pytrees
flattened with adcore.tree), a pytree output joined into one vector, and each leaf seen entry by
entry or, when large, along random orthonormal directions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adcore import ops, tree
from adcore.conformance.calls import CheckedCall
from adcore.errors import InvalidInputError


def flatten(
    f: Callable[..., Any], args: Sequence[Any]
) -> tuple[Callable[..., Any], list, list[str], Outputs]:
    """f as a function of the leaves of its arguments to one array, the leaves (float arrays),
    their names, and how to name an entry of that output."""
    leaves, names, treedefs = [], [], []
    for i, arg in enumerate(args):
        these, treedef = tree.flatten(arg)
        tree.check_leaves(these, treedef, f"argument {i}")
        for leaf, name in zip(these, tree.paths(treedef, f"argument {i}")):
            leaves.append(float_leaf(leaf, name))
            names.append(name)
        treedefs.append(treedef)
    if not leaves:
        raise InvalidInputError(
            "check_grads: f's arguments hold no arrays, so there is nothing to differentiate"
        )
    outputs = Outputs()

    def flat(*xs: Any) -> Any:
        rebuilt, start = [], 0
        for treedef in treedefs:
            rebuilt.append(tree.unflatten(treedef, xs[start : start + treedef.num_leaves]))
            start += treedef.num_leaves
        return outputs.join(f(*rebuilt))

    return flat, leaves, names, outputs


@dataclass
class Outputs:
    """f's output: one array, or a pytree whose leaves are joined into one vector, each entry
    named by its leaf's path (learnt from the first call)."""

    paths: list[str] = field(default_factory=list)
    shapes: list[tuple] = field(default_factory=list)

    def join(self, out: Any) -> Any:
        leaves, treedef = tree.flatten(out)
        if tree.is_leaf(treedef):
            return out
        self.paths, self.shapes = tree.paths(treedef, "out"), [np.shape(o) for o in leaves]
        return ops.concatenate(*(ops.reshape(o, shape=(-1,)) for o in leaves), axis=0)

    def name(self, index: tuple) -> str:
        """Where an entry of the output (or of the joined vector) came from: out['loss'][1]."""
        if not self.paths:
            return "out" + _at(index)
        ends = np.cumsum([int(np.prod(shape)) for shape in self.shapes])
        leaf = int(np.searchsorted(ends, index[0], side="right"))
        k = index[0] - (ends[leaf] - int(np.prod(self.shapes[leaf])))
        return self.paths[leaf] + _at(np.unravel_index(k, self.shapes[leaf]))


def _at(index: tuple) -> str:
    return f"[{', '.join(str(int(k)) for k in index)}]" if len(index) else ""


def float_leaf(leaf: Any, name: str) -> np.ndarray:
    x = np.asarray(leaf)
    if x.dtype not in (np.float32, np.float64):
        raise InvalidInputError(
            f"check_grads: {name} has dtype {x.dtype}, but check_grads differentiates with respect to "
            "every argument, and only float32 and float64 ones have derivatives; close over the "
            "others: check_grads(lambda x: f(x, n), (x,))"
        )
    return x


@dataclass(frozen=True)
class Probe:
    """f of its non-empty leaves, each the leaf itself or x + V t along the orthonormal columns
    of V (the Jacobian in t is then J V), as an engine CheckedCall in the leaves' dtypes or another."""

    fn: Callable[..., Any]
    leaves: tuple[np.ndarray, ...]
    names: tuple[str, ...]
    bases: tuple[np.ndarray | None, ...]
    active: tuple[int, ...]  # the leaves differentiated (empty ones are held fixed)

    @staticmethod
    def build(fn: Callable[..., Any], leaves: list, names: list, full: int, directions: int, rng) -> Probe:
        bases = [
            None if x.size <= full else np.linalg.qr(rng.standard_normal((x.size, directions)))[0]
            for x in leaves
        ]
        active = tuple(i for i, x in enumerate(leaves) if x.size)
        return Probe(fn, tuple(leaves), tuple(names), tuple(bases), active)

    def call(self, dtype: Any = None) -> CheckedCall:
        leaves = [x if dtype is None else x.astype(dtype) for x in self.leaves]
        bases = [None if v is None else v.astype(x.dtype) for v, x in zip(self.bases, leaves)]
        active = self.active

        def probed(*ps: Any) -> Any:
            xs = list(leaves)
            for i, p in zip(active, ps):
                if bases[i] is None:
                    xs[i] = p
                else:
                    xs[i] = xs[i] + ops.reshape(ops.matmul(bases[i], p), shape=xs[i].shape)
            return self.fn(*xs)

        ps = [leaves[i] if bases[i] is None else np.zeros(bases[i].shape[1], leaves[i].dtype) for i in active]
        return CheckedCall(probed, tuple(ps), tuple(range(len(ps))))

    def dtype(self, n: int) -> np.dtype:
        return self.leaves[self.active[n]].dtype

    def name(self, n: int) -> str:
        return self.names[self.active[n]]

    def ndim(self, n: int) -> int:
        return 1 if self.bases[self.active[n]] is not None else self.leaves[self.active[n]].ndim

    def at(self, n: int, index: tuple) -> str:
        """Where `index` (the trailing axes of a derivative by active leaf n) is."""
        if self.bases[self.active[n]] is not None:
            return f"{self.name(n)} along random direction {index[0]}"
        return self.name(n) + _at(index)


@dataclass(frozen=True)
class JointProbe:
    """f along random orthonormal directions of all its leaves at once (x_i + V_i t, one t): the
    second derivatives of a function with more leaves than directions, whose Hessian in t is
    V^T H V. Its one argument is named 'every argument'."""

    fn: Callable[..., Any]
    leaves: tuple[np.ndarray, ...]
    basis: np.ndarray  # (total size, directions), orthonormal columns
    active: tuple[int, ...] = (0,)

    @staticmethod
    def build(fn: Callable[..., Any], leaves: list, directions: int, rng) -> JointProbe:
        total = sum(x.size for x in leaves)
        basis = np.linalg.qr(rng.standard_normal((total, min(directions, total))))[0]
        return JointProbe(fn, tuple(leaves), basis)

    def call(self, dtype: Any = None) -> CheckedCall:
        leaves = [x if dtype is None else x.astype(dtype) for x in self.leaves]
        blocks = np.split(self.basis, np.cumsum([x.size for x in leaves])[:-1])
        blocks = [b.astype(x.dtype) for b, x in zip(blocks, leaves)]

        def probed(t: Any) -> Any:
            xs = [
                x + ops.reshape(ops.matmul(b, t), shape=x.shape) if x.size else x
                for x, b in zip(leaves, blocks)
            ]
            return self.fn(*xs)

        narrowest = min((x.dtype for x in leaves), key=lambda d: d.itemsize)
        return CheckedCall(probed, (np.zeros(self.basis.shape[1], narrowest),), (0,))

    def dtype(self, n: int) -> np.dtype:
        return min((x.dtype for x in self.leaves), key=lambda d: d.itemsize)

    def name(self, n: int) -> str:
        return "every argument"

    def ndim(self, n: int) -> int:
        return 1

    def at(self, n: int, index: tuple) -> str:
        return f"every argument along joint random direction {index[0]}"
