"""The derivative as a program: the chain rule run backwards through definitions
(symbol = expression, in order), one adjoint per definition (seed 002's build_grad,
symbol to symbol).

`chain_rule` takes the trace's definitions, one per traced op, so every expression it
differentiates is small and the work is linear in the number of ops (issue 15, class 11:
differentiating the whole traced expression spread each level's factors over the levels
below, and sympy's evaluation of it took minutes). `differentiate` takes expressions in
closed form: sympy.cse names their common subexpressions first, and sympy.cse runs again
over the result. The logistic map's derivative takes 7 operations per level.
"""

from __future__ import annotations

import functools
import graphlib
import heapq
import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp

from adcore_symbolic.budget import WorkBudget, tree_size
from adcore_symbolic.errors import ExpressionTooLargeError
from adcore_symbolic.functions import stop_gradient

# The largest closed form `Program.closed_form` builds for reading.
CLOSED_FORM_NODES = 100_000

# The partial derivatives of the definitions differentiated lately, by (expression, its symbol,
# the known symbols it uses): what they are depends on nothing else, and an op checked on several
# samples, dtypes and derivatives traces the same definitions each time (over half of them in
# the conformance report). Sympy expressions are immutable, so an entry never goes stale.
_PARTIALS: dict = {}
PARTIALS_KEPT = 4096


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
        # evaluated (the chain rule builds its sums and products unevaluated), and each
        # where-branch's adjoint, its own Piecewise in the program, folded into one to read
        return [_folded(e.xreplace(full).doit()) for e in exprs]

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


def _folded(expr: Any) -> Any:
    return sp.piecewise_fold(expr) if expr.has(sp.Piecewise) else expr


def _tree_size(expr: Any, sizes: dict) -> int:
    """Nodes of expr's tree with each defined symbol counted as its closed form (memoized)."""
    known = sizes.get(expr)
    if known is not None:
        return known
    size = 1 + sum(_tree_size(a, sizes) for a in expr.args)
    if expr.args:
        sizes[expr] = size
    return size


def differentiate(
    outputs: Sequence[Any],
    inputs: Sequence[sp.Symbol],
    taken: Sequence[sp.Symbol],
    budget: WorkBudget | None = None,
) -> Program:
    """The program computing `outputs`, given in closed form, and d output / d input for
    every pair: sympy.cse names their common subexpressions, the chain rule runs through
    them, and sympy.cse runs again over the result.

    `taken` are symbols the program must not reuse as names (every symbol in the trace).
    """
    avoid = set(taken) | set(inputs)
    outputs = [sp.sympify(e) for e in outputs]
    primal, values = sp.cse(outputs, symbols=fresh_names("t", avoid), order="none")
    program = chain_rule(primal, values, inputs, fresh_names("b", avoid), budget or WorkBudget(10**18))
    return _eliminate_common(program, fresh_names("c", avoid))


def chain_rule(
    definitions: Sequence[tuple[sp.Symbol, Any]],
    outputs: Sequence[Any],
    inputs: Sequence[sp.Symbol],
    names: Iterator[sp.Symbol],
    budget: WorkBudget,
    origin: dict | None = None,
) -> Program:
    """The program computing `outputs` and d output / d input for every pair, from
    `definitions` (symbol = expression, in order, each using inputs and earlier symbols).

    Each definition is differentiated once, by the symbols it uses, and each output's
    backward sweep visits only the definitions it reaches, so the work is linear in the
    definitions' size; `budget` counts it and `origin` (symbol -> op name) names the op at
    which it ran out. Adjoints get names from `names`.
    """
    sweep = _Sweep(definitions, inputs, budget, origin or {}, names)
    derivatives = [sweep.run(sp.sympify(value)) for value in outputs]
    return Program(
        list(definitions) + sweep.adjoint_definitions, [sp.sympify(v) for v in outputs], derivatives
    )


