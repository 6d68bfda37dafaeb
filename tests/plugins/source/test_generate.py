"""adcore_source.generate: the driver. The generated functions against the tape and finite
differences; the module's text (header, imports, comments naming f's lines, ruff-clean) and that
it can be written, imported and called; tracebacks into it; user callees, recursion and name
clashes; and the caches: an edited, redefined or reloaded function never gets a stale module,
the disk cache is used and a broken one is not an error."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import linecache
import shutil
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest
from adcore_source import derivative_source, disk_cache, generate

import adcore

sin = np.sin
A = 2.0


def f(x, a):
    y = sin(x)
    z = y * a
    w = z * A
    return w


def square(x):
    y = x * x
    return y


def calls_square(x):
    y = square(x)
    z = y * A
    return z


def countdown(x, n):
    y = x
    if n > 0:
        z = x * x
        y = countdown(z, n - 1)
    return y


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "source-cache"
    monkeypatch.setenv(disk_cache.ENV, str(directory))
    generate.clear_caches()
    yield directory
    generate.clear_caches()


def _grad_reverse(fn, *args, argnums=0):
    return adcore.grad(fn, argnums=argnums, backend="reverse")(*args)


def _numeric(fn, *args, argnums=0):
    return adcore.grad(fn, argnums=argnums, backend="numeric")(*args)


def _gradient(fn, args: tuple, active: tuple[int, ...] = (0,)):
    fwd, bwd = generate.reverse_functions(fn, active)
    out, saved = fwd(*args)
    return out, bwd(saved, 1.0)


# --- the functions the backend calls ------------------------------------------------------------


def test_reverse_functions_give_fs_value_and_the_tapes_gradient() -> None:
    out, (bx, ba) = _gradient(f, (0.3, 1.5), (0, 1))
    assert out == f(0.3, 1.5)
    np.testing.assert_allclose(bx, _grad_reverse(f, 0.3, 1.5), rtol=1e-14)
    np.testing.assert_allclose(ba, _grad_reverse(f, 0.3, 1.5, argnums=1), rtol=1e-14)
    np.testing.assert_allclose(bx, _numeric(f, 0.3, 1.5), rtol=1e-7)


def test_forward_function_gives_fs_value_and_the_tangent() -> None:
    jvp = generate.forward_function(f, (0,))
    out, dout = jvp((0.3, 1.5), (1.0,), {})
    assert out == f(0.3, 1.5)
    np.testing.assert_allclose(dout, _grad_reverse(f, 0.3, 1.5), rtol=1e-14)


def test_keyword_arguments_and_partials_reach_the_generated_code() -> None:
    fwd, bwd = generate.reverse_functions(f, (0,))
    out, saved = fwd(0.3, a=1.5)
    assert out == f(0.3, 1.5)
    p = functools.partial(f, a=1.5)
    fwd_p, bwd_p = generate.reverse_functions(p, (0,))
    out_p, saved_p = fwd_p(0.3)
    assert out_p == out
    np.testing.assert_allclose(bwd_p(saved_p, 1.0)[0], bwd(saved, 1.0)[0], rtol=1e-15)
    jvp = generate.forward_function(functools.partial(f, 0.3), (0,))  # the partial's argument 0 is a
    np.testing.assert_allclose(jvp((1.5,), (1.0,), {})[1], _grad_reverse(f, 0.3, 1.5, argnums=1), rtol=1e-14)


def with_keywords(x, a=2.0, *, b=3.0):
    y = x * a
    z = y * b
    return z


def with_varargs(x, *ys):
    a = ys[0]
    b = ys[1]
    y = x * a
    z = y * b
    return z


def test_defaults_keyword_only_parameters_and_varargs_reach_the_generated_code() -> None:
    fwd, bwd = generate.reverse_functions(with_keywords, (0,))
    out, saved = fwd(1.5, b=4.0)
    assert out == 12.0 and bwd(saved, 1.0) == (8.0,)
    assert generate.forward_function(with_keywords, (0,))((1.5,), (1.0,), {"b": 4.0}) == (12.0, 8.0)
    # positions past the named parameters are the vararg's entries: (x, ys[1]) here
    fwd, bwd = generate.reverse_functions(with_varargs, (0, 2))
    out, saved = fwd(1.5, 2.0, 3.0)
    assert out == 9.0 and bwd(saved, 1.0) == (6.0, 3.0)
    jvp = generate.forward_function(with_varargs, (0, 2))
    assert jvp((1.5, 2.0, 3.0), (1.0, 0.0), {}) == (9.0, 6.0)
    assert jvp((1.5, 2.0, 3.0), (0.0, 1.0), {}) == (9.0, 3.0)


def doubled(g):
    @functools.wraps(g)
    def wrapper(x):
        y = g(x)
        z = y * 2.0
        return z

    return wrapper


@doubled
def sine_with_a_keyword(x, k=1.0):
    y = sin(x)
    return y


def test_a_wrapper_is_called_with_its_own_signature_not_the_wrapped_ones() -> None:
    out, (bx,) = _gradient(sine_with_a_keyword, (0.3,))
    assert out == sine_with_a_keyword(0.3)
    np.testing.assert_allclose(bx, 2 * np.cos(0.3), rtol=1e-15)


def test_user_callees_are_generated_into_the_same_module() -> None:
    out, (bx,) = _gradient(calls_square, (1.25,))
    assert out == calls_square(1.25)
    np.testing.assert_allclose(bx, 4 * 1.25, rtol=1e-15)  # d(2 x^2)/dx
    text = derivative_source(calls_square)
    assert text.count("def square_fwd(") == 1 and text.count("def square_bwd(") == 1


def test_recursion_is_one_more_name() -> None:
    out, (bx,) = _gradient(countdown, (1.1, 3))
    assert out == countdown(1.1, 3)
    np.testing.assert_allclose(bx, 8 * 1.1**7, rtol=1e-13)  # x^8
    assert derivative_source(countdown).count("def countdown_fwd(") == 1


# --- the text ------------------------------------------------------------------------------------


def test_the_text_says_what_it_is_and_points_at_fs_lines() -> None:
    text = derivative_source(f, mode="reverse", argnums=0)
    header = text.split('"""')[1]
    assert "Reverse-mode derivative of f" in header and "test_generate.py" in header
    assert "with respect to x" in header and "edit freely" in header
    assert "# test_generate.py:" in text and "z = y * a" in text
    line = f.__code__.co_firstlineno + 2
    assert f"# test_generate.py:{line}  z = y * a" in text
    assert ";" not in text.split('"""', 2)[2]  # one statement per line
    forward = derivative_source(f, mode="forward", argnums=1)
    assert "Forward-mode derivative of f" in forward and "with respect to a" in forward
    assert "def f_jvp(" in forward


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_the_text_is_ruff_clean(tmp_path: Path) -> None:
    for fn, mode in ((f, "reverse"), (f, "forward"), (calls_square, "reverse"), (countdown, "forward")):
        path = tmp_path / f"{fn.__name__}_{mode}.py"
        path.write_text(derivative_source(fn, mode=mode))
        # (F841, a dead store, is the emitters' to drop; the imports, names and layout are generate's)
        command = [
            "ruff",
            "check",
            "--isolated",
            "--quiet",
            "--select",
            "E,F,W,I",
            "--ignore",
            "F841,E501",
            path.name,
        ]
        result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 0, result.stdout


