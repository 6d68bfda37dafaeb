"""Einstein-summation subscripts: parsed once per (subscripts, shapes) into one explicit form,
and the subscripts of einsum's derivatives (an einsum of the cotangent with the other operands).

The canonical form has no ellipsis (its axes get letters of their own) and no broadcast axes: an
axis of length 1 that NumPy stretches against a longer one means the operand is constant along
that label, the same as not having the label, so the operand is reshaped without it. What is
left has one size per label, which is what the derivatives' subscripts need.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from adcore.errors import InvalidValueError

LETTERS = string.ascii_letters  # the labels np.einsum accepts


@dataclass(frozen=True)
class EinsumPlan:
    """An einsum in the canonical form: `subscripts` over operands reshaped to `shapes`."""

    terms: tuple[str, ...]
    output: str
    shapes: tuple[tuple[int, ...], ...]
    sizes: tuple[tuple[str, int], ...]

    @property
    def subscripts(self) -> str:
        return ",".join(self.terms) + "->" + self.output

    @property
    def out_shape(self) -> tuple[int, ...]:
        sizes = dict(self.sizes)
        return tuple(sizes[label] for label in self.output)


def from_sublists(args: tuple) -> tuple[str, tuple] | None:
    """np.einsum's sublist form, einsum(a, [0, 1], b, [1, 2], [0, 2]), as (subscripts, operands);
    None when args are not in that form. Label k is NumPy's letter for it: A-Z for 0-25, a-z
    for 26-51 (so the implicit output's order is the labels' order), Ellipsis is '...'."""
    if len(args) < 2 or isinstance(args[0], str) or not isinstance(args[1], (list, tuple)):
        return None
    pairs, output = args[: len(args) // 2 * 2], args[len(args) // 2 * 2 :]
    operands, terms = pairs[0::2], pairs[1::2]
    for i, term in enumerate(terms):
        if not _is_sublist(term):
            raise refuse(
                args, f"argument {2 * i + 1} (operand {i}'s sublist) is not a list of integer labels"
            )
    subscripts = ",".join(_sublist_term(term) for term in terms)
    if output:
        if not _is_sublist(output[0]):
            raise refuse(args, "the last argument (the output's sublist) is not a list of integer labels")
        subscripts += "->" + _sublist_term(output[0])
    return subscripts, tuple(operands)


def _is_sublist(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(
        v is Ellipsis or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) for v in value
    )


def _sublist_term(term: list | tuple) -> str:
    letters = []
    for label in term:
        if label is Ellipsis:
            letters.append("...")
        elif not 0 <= label < len(LETTERS):
            raise refuse(term, f"sublist label {label} is out of range (einsum's labels are 0 to 51)")
        else:
            letters.append(LETTERS[label + 26] if label < 26 else LETTERS[label - 26])  # A-Z, then a-z
    return "".join(letters)


def refuse(subscripts: object, why: str) -> InvalidValueError:
    return InvalidValueError(f"einsum: subscripts {subscripts!r}: {why}")


@functools.lru_cache(maxsize=4096)
def einsum_plan(subscripts: str, shapes: tuple[tuple[int, ...], ...]) -> EinsumPlan:
    """The canonical form of np.einsum(subscripts, *operands of these shapes); InvalidValueError
    naming einsum and the subscripts where NumPy would refuse them."""
    if not isinstance(subscripts, str):
        raise refuse(
            subscripts,
            "give the subscripts as a string such as 'ij,jk->ik', or in the sublist form "
            "einsum(a, [0, 1], b, [1, 2], [0, 2])",
        )
    if not shapes:
        raise refuse(subscripts, "einsum needs at least one operand")
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    if "->" in rhs or "-" in lhs or ">" in lhs:
        raise refuse(subscripts, "'->' may appear once, between the inputs and the output")
    raw_terms = lhs.split(",")
    if len(raw_terms) != len(shapes):
        raise refuse(subscripts, f"{len(raw_terms)} input term(s) for {len(shapes)} operand(s)")
    named = [_labels(subscripts, term) for term in raw_terms]
    ellipsis_ndims = []
    for i, (term, (labels, has_ellipsis), shape) in enumerate(zip(raw_terms, named, shapes)):
        extra = len(shape) - len(labels)
        if extra < 0 or (extra > 0 and not has_ellipsis):
            raise refuse(subscripts, f"term {term!r} names {len(labels)} axes, operand {i} has {len(shape)}")
        ellipsis_ndims.append(extra)
    used = set(text)
    fresh = (c for c in LETTERS if c not in used)
    broadcast = "".join(_take(fresh, max(ellipsis_ndims), subscripts))
    full_terms = [
        _expand(term, broadcast[len(broadcast) - e :]) for term, e in zip(raw_terms, ellipsis_ndims)
    ]
    output = _output(subscripts, arrow, rhs, full_terms, broadcast)
    sizes = _sizes(subscripts, full_terms, shapes)
    terms, canonical_shapes = [], []
    for term, shape in zip(full_terms, shapes):
        kept = [(label, n) for label, n in zip(term, shape) if not (n == 1 and sizes[label] != 1)]
        terms.append("".join(label for label, _ in kept))
        canonical_shapes.append(tuple(n for _, n in kept))
    return EinsumPlan(tuple(terms), output, tuple(canonical_shapes), tuple(sorted(sizes.items())))


def _labels(subscripts: str, term: str) -> tuple[str, bool]:
    """A term's letters and whether it has an ellipsis."""
    if term.count("...") > 1:
        raise refuse(subscripts, f"term {term!r} has more than one ellipsis")
    has_ellipsis = "..." in term
    letters = term.replace("...", "")
    bad = [c for c in letters if c not in LETTERS]
    if bad:
        raise refuse(subscripts, f"{bad[0]!r} is not a label (labels are letters a-z, A-Z, and '...')")
    return letters, has_ellipsis