class _Sweep:
    """The backward sweeps of one program: partial derivatives of each definition (cached
    across outputs) and the adjoint definitions the sweeps have made."""

    def __init__(self, definitions, inputs, budget, origin, names) -> None:
        self.definitions = list(definitions)
        self.index = {t: i for i, (t, _) in enumerate(self.definitions)}
        self.inputs = list(inputs)
        self.known = _active(self.definitions, self.inputs)
        self.budget, self.origin, self.names = budget, origin, names
        self.partials: dict = {}
        self.adjoint_definitions: list[tuple[sp.Symbol, Any]] = []

    def run(self, value: Any) -> list[Any]:
        """d value / d input for each input: adjoints pushed back from value, latest definition first."""
        adjoints: dict = {}
        pending: list[int] = []

        def push(s: Any, term: Any) -> None:
            if s not in adjoints:
                adjoints[s] = []
                if s in self.index:
                    heapq.heappush(pending, -self.index[s])
            adjoints[s].append(term)

        if value in self.known:
            push(value, sp.S.One)
        else:
            for s, d in self._partials_of(value, None, "the output").items():
                push(s, d)
        while pending:
            t, _ = self.definitions[-heapq.heappop(pending)]
            bar = self._named(_add(adjoints.pop(t)))
            if bar == 0:
                continue
            for s, (d, size) in self._cached_partials(t).items():
                self.budget.charge(size, self.origin.get(t, str(t)), "differentiating")
                term = _times(bar, d)
                if term != 0:
                    push(s, term)
        return [_add(adjoints.get(x, ())) for x in self.inputs]

    def _cached_partials(self, t: sp.Symbol) -> dict:
        known = self.partials.get(t)
        if known is None:
            expr = self.definitions[self.index[t]][1]
            partials = self._partials_of(expr, t, self.origin.get(t, str(t)))
            known = self.partials[t] = {s: (d, tree_size(d) + 1) for s, d in partials.items()}
        return known

    def _partials_of(self, expr: Any, t: sp.Symbol | None, op: str) -> dict:
        """{s: d expr / d s} for the known symbols s expr uses, all from one walk of expr, with
        `expr` itself read as its symbol t in them (exp' = exp, tanh' = 1 - tanh**2)."""
        key = (expr, t, frozenset(expr.atoms(sp.Symbol) & self.known))
        charges = [tree_size(expr)]
        done = _PARTIALS.get(key)
        if done is not None:
            partials, charges = done
            for n in charges:  # the work it took, counted again: the budget ends where it would
                self.budget.charge(n, op, "differentiating")
            return partials
        self.budget.charge(charges[0], op, "differentiating")

        def charge(n: int) -> None:
            charges.append(n)
            self.budget.charge(n, op, "differentiating")

        out: dict = {}
        _local_gradient(expr, sp.S.One, self.known, out, charge, {expr: t} if t is not None else {})
        partials = {s: _selected(d) for s, d in ((s, _add(ds)) for s, ds in out.items()) if d != 0}
        if len(_PARTIALS) >= PARTIALS_KEPT:
            _PARTIALS.clear()
        _PARTIALS[key] = partials, tuple(charges)
        return partials

    def _named(self, bar: Any) -> Any:
        """bar with its compound values named. A Piecewise keeps its branches, and so does
        an Add's Piecewise terms: an untaken where-branch's partial (1/x at x = 0) then
        multiplies a literal 0 in its own branch, never a named 0 (0 * inf = nan)."""
        if bar.is_Atom:
            return bar
        if isinstance(bar, sp.Piecewise):
            return sp.Piecewise(*((self._named(v), c) for v, c in bar.args))
        if bar.is_Add and any(isinstance(a, sp.Piecewise) for a in bar.args):
            plain = _add([a for a in bar.args if not isinstance(a, sp.Piecewise)])
            guarded = [self._named(a) for a in bar.args if isinstance(a, sp.Piecewise)]
            return _add([self._named(plain), *guarded])
        name = next(self.names)
        self.adjoint_definitions.append((name, bar))
        return name


