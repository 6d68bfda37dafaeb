"""Random programs (adcore conformance --fuzz): they respect the ops' domains, paste into a test,
are drawn the same for the same seed, agree across the backends, and catch a wrong rule."""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from throwaway_plugin import throwaway_plugin as _plugin

import adcore
import adcore.numpy as anp
from adcore.conformance import abilities, engine, fuzz_chunks
from adcore.conformance.fuzz import CHUNK, KINK_MARGIN, Builder, Checked, ChunkResult, FuzzRun, programs
from adcore.conformance.fuzz_choices import MAX_VALUE, SPD, SQUARE, choices, sampled_domains
from adcore.conformance.fuzz_chunks import FuzzChunk, FuzzMerge, check_chunk, check_fuzz
from adcore.conformance.random_program import RandomProgram
from adcore.conformance.results import Cell
from adcore.errors import InvalidValueError, MissingDependencyError
from adcore.plugins import get_registry
from adcore.spec import NONZERO, POSITIVE, REAL, OpSpec, Sample, elementwise_samples

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _source_function(program: RandomProgram):
    """f and its inputs, from executing the program's source."""
    namespace: dict = {}
    exec(program.source, namespace)
    return namespace["f"], tuple(namespace[f"x{i}"] for i in range(len(program.inputs)))


def _report(run: FuzzMerge) -> str:
    subject, cells = run.subject_and_cells()
    return (
        "\n".join(f"{c.backend} {c.dtype}: {c.message} {c.worst}" for c in cells if c.failed)
        + "\n"
        + subject.source
    )


# --- the CI requirement -----------------------------------------------------------------------


@pytest.mark.slow
def test_200_random_programs_agree_across_every_installed_backend_in_float64():
    # the first run of this found three bugs, all fixed: symbolic's sign(acos(x)) and its sum
    # over one argument beside another that does not broadcast, and the dot-product checks'
    # missing absolute floor (divide(x, x) has Jacobian 0, forward's rounding gave 5e-17)
    run = check_fuzz(200, adcore.backends(), ["float64"], seed=0)  # 8 chunks, as the CLI runs them
    subject, cells = run.subject_and_cells()
    assert {c.backend: c.status for c in cells} == dict.fromkeys(
        abilities.columns(adcore.backends()), "agrees"
    ), _report(run)
    assert run.checked == len(set(run.sources)) == 200  # distinct programs, counted
    assert all(c.message == "200 programs" and c.checks >= 200 for c in cells)
    assert subject.name == "fuzz" and subject.kind == "fuzz" and subject.source == ""


def test_the_same_seed_draws_the_same_programs_and_another_seed_others():
    def sources(seed: int) -> list[str]:
        return FuzzRun(10, ["numeric"], ["float64"], seed).run(programs()).sources

    first = sources(3)
    assert len(first) == 10
    assert sources(3) == first
    assert sources(4) != first


# --- the programs ---------------------------------------------------------------------------


@PROPERTY
@given(programs())
def test_a_program_stays_in_its_ops_domains_so_values_and_derivatives_are_finite(program):
    value = program(*program.inputs)
    assert np.all(np.isfinite(value)) and np.all(np.abs(value) <= MAX_VALUE)
    assert 1 <= len(program.lines) and all(np.size(x) <= 6 for x in program.inputs)
    argnums = tuple(range(len(program.inputs)))
    for backend in ("reverse", "forward", "numeric"):
        jacobians = adcore.jacobian(program, argnums=argnums, backend=backend)(*program.inputs)
        assert all(np.all(np.isfinite(j)) for j in jacobians), backend


@PROPERTY
@given(st.one_of(programs("float64"), programs("float32")))
def test_a_programs_source_executes_to_the_same_function_at_the_same_inputs(program):
    f, inputs = _source_function(program)
    for x, expected in zip(inputs, program.inputs):
        assert x.dtype == expected.dtype and np.array_equal(x, expected)
    value = f(*inputs)
    assert value.dtype == program(*program.inputs).dtype
    np.testing.assert_array_equal(value, program(*program.inputs))
    argnums = tuple(range(len(inputs)))
    got = adcore.jacobian(f, argnums=argnums, backend="reverse")(*inputs)
    expected = adcore.jacobian(program, argnums=argnums, backend="reverse")(*program.inputs)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert "import adcore" in program.source and "adcore.jacobian(f, argnums=" in program.source


