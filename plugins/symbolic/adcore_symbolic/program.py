"""The derivative as a program: sympy.cse of the traced expressions, the chain rule run
backwards through the common subexpressions, and sympy.cse again over the result.

Differentiating the whole traced expression with sympy.diff and eliminating common
subexpressions afterwards still leaves a program that grows quadratically with the
depth of a nested function, as sympy's product rule spreads each level's factors over
the levels below. Running the chain rule through the named subexpressions instead, each
differentiated by sympy.diff, builds one adjoint per subexpression (seed 002's
build_grad, symbol to symbol), so the program grows linearly: the logistic map's
derivative takes 6 operations per level.
"""

from __future__ import annotations

import graphlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from adcore_symbolic.errors import ExpressionTooLargeError

# The largest closed form `Program.closed_form` builds for reading.
CLOSED_FORM_NODES = 100_000


@dataclass
class Program:
    """`definitions` (symbol = expression, in order), then the `values` of the outputs and
    their `derivatives` ([output][input]), all in terms of the inputs and the definitions."""

    definitions: list[tuple[sp.Symbol, Any]]
    values: list[Any]
    derivatives: list[list[Any]]

    def closed_form(self, exprs: Sequence[Any], max_nodes: int = CLOSED_FORM_NODES) -> list[Any]:
        """The expressions with every definition substituted back: what a person reads.

        Substituting copies each definition wherever it is used, so a closed form can be
        exponentially larger than the program (the logistic map's doubles per level);
        past `max_nodes` nodes this raises ExpressionTooLargeError instead of hanging.
        """
        exprs = [sp.sympify(e) for e in exprs]
        size = self.closed_form_size(exprs)
        if size > max_nodes:
            raise ExpressionTooLargeError(
                f"the closed form has {size} sympy nodes, over max_nodes={max_nodes}: read the "
                "CSE form instead (its definitions and outputs: .cse; as NumPy code: .source)"
            )
        full: dict = {}
        for symbol, expr in self.definitions:
            full[symbol] = expr.xreplace(full)
        return [e.xreplace(full) for e in exprs]

    def closed_form_size(self, exprs: Sequence[Any]) -> int:
        """The number of nodes the closed form of `exprs` has (counted without building it)."""
        sizes: dict = {}
        for symbol, expr in self.definitions:
            sizes[symbol] = _tree_size(expr, sizes)
        return sum(_tree_size(sp.sympify(e), sizes) for e in exprs)

    def count_ops(self) -> int:
        """The operations the program performs (sympy.count_ops of every line and output)."""
        lines = [e for _, e in self.definitions] + self.values + [d for row in self.derivatives for d in row]
        return int(sum(sp.count_ops(e) for e in lines))


def _tree_size(expr: Any, sizes: dict) -> int:
    """Nodes of expr's tree with each defined symbol counted as its closed form (memoized)."""
    known = sizes.get(expr)
    if known is not None:
        return known
    size = 1 + sum(_tree_size(a, sizes) for a in expr.args)
    if expr.args:
        sizes[expr] = size
    return size


def differentiate(outputs: Sequence[Any], inputs: Sequence[sp.Symbol], taken: Sequence[sp.Symbol]) -> Program:
    """The program computing `outputs` and d output / d input for every pair.

    `taken` are symbols the program must not reuse as names (every symbol in the trace).
    """
    avoid = set(taken) | set(inputs)
    outputs = [sp.sympify(e) for e in outputs]
    primal, values = sp.cse(outputs, symbols=_names("t", avoid), order="none")
    known = {t for t, _ in primal} | set(inputs)
    adjoint_names = _names("b", avoid)
    definitions = list(primal)
    derivatives = []
    for value in values:
        adjoints: dict = {}
        _accumulate(adjoints, value, sp.S.One, known)
        for t, expr in reversed(primal):
            bar = adjoints.pop(t, None)
            if bar is None:
                continue
            if not bar.is_Atom:
                name = next(adjoint_names)
                definitions.append((name, bar))
                bar = name
            _accumulate(adjoints, expr, bar, known)
        derivatives.append([adjoints.get(x, sp.S.Zero) for x in inputs])
    return _eliminate_common(Program(definitions, values, derivatives), _names("c", avoid))


def _accumulate(adjoints: dict, expr: Any, bar: Any, known: set) -> None:
    """Add bar * d expr / d s to the adjoint of every input or definition s that expr uses."""
    for s in expr.free_symbols & known:
        term = bar * _derivative(expr, s)
        if term != 0:
            adjoints[s] = adjoints[s] + term if s in adjoints else term


def _derivative(expr: Any, s: sp.Symbol) -> Any:
    """sympy.diff, with the Dirac deltas of sign and Heaviside read as 0 (docs/conventions.md)."""
    d = sp.diff(expr, s)
    if d.has(sp.DiracDelta):
        d = d.replace(sp.DiracDelta, lambda *args: sp.S.Zero)
    if d.has(sp.Derivative):
        raise NotImplementedError(
            f"backend 'symbolic': sympy cannot differentiate {expr} (it gives {d}); the sympy rule "
            "that built it needs a function with a derivative (see adcore_symbolic.functions)"
        )
    return d


def _eliminate_common(program: Program, names: Iterator[sp.Symbol]) -> Program:
    """sympy.cse over the whole program, its new lines placed where their inputs are ready."""
    n_def, n_val = len(program.definitions), len(program.values)
    lines = (
        [e for _, e in program.definitions] + program.values + [d for row in program.derivatives for d in row]
    )
    common, reduced = sp.cse(lines, symbols=names, order="none")
    expr_of = dict(common) | {s: e for (s, _), e in zip(program.definitions, reduced[:n_def])}
    order = graphlib.TopologicalSorter({s: e.free_symbols & expr_of.keys() for s, e in expr_of.items()})
    definitions = [(s, expr_of[s]) for s in order.static_order()]
    values = reduced[n_def : n_def + n_val]
    flat = reduced[n_def + n_val :]
    width = len(program.derivatives[0]) if program.derivatives else 0
    derivatives = [flat[i * width : (i + 1) * width] for i in range(len(program.derivatives))]
    return Program(definitions, values, derivatives)


def _names(prefix: str, avoid: set) -> Iterator[sp.Symbol]:
    """prefix0, prefix1, ... skipping the names of the symbols in `avoid` (the code knows names only)."""
    names = {str(s) for s in avoid}
    return (sp.Symbol(f"{prefix}{i}", real=True) for i in itertools.count() if f"{prefix}{i}" not in names)


def lines_for(
    definitions: list[tuple[sp.Symbol, Any]], outputs: Sequence[Any]
) -> list[tuple[sp.Symbol, Any]]:
    """The definitions that `outputs` need, directly or through other definitions, in order."""
    need = set().union(*(sp.sympify(o).free_symbols for o in outputs))
    kept = []
    for symbol, expr in reversed(definitions):
        if symbol in need:
            kept.append((symbol, expr))
            need |= expr.free_symbols
    return kept[::-1]
