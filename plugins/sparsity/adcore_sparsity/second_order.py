"""Hessian patterns: the second-derivative pairs each op creates, recorded once per trace and summed
once for the output.

A traced array's Hessian pattern H is the union of its inputs' H (those a dependency flows from) and
the pairs its own op creates, by the rule's order: none (linear); (D_i P_i)^T (D_j P_j) for inputs
i != j, both ways (multilinear); P_out^T P_out (nonlinear). Rather than carry H, an (n, n) matrix,
through every op (a union per op, costly when H is large and the program long), each array carries a
`Node`: the keys of the pairs its op created and its inputs' nodes. The output's H is the union of
the pairs of every node it reaches, computed at the end as one product of the stacked terms,
Σ_k A_k^T B_k = [A_1; A_2; ...]^T [B_1; B_2; ...]. A pair of the same term objects is recorded once
(sin(x) and cos(x) share x's pattern, so x's P^T P is computed once).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from adcore_sparsity.patterns import DenseRows, Term, as_bool, distinct_rows, empty, gram, union


class Node:
    """An array's place in the Hessian bookkeeping: the pairs its op created, and its inputs' nodes."""

    __slots__ = ("keys", "parents")

    def __init__(self, keys: tuple, parents: tuple) -> None:
        self.keys, self.parents = keys, parents


class SecondOrder:
    """The pairs a Hessian trace over n elements has recorded, by key (the ids of their terms)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pairs: dict[tuple[int, int], tuple[Term, Term]] = {}  # keeps the terms alive: ids stay unique

    def node(
        self,
        order: str,
        terms: list[Term],
        parents: list[Node | None],
        pattern: sparse.csr_array,
        paired: list[tuple[Term, Term]] | None = None,
    ) -> Node | None:
        """The node of an op's output: the pairs its order creates from its terms D_i P_i (whose
        union is the output's `pattern`), or the rule's own pairs (P_i, M_ij P_j) of a multilinear
        op when `paired` is given, and the nodes of the inputs those terms come from."""
        new = paired if paired is not None else self._new_pairs(order, terms, pattern)
        keys = [self._record(a, b) for a, b in new]
        known = tuple({id(p): p for p in parents if p is not None}.values())
        if not keys:
            return known[0] if len(known) == 1 else Node((), known) if known else None
        return Node(tuple(keys), known)

    def _new_pairs(self, order: str, terms: list[Term], pattern: sparse.csr_array) -> list[tuple[Term, Term]]:
        if order == "multilinear":
            return [(terms[i], terms[j]) for i in range(len(terms)) for j in range(i + 1, len(terms))]
        if order != "nonlinear" or not terms:
            return []
        dense = [t for t in terms if isinstance(t, DenseRows)]
        if not dense:
            return [(pattern, pattern)]
        rest = [t for t in terms if not isinstance(t, DenseRows)]
        merged: list[Term] = []
        if rest:
            merged.append(rest[0] if len(rest) == 1 else union(rest, rest[0].shape[0], self.n))
        if dense:
            supports = np.unique(np.concatenate([t.support for t in dense]))
            merged.append(DenseRows(dense[0].rows, supports))
        return [(merged[i], merged[j]) for i in range(len(merged)) for j in range(i, len(merged))]

    def _record(self, a: Term, b: Term) -> tuple[int, int]:
        key = (id(a), id(b))
        self.pairs.setdefault(key, (a, b))
        return key

    def hessian(self, node: Node | None) -> sparse.csr_array:
        """The symmetric (n, n) bool pattern of the pairs of every node `node` reaches."""
        keys: set[tuple[int, int]] = set()
        seen: set[int] = set()
        stack = [node] if node is not None else []
        while stack:  # iterative: a long program must not hit the recursion limit
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            keys.update(current.keys)
            stack.extend(current.parents)
        n = self.n
        stacked_a, stacked_b, parts = [], [], []
        for key in keys:
            a, b = self.pairs[key]
            if isinstance(a, DenseRows) or isinstance(b, DenseRows):
                pairs = gram(a, b, n)
                if pairs is not None:
                    parts.append(pairs)
            elif a.nnz and b.nnz:
                stacked_a.append(a)
                stacked_b.append(b)
        squares = [a for a, b in zip(stacked_a, stacked_b) if a is b]  # P^T P: one row's pairs
        if squares:
            s = distinct_rows(_stack(squares))
            parts.append(as_bool(s.T @ s))
        crosses = [(a, b) for a, b in zip(stacked_a, stacked_b) if a is not b]
        if crosses:  # (deduplicating their rows side by side costs more than it saves on ba1)
            a, b = _stack([a for a, _ in crosses]), _stack([b for _, b in crosses])
            parts.append(as_bool(a.T @ b))
        if not parts:
            return empty(n, n)
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        return as_bool(total + total.T)


def _stack(patterns: list[sparse.csr_array]) -> sparse.csr_array:
    return patterns[0] if len(patterns) == 1 else sparse.vstack(patterns, format="csr")
