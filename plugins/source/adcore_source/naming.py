"""Names for temporaries: named after what they hold (`sin_x`, `x_times_a`), never clashing with f's."""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

ATOMS = (ast.Name, ast.Constant)
OPERATOR_WORDS = {
    ast.Add: "plus", ast.Sub: "minus", ast.Mult: "times", ast.Div: "over", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and", ast.BitOr: "or",
    ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift", ast.USub: "neg", ast.UAdd: "pos",
    ast.Not: "not", ast.Invert: "invert", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge",
    ast.Eq: "eq", ast.NotEq: "ne", ast.Is: "is", ast.IsNot: "is_not", ast.In: "in", ast.NotIn: "not_in",
}  # fmt: skip
OPERATOR_NOUNS = {
    ast.Add: "sum",
    ast.Sub: "difference",
    ast.Mult: "product",
    ast.Div: "quotient",
    ast.Pow: "power",
}
LONGEST_NAME = 24


class Names:
    """Fresh names for temporaries, named after what they hold and never clashing with `taken`."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_") or "value"
        if base[0].isdigit():
            base = "v" + base
        if base in set(dir(builtins)) | {"self"}:
            base += "_"
        name, k = base, 2
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


def describe(e: ast.expr, method_of: dict[str, tuple[str, str]]) -> str:
    """A short name for the value of a one-operation expression whose operands are atoms."""
    match e:
        case ast.Name(id=n):
            return n
        case ast.Constant(value=v):
            return _constant_word(v)
        case ast.Call(func=ast.Name(id=c), args=args):
            if c in method_of:
                of, attr = method_of[c]
                return f"{attr}_{of}"
            word = c.rsplit("_", 1)[-1] if c.startswith("np_") else c
            first = [describe(a, method_of) for a in args[:1] if isinstance(a, ATOMS)]
            return _short(f"{word}_{first[0]}" if first else word, word)
        case ast.BinOp(left=a, op=op, right=b):
            whole = f"{describe(a, method_of)}_{OPERATOR_WORDS.get(type(op), 'op')}_{describe(b, method_of)}"
            return _short(whole, OPERATOR_NOUNS.get(type(op), OPERATOR_WORDS.get(type(op), "value")))
        case ast.UnaryOp(op=op, operand=a):
            return _short(f"{OPERATOR_WORDS.get(type(op), 'op')}_{describe(a, method_of)}", "value")
        case ast.Compare(left=a, ops=[op], comparators=[b]):
            return _short(
                f"{describe(a, method_of)}_{OPERATOR_WORDS[type(op)]}_{describe(b, method_of)}", "test"
            )
        case ast.Subscript(value=ast.Name(id=n), slice=s):
            index = describe(s, method_of) if isinstance(s, ATOMS) else "part"
            return _short(f"{n}_{index}", f"{n}_part")
        case ast.Attribute(value=ast.Name(id=n), attr=attr):
            return _short(f"{n}_{attr}", attr)
        case ast.Tuple():
            return "pair" if len(e.elts) == 2 else "items"
        case ast.List():
            return "items"
        case ast.Dict():
            return "table"
    return "value"


def _constant_word(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    if isinstance(v, int | float):
        return re.sub(r"\W", "_", repr(v)).replace("-", "minus")
    return "text" if isinstance(v, str) else "constant"


def _short(whole: str, fallback: str) -> str:
    return whole if len(whole) <= LONGEST_NAME else fallback
