"""From f to a compiled derivative: trace f into sympy, build the derivative program,
compile it to NumPy, and evaluate it on arguments.

Two modes. The elementwise mode traces one symbol per argument and needs f to be
elementwise up to sums (or means) over everything: a loss over many points, whatever
their number. Its derivative is evaluated over the arrays in chunks of CHUNK elements,
which keep the program's temporaries in the CPU cache. The full mode traces one symbol
per element, for everything else (matmul, indexing, axis reductions, array outputs).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy as sp

from adcore import ops
from adcore.backend import check_output
from adcore.core import Tracer, new_trace
from adcore.errors import UnsupportedByBackendError
from adcore.extend import unbroadcast
from adcore_symbolic.budget import WorkBudget
from adcore_symbolic.errors import ExpressionTooLargeError
from adcore_symbolic.printing import compile_numpy
from adcore_symbolic.program import Program, chain_rule, fresh_names, lines_for
from adcore_symbolic.trace import NotElementwise, Sym, SymbolicTrace, real_symbol

# Elements per chunk in the elementwise mode: 2**14 float64 temporaries (128 KiB each)
# stay in a 2 MiB L2 cache; measured best of 2**12..2**16 by benchmarks/bench_symbolic.py.
CHUNK = 2**14


def is_traced(a: Any) -> bool:
    """Whether an argument becomes symbols: a float array or a traced value."""
    return isinstance(a, (np.ndarray, np.generic, Tracer)) and np.dtype(a.dtype).kind == "f"


def derive(
    f: Callable[..., Any],
    args: Sequence[Any],
    argnums: Sequence[int],
    *,
    want_value: bool,
    max_nodes: int,
) -> Derivation:
    """f's derivative with respect to args[argnums], ready to evaluate: elementwise if f allows."""
    names = argument_names(f, len(args))
    traced = [i for i, a in enumerate(args) if is_traced(a)]
    why_full = ""
    if any(np.size(args[i]) > 1 for i in traced):
        try:
            return ElementwiseDerivation(f, args, argnums, names, traced, want_value, max_nodes)
        except NotElementwise as e:
            why_full = e.what
    return FullDerivation(f, args, argnums, names, traced, want_value, max_nodes, why_full)


class Derivation:
    """The derivative of f at given argument shapes: its sympy expressions, the program
    (CSE form) that computes it, and that program compiled to NumPy.

    - `value`: f's expression; `derivatives`: one per argnum, d f / d args[i] in closed
      form (every definition substituted back; a sympy Array for an array).
    - `program`: the CSE form, `program.definitions` then `program.derivatives`.
    - `source`: the generated NumPy code; `latex()`; `str()` shows everything.
    - `work`: the sympy nodes built to derive it (what `max_nodes` bounds).
    """

    elementwise = False
    source = ""
    value: Any
    derivatives: tuple
    program: Program

    @property
    def cse(self) -> tuple[list, list]:
        """(definitions, derivative outputs): the program as sympy.cse returns it."""
        return self.program.definitions, [d for row in self.program.derivatives for d in row]

    def latex(self) -> str:
        return ",\\quad ".join(
            f"\\frac{{\\partial f}}{{\\partial {sp.latex(real_symbol(self.names[i]))}}} = {sp.latex(d)}"
            for i, d in zip(self.argnums, self.derivatives)
        )

    def __str__(self) -> str:
        try:
            lines = [f"f = {self.value}"] + self._sum_lines()
            lines += [f"d f / d {self.names[i]} = {d}" for i, d in zip(self.argnums, self.derivatives)]
        except ExpressionTooLargeError as e:
            lines = [f"(no closed form shown: {e})"]
        lines += ["", "computed as:"] + [f"    {s} = {e}" for s, e in self.program.definitions]
        outputs = [d for row in self.program.derivatives for d in row]
        return "\n".join(lines + [f"    derivatives: {outputs}"])

    def _sum_lines(self) -> list[str]:
        return []


