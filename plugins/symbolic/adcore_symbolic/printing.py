"""Compiling sympy expressions to NumPy code that also runs on adcore's traced values.

sympy's NumPyPrinter is kept, except where its code would call a NumPy function adcore has
no op for (numpy.select, numpy.heaviside, numpy.amax) or would round a float literal.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from adcore import ops


class AdcoreNumPyPrinter(NumPyPrinter):
    def _print_Float(self, expr) -> str:
        return repr(float(expr))  # every bit of the double, where sympy prints 15 digits

    def _print_ComplexInfinity(self, expr) -> str:
        # 1/0 in a branch numpy.where does not take (log(relu(x))'s x <= 0): no real sign, so nan
        return "numpy.nan"

    def _print_Piecewise(self, expr) -> str:
        code = "numpy.nan"
        for value, condition in reversed(expr.args):
            if condition == sp.true:
                code = self._print(value)
            else:
                code = f"numpy.where({self._print(condition)}, {self._print(value)}, {code})"
        return code

    def _print_Heaviside(self, expr) -> str:
        x = self._print(expr.args[0])
        at_zero = expr.args[1] if len(expr.args) > 1 else sp.S.Half
        if at_zero == sp.S.Half:  # ties split equally: maximum/minimum (docs/conventions.md)
            return f"(0.5*numpy.sign({x}) + 0.5)"
        return f"numpy.where(numpy.greater({x}, 0), 1, numpy.where(numpy.less({x}, 0), 0, {self._print(at_zero)}))"

    def _print_Max(self, expr) -> str:
        return self._nested("maximum", expr.args)

    def _print_Min(self, expr) -> str:
        return self._nested("minimum", expr.args)

    # And/Or as nested binary calls: sympy's logical_or.reduce((a, b)) would first stack its
    # arguments into one array, which a traced value (a Hessian's outer pass) cannot become
    def _print_And(self, expr) -> str:
        return self._nested("logical_and", expr.args)

    def _print_Or(self, expr) -> str:
        return self._nested("logical_or", expr.args)

    def _nested(self, func: str, args: Sequence[Any]) -> str:
        code = self._print(args[0])
        for a in args[1:]:
            code = f"numpy.{func}({code}, {self._print(a)})"
        return code


def compile_numpy(
    inputs: Sequence[Any], definitions: list[tuple[Any, Any]], outputs: list[Any]
) -> tuple[Callable[..., list], str]:
    """A function of `inputs` returning `outputs` as a list, after the `definitions`
    (name = expression lines, in order), and its source code."""
    rename = _code_names(inputs)
    if rename:
        inputs = [rename.get(s, s) for s in inputs]
        definitions = [(s, e.xreplace(rename)) for s, e in definitions]
        outputs = [sp.sympify(e).xreplace(rename) for e in outputs]
    fn = sp.lambdify(
        list(inputs),
        list(outputs),
        modules=[{"ops": ops}, "numpy"],
        printer=AdcoreNumPyPrinter,
        cse=lambda exprs: (definitions, exprs),
        docstring_limit=0,
    )
    return fn, inspect.getsource(fn)


def _code_names(inputs: Sequence[Any]) -> dict:
    """New symbols for inputs whose names cannot be Python parameters: element symbols named
    like x[0, 1] become x_0_1, and names of the code's own modules (numpy, ops) get a _."""
    taken = {s.name for s in inputs}
    rename = {}
    for s in inputs:
        if s.name.isidentifier() and s.name not in ("numpy", "ops"):
            continue
        name = re.sub(r"\W+", "_", s.name).strip("_") or "_"
        while name in taken or name in ("numpy", "ops"):
            name += "_"
        taken.add(name)
        rename[s] = sp.Symbol(name, **s.assumptions0)
    return rename