def test_domains_are_read_off_the_samples():
    (log,) = sampled_domains(adcore.ops.log)
    assert POSITIVE.low <= log.low < log.high <= POSITIVE.high and log.gap == 0
    numerator, denominator = sampled_domains(adcore.ops.divide)
    assert numerator.gap == 0 and denominator.gap == NONZERO.away_from_zero
    (sin,) = sampled_domains(adcore.ops.sin)
    assert REAL.low <= sin.low < -1.9 and 1.9 < sin.high <= REAL.high and sin.gap == 0
    assert sin.widened().low < REAL.low and log.widened() == log  # only real lines widen


def _choice(name: str):
    return next(c for c in choices([name]))


def _call(builder: Builder, name: str, operands, positive: bool = True, signature: int = 0) -> bool:
    choice = _choice(name)
    return builder.call(choice, operands, choice.signatures[signature], positive)


def test_a_value_outside_a_positive_domain_is_squashed_in_log_of_a_softplus():
    builder = Builder([np.array([-5.0, 0.2, 1.0])])
    assert _call(builder, "log", [0])
    assert [line.op for line in builder.lines] == ["softplus", "add", "log"]
    (log,) = sampled_domains(adcore.ops.log)
    assert np.all(builder.values[-2] >= log.low)
    assert np.all(np.isfinite(builder.values[-1]))


def test_a_value_near_zero_is_pushed_to_one_side_for_ops_sampled_away_from_it():
    builder = Builder([np.array([-1.0, 0.01, 2.0])])
    assert _call(builder, "reciprocal", [0], positive=False)
    assert builder.lines[-1].op == "reciprocal"
    inputs = builder.values[-2]
    assert np.all(inputs <= -NONZERO.away_from_zero)


def test_an_op_is_skipped_near_its_kinks_and_ties():
    x = np.array([0.01, 1.0, -0.7])
    builder = Builder([x, x + KINK_MARGIN / 2])
    assert not _call(builder, "relu", [0])  # 0.01 is near relu's kink
    assert not _call(builder, "maximum", [0, 1])  # near ties
    assert not _call(builder, "floor", [0])  # 0.01 is near 0
    assert builder.lines == []
    assert _call(builder, "maximum", [0, 0]) is False  # exact ties
    assert _call(builder, "sin", [0])


def test_catalogue_refuses_an_op_programs_cannot_call():
    with pytest.raises(ValueError, match="stop_gradient"):
        choices(["sin", "stop_gradient"])  # no input a derivative flows through


def test_the_catalogue_is_read_off_the_samples_not_a_list_of_names(register_plugin):
    # an op of a plugin, not elementwise: called as its samples call it, its operand mixed to shape
    gram = OpSpec(
        "gram", lambda a: a.T @ a, samples=lambda rng, dtype: [Sample((REAL.draw(rng, (3, 2), dtype),))]
    )
    register_plugin(_plugin([gram], vjps={"gram": (lambda g, ans, a: a @ (g + g.T),)}), "grams")
    (choice,) = choices(["gram"])
    assert [s.shapes for s in choice.signatures] == [((3, 2),)]
    builder = Builder([np.array([0.5, -1.0, 2.0])])
    assert builder.call(choice, [0], choice.signatures[0], positive=True)
    assert [line.op for line in builder.lines] == ["reshape", "matmul", "reshape", "gram"]
    assert builder.values[-1].shape == (2, 2)


class Opaque:
    """A param with no Python source (its repr is not an expression), as an ODE's dynamics."""

    def __repr__(self) -> str:
        return "<opaque>"


def test_a_sample_whose_params_have_no_source_is_not_called_since_its_program_could_not_be_printed(
    register_plugin,
):
    def samples(rng, dtype):
        x = REAL.draw(rng, (3,), dtype)
        return [Sample((x,), {"scale": 2.0}), Sample((x,), {"scale": Opaque()})]

    scaled = OpSpec("scaled", lambda x, scale: x * 2.0, params=("scale",), samples=samples)
    register_plugin(_plugin([scaled], vjps={"scaled": (lambda g, ans, x, scale: g * 2.0,)}), "scaled")
    (choice,) = choices(["scaled"])
    assert [s.params for s in choice.signatures] == [{"scale": 2.0}]


def test_matrices_are_squashed_into_the_structure_their_samples_have():
    cholesky, inv = _choice("cholesky"), _choice("inv")
    assert cholesky.domains[0].structure == SPD and inv.domains[0].structure == SQUARE
    builder = Builder([np.array([[3.0, -2.0, 0.5], [0.1, 2.0, -3.0], [1.0, 1.0, 1.0]])])
    for name, choice in (("cholesky", cholesky), ("inv", inv)):
        signature = next(s for s in choice.signatures if s.shapes[0] == (3, 3))
        assert builder.call(choice, [0], signature, positive=True), name
        fed = builder.values[builder.lines[-1].args[0]]
        singular = np.linalg.svd(fed, compute_uv=False)
        assert singular.min() >= 0.5 and singular.max() <= 4.0, name  # well conditioned
        if choice is cholesky:
            np.testing.assert_allclose(fed, fed.T)
    program = builder.program()
    for backend in ("reverse", "forward"):
        jac = adcore.jacobian(program, backend=backend)(*program.inputs)
        assert np.all(np.isfinite(jac))


