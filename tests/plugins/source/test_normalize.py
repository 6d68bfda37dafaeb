"""normalize.normalized: the A-normal form computes exactly what f computes, in the grammar S1..S8.

Each function below is normalized, its normalized source exec'd, and both run on the same inputs:
the values must agree bit for bit (the same NumPy calls in the same order). The grammar check walks
every statement against the Normalized docstring's grammar.
"""

from __future__ import annotations

import ast
import linecache
import math

import numpy as np
import pytest
from adcore_source.errors import SourceTransformError
from adcore_source.normalize import Normalized, normalized
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

X = np.array([0.3, -1.2, 2.5, 0.7])
M = np.arange(6.0).reshape(2, 3) / 7
SCALE = 1.5


def helper(u, v=2.0):
    return u * v + 1


def straight(x, a=2.0):
    y = np.sin(x) * a + np.cos(x * a) / (1 + x**2)
    return -y + np.exp(-abs(y)) - (a - 1) * math.pi


def nested_calls(x):
    return np.sum(np.tanh(np.dot(M, np.log1p(x[:3] ** 2))), axis=0) + np.linalg.norm(x) * SCALE


def displays(x, *rest, k=3):
    pair = (x[0], x[1] * k)
    items = [pair[0], pair[1], len(rest)]
    table = {"a": items[0], "b": items[-1]}
    a, (b, c) = items[0], (items[1], items[2])
    return table["a"] + a * b - c, pair, items, rest


def swap(x):
    a, b = x[0], x[1]
    a, b = b, a * b
    return a - b


def branches(x):
    s = np.sum(x)
    if s > 1 and x[0] < 1:
        y = s * 2
    elif s > 0 or x[1] > 0:
        y = s - 1
    else:
        y = -s
    z = y if y > 0 else 1 - y
    w = 0 < z < 5
    return z + w, not w


def loops(x, n=4):
    total = 0.0
    for i in range(n):
        total = total + x[i % len(x)] * i
    for v in x:
        total += np.sin(v)
    k = 0
    while total > 0.1 and k < 50:
        total = total / 2
        k += 1
    return total, k


def index_loops(xs):
    acc = 0.0
    for i, v in enumerate(xs):
        acc = acc + i * v
    for i, v in enumerate(xs, 2):
        acc = acc - i * v
    for a, b in zip(xs, xs[1:]):
        acc = acc + a * b
    for a, (b, c) in zip(xs, zip(xs[1:], xs[2:])):
        acc = acc + a * b * c
    return acc


def jumps(x):
    out = 0.0
    for i in range(10):
        if i == 1:
            continue
        if i > 6:
            break
        for j in range(3):
            if j == i:
                break
            out = out + x[j] * i
        out = out * 1.01
    if out > 100:
        return out
    n = 0
    while True:
        n += 1
        if n > 3:
            break
    return out + n


def returns_in_loop(x):
    for i in range(len(x)):
        if x[i] > 2:
            return x[i] * i
    return -1.0


def returns_in_branches(x):
    if x[0] > 0:
        return np.sin(x[0])
    else:
        return np.cos(x[0])


def no_return(x):
    x * 2


def comprehensions(x):
    squares = [v * v for v in x if v > 0]
    pairs = [a * b for a in x for b in squares if a < b]
    table = {i: v for i, v in enumerate(x)}
    v = sum(w for w in x)
    return squares, pairs, table, v, np.array([a + 1 for a in x])


def in_place(x):
    y = np.zeros_like(x)
    for i in range(1, len(x)):
        y[i] = y[i - 1] * 0.5 + x[i]
        y[i] += x[i - 1]
    x[0] = 7.0
    x[1:3] *= 2
    return y, x


def lists(x):
    out = []
    for v in x:
        out.append(np.sin(v))
    out.extend([1.0, 2.0])
    return np.array(out), out


def closures(x):
    a = x[0] * 2

    def g(u):
        return u * a + x[1]

    h = lambda u: g(u) * 2  # noqa: E731

    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return g(x[2]) + h(1.0) + fact(4)