def test_the_text_can_be_written_imported_and_called(tmp_path: Path) -> None:
    path = tmp_path / "f_gradient.py"
    path.write_text(derivative_source(f, mode="reverse", argnums=(0, 1)))
    spec = importlib.util.spec_from_file_location("f_gradient", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out, saved = module.f_fwd(0.3, 1.5)
    bx, ba = module.f_bwd(saved, 1.0)
    assert out == f(0.3, 1.5)
    np.testing.assert_allclose([bx, ba], [_grad_reverse(f, 0.3, 1.5), _grad_reverse(f, 0.3, 1.5, argnums=1)])
    # edited by hand: the edit is what runs
    path.write_text(
        path.read_text().replace("def f_fwd(", "def f_fwd_original(", 1) + "\n\nf_fwd = f_fwd_original\n"
    )
    spec.loader.exec_module(module)
    assert module.f_fwd(0.3, 1.5)[0] == out


def test_a_traceback_shows_the_generated_line(cache: Path) -> None:
    def picks(x):
        y = x[5]
        return y

    fwd, _ = generate.reverse_functions(picks, (0,))
    with pytest.raises(IndexError) as info:
        fwd(np.ones(3))
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [fr for fr in frames if fr.name == "picks_fwd"]
    assert generated and Path(generated[-1].filename).parent == cache
    assert "x[5]" in generated[-1].line


def test_a_traceback_shows_the_generated_line_without_a_disk_cache(tmp_path, monkeypatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "file" / "cache"))

    def picks(x):
        y = x[5]
        return y

    fwd, _ = generate.reverse_functions(picks, (0,))
    with pytest.raises(IndexError) as info:
        fwd(np.ones(3))
    frame = [fr for fr in traceback.extract_tb(info.value.__traceback__) if fr.name == "picks_fwd"][-1]
    assert frame.filename.startswith("<adcore-source") and "x[5]" in frame.line