class FullDerivation(Derivation):
    """One symbol per element of every float array argument."""

    def __init__(self, f, args, argnums, names, traced, want_value, max_nodes, why_full=""):
        self.names, self.argnums = names, tuple(argnums)
        count = sum(int(np.size(args[i])) for i in traced)
        if count > max_nodes:
            reason = f"f is not elementwise up to a sum ({why_full}), so " if why_full else ""
            raise ExpressionTooLargeError(
                f"backend 'symbolic': {reason}tracing it takes one sympy symbol per array element, "
                f"{count} of them, over max_nodes={max_nodes}. Use another backend (reverse, forward or "
                "numeric) for arrays this large, or raise the guard with max_nodes=..."
            )
        self.symbols = {i: _element_symbols(names[i], np.shape(args[i])) for i in traced}
        taken = [s for array in self.symbols.values() for s in array.flat]
        budget = WorkBudget(max_nodes)
        budget.charge(count, "the arguments", "tracing")
        out, trace = _trace(f, args, self.symbols, False, budget, taken)
        exprs = out.value if isinstance(out, Sym) else np.asarray(out, dtype=object)
        self.out_shape, self.dtype = exprs.shape, _dtype(out)
        self.arg_shapes = [np.shape(args[i]) for i in self.argnums]
        inputs = [s for i in self.argnums for s in self.symbols[i].flat]
        if exprs.size * len(inputs) > max_nodes:
            raise ExpressionTooLargeError(
                f"backend 'symbolic': the Jacobian has {exprs.size} x {len(inputs)} entries, each an "
                f"expression, over max_nodes={max_nodes}. Use another backend (reverse, forward or "
                "numeric) for Jacobians this large, or raise the guard with max_nodes=..."
            )
        self.program = _program(trace, list(exprs.flat), inputs, taken, budget)
        self.want_value = want_value
        outputs = (self.program.values if want_value else []) + [
            d for row in self.program.derivatives for d in row
        ]
        self._fn, self.source = compile_numpy(taken, lines_for(self.program.definitions, outputs), outputs)
        self.work = budget.spent

    @property
    def value(self) -> Any:
        return _shaped(self.program.closed_form(self.program.values), self.out_shape)

    @property
    def derivatives(self) -> tuple:
        rows = [self.program.closed_form(row) for row in self.program.derivatives]
        flat = np.array(rows, dtype=object).reshape(len(rows), -1)
        out, offset = [], 0
        for shape in self.arg_shapes:
            size = int(np.prod(shape))
            out.append(_shaped(list(flat[:, offset : offset + size].flat), self.out_shape + shape))
            offset += size
        return tuple(out)

    def evaluate(self, args: Sequence[Any]) -> tuple[Any, tuple]:
        elements = [e for i in self.symbols for e in _elements(args[i])]
        results = self._fn(*elements)
        n_out = int(np.prod(self.out_shape))
        value = _assemble(results[:n_out], self.out_shape, self.dtype) if self.want_value else None
        n_in = sum(int(np.prod(s)) for s in self.arg_shapes)
        table = _assemble(results[-n_out * n_in :] if n_out * n_in else [], (n_out, n_in), self.dtype)
        jacobians, offset = [], 0
        for shape in self.arg_shapes:
            size = int(np.prod(shape))
            block = table[:, offset : offset + size] if size != n_in else table
            jacobians.append(ops.reshape(block, shape=self.out_shape + shape))
            offset += size
        return value, tuple(jacobians)


