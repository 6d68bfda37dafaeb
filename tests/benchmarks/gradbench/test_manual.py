"""manual.py: building GradBench's manual tool, or saying what to install."""

from __future__ import annotations

from pathlib import Path

import manual
import pytest


def test_a_missing_compiler_or_header_is_a_clear_error_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manual, "JSON_HPP", tmp_path / "nlohmann" / "json.hpp")
    monkeypatch.setattr(manual.shutil, "which", lambda program: None if program == "g++" else "/usr/bin/make")
    with pytest.raises(manual.ManualBuildError) as raised:
        manual.ensure_built()
    message = str(raised.value)
    assert f"needs g++, {tmp_path / 'nlohmann' / 'json.hpp'} to build" in message
    assert "apt-get install g++ make nlohmann-json3-dev" in message


def test_the_build_includes_the_directory_of_json_hpp_and_is_portable() -> None:
    command = manual.build_command()
    assert command[:3] == ["make", "-C", str(manual.MANUAL)] and "NATIVE=no" in command
    (flags,) = [part for part in command if part.startswith("CXXFLAGS=")]
    assert "-I/usr/include/nlohmann" in flags.split() and "-I../../cpp" in flags.split()


def test_the_build_makes_the_binary_of_every_eval_that_validates_with_it_and_only_those() -> None:
    command = manual.build_command()
    targets = [part for part in command if part.startswith("bin/")]
    assert targets == [f"bin/{name}" for name in manual.validated_evals()]
    assert {"lse", "ba", "ht", "ode"} <= set(manual.validated_evals())
    # hello, saddle and particle check their answers themselves: no binary of theirs is needed
    assert not {"hello", "saddle", "particle"} & set(manual.validated_evals())
    for name in manual.validated_evals():
        assert (manual.MANUAL / f"{name}.cpp").is_file()
        assert 'tool="manual"' in (manual.EVALS / name / "run.py").read_text()