def methods(x):
    m = M.sum(axis=0) + x[:3].reshape(3, 1).T.ravel()
    return m.mean() + x.max() - M.shape[0] + m.dtype.itemsize


def user_calls(x):
    return helper(x[0]) + helper(x[1], v=x[2]) + helper(*x[:2])


def strings(x):
    label = f"{x[0]:.3f}-{x[1]!r}"
    return label, len(label)


FUNCTIONS = [
    (straight, (X,)),
    (straight, (X, 0.5)),
    (nested_calls, (X,)),
    (displays, (X, 1, 2)),
    (swap, (X,)),
    (branches, (X,)),
    (branches, (-X,)),
    (branches, (X * 0.01,)),
    (loops, (X,)),
    (index_loops, (X,)),
    (jumps, (X,)),
    (jumps, (X * 100,)),
    (returns_in_loop, (X,)),
    (returns_in_loop, (X * 0,)),
    (returns_in_branches, (X,)),
    (returns_in_branches, (-X,)),
    (no_return, (X,)),
    (comprehensions, (X,)),
    (in_place, (X,)),
    (lists, (X,)),
    (closures, (X,)),
    (methods, (X,)),
    (user_calls, (X,)),
    (strings, (X,)),
]


def run_normalized(norm: Normalized, *args):
    """Exec the normalized source in its namespace and call it (defaults restored from `defaults`)."""
    namespace = dict(norm.namespace)
    exec(compile(norm.source(), norm.filename, "exec"), namespace)
    fn = namespace[norm.name]
    positional = [p for p in norm.params if p in norm.defaults]
    fn.__defaults__ = tuple(norm.defaults[p] for p in positional) or None
    fn.__kwdefaults__ = {k: norm.defaults[k] for k in norm.kwonly if k in norm.defaults} or None
    return fn(*args)


