"""parse.parsed: fn's AST with its file's line numbers, the namespace it reads, and the refusals of
what has no Python source to read."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import math

import numpy as np
import pytest
from adcore_source.errors import SourceTransformError
from adcore_source.parse import code_source_lines, local_names, parsed

OFFSET = 0.5


def decorated(f):
    return f


@decorated
def plain(x, a=2.0):
    y = np.sin(x) * a + OFFSET
    return math.cos(y) + abs(y)


def make_closure(scale):
    def inner(x):
        return x * scale + OFFSET

    return inner


def test_function_ast_lines_are_the_files_lines():
    p = parsed(plain)
    first = plain.__code__.co_firstlineno + 1  # the def line, after the decorator
    assert isinstance(p.node, ast.FunctionDef) and p.node.name == "plain" and p.name == "plain"
    assert p.first_line == first and p.node.body[0].lineno == first + 1
    assert p.filename == __file__
    assert p.node.decorator_list == []  # applied already: fn is what they returned


def doubled(f):
    @functools.wraps(f)
    def wrapper(x):
        return 2 * f(x)

    return wrapper


@doubled
def wrapped_sin(x):
    return np.sin(x)


def test_a_functools_wraps_wrapper_is_parsed_as_itself_not_the_function_it_wraps():
    # inspect.getsource(fn) follows __wrapped__: the inner body's derivative would drop the wrapper's 2 *
    p = parsed(wrapped_sin)
    assert p.node.name == "wrapper"
    assert p.first_line == wrapped_sin.__code__.co_firstlineno + 1  # the def, after @wraps
    assert p.namespace["f"] is wrapped_sin.__wrapped__  # the wrapped function: a callee, transformed in turn


def test_namespace_holds_globals_and_builtins_read_not_locals():
    p = parsed(plain)
    assert p.namespace == {"np": np, "OFFSET": OFFSET, "math": math, "abs": abs}


def test_namespace_holds_closure_cells():
    p = parsed(make_closure(3.0))
    assert p.namespace == {"scale": 3.0, "OFFSET": OFFSET}


def test_lambdas_on_one_line_are_told_apart_by_their_columns():
    f, g = (lambda x: x + 1), (lambda y: (y, lambda z: z * 2))  # noqa: E731
    assert parsed(f).node.args.args[0].arg == "x"
    assert parsed(g).node.args.args[0].arg == "y"
    inner = g(1.0)[1]
    node = parsed(inner).node
    assert isinstance(node, ast.Lambda) and node.args.args[0].arg == "z"
    assert node.lineno == inner.__code__.co_firstlineno


def test_identical_lambdas_on_one_line_are_told_apart():
    fs = [lambda x: x, lambda x: x]
    first, second = parsed(fs[0]).node, parsed(fs[1]).node
    assert first.lineno == second.lineno and first.col_offset < second.col_offset


def test_local_names_are_params_targets_and_nested_defs():
    tree = ast.parse(
        "def f(a, *b, c, **d):\n    e = 1\n    for g in a: pass\n    def h(): i = 2\n    [j for j in a]\n"
    )
    assert local_names(tree.body[0]) == {"a", "b", "c", "d", "e", "g", "h"}


class Model:
    def apply(self, x):
        return x

    def __call__(self, x):
        return x


@pytest.mark.parametrize(
    ("fn", "construct"),
    [
        (Model().apply, "a bound method"),
        (Model(), "a Model object"),
        (functools.partial(plain, a=1.0), "a functools.partial"),
        (np.sin, "not a Python function"),
        (len, "not a Python function"),
    ],
)
def test_what_is_not_a_python_function_is_refused(fn, construct):
    with pytest.raises(SourceTransformError, match=construct):
        parsed(fn)


def test_generators_and_unreadable_sources_are_refused():
    def gen(x):
        yield x

    with pytest.raises(SourceTransformError, match="generator"):
        parsed(gen)
    namespace: dict = {}
    exec("def f(x):\n    return x\n", namespace)
    with pytest.raises(SourceTransformError, match="source is not available") as info:
        parsed(namespace["f"])
    assert info.value.function == "f" and info.value.filename == "<string>"


WRITTEN = """\
import functools

