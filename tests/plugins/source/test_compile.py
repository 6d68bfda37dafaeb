"""compile=True: generated functions run by numba where it takes them, else (with one warning naming
what numba refused) by Python, with the same result; numba stays out of the imports."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from adcore_source import compile as source_compile
from adcore_source import module_text

numba = pytest.importorskip("numba")


def _text(source: str, entry: list[str], functions: list[str] | None = None) -> module_text.Text:
    return module_text.Text(source, entry, functions or entry, {}, {})


def _entry(source: str, name: str, path: Path | None = None) -> source_compile._Compiled:
    text = _text(source, [name])
    text.path = path
    namespace = module_text.load(text, [])
    (fn,) = source_compile.compiled([namespace[name]], text, [], True)
    return fn


def test_import_adcore_and_adcore_source_import_no_numba() -> None:
    code = "import sys, adcore, adcore_source, adcore_source.compile, adcore_source.generate; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_plain_arguments_run_numbas_version_with_pythons_result() -> None:
    source = "import numpy as np\n\n\ndef f_jvp(x, dx):\n    y = np.sin(x) * x\n    return (y, dx * (np.cos(x) * x + np.sin(x)))\n"
    fn = _entry(source, "f_jvp")
    with warnings.catch_warnings():
        warnings.simplefilter("error", source_compile.SourceCompileWarning)
        out, dout = fn(0.7, 1.0)
        out_a, dout_a = fn(np.linspace(0.0, 1.0, 5), np.ones(5))
    assert isinstance(fn.jit.function("f_jvp"), numba.core.registry.CPUDispatcher)
    assert fn.jit.function("f_jvp").signatures  # it compiled (for float, then for arrays)
    np.testing.assert_allclose((out, dout), fn.python(0.7, 1.0), rtol=1e-15)
    np.testing.assert_allclose(dout_a, fn.python(np.linspace(0.0, 1.0, 5), np.ones(5))[1], rtol=1e-15)


def test_generated_functions_call_each_other_compiled() -> None:
    source = (
        "def g_jvp(x, dx):\n    return (x * x, 2.0 * x * dx)\n\n\n"
        "def f_jvp(x, dx):\n    y, dy = g_jvp(x, dx)\n    return (y + 1.0, dy)\n"
    )
    text = _text(source, ["f_jvp"], ["f_jvp", "g_jvp"])
    namespace = module_text.load(text, [])
    (fn,) = source_compile.compiled([namespace["f_jvp"]], text, [], True)
    assert fn(3.0, 1.0) == (10.0, 6.0)
    assert isinstance(fn.jit.namespace["g_jvp"], numba.core.registry.CPUDispatcher)


def test_a_construct_numba_refuses_warns_once_naming_it_and_python_runs() -> None:
    source = "def helper(x):\n    return {'x': x}['x']\n\n\ndef f_jvp(x, dx):\n    return (helper(x) * 2.0, dx * 2.0)\n"
    fn = _entry(source, "f_jvp")
    with pytest.warns(source_compile.SourceCompileWarning, match=r"f_jvp.*helper") as record:
        assert fn(1.5, 1.0) == (3.0, 2.0)
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fn(2.5, 1.0) == (5.0, 2.0)  # refused once: Python from then on, no second warning


def test_traced_or_structured_arguments_run_python_without_compiling() -> None:
    fn = _entry("def f_jvp(x, dx):\n    return (x, dx)\n", "f_jvp")
    assert fn({"a": 1.0}, 1.0) == ({"a": 1.0}, 1.0)
    assert fn.jit.namespace is None  # numba never involved
    assert not source_compile._plain(np.array([object()]))
    assert source_compile._plain((1.0, [np.ones(2)], None))


def test_an_array_read_from_outside_is_not_frozen_into_compiled_code() -> None:
    """numba compiles a global array in as a constant: a later in-place change would not reach it."""
    weights = np.ones(3)
    text = module_text.Text(
        "def f_jvp(x, dx):\n    return (x * w, dx * w)\n", ["f_jvp"], ["f_jvp"], {}, {"w": weights}
    )
    namespace = module_text.load(text, [])
    (fn,) = source_compile.compiled([namespace["f_jvp"]], text, [], True)
    with pytest.warns(source_compile.SourceCompileWarning, match="w .*numba freezes"):
        fn(np.ones(3), np.ones(3))
    weights[0] = 5.0
    np.testing.assert_array_equal(fn(np.ones(3), np.ones(3))[0], [5.0, 1.0, 1.0])


def test_errors_of_the_function_itself_are_not_swallowed() -> None:
    fn = _entry("import numpy as np\n\n\ndef f_jvp(x, dx):\n    return (x[10], dx[10])\n", "f_jvp")
    with pytest.raises(IndexError):
        fn(np.ones(3), np.ones(3))


def test_the_numba_helpers_match_the_runtime() -> None:
    from adcore_source import numba_runtime, runtime

    @numba.njit
    def use(g, x):
        return numba_runtime.unbroadcast(g, x)

    g = np.arange(6.0).reshape(2, 3)
    for x in (np.ones((2, 3)), np.ones((1, 3)), np.ones((2, 1)), np.ones(3), np.ones(1)):
        np.testing.assert_array_equal(use(g, x), runtime.unbroadcast(g, x))
    assert use(np.arange(4.0), 2.0) == 6.0


def test_construct_of_names_the_untyped_call_and_the_line() -> None:
    message = (
        "Failed in nopython mode pipeline (step: nopython frontend)\n"
        "Untyped global name 'call_vjp': Cannot determine Numba type of <class 'function'>\n\n"
        'File "/cache/f_reverse_0123.py", line 14:\n'
        "def f_fwd(x):\n    <source elided>\n"
    )
    what = source_compile.construct_of(message)
    assert "call_vjp" in what and "f_reverse_0123.py:14" in what
    typing = (  # as numba writes it: bold on, the line marked with ^
        "Failed in nopython mode pipeline (step: nopython frontend)\n\x1b[1m\x1b[1mCannot unify array(float64, 0d, C)"
        " and float64 for 'dx.2', defined at /c/f_forward_1.py (16)\n\x1b[1m\nFile \"c/f_forward_1.py\", line 16:"
        "\x1b[0m\n\x1b[1mdef f_jvp(x, dx):\n    <source elided>\n\x1b[1m    for i in range_1000:\n\x1b[0m    "
        "\x1b[1m^\x1b[0m\x1b[0m\n\x1b[0m\nDuring: typing of assignment"
    )
    what = source_compile.construct_of(typing)
    assert what.startswith("Cannot unify array(float64, 0d, C) and float64")
    assert what.endswith("at f_forward_1.py:16 `for i in range_1000:`")


# --- through generate: f's generated module compiled --------------------------------------------


def recurrence(x, a, b):
    for _ in range(50):
        x = np.sin(x) * a + x * b
    return x


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from adcore_source import disk_cache, generate

    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    generate.clear_caches()
    yield tmp_path
    generate.clear_caches()


def test_a_compiled_jvp_gives_pythons_numbers_and_is_cached_on_disk(cache: Path) -> None:
    from adcore_source import generate

    jvp = generate.forward_function(recurrence, (0, 1), compile=True)
    out, dout = jvp((0.5, 0.9, 0.3), (1.0, 0.5), {})
    out_py, dout_py = generate.forward_function(recurrence, (0, 1))((0.5, 0.9, 0.3), (1.0, 0.5), {})
    np.testing.assert_allclose([out, dout], [out_py, dout_py], rtol=1e-13)
    assert jvp.__self__.generated.jit.function("recurrence_jvp").signatures  # numba ran it
    with warnings.catch_warnings():
        warnings.simplefilter("error", source_compile.SourceCompileWarning)  # 0-d arrays: numba too
        out_0d, dout_0d = jvp((np.array(0.5), 0.9, 0.3), (np.array(1.0), np.array(0.5)), {})
    np.testing.assert_allclose([out_0d, dout_0d], [out_py, dout_py], rtol=1e-13)
    # NumPy's scalar types, as Python's version gives (numba boxes floats as Python floats)
    assert type(out) is type(out_py) is np.float64 and type(dout) is np.float64
    out32, dout32 = jvp(
        (np.float32(0.5), np.float32(0.9), np.float32(0.3)), (np.float32(1.0), np.float32(0.5)), {}
    )
    assert type(out32) is np.float32 and type(dout32) is np.float32
    assert list(cache.glob("__pycache__/recurrence_forward_*.nbi"))  # numba's cache beside the module


def test_compiled_reverse_functions_give_pythons_numbers(cache: Path) -> None:
    from adcore_source import generate

    fwd, bwd = generate.reverse_functions(recurrence, (0, 1, 2), compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", source_compile.SourceCompileWarning
        )  # (where numba cannot, Python runs)
        out, saved = fwd(0.5, 0.9, 0.3)
        adjoints = bwd(saved, 1.0)
    fwd_py, bwd_py = generate.reverse_functions(recurrence, (0, 1, 2))
    out_py, saved_py = fwd_py(0.5, 0.9, 0.3)
    np.testing.assert_allclose(out, out_py, rtol=1e-13)
    np.testing.assert_allclose(adjoints, bwd_py(saved_py, 1.0), rtol=1e-13)
    # another dtype: another compile (or Python), and its record goes to the matching bwd
    out2, saved2 = fwd(np.float32(0.5), 0.9, 0.3)
    np.testing.assert_allclose(bwd(saved2, 1.0), adjoints, rtol=1e-5)
