"""The fenced code blocks of a Markdown file, and one python block run alone as a new user would paste it.

A python block runs in a fresh process of its own (a script in a temporary directory, the block at its
own line of the file, so a traceback's line is the file's): it cannot use a name another block defined,
and cannot leak state (registered plugins) into other blocks or into pytest. On Linux the process is
forked from a BlockServer that has imported numpy and adcore (tests/block_server.py), not a cold
interpreter: about 0.25 s of CPU less a block, and the same run otherwise. A block with a title
(```python title="pkg/mod.py"```) shows a file: it is written there for the blocks after it, not run.
"""

from __future__ import annotations

import locale
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Block:
    page: str  # the file's name, as ids and messages show it
    line: int  # the line of the block's first line of code in the file
    lang: str
    title: str
    code: str
    number: int = 0  # a python block's place among the file's python blocks, from 1; 0 for other languages

    @property
    def first_line(self) -> str:
        return self.code.lstrip("\n").partition("\n")[0]

    @property
    def id(self) -> str:
        """`page:n`, the n-th python block of the page."""
        return f"{self.page}:{self.number}"


FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)(?P<info>.*)$")


def blocks(folder: Path, page: str) -> list[Block]:
    """The fenced blocks of folder/page, indented ones (in a list item) dedented."""
    lines = (folder / page).read_text().splitlines()
    found, i, number = [], 0, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        i += 1
        if not m:
            continue
        indent = len(m["indent"])
        start, close = i, re.compile(rf"^ {{{indent}}}```\s*$")
        while not close.match(lines[i]):
            i += 1
        title = re.search(r'title="([^"]+)"', m["info"])
        code = "\n".join(line[indent:] for line in lines[start:i]) + "\n"
        number += m["lang"] == "python"
        found.append(
            Block(
                page,
                start + 1,
                m["lang"],
                title[1] if title else "",
                code,
                number if m["lang"] == "python" else 0,
            )
        )
        i += 1
    return found


TIMEOUT = 600  # seconds: a hang guard


def environment() -> dict[str, str]:
    return {**os.environ, "MPLBACKEND": "Agg", "NO_MKDOCS_2_WARNING": "1"}


def run(cmd: list[str] | str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=TIMEOUT, **kw
    )


class BlockServer:
    """A process that has imported numpy and adcore and forks one child per script (block_server.py)."""

    def __init__(self) -> None:
        self.env = environment()
        self.socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server = [sys.executable, str(Path(__file__).with_name("block_server.py")), str(theirs.fileno())]
        self.process = subprocess.Popen(
            server, env=self.env, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL
        )
        theirs.close()

    def serves(self, env: dict[str, str]) -> bool:
        """Whether a block run with env may be forked from the server: numpy and adcore were imported
        under the same environment (pytest's PYTEST_CURRENT_TEST aside, which names the test)."""
        return all(env.get(k) == self.env.get(k) for k in {*env, *self.env} - {"PYTEST_CURRENT_TEST"})

    def close(self) -> None:
        self.socket.close()  # the server returns when its end reads nothing
        self.process.wait(timeout=TIMEOUT)

    def run(self, script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
        """`python script` in cwd with env, as `run` would run it."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            request = "\0".join([str(cwd), script, *(f"{k}={v}" for k, v in env.items())])
            socket.send_fds(self.socket, [request.encode()], [out.fileno(), err.fileno()])
            self.socket.settimeout(TIMEOUT)
            pid = int(self.answer())
            try:
                returncode = int(self.answer())
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self.answer()
                raise subprocess.TimeoutExpired([sys.executable, script], TIMEOUT) from None
            stdout, stderr = (text(f) for f in (out, err))
        return subprocess.CompletedProcess([sys.executable, script], returncode, stdout, stderr)

    def answer(self) -> bytes:
        data = self.socket.recv(64)
        if not data:
            raise RuntimeError(f"the block server exited ({self.process.wait()})")
        return data


def text(f) -> str:
    """What subprocess's text=True makes of a child's output: the locale's encoding, universal newlines."""
    f.seek(0)
    data = f.read().decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


def block_server() -> BlockServer | None:
    """A BlockServer on Linux (it forks), None elsewhere: blocks then run in a cold interpreter."""
    return BlockServer() if sys.platform == "linux" else None


def write_script(block: Block, folder: Path) -> Path:
    """The block as a script in folder, at its own lines of the file, under a name no import can mean."""
    stem = re.sub(r"\W", "_", Path(block.page).stem)
    script = folder / f"block_{stem}_{block.number}.py"
    script.write_text("\n" * (block.line - 1) + block.code)
    return script


def run_alone(
    block: Block, page_blocks: list[Block], tmp_path: Path, server: BlockServer | None = None
) -> subprocess.CompletedProcess:
    """Run a python block by itself in a fresh process, after writing the titled blocks above it: forked
    from the server, or a cold interpreter without one (or when the environment changed since it started)."""
    for shown in page_blocks:
        if shown.title and shown.line < block.line:
            (tmp_path / shown.title).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / shown.title).write_text(shown.code)
    script, env = write_script(block, tmp_path).name, environment()
    if server is not None and server.serves(env):
        return server.run(script, tmp_path, env)
    return run([sys.executable, script], tmp_path)


def undefined_names(python_blocks: list[Block], tmp_path: Path) -> list[str]:
    """`page:n line L: Undefined name ...` for each name a block uses but neither defines nor imports,
    in code the run does not reach too (a function never called): ruff's F821 over all blocks at once."""
    scripts = {write_script(b, tmp_path).name: b.id for b in python_blocks}
    cmd = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F821"]
    result = run([*cmd, "--output-format", "concise", *scripts], tmp_path)
    assert result.returncode in (0, 1) and not result.stderr, result.stderr
    found = re.findall(r"^(\S+\.py):(\d+):\d+: F821 (.*)$", result.stdout, flags=re.M)
    return list(dict.fromkeys(f"{scripts[name]} line {line}: {message}" for name, line, message in found))
