"""Compiling sympy expressions to NumPy code that also runs on adcore's traced values.

sympy's NumPyPrinter is kept, except where its code would call a NumPy function adcore has
no op for (numpy.select, numpy.heaviside, numpy.amax) or would round a float literal.
"""

from __future__ import annotations

import keyword
import linecache
import re
from collections.abc import Callable, Sequence
from typing import Any

import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from adcore import ops
from adcore_symbolic import checks


class AdcoreNumPyPrinter(NumPyPrinter):
    _default_settings = {**NumPyPrinter._default_settings, "rename": {}}

    def __init__(self, settings=None) -> None:
        super().__init__(settings)
        # each node's code, printed once per printer: the lines and outputs of one program share
        # subexpressions (a Jacobian's entries repeat their adjoints' products)
        self._printed: dict = {}
        self._re_or_subs: dict = {}
        # the commonest nodes straight to their method: sympy's _print tries a print method
        # and walks the class's MRO for every node, as long as printing the node itself
        self._fast = {sp.Symbol: self._print_Symbol, sp.Float: self._print_Float}
        self._fast |= {sp.Add: self._print_Add, sp.Mul: self._print_Mul}

    def _print(self, expr, **kwargs) -> str:
        # sympy nodes only: Python's 1.0 and 1 are one key, but print apart
        if kwargs or not isinstance(expr, sp.Basic):
            return super()._print(expr, **kwargs)
        code = self._printed.get(expr)
        if code is None:
            fast = self._fast.get(type(expr))
            code = self._printed[expr] = fast(expr) if fast is not None else super()._print(expr)
        return code

    def _handle_UnevaluatedExpr(self, expr):
        # sympy rebuilds each expression to take the re() off real UnevaluatedExprs before printing
        # it: most of ours have no re() at all, and finding that out costs far less than a rebuild
        return super()._handle_UnevaluatedExpr(expr) if self.has_re_or_subs(expr) else expr

    def has_re_or_subs(self, expr) -> bool:
        """Whether expr has an re() or a Subs node: the two that sympy's printing and lambdify
        rebuild expressions for (memoized: the expressions of one program share subexpressions)."""
        known = self._re_or_subs.get(expr)
        if known is None:
            known = isinstance(expr, (sp.re, sp.Subs)) or any(self.has_re_or_subs(a) for a in expr.args)
            self._re_or_subs[expr] = known
        return known

    def _print_Symbol(self, expr) -> str:
        return self._settings["rename"].get(expr) or super()._print_Symbol(expr)

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

    # Sums and products with their terms in stored order and a factor parenthesized when it is a
    # sum, product or negative number: sympy's own _print_Add and _print_Mul sort terms and query
    # signs and precedences, most of the time of compiling a large program
    def _print_Add(self, expr) -> str:
        code = ""
        # a - b, not a + (-1)*b or -b + a: one NumPy operation, not two
        for a in sorted(expr.args, key=lambda a: _negated(a) is not None):
            negated = _negated(a)
            if negated is None:
                code += f" + {self._print(a)}" if code else self._print(a)
            else:
                code += f" - {self._factor(negated) if negated.is_Add else self._print(negated)}"
        return code if not code.startswith(" - ") else "-" + code[3:]

    def _print_Mul(self, expr) -> str:
        negated = _negated(expr)
        if negated is not None:
            return f"-{self._factor(negated) if negated.is_Add or negated.is_Mul else self._print(negated)}"
        above, below = [], []
        for a in expr.args:
            if a.is_Pow and a.exp.is_Number and a.exp.is_negative:  # x/y, as sympy prints it
                below.append(a.base if a.exp == -1 else sp.Pow(a.base, -a.exp, evaluate=False))
            else:
                above.append(a)
        code = "*".join(self._factor(a) for a in above) or "1"
        if len(below) == 1:
            return f"{code}/{self._factor(below[0])}"
        return f"{code}/({'*'.join(self._factor(a) for a in below)})" if below else code

    def _factor(self, expr) -> str:
        code = self._print(expr)
        return f"({code})" if expr.is_Add or expr.is_Mul or (expr.is_Number and expr.is_negative) else code

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


def _negated(term: Any) -> Any:
    """-term if term is a product whose first factor is a negative number (None otherwise)."""
    if not (term.is_Mul and term.args[0].is_Number and term.args[0].is_negative):
        return None
    coefficient, rest = -term.args[0], term.args[1:]
    factors = rest if coefficient == 1 else (coefficient, *rest)
    return factors[0] if len(factors) == 1 else sp.Mul._from_args(factors, True)


# The programs compiled lately, by their inputs, definitions and outputs: an op checked on several
# samples, dtypes and derivatives compiles the same program each time (two in three in the
# conformance report). Its code depends on nothing else, and sympy expressions are immutable.
_COMPILED: dict = {}
COMPILED_KEPT = 1024


def compile_numpy(
    inputs: Sequence[Any], definitions: list[tuple[Any, Any]], outputs: list[Any]
) -> tuple[Callable[..., list], str]:
    """A function of `inputs` returning `outputs` as a list, after the `definitions`
    (name = expression lines, in order), and its source code."""
    outputs = [sp.sympify(e) for e in outputs]
    # with each definition's type: a Python 1 and 1.0 are equal keys, but print apart
    key = (tuple(inputs), tuple((s, type(e), e) for s, e in definitions), tuple(outputs))
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = _compile(inputs, definitions, outputs)
        if len(_COMPILED) >= COMPILED_KEPT:
            _COMPILED.clear()
        _COMPILED[key] = compiled
    return compiled


def _compile(
    inputs: Sequence[Any], definitions: list[tuple[Any, Any]], outputs: list[Any]
) -> tuple[Callable[..., list], str]:
    rename = _code_names(inputs)
    # renamed as they are printed: substituting into the expressions would rebuild each one
    printer = AdcoreNumPyPrinter({"rename": {s: r.name for s, r in rename.items()}})
    parameters = [rename.get(s, s) for s in inputs]
    # the returned list printed here as lambdify prints it, which would first rebuild every
    # output to name the points of its Subs (only sympy's unevaluated derivatives have one), or
    # substitute Dummies for parameters that are Dummies or keywords (ours are neither)
    returned: Any = outputs
    if not any(isinstance(p, sp.Dummy) or keyword.iskeyword(p.name) for p in parameters):
        if not any(printer.has_re_or_subs(e) for e in outputs):
            returned = f"[{', '.join(printer.doprint(e) for e in outputs)}]"
    fn = sp.lambdify(
        parameters,
        outputs,
        modules=[{"ops": ops, "checks": checks}, "numpy"],
        printer=printer,
        cse=lambda exprs: (definitions, returned),
        docstring_limit=0,
        use_imps=False,  # no implemented_function here: sympy would walk every expression looking for one
    )
    # the generated file holds just fn (inspect.getsource would tokenize all of it to find that)
    return fn, "".join(linecache.getlines(fn.__code__.co_filename))


def _code_names(inputs: Sequence[Any]) -> dict:
    """New symbols for inputs whose names cannot be Python parameters: element symbols named
    like x[0, 1] become x_0_1, and names of the code's own modules (numpy, ops) get a _."""
    taken = {s.name for s in inputs}
    rename = {}
    for s in inputs:
        if s.name.isidentifier() and s.name not in ("numpy", "ops", "checks"):
            continue
        name = re.sub(r"\W+", "_", s.name).strip("_") or "_"
        while name in taken or name in ("numpy", "ops", "checks"):
            name += "_"
        taken.add(name)
        rename[s] = sp.Symbol(name, **s.assumptions0)
    return rename