@functools.lru_cache
def decorated_def(x):
    return x + 1

def outer(x):
    def nested(y):
        return y * x
    return nested

lam = lambda x: (x,
                 2 * x)

async def coroutine(x):
    return x
"""


def test_code_source_lines_of_written_functions_are_inspects_own(monkeypatch):
    filename = "<adcore test_parse: written>"
    linecache.cache[filename] = (len(WRITTEN), None, WRITTEN.splitlines(True), filename)
    try:
        scope: dict = {}
        exec(compile(WRITTEN, filename, "exec"), scope)
        codes = [scope["decorated_def"].__wrapped__.__code__, scope["outer"].__code__, scope["lam"].__code__]
        codes += [scope["outer"](1.0).__code__, scope["coroutine"].__code__]
        codes += [plain.__code__, make_closure(2.0).__code__]  # in a file: inspect's own path
        for code in codes:
            assert code_source_lines(code) == inspect.getsourcelines(code), code.co_name
        assert code_source_lines(codes[0])[0][0] == "@functools.lru_cache\n"  # from the decorator, as inspect
        with monkeypatch.context() as patched:  # a written function's lines without walking the modules
            patched.setattr(inspect, "getmodule", lambda *a: pytest.fail("inspect.getmodule was called"))
            assert [code_source_lines(code) for code in codes[:5]]
        moved = codes[1].replace(co_firstlineno=99)  # past the text's end: the same OSError
        with pytest.raises(OSError, match="out of bounds"):
            inspect.getsourcelines(moved)
        with pytest.raises(OSError, match="out of bounds"):
            code_source_lines(moved)
    finally:
        del linecache.cache[filename]
    # the text gone from linecache: inspect's own path, which raises as before
    with pytest.raises(OSError):
        code_source_lines(codes[0])


def test_code_source_lines_are_read_again_when_the_file_or_the_text_changes(tmp_path, monkeypatch):
    """Found once per code object, yet never stale: a file edited on disk (the same code, not
    reloaded) or a written text registered anew gives the lines inspect gives now."""
    path = tmp_path / "edited_source.py"
    path.write_text("def g(x):\n    return x * 2.0\n")
    scope: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    code = scope["g"].__code__
    assert code_source_lines(code) == inspect.getsourcelines(code)
    with monkeypatch.context() as patched:  # asked again: no new read of the lines
        patched.setattr(inspect, "getsourcelines", lambda *a: pytest.fail("read again"))
        assert code_source_lines(code)[0][1] == "    return x * 2.0\n"
    path.write_text("def g(x):\n    return x * 3.0  # edited: longer\n")
    assert code_source_lines(code)[0][1] == "    return x * 3.0  # edited: longer\n"
    assert code_source_lines(code) == inspect.getsourcelines(code)

    filename = "<adcore test_parse: written anew>"
    first, second = "def h(x):\n    return x + 1.0\n", "def h(x):\n    return x - 1.0\n"
    try:
        linecache.cache[filename] = (len(first), None, first.splitlines(True), filename)
        scope = {}
        exec(compile(first, filename, "exec"), scope)
        code = scope["h"].__code__
        assert code_source_lines(code)[0] == first.splitlines(True)
        with monkeypatch.context() as patched:
            patched.setattr(inspect, "getblock", lambda *a: pytest.fail("read again"))
            assert code_source_lines(code)[0] == first.splitlines(True)
        linecache.cache[filename] = (len(second), None, second.splitlines(True), filename)
        assert code_source_lines(code)[0] == second.splitlines(True)
    finally:
        del linecache.cache[filename]