def _selected(d: Any) -> Any:
    """A partial with a step factor (Heaviside, sign, a 0/1 weight, a tie's Piecewise) as a
    Piecewise with a literal 0 where a step is 0: the chain rule pushes the adjoints below into
    its branches (`_times`, `_named`), so an inf or nan met there (log's 1/x at x = 0) multiplies
    that literal 0 in an untaken branch, never a computed 0 (0 * inf = nan), as forward and reverse
    select (adcore.extend.times_step)."""
    if d.is_Add:
        return _add([_selected(term) for term in d.args])
    if isinstance(d, sp.Piecewise):  # has its literal 0 branch already (a where's partial)
        return d
    steps = [f for f in (d.args if d.is_Mul else (d,)) if _is_step(f)]
    if not steps:
        return d
    zero = sp.Or(*(sp.Eq(f, 0, evaluate=False) for f in steps), evaluate=False)
    return sp.Piecewise((0, zero), (d, True), evaluate=False)


def _is_step(f: Any) -> bool:
    """f is a derivative that is a step: 0 on a region where its op ignores an input."""
    if isinstance(f, (sp.Heaviside, sp.sign)) or getattr(f, "step", False):
        return True
    return isinstance(f, sp.Piecewise) and any(v == 0 for v, _ in f.args)


def _live_symbols(expr: Any, known: set) -> set:
    """The known symbols expr uses outside stop_gradient (inside one they have no derivative:
    a where condition or max-pool weight of a non-differentiable input is never diffed)."""
    found, stack = set(), [expr]
    while stack:
        e = stack.pop()
        if e in known:
            found.add(e)
        elif not isinstance(e, stop_gradient):
            stack.extend(e.args)
    return found


def _active(definitions: Sequence[tuple[sp.Symbol, Any]], inputs: Sequence[sp.Symbol]) -> set:
    """The inputs and the definitions that depend on them, except through a stop_gradient:
    the symbols the chain rule differentiates by (the rest are constants to it)."""
    active = set(inputs)
    for t, expr in definitions:
        if not isinstance(expr, stop_gradient) and not active.isdisjoint(expr.free_symbols):
            active.add(t)
    return active


def _times(bar: Any, d: Any) -> Any:
    """bar * d, with the product pushed into the branches of a Piecewise on either side."""
    if isinstance(bar, sp.Piecewise):
        return sp.Piecewise(*((_times(v, d), c) for v, c in bar.args))
    if bar.is_Add and any(isinstance(a, sp.Piecewise) for a in bar.args):
        return _add([_times(a, d) for a in bar.args])
    if isinstance(d, sp.Piecewise):
        return sp.Piecewise(*((_times(bar, v), c) for v, c in d.args))
    if d.is_Add and any(isinstance(a, sp.Piecewise) for a in d.args):
        return _add([_times(bar, a) for a in d.args])
    return _mul([bar, d])


# The chain rule's own arithmetic builds unevaluated sums and products: sympy's evaluation
# (flattening, sorting, assumption queries on every new node) costs milliseconds a node and
# finds nothing to simplify in products of symbols; zeros and ones are dropped here instead.


# (`_from_args` with is_commutative=True: every expression here is real, and asking each new
# node whether it commutes runs sympy's whole fact deduction)


def _add(terms: Sequence[Any]) -> Any:
    terms = [t for t in terms if t is not sp.S.Zero]
    if len(terms) < 2:
        return terms[0] if terms else sp.S.Zero
    return sp.Add._from_args(terms, True)


def _mul(factors: Sequence[Any]) -> Any:
    if any(f is sp.S.Zero for f in factors):
        return sp.S.Zero
    # numbers multiplied out and put first, as sympy would: -b prints as one negation
    coefficient = functools.reduce(operator.mul, [f for f in factors if f.is_Number], sp.S.One)
    factors = [f for f in factors if not f.is_Number]
    if coefficient is not sp.S.One:
        factors.insert(0, coefficient)
    if len(factors) < 2:
        return factors[0] if factors else sp.S.One
    return sp.Mul._from_args(factors, True)