def same(a, b) -> bool:
    """Equal bit for bit: same types, shapes, dtypes and bytes (nan included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same(u, v) for u, v in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a == b or (a != a and b != b)


def copied(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


@pytest.mark.parametrize(
    ("fn", "args"), FUNCTIONS, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(FUNCTIONS)]
)
def test_normalized_computes_what_f_computes(fn, args):
    norm = normalized(fn)
    expected_args, normalized_args = copied(args), copied(args)
    assert same(run_normalized(norm, *normalized_args), fn(*expected_args))


@pytest.mark.parametrize("fn", sorted({f for f, _ in FUNCTIONS}, key=lambda f: f.__name__))
def test_normalized_body_is_in_the_grammar(fn):
    norm = normalized(fn)
    for n in [norm, *norm.lifted.values()]:
        check_grammar(n)


def test_in_place_parameter_is_copied_so_the_callers_array_is_unchanged():
    x = X.copy()
    norm = normalized(in_place)
    run_normalized(norm, x)
    assert same(x, X)
    first = norm.body[0]
    assert ast.unparse(first) == "x = np_array(x)" and norm.namespace["np_array"] is np.array
    assert norm.copied_params == ["x"]


def test_temporaries_are_named_after_what_they_hold():
    text = normalized(straight).source()
    for name in ("sin_x = np_sin(x)", "sin_x_times_a = sin_x * a", "x_times_a = x * a"):
        assert name in text
    assert "np_sin" in normalized(straight).namespace


def test_temporaries_never_shadow_fs_names_or_namespace_names():
    def f(x, sin_x):
        return np.sin(x) + sin_x

    norm = normalized(f)
    assert norm.params == ["x", "sin_x"]
    assert "sin_x_2 = np_sin(x)" in norm.source()
    assert same(run_normalized(norm, X, 2.0), f(X, 2.0))


def test_statements_keep_the_line_of_f_they_come_from():
    norm = normalized(straight)
    first = straight.__code__.co_firstlineno
    lines = [s.lineno for s in norm.body]
    assert lines[0] == first + 1 and lines[-1] == first + 2


def test_statements_in_loops_and_branches_keep_their_own_lines():
    norm = normalized(loops)
    first = loops.__code__.co_firstlineno
    loop = next(s for s in norm.body if isinstance(s, ast.For))
    assert loop.lineno == first + 2 and {s.lineno for s in loop.body} == {first + 3}


def test_comprehension_variables_do_not_clobber_fs_names():
    def f(x):
        v = 10.0
        ys = [v * 2 for v in x]
        return v, ys

    norm = normalized(f)
    assert same(run_normalized(norm, X), f(X))


def test_lifted_function_takes_its_free_locals_as_trailing_parameters():
    norm = normalized(closures)
    assert norm.lifted["g"].params == ["u", "a", "x"] and norm.lifted["g"].extra_params == ["a", "x"]
    assert norm.lifted["h"].params == ["u", "a", "x"]  # through its call of g
    assert norm.lifted["fact"].params == ["n"]


@pytest.mark.parametrize(
    ("source", "construct"),
    [
        ("def f(x):\n    y = x\n    y[0] = 1.0\n    return x\n", "sharing its value with 'y'"),
        ("def f(x):\n    y = x[1:]\n    x[0] = 1.0\n    return y\n", "sharing its value with 'x'"),
        ("def f(x):\n    ys = [x]\n    x[0] = 1.0\n    return ys\n", "the container ys"),
        (
            "def f(x):\n    y = np.asarray(x)\n    y[0] = 1.0\n    return y + x\n",
            "sharing its value with 'y'",
        ),
        ("def f(x):\n    y = x\n    x += 1\n    return y\n", "sharing its value with 'x'"),
        ("def f(x):\n    g = lambda u: u\n    return g\n", "the nested function 'g' used as a value"),
        ("def f(x):\n    return sorted(x, key=lambda u: -u)\n", "Lambda"),
        ("def f(x):\n    global SCALE\n    SCALE = x\n    return x\n", "a global statement"),
        ("def f(x):\n    try:\n        return x\n    except ValueError:\n        return 0\n", "try/except"),
        ("def f(x):\n    with open('a') as h:\n        pass\n    return x\n", "a with block"),
        ("def f(x):\n    del x\n    return 1\n", "del"),
        ("def f(x):\n    a, *b = x\n    return a\n", "a starred assignment target"),
        ("def f(x):\n    if (n := len(x)) > 1:\n        return n\n    return x\n", "(:=)"),
        ("def f(x):\n    yield x\n", "generator"),
        ("def f(x):\n    x.shape = (4,)\n    return x\n", "assignment to the attribute .shape"),
        ("def f(x):\n    class A:\n        pass\n    return x\n", "a class defined inside"),
        (
            "def f(x):\n    for v in x:\n        pass\n    else:\n        return 0\n    return x\n",
            "for ... else",
        ),
        ("def f(x):\n    x.sort()\n    return x\n", ".sort()"),
        ("def f(x, **kw):\n    return x\n", "**kw"),
        ("def f(x):\n    return undefined_name + x\n", "'undefined_name', which is not defined"),
        ("def f(x):\n    x[0][1] = 2.0\n    return x\n", "x[i][j] = v"),
        ("def f(x):\n    import math\n    return x\n", "an import"),
        ("def f(x):\n    return eval('x + 1')\n", "a call of eval()"),
        (
            "def f(x):\n    m = np.zeros((2, 2))\n    for row in m:\n        row[0] = x\n    return m\n",
            "an element of",
        ),
        (
            "def f(x):\n    y = np.zeros(2)\n\n    def g(i):\n        y[i] = x\n\n    g(0)\n    return y\n",
            "changing 'y'",
        ),
        (
            "def f(x):\n    def g(u):\n        u[0] = 2.0\n        return u\n\n    z = g(x)\n    return z + x\n",
            "g(x), which writes",
        ),
    ],
)
def test_refusals_name_the_construct_the_function_and_the_line(tmp_path, source, construct):
    fn = _defined(tmp_path, source)
    with pytest.raises(SourceTransformError) as info:
        normalized(fn)
    message = str(info.value)
    assert construct in message and str(tmp_path / "m.py") in message
    assert info.value.function in {"f", "f.g"} and f" {info.value.function} (" in message
    assert f"m.py:{info.value.line})" in message and info.value.line > 2


def _defined(tmp_path, source):
    path = tmp_path / "m.py"
    path.write_text("import numpy as np\n\n" + source)
    namespace = {"__name__": "m", "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["f"]


# ---- the grammar (normalize.Normalized's docstring) ----


def check_grammar(norm: Normalized) -> None:
    body = norm.body
    assert body and isinstance(body[-1], ast.Return) and _atom(body[-1].value)
    _block(body[:-1], norm, in_for=False)
    locals_ = set(norm.params) | {norm.vararg} | set(norm.kwonly) | _assigned(body)
    assert not locals_ & set(norm.namespace), "a name is both local and in the namespace"
    for n in ast.walk(ast.Module(body, [])):
        if isinstance(n, ast.Name):
            assert n.id in locals_ | set(norm.namespace) | set(norm.lifted), n.id
        if isinstance(n, ast.stmt):
            assert isinstance(n.lineno, int) and norm.first_line <= n.lineno


def _block(stmts: list[ast.stmt], norm: Normalized, in_for: bool) -> None:
    for k, s in enumerate(stmts):
        last = k == len(stmts) - 1
        match s:
            case ast.Assign(targets=[ast.Name()], value=e):
                assert _expression(e), ast.unparse(s)
            case ast.Assign(targets=[ast.Subscript(value=ast.Name(), slice=index)], value=e):
                assert _index(index) and _atom(e), ast.unparse(s)
            case ast.Expr(
                value=ast.Call(func=ast.Attribute(value=ast.Name(), attr="append" | "extend"), args=[a])
            ):
                assert _atom(a)
            case ast.If(test=ast.Name(), body=[ast.Break()], orelse=[]):
                assert in_for and last, "S7 only as the last statement of a for body"
            case ast.If(test=ast.Name(), body=body, orelse=orelse):
                assert body
                _block(body, norm, in_for=False)
                _block(orelse, norm, in_for=False)
            case ast.For(target=ast.Name(), iter=ast.Name(), body=body, orelse=[]):
                _block(body, norm, in_for=True)
            case ast.While(test=ast.Name(), body=body, orelse=[]):
                _block(body, norm, in_for=False)
            case ast.Pass():
                assert len(stmts) == 1
            case _:
                raise AssertionError(f"not in the grammar: {ast.unparse(s)}")


def _atom(e: ast.expr) -> bool:
    return isinstance(e, ast.Name | ast.Constant)


def _index(e: ast.expr) -> bool:
    if isinstance(e, ast.Slice):
        return all(p is None or _atom(p) for p in (e.lower, e.upper, e.step))
    if isinstance(e, ast.Tuple):
        return all(_index(p) for p in e.elts)
    return _atom(e)


def _expression(e: ast.expr) -> bool:
    match e:
        case ast.Name() | ast.Constant():
            return True
        case ast.Call(func=ast.Name(), args=args, keywords=keywords):
            return all(
                _atom(a) or (isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)) for a in args
            ) and all(_atom(k.value) if k.arg else isinstance(k.value, ast.Name) for k in keywords)
        case ast.BinOp(left=a, right=b):
            return _atom(a) and _atom(b)
        case ast.UnaryOp(operand=a):
            return _atom(a)
        case ast.Compare(left=a, ops=[_], comparators=[b]):
            return _atom(a) and _atom(b)
        case ast.Subscript(value=ast.Name(), slice=index):
            return _index(index)
        case ast.Attribute(value=ast.Name()):
            return True
        case ast.Tuple(elts=elts) | ast.List(elts=elts):
            return all(_atom(a) for a in elts)
        case ast.Dict(keys=keys, values=values):
            return all(_atom(a) for a in keys + values)
    return False


def _assigned(body: list[ast.stmt]) -> set[str]:
    return {
        n.id
        for n in ast.walk(ast.Module(body, []))
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


# ---- random programs (hypothesis): straight-line code, branches, loops, jumps, in-place writes ----

VARIABLES = ("a", "b", "c")


def _expression_text(draw, depth: int) -> str:
    atoms = [*VARIABLES, "x[0]", "x[k % 3]", "1.5", "-0.5", "2"]
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(atoms))
    kind = draw(st.sampled_from(["binop", "call", "ifexp", "boolop", "compare", "unary"]))
    left, right = _expression_text(draw, depth - 1), _expression_text(draw, depth - 1)
    if kind == "binop":
        return f"({left} {draw(st.sampled_from(['+', '-', '*']))} {right})"
    if kind == "call":
        return f"{draw(st.sampled_from(['np.sin', 'np.cos', 'np.tanh', 'abs']))}({left})"
    if kind == "ifexp":
        return f"({left} if {right} > 0 else {_expression_text(draw, depth - 1)})"
    if kind == "boolop":
        return f"({left} {draw(st.sampled_from(['and', 'or']))} {right})"
    if kind == "compare":
        return f"({left} < {right} <= 1.0)"
    return f"(-{left})"


def _block_text(draw, depth: int, indent: str, in_loop: bool) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["assign", "augassign", "write", "append"] + (["if", "for", "while"] if depth else [])
        kinds += ["break", "continue", "return"] if in_loop else ["return"] * (depth < 2)
        kind = draw(st.sampled_from(kinds))
        target = draw(st.sampled_from(VARIABLES))
        e = _expression_text(draw, 2)
        if kind == "assign":
            lines.append(f"{indent}{target} = {e}")
        elif kind == "augassign":
            lines.append(f"{indent}{target} {draw(st.sampled_from(['+=', '-=', '*=']))} {e}")
        elif kind == "write":
            lines.append(f"{indent}y[k % 3] += {e}")
        elif kind == "append":
            lines.append(f"{indent}out.append({e})")
        elif kind == "if":
            lines.append(f"{indent}if {e} > 0:")
            lines += _block_text(draw, depth - 1, indent + "    ", in_loop)
            if draw(st.booleans()):
                lines.append(f"{indent}else:")
                lines += _block_text(draw, depth - 1, indent + "    ", in_loop)
        elif kind == "for":
            lines.append(f"{indent}for k in range({draw(st.integers(0, 4))}):")
            lines += _block_text(draw, depth - 1, indent + "    ", True)
        elif kind == "while":  # a counter per depth: a nested loop resetting its outer loop's never ended
            lines.append(f"{indent}n{depth} = 0")
            lines.append(f"{indent}while n{depth} < {draw(st.integers(0, 4))}:")
            lines.append(f"{indent}    n{depth} += 1")
            lines += _block_text(draw, depth - 1, indent + "    ", True)
        elif kind == "return":
            lines.append(f"{indent}return {e}, y, out")
        else:
            lines.append(f"{indent}if {e} > 0:")
            lines.append(f"{indent}    {kind}")
    return lines


@st.composite
def programs(draw) -> str:
    body = ["    a, b, c = x[0], x[1], x[2]", "    k = 0", "    y = np.zeros(3)", "    out = []"]
    body += _block_text(draw, 2, "    ", False)
    body.append("    return a + b * c, y, out")
    return "import numpy as np\n\n\ndef f(x):\n" + "\n".join(body) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=programs())
def test_random_programs_normalize_to_what_they_compute(tmp_path, source):
    path = tmp_path / "m.py"
    path.write_text(source)
    linecache.checkcache(str(path))
    namespace = {"__name__": "m"}
    exec(compile(source, str(path), "exec"), namespace)
    fn = namespace["f"]
    try:
        norm = normalized(fn)
    except SourceTransformError as e:  # a = b; a += v; b read: two names, one written in place
        assert "written in place" in str(e)
        reject()
    check_grammar(norm)
    with np.errstate(all="ignore"):
        expected = _outcome(fn, X.copy())
        got = _outcome(lambda x: run_normalized(norm, x), X.copy())
    assert same(got, expected), norm.source()


def _outcome(fn, *args):
    """fn's value, or the type of the exception it raises (the program may fail as f fails)."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - the same failure is the expected outcome
        return type(e)