# --- catching a wrong rule --------------------------------------------------------------------


def _cube_plugin():
    """cube(x) = x**3 with a right JVP, a wrong VJP (2x for 3x^2) and no sympy rule."""
    cube = OpSpec("cube", lambda x: x**3, samples=elementwise_samples(REAL), elementwise=True)

    class Cubes:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(cube)

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            register("jvp", "cube", (lambda t, ans, x: t * 3 * anp.square(x),))
            register("vjp", "cube", (lambda g, ans, x: g * 2 * x,))

    return Cubes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_planted_wrong_vjp_is_caught_and_its_program_printed_to_paste(register_plugin, dtype):
    register_plugin(_cube_plugin(), "cubes")
    subject, cells = check_fuzz(
        40, adcore.backends(), [dtype], seed=0, ops=["cube", "sin", "add", "multiply"]
    ).subject_and_cells()
    status = {c.backend: c for c in cells}
    assert status["reverse"].status == "disagrees"
    assert status["reverse"].worst.check in ("jacobian", "vjp")
    assert "program #" in status["reverse"].message and "fuzz subject's source" in status["reverse"].message
    assert status["forward"].status == "agrees" and status["numeric"].status == "agrees"
    assert "adcore.ops.cube(" in subject.source and f"dtype=np.{dtype})" in subject.source
    namespace: dict = {}
    exec(subject.source, namespace)  # pasteable: it runs, and still shows the bug
    f, inputs = namespace["f"], tuple(namespace[x] for x in ("x0", "x1", "x2") if x in namespace)
    argnums = tuple(range(len(inputs)))
    wrong = adcore.jacobian(f, argnums=argnums, backend="reverse")(*inputs)
    right = adcore.jacobian(f, argnums=argnums, backend="forward")(*inputs)
    assert not all(np.allclose(w, r) for w, r in zip(wrong, right))


# --- how it is run ----------------------------------------------------------------------------


def test_engine_run_adds_one_fuzz_subject_with_a_cell_per_backend_and_dtype():
    report = engine.run(["numeric"], ops=["sin"], dtypes=["float64", "float32"], fuzz=3)
    fuzz = report.subjects[-1]
    assert (fuzz.name, fuzz.kind, fuzz.plugin) == ("fuzz", "fuzz", "core")
    cells = [c for c in report.cells if c.subject == "fuzz"]
    assert sorted(c.dtype for c in cells) == ["float32", "float64"]
    assert all(c.backend == "numeric" and c.checks >= 3 for c in cells)


def test_without_hypothesis_fuzzing_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # `import hypothesis` raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'adcore\[fuzz\]'") as raised:
        check_fuzz(1, ["numeric"], ["float64"]).subject_and_cells()
    assert isinstance(raised.value, ImportError)


def test_importing_adcore_and_the_fuzzer_does_not_import_hypothesis():
    code = "import sys, adcore, adcore.conformance.fuzz; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_constant_python_int_input_is_passed_as_a_number_not_read_as_a_values_index(register_plugin):
    # yn(n, x)'s samples give the order n as a Python int; in a line's args an int is a value's index
    def samples(rng, dtype):
        return [Sample((0, POSITIVE.draw(rng, (3,), dtype)))]

    shifted = OpSpec("shifted", lambda n, x: x + n, nin=2, differentiable=(1,), samples=samples)
    register_plugin(_plugin([shifted], vjps={"shifted": (None, lambda g, ans, n, x: g)}), "shifted")
    (choice,) = choices(["shifted"])
    builder = Builder([np.array([0.5, 1.0, 2.0])])
    assert builder.call(choice, [0], choice.signatures[0], positive=True)
    line = builder.lines[-1]
    assert line.op == "shifted" and type(line.args[0]) is np.int64 and line.args[0] == 0


# --- a run in chunks, mapped as the engine maps units ------------------------------------------

CHEAP = dict(backends=["reverse", "numeric"], dtypes=["float64"], ops=["sin", "tanh", "add", "multiply"])


def _merged(n: int, **options) -> tuple:
    run = check_fuzz(n, CHEAP["backends"], CHEAP["dtypes"], seed=5, ops=CHEAP["ops"], **options)
    return run.programs, run.subject_and_cells()