def _local_gradient(
    expr: Any, bar: Any, known: set, out: dict, charge: Callable[[int], None], named: dict
) -> None:
    """Add bar * d expr / d s to out[s] (a list of terms) for each known symbol s in expr: one
    walk down expr, so a sum or mean of n terms costs n, not n per symbol. Sums, products,
    constant powers and functions by their rules (fdiff), a function's own value in
    its derivative read as its symbol (`named`: exp' = exp, tanh' = 1 - tanh**2); anything
    else (Piecewise, Max, ...) by sympy.diff, once per symbol it uses."""
    if expr in known:
        out.setdefault(expr, []).append(bar)
        return
    symbols = _live_symbols(expr, known)
    if not symbols:
        return
    if expr.is_Add:
        for a in expr.args:
            _local_gradient(a, bar, known, out, charge, named)
        return
    if expr.is_Mul:
        args = expr.args
        charge(len(args) * len(args))
        for i, a in enumerate(args):
            _local_gradient(a, _mul([bar, *args[:i], *args[i + 1 :]]), known, out, charge, named)
        return
    if expr.is_Pow and expr.exp.is_Number:
        base, n = expr.args
        power = base if n - 1 == 1 else sp.Pow(base, n - 1)
        _local_gradient(base, _mul([bar, n, power]), known, out, charge, named)
        return
    if isinstance(expr, sp.Function) and not expr.has(sp.Piecewise):
        used = [i for i, a in enumerate(expr.args) if a.free_symbols & known]
        outers = [expr.fdiff(i + 1) for i in used]
        if not any(o.has(sp.Derivative, sp.DiracDelta, sp.Subs) for o in outers):
            rebuilt: dict = {}  # shared by the partials: an n-ary max's n ties are rebuilt once, not n times
            for i, outer in zip(used, outers):
                charge(tree_size(outer))
                outer = _replaced(outer, named, rebuilt) if expr in named else outer
                _local_gradient(expr.args[i], _mul([bar, outer]), known, out, charge, named)
            return
    charge(tree_size(expr) * len(symbols))
    for s in symbols:
        d = _derivative(expr, s)
        charge(tree_size(d))
        out.setdefault(s, []).append(_times(bar, d))


def _replaced(expr: Any, rule: dict, rebuilt: dict) -> Any:
    """expr.xreplace(rule), each node it rebuilds kept in `rebuilt` for the next call to reuse."""
    if expr in rule:
        return rule[expr]
    done = rebuilt.get(expr)
    if done is None:
        args = [_replaced(a, rule, rebuilt) for a in expr.args]
        changed = any(new is not old for new, old in zip(args, expr.args))
        done = rebuilt[expr] = expr.func(*args) if changed else expr
    return done


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


def fresh_names(prefix: str, avoid: set) -> Iterator[sp.Symbol]:
    """prefix0, prefix1, ... skipping the names of the symbols in `avoid` (the code knows names only)."""
    names = {str(s) for s in avoid}
    return (sp.Symbol(f"{prefix}{i}", real=True) for i in itertools.count() if f"{prefix}{i}" not in names)


def lines_for(
    definitions: list[tuple[sp.Symbol, Any]], outputs: Sequence[Any]
) -> list[tuple[sp.Symbol, Any]]:
    """The definitions that `outputs` need, directly or through other definitions, in order."""
    need = free_symbols_of([sp.sympify(o) for o in outputs])
    kept = []
    for symbol, expr in reversed(definitions):
        if symbol in need:
            kept.append((symbol, expr))
            need |= expr.free_symbols
    return kept[::-1]


def free_symbols_of(exprs: Sequence[Any]) -> set:
    """The union of the exprs' free_symbols, each subexpression they share visited once (the
    entries of a Jacobian share their adjoints; free_symbols would walk them in each)."""
    found: set = set()
    seen: set = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            if _free_symbols_of_args(type(e)):
                stack.extend(e.args)
            else:  # a symbol, or a node binding some (Lambda, Integral, Subs): its own rule
                found |= e.free_symbols
    return found


@functools.cache
def _free_symbols_of_args(cls: type) -> bool:
    """Whether cls's free_symbols is Basic's: the union of its args'."""
    own = next(k.__dict__["free_symbols"] for k in cls.__mro__ if "free_symbols" in k.__dict__)
    return own is sp.Basic.__dict__["free_symbols"]