def test_names_that_clash_are_renamed() -> None:
    def uses_cos_as_a_local(x):
        cos = sin(x)  # the template of sin's derivative wants adcore's cos
        y = cos * x
        return y

    out, (bx,) = _gradient(uses_cos_as_a_local, (0.4,))
    assert out == uses_cos_as_a_local(0.4)
    np.testing.assert_allclose(bx, _grad_reverse(uses_cos_as_a_local, 0.4), rtol=1e-14)


def test_globals_of_the_same_name_in_two_modules_both_hold(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "gen_other_a.py").write_text("A = 3.0\n\n\ndef scaled(x):\n    y = x * A\n    return y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    other = importlib.import_module("gen_other_a")
    scaled = other.scaled

    def both(x):
        y = scaled(x)  # x * 3
        z = y * A  # * 2 (this module's A)
        return z

    out, (bx,) = _gradient(both, (0.5,))
    assert out == 3.0 and bx == 6.0


# --- the caches ----------------------------------------------------------------------------------


def _module_from(path: Path, source: str, namespace: dict) -> None:
    path.write_text(source)
    exec(compile(source, str(path), "exec"), namespace)


def test_the_same_function_twice_is_one_module() -> None:
    assert generate.reverse_functions(f, (0,))[0] is not None
    first = generate._loaded(f, "reverse", (0,), False)
    assert generate._loaded(f, "reverse", (0,), False) is first


def test_a_redefined_function_gets_new_code(tmp_path: Path) -> None:
    namespace: dict = {}
    path = tmp_path / "redefined.py"
    _module_from(path, "def g(x):\n    y = x * 2.0\n    return y\n", namespace)
    assert _gradient(namespace["g"], (1.0,))[1][0] == 2.0
    _module_from(path, "def g(x):\n    y = x * 3.0\n    z = y + 1.0\n    return z\n", namespace)
    assert _gradient(namespace["g"], (1.0,))[1][0] == 3.0


def test_a_reloaded_module_gets_new_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "gen_reloaded.py"
    source.write_text("def g(x):\n    y = x * 2.0\n    return y\n")
    module = importlib.import_module("gen_reloaded")
    assert _gradient(module.g, (1.0,))[1][0] == 2.0
    source.write_text("def g(x):\n    y = x * x\n    z = y * 5.0\n    return z\n")
    importlib.invalidate_caches()
    module = importlib.reload(module)
    assert _gradient(module.g, (1.0,))[1][0] == 10.0
    assert "5.0" in derivative_source(module.g)


def test_a_rebound_global_anywhere_down_the_calls_gets_new_code(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _gradient(calls_square, (1.0,))[1][0] == 4.0  # 2 * 2x
    monkeypatch.setitem(globals(), "A", 5.0)  # read by calls_square
    assert _gradient(calls_square, (1.0,))[1][0] == 10.0

    def cube(x):
        y = x * x
        z = y * x
        return z

    monkeypatch.setitem(globals(), "square", cube)  # the callee itself
    assert _gradient(calls_square, (1.0,))[1][0] == 15.0


def test_closures_over_new_data_reuse_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def make(w):
        def loss(x):
            y = x * w
            return y

        return loss

    generated = []
    original = generate.generate
    monkeypatch.setattr(generate, "generate", lambda *a: generated.append(a) or original(*a))
    for w in (2.0, 3.0, 4.0):
        fwd, bwd = generate.reverse_functions(make(np.array([w])), (0,))
        out, saved = fwd(np.array([1.0]))
        assert bwd(saved, np.array([1.0]))[0] == w
    assert len(generated) == 1  # one text, three loaded modules


def test_a_text_loaded_again_is_compiled_once_and_a_new_text_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading binds new data values each time (a function written anew over new arrays): the
    text is compiled once; a function redefined with other code is new text, compiled anew."""
    from adcore_source import module_text

    name = "<adcore test_generate: compiled once>"

    def written(source: str, w: np.ndarray):
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        scope = {"w": w}
        exec(compile(source, name, "exec"), scope)
        return scope["loss"]

    generate.clear_caches()
    compiled = []
    monkeypatch.setattr(module_text, "compile", lambda *a: compiled.append(a) or compile(*a), raising=False)
    once, twice = (
        "def loss(x):\n    y = x * w\n    return y\n",
        "def loss(x):\n    y = x * w\n    z = y * w\n    return z\n",
    )
    try:
        for source, w, expected in [(once, 2.0, 2.0), (once, 3.0, 3.0), (twice, 4.0, 16.0)]:
            fwd, bwd = generate.reverse_functions(written(source, np.array([w])), (0,))
            out, saved = fwd(np.array([1.0]))
            assert bwd(saved, np.array([1.0]))[0] == expected
    finally:
        del linecache.cache[name]
    assert len(compiled) == 2  # the first text once for two sets of values, then the new text


def test_another_mode_or_other_active_arguments_is_another_module() -> None:
    first = generate._loaded(f, "reverse", (0,), False)
    assert generate._loaded(f, "reverse", (0, 1), False) is not first
    assert generate._loaded(f, "forward", (0,), False) is not first
    assert _gradient(f, (0.3, 1.5), (0, 1))[1][1] == pytest.approx(np.sin(0.3) * A)


def test_a_pullback_uses_the_module_its_forward_sweep_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    """A global rebound between f's call and its pullback: the derivative of f as it ran (the
    reverse backend's), not the new module's adjoint sweep over the old one's record."""
    x = np.array([1.5])
    _, pullback = adcore.vjp(calls_square, x, backend="source")
    monkeypatch.setitem(globals(), "A", 5.0)
    np.testing.assert_allclose(pullback(np.array([1.0]))[0], 2 * x * 2.0)
    _, pullback = adcore.vjp(calls_square, x, backend="source")
    np.testing.assert_allclose(pullback(np.array([1.0]))[0], 2 * x * 5.0)  # the next call: A now


def test_the_disk_cache_is_read_back(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _gradient(f, (0.3, 1.5), (0, 1))
    files = sorted(p.name for p in cache.glob("f_reverse_*.py"))
    assert len(files) == 1
    generate.clear_caches()
    monkeypatch.setattr(generate, "generate", lambda *a: pytest.fail("generated again"))
    assert _gradient(f, (0.3, 1.5), (0, 1)) == expected


def test_a_module_read_back_from_disk_is_not_compiled_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adcore_source import module_text

    expected = _gradient(f, (0.3, 1.5), (0, 1))
    assert len(list(cache.glob("f_reverse_*.code"))) == 1
    generate.clear_caches()
    monkeypatch.setattr(module_text, "compile", lambda *a: pytest.fail("compiled again"), raising=False)
    assert _gradient(f, (0.3, 1.5), (0, 1)) == expected


def test_an_unusable_disk_cache_falls_back_to_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "file" / "cache"))
    out, (bx, ba) = _gradient(f, (0.3, 1.5), (0, 1))
    np.testing.assert_allclose(bx, _grad_reverse(f, 0.3, 1.5), rtol=1e-14)


def test_a_corrupt_disk_entry_is_generated_again(cache: Path) -> None:
    expected = _gradient(f, (0.3, 1.5), (0, 1))
    (path,) = cache.glob("f_reverse_*.py")
    path.write_text(path.read_text().replace("def f_bwd", "def f_bwd_broken"))
    generate.clear_caches()
    assert _gradient(f, (0.3, 1.5), (0, 1)) == expected
    assert "def f_bwd(" in path.read_text()  # stored again


def test_the_generated_text_is_the_same_in_a_new_process(cache: Path) -> None:
    """Keys survive the process: a second process finds the first one's module, with no new file."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import test_generate as t
        print(t._gradient(t.f, (0.3, 1.5), (0, 1))[1])
        """
    )
    env = {**__import__("os").environ, disk_cache.ENV: str(cache)}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    files = sorted(cache.glob("*.py"))
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert first.stdout == second.stdout and sorted(cache.glob("*.py")) == files and files


def test_what_cannot_be_generated_is_a_typed_error() -> None:
    from adcore.errors import AdcoreError, InvalidInputError

    with pytest.raises(InvalidInputError, match="mode must be 'reverse' or 'forward'"):
        derivative_source(f, mode="sideways")

    class Scaled:
        def __call__(self, x):
            return 2.0 * x

    with pytest.raises(AdcoreError, match="not a Python function"):
        generate.reverse_functions(Scaled(), (0,))
    with pytest.raises(InvalidInputError, match="compile must be"):
        generate.reverse_functions(f, (0,), compile="jax")