def test_a_run_is_cut_into_chunks_numbered_on_from_chunk_to_chunk():
    fuzz = FuzzMerge(2 * CHUNK + 3, ["numeric"], ["float64"], seed=2)
    assert [(c.index, c.count) for c in fuzz.chunks] == [(0, CHUNK), (1, CHUNK), (2, 3)]
    assert [c.text().split(" of ")[0] for c in fuzz.chunks][2] == (
        f"the random programs #{2 * CHUNK + 1} to #{2 * CHUNK + 3}"
    )
    assert f"adcore conformance --fuzz {2 * CHUNK + 3} --seed 2 --jobs 1" in fuzz.chunks[0].text()


def test_the_chunked_fuzz_is_the_same_to_the_bit_serially_and_in_two_processes():
    n = CHUNK + 2  # two chunks, the second of 2 programs
    programs, (subject, cells) = _merged(n)
    assert [p.number for p in programs] == list(range(1, n + 1))
    assert len({p.source for p in programs}) == n  # distinct across the chunks too
    assert all(c.status == "agrees" and c.message == f"{n} programs" for c in cells)
    assert _merged(n, jobs=2) == (programs, (subject, cells))


def test_the_chunked_fuzz_is_the_same_to_the_bit_on_a_dask_cluster(cluster_address):
    n = CHUNK + 2
    assert _merged(n, scheduler=cluster_address) == _merged(n)


def test_each_chunk_mixes_its_index_into_the_values_so_they_start_from_different_programs():
    first, second = (
        check_chunk(FuzzChunk(2 * CHUNK, k, 3, ("numeric",), ("float64",), 0, ("sin",))) for k in (0, 1)
    )
    assert [p.number for p in second.programs] == [CHUNK + 1, CHUNK + 2, CHUNK + 3]
    assert not {p.source for p in first.programs} & {p.source for p in second.programs}
    # the same chunk draws the same programs again
    again = check_chunk(FuzzChunk(2 * CHUNK, 1, 3, ("numeric",), ("float64",), 0, ("sin",)))
    assert again == second


def _result(index: int, sources: list[str], failing: str | None = None) -> ChunkResult:
    """A chunk's result as a task sends it back: one agreeing numeric cell per program (or failing)."""
    programs = [
        Checked(
            index * CHUNK + i + 1,
            source,
            [Cell("fuzz", "numeric", "float64", "disagrees" if source == failing else "agrees", checks=1)],
        )
        for i, source in enumerate(sources)
    ]
    failure = next(
        (Checked(p.number, f"shrunk {p.source}", p.cells) for p in programs if p.source == failing), None
    )
    return ChunkResult(index, programs, failure)


def test_the_merge_takes_chunks_in_any_order_and_stops_at_the_lowest_failing_one():
    fuzz = FuzzMerge(4 * CHUNK, ["numeric"], ["float64"], seed=7)
    fuzz.add(_result(3, ["d"], failing="d"))
    fuzz.add(_result(2, ["c1", "c2"], failing="c2"))
    assert not fuzz.complete  # chunks 0 and 1 may fail first
    with pytest.raises(InvalidValueError, match="no result for its chunk 0 of 4"):
        fuzz.subject_and_cells()  # never a merge with a chunk left out
    fuzz.add(_result(1, ["b"]))
    fuzz.add(_result(0, ["a"]))
    assert fuzz.complete
    subject, (cell,) = fuzz.subject_and_cells()
    assert fuzz.sources == ["a", "b", "c1", "c2"]  # chunk 3's programs are left out
    assert (
        subject.source
        == f"# adcore conformance --fuzz {4 * CHUNK} --seed 7: program #{2 * CHUNK + 2}\nshrunk c2"
    )
    assert cell.status == "disagrees" and "that program is the fuzz subject's source" in cell.message


def test_a_program_a_later_chunk_draws_again_is_counted_once():
    fuzz = FuzzMerge(2 * CHUNK, ["numeric"], ["float64"])
    fuzz.add(_result(1, ["b", "a"]))
    fuzz.add(_result(0, ["a", "c"]))
    assert [(p.number, p.source) for p in fuzz.programs] == [(1, "a"), (2, "c"), (CHUNK + 1, "b")]
    (cell,) = fuzz.subject_and_cells()[1]
    assert (cell.status, cell.checks, cell.message) == ("agrees", 3, "3 programs")