class ElementwiseDerivation(Derivation):
    """One symbol per argument, standing for each of its elements; f is elementwise up to
    sums S0, S1, ... over everything, and its output h(S0, S1, ...) is a scalar, so

        d f / d x = sum over k of  dh/dS_k * (d g_k / d x, summed back to x's shape)

    where g_k is the expression S_k sums, evaluated elementwise over its array.
    """

    elementwise = True

    def __init__(self, f, args, argnums, names, traced, want_value, max_nodes):
        self.names, self.argnums = names, tuple(argnums)
        self.traced = traced
        symbols = {i: np.asarray(real_symbol(names[i]), dtype=object) for i in traced}
        taken = [s.item() for s in symbols.values()]
        budget = WorkBudget(max_nodes)
        out, trace = _trace(f, args, symbols, True, budget, taken)
        if int(np.prod(np.shape(out))) != 1:
            raise NotElementwise(f"an output of shape {np.shape(out)}")
        self.out_shape, self.dtype = np.shape(out), _dtype(out)
        h = out.value.item() if isinstance(out, Sym) else sp.sympify(np.asarray(out).item())
        self.sums = trace.sums
        self.constants = trace.constants
        sum_symbols = [S for S, _, _, _ in self.sums]
        xs = [symbols[i].item() for i in self.argnums]
        arg_symbols = [symbols[i].item() for i in traced]
        constant_symbols = [c for c, _ in self.constants]
        taken = arg_symbols + constant_symbols + sum_symbols
        # outputs 0..m-1 are the summed g_k, output m is h; inputs are the argnums' symbols, then the S_k
        outputs = [g for _, g, _, _ in self.sums] + [h]
        self.program = _program(trace, outputs, xs + sum_symbols, taken, budget)
        *g_rows, h_row = self.program.derivatives
        self.scales = h_row[len(xs) :]  # dh/dS_k as expressions (1 for a plain sum)
        # h's outputs: f's value if wanted, dh/dS_k, then dh/dx_j directly
        h_outputs = ([self.program.values[-1]] if want_value else []) + self.scales + h_row[: len(xs)]
        h_lines = lines_for(self.program.definitions, h_outputs)
        # the sums' values are needed for f's value, or when h's derivatives depend on them
        self.need_sums = want_value or bool(set(sum_symbols) & _free(h_lines, h_outputs))
        self.want_value = want_value
        self._g_fns = []
        sources = []
        for k, row in enumerate(g_rows):
            outputs = ([self.program.values[k]] if self.need_sums else []) + row[: len(xs)]
            fn, source = compile_numpy(
                arg_symbols + constant_symbols, lines_for(self.program.definitions, outputs), outputs
            )
            self._g_fns.append(fn)
            sources.append(f"# S{k}: over arrays of shape {self.sums[k][2]}\n{source}")
        self._h_fn, source = compile_numpy(sum_symbols + arg_symbols + constant_symbols, h_lines, h_outputs)
        self.source = "\n".join(sources + [f"# the output, from the sums\n{source}"])
        self.work = budget.spent
        self.arg_shapes = [np.shape(args[i]) for i in self.argnums]

    @property
    def value(self) -> Any:
        return self.program.closed_form(self.program.values[-1:])[0]

    @property
    def derivatives(self) -> tuple:
        """d f / d x for each element x, with S_k standing for the sums (see `sum_exprs`)."""
        *g_rows, h_row = self.program.derivatives
        n = len(self.argnums)
        out = []
        for j in range(n):
            total = h_row[j] + sp.Add(*(h_row[n + k] * row[j] for k, row in enumerate(g_rows)))
            out.append(self.program.closed_form([total])[0])
        return tuple(out)

    def _sum_lines(self) -> list[str]:
        shapes = {S: shape for S, _, shape, _ in self.sums}
        lines = [f"{S} = sum of {g} over arrays of shape {shapes[S]}" for S, g in self.sum_exprs.items()]
        return lines + ["(below: per element, summed back to each argument's shape)"]

    @property
    def sum_exprs(self) -> dict:
        """S_k: the expression it sums over its array, element by element."""
        closed = self.program.closed_form(self.program.values[:-1])
        return {S: g for (S, _, _, _), g in zip(self.sums, closed)}

    def evaluate(self, args: Sequence[Any]) -> tuple[Any, tuple]:
        inputs = [args[i] for i in self.traced] + [c for _, c in self.constants]
        n = len(self.argnums)
        sums, parts = [], []
        for k, (fn, (_, _, shape, dtype)) in enumerate(zip(self._g_fns, self.sums)):
            results = evaluate_over(fn, inputs, shape, dtype)
            if self.need_sums:
                sums.append(ops.sum(results.pop(0)))
            # an argument a sum does not read need not broadcast with the array it sums over
            row = self.program.derivatives[k]
            parts.append(
                [None if d == 0 else unbroadcast(r, args[i]) for d, r, i in zip(row, results, self.argnums)]
            )
        # without need_sums, the lines computing h's outputs do not read the sums
        h = self._h_fn(*(sums or [None] * len(self.sums)), *inputs)
        value = h.pop(0) if self.want_value else None
        scales, direct = h[: len(self.sums)], h[len(self.sums) :]
        jacobians = []
        for j in range(n):
            total = direct[j] if self.program.derivatives[-1][j] != 0 else None
            for k, part in enumerate(parts):
                if part[j] is None:
                    continue
                term = part[j] if self.scales[k] == 1 else scales[k] * part[j]
                total = term if total is None else total + term
            if total is None or np.shape(total) != self.arg_shapes[j]:
                zero = np.zeros(self.arg_shapes[j], dtype=self.dtype)
                total = zero if total is None else total + zero
            jacobians.append(ops.reshape(total, shape=self.out_shape + self.arg_shapes[j]))
        if value is not None and not isinstance(value, Tracer):
            value = np.asarray(value, dtype=self.dtype).reshape(self.out_shape)
        return value, tuple(jacobians)