def _take(fresh: Iterator[str], n: int, subscripts: str) -> list[str]:
    out = list(zip(range(n), fresh))
    if len(out) < n:
        raise refuse(subscripts, "more axes than the 52 letters einsum can label")
    return [c for _, c in out]


def _expand(term: str, broadcast: str) -> str:
    return term.replace("...", broadcast)


def _output(subscripts: str, arrow: str, rhs: str, terms: list[str], broadcast: str) -> str:
    """The output labels: the explicit ones, or NumPy's implicit choice (the broadcast axes, then
    the letters that appear once, in alphabetical order)."""
    if not arrow:
        counts = {}
        for term in terms:
            for label in term:
                counts[label] = counts.get(label, 0) + 1
        return broadcast + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in broadcast))
    letters, has_ellipsis = _labels(subscripts, rhs)
    if broadcast and not has_ellipsis:
        raise refuse(
            subscripts, "the inputs have '...' axes, so the output must say where they go with '...'"
        )
    inputs = set("".join(terms))
    for label in letters:
        if label not in inputs:
            raise refuse(subscripts, f"output label {label!r} is in no input term")
        if letters.count(label) > 1:
            raise refuse(subscripts, f"output label {label!r} appears more than once")
    return _expand(rhs, broadcast)


def _sizes(subscripts: str, terms: list[str], shapes: tuple[tuple[int, ...], ...]) -> dict[str, int]:
    """One size per label: equal within an operand, equal or 1 (broadcast) across operands."""
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        own: dict[str, int] = {}
        for label, n in zip(term, shape):
            if own.setdefault(label, n) != n:
                raise refuse(
                    subscripts,
                    f"label {label!r} repeats in operand {i} over axes of lengths {own[label]} and {n}",
                )
        for label, n in own.items():
            known = sizes.get(label, 1)
            if n != 1 and known not in (1, n):
                raise refuse(
                    subscripts, f"label {label!r} has lengths {known} and {n}, which do not broadcast"
                )
            sizes[label] = known if n == 1 else n
    return sizes


# --- the derivatives' subscripts -------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def cotangent_subscripts(plan: EinsumPlan, k: int) -> tuple[str, tuple[tuple[str, int], ...]]:
    """The einsum giving operand k's cotangent (in its canonical shape): its operands are the
    output's cotangent, the other operands in order, then constants, each ("eye", n) (a label
    repeated in operand k: its diagonal) or ("ones", n) (a label only operand k has: summed in
    the op, so its cotangent is the same along it)."""
    fresh = (c for c in LETTERS if c not in set(plan.subscripts))
    sizes = dict(plan.sizes)
    others = [term for i, term in enumerate(plan.terms) if i != k]
    present = set(plan.output).union(*others)
    out, constant_terms, constants = [], [], []
    for label in plan.terms[k]:
        if label in out:  # a repeat: its own letter, tied to the first by an identity
            (letter,) = _take(fresh, 1, plan.subscripts)
            out.append(letter)
            constant_terms.append(label + letter)
            constants.append(("eye", sizes[label]))
            present.add(label)
        else:
            out.append(label)
    for label in dict.fromkeys(plan.terms[k]):
        if label not in present:
            constant_terms.append(label)
            constants.append(("ones", sizes[label]))
    subscripts = ",".join([plan.output, *others, *constant_terms]) + "->" + "".join(out)
    return subscripts, tuple(constants)


@functools.lru_cache(maxsize=4096)
def tangent_subscripts(plan: EinsumPlan, k: int) -> str:
    """The einsum of operand k's batched tangent (batch axis first) in its place among the
    operands: the output's tangent, batch axis first."""
    (batch,) = _take((c for c in LETTERS if c not in set(plan.subscripts)), 1, plan.subscripts)
    terms = [batch + term if i == k else term for i, term in enumerate(plan.terms)]
    return ",".join(terms) + "->" + batch + plan.output