def test_a_planted_wrong_vjp_is_found_and_reported_the_same_serially_and_in_two_processes(register_plugin):
    register_plugin(_cube_plugin(), "cubes")  # (forked processes have it too)
    ops = ["cube", "sin", "add", "multiply"]
    serial = check_fuzz(2 * CHUNK, ["reverse", "forward"], ["float64"], ops=ops)
    assert serial.failure is not None and serial.failure.number <= CHUNK
    assert set(serial.results) == {0}  # the first failure ends the run: chunk 1 was never checked
    subject, cells = serial.subject_and_cells()
    assert subject.source.startswith(f"# adcore conformance --fuzz {2 * CHUNK} --seed 0: program #")
    assert {c.backend: c.status for c in cells} == {"reverse": "disagrees", "forward": "agrees"}
    parallel = check_fuzz(2 * CHUNK, ["reverse", "forward"], ["float64"], ops=ops, jobs=2)
    assert parallel.subject_and_cells() == (subject, cells)
    assert parallel.programs == serial.programs


def _engine_report(**options):
    result = engine.run(["numeric"], ops=["sin"], dtypes=["float64"], fuzz=CHUNK + 1, **options)
    return replace(result, seconds=0.0)


def test_the_engine_checks_the_fuzz_chunks_in_its_map_with_the_units():
    serial = _engine_report()
    assert [s.name for s in serial.subjects] == ["sin", "fuzz"]
    assert next(c for c in serial.cells if c.subject == "fuzz").message == f"{CHUNK + 1} programs"
    assert _engine_report(jobs=2) == serial


def test_the_engine_checks_the_fuzz_chunks_on_a_dask_cluster_to_the_same_report(cluster_address):
    # the serial report of a fresh process, as `adcore conformance --jobs 1` makes it: under the full
    # suite, one made in this process (after other tests) differed from the cluster's in the last
    # bits of sin's numeric cell (noted in issue 37's closing note, not yet explained)
    code = (
        "import pickle, sys; from dataclasses import replace; from adcore.conformance import engine\n"
        f"r = engine.run(['numeric'], ops=['sin'], dtypes=['float64'], fuzz={CHUNK + 1})\n"
        "sys.stdout.buffer.write(pickle.dumps(replace(r, seconds=0.0)))"
    )
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600, check=True)
    serial = pickle.loads(fresh.stdout)
    assert serial.cells and _engine_report(scheduler=cluster_address) == serial


def test_the_engine_stops_at_the_first_failing_chunk_once_the_units_are_done(monkeypatch):
    checked = []

    def check_chunk(chunk: FuzzChunk) -> ChunkResult:  # chunk 0 fails, as a task would send it back
        checked.append(chunk.index)
        return _result(chunk.index, [f"p{chunk.index}"], failing="p0")

    monkeypatch.setattr(fuzz_chunks, "check_chunk", check_chunk)
    report = engine.run(["numeric"], ops=["sin"], dtypes=["float64"], fuzz=3 * CHUNK)
    assert checked == [0]  # chunks 1 and 2 were never checked
    assert (
        report.subjects[-1].source
        == f"# adcore conformance --fuzz {3 * CHUNK} --seed 0: program #1\nshrunk p0"
    )
    assert [c.status for c in report.cells] == ["agrees", "disagrees"]  # sin's, then the fuzz subject's


def test_without_hypothesis_a_run_with_fuzz_says_so_before_checking_any_unit(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    checked = []
    with pytest.raises(MissingDependencyError, match=r"pip install 'adcore\[fuzz\]'"):
        engine.run(["numeric"], ops=["sin"], dtypes=["float64"], fuzz=1, progress=checked.append)
    assert checked == []
    monkeypatch.undo()
    assert engine.run(["numeric"], ops=["sin"], dtypes=["float64"], fuzz=1).ok  # the next run works


def test_a_negative_number_of_programs_is_refused():
    with pytest.raises(InvalidValueError, match="n >= 0 random programs, not -3"):
        FuzzMerge(-3, ["numeric"], ["float64"])


def test_a_run_with_fuzz_in_two_processes_does_not_import_dask():
    code = (
        "import sys; from adcore.conformance import engine; "
        "engine.run(['numeric'], ops=['sin'], dtypes=['float64'], fuzz=2, jobs=2); "
        "print(sorted({'dask', 'distributed'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "[]"


def test_a_reports_versions_leave_out_the_user_functions_its_checks_define_in_this_process():
    # the source backend's checks define custom_vjp functions (pseudo-plugin "user") where they
    # run: here, but not in a forked process or on a Dask worker, whose reports are the same
    report = engine.run(None, ops=["sin"], dtypes=["float64"])
    assert "user" in get_registry().plugins
    assert "user" not in report.versions and report.versions["core"]