def evaluate_over(fn: Callable[..., list], inputs: list, shape: tuple, dtype: Any) -> list:
    """fn's outputs over arrays of `shape`, broadcast to it; in chunks of rows for plain arrays."""
    size = int(np.prod(shape))
    if size <= CHUNK or any(isinstance(a, Tracer) for a in inputs):
        return [_broadcast(r, shape, dtype) for r in fn(*inputs)]
    rows = max(1, CHUNK // max(1, size // shape[0]))
    along = [np.ndim(a) == len(shape) and np.shape(a)[0] == shape[0] for a in inputs]
    outs = None
    for start in range(0, shape[0], rows):
        part = [a[start : start + rows] if split else a for a, split in zip(inputs, along)]
        results = fn(*part)
        if outs is None:
            outs = [np.empty(shape, dtype=dtype) for _ in results]
        for out, r in zip(outs, results):
            out[start : start + rows] = r
    return outs


def argument_names(f: Callable[..., Any], n: int) -> list[str]:
    """Names for f's positional arguments: its parameter names, else x (one) or x0, x1, ..."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not named and n == 1:
        return ["x"]
    fill = (f"x{i}" for i in range(n + len(named)) if f"x{i}" not in named)
    return (named + [next(fill) for _ in range(max(0, n - len(named)))])[:n]


def _trace(f, args, symbols, elementwise, budget, taken) -> tuple[Any, SymbolicTrace]:
    """f traced on Syms standing for args[i] for each i in `symbols`: its output, checked, and the trace."""
    names = {str(s) for s in taken}
    with new_trace(SymbolicTrace, elementwise=elementwise, budget=budget, taken=names) as trace:
        inputs = list(args)
        for i, expr in symbols.items():
            inputs[i] = Sym(expr, np.shape(args[i]), args[i].dtype, trace)
        out = f(*inputs)
    # refused before sympy works on it: a bool or a string has no expression to differentiate
    check_output(out, "symbolic", scalar=False)
    if isinstance(out, Tracer) and not (isinstance(out, Sym) and out._trace is trace):
        raise UnsupportedByBackendError(
            "backend 'symbolic': f returned a value another transformation traces"
        )
    return out, trace


def _program(trace: SymbolicTrace, outputs: list, inputs: list, taken: list, budget: WorkBudget) -> Program:
    """The derivative program of the traced outputs: the trace's definitions, then the adjoints."""
    avoid = set(taken) | {t for t, _ in trace.definitions}
    outputs = [sp.sympify(e) for e in outputs]
    return chain_rule(trace.definitions, outputs, inputs, fresh_names("b", avoid), budget, trace.origin)


def _dtype(out: Any) -> np.dtype:
    return out.dtype if isinstance(out, Tracer) else np.result_type(out)


def _element_symbols(name: str, shape: tuple) -> np.ndarray:
    """x for a 0-d argument; x[0], x[1, 2], ... for the elements of an array."""
    if shape == ():
        return np.asarray(real_symbol(name), dtype=object)
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        out[index] = real_symbol(f"{name}[{', '.join(map(str, index))}]")
    return out


def _elements(a: Any) -> list:
    """The elements of an argument, one by one: NumPy scalars, or 0-d traced values."""
    if isinstance(a, Tracer):
        flat = ops.reshape(a, shape=(-1,))
        return [ops.getitem(flat, index=k) for k in range(flat.shape[0])]
    return list(np.asarray(a).reshape(-1))


def _assemble(results: Sequence[Any], shape: tuple, dtype: Any) -> Any:
    """Scalar results as one array of `shape`: stacked as an op when some are traced."""
    if any(isinstance(r, Tracer) for r in results):
        parts = [r if isinstance(r, Tracer) else np.asarray(r, dtype=dtype) for r in results]
        return ops.reshape(ops.stack(parts), shape=shape)
    return np.array(results, dtype=dtype).reshape(shape)


def _broadcast(r: Any, shape: tuple, dtype: Any) -> Any:
    if isinstance(r, Tracer):
        return r if r.shape == shape else ops.broadcast_to(r, shape=shape)
    return np.broadcast_to(np.asarray(r, dtype=dtype), shape)


def _shaped(exprs: list, shape: tuple) -> Any:
    """One expression for a 0-d shape, else a sympy Array."""
    return sp.sympify(exprs[0]) if shape == () else sp.Array(exprs, shape)


def _free(lines: list, outputs: list) -> set:
    return set().union(*(sp.sympify(e).free_symbols for e in [e for _, e in lines] + outputs))
