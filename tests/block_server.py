"""A fork server for tests/code_blocks.py: `python script.py` with numpy and adcore already imported.

Started as `python block_server.py FD` (FD: its end of a SOCK_SEQPACKET socketpair). It imports numpy and
adcore, nothing else of adcore's state (no plugin loaded, no registry built: `import adcore` builds none),
then, per request (`cwd NUL script NUL name=value NUL ...`: the environment, with the stdout and stderr files'
descriptors), forks a child that becomes what `python script.py` run in cwd would be: its os.environ,
its own __main__, sys.argv, sys.path[0], the
traceback of an uncaught exception printed from the script's frame, exit status 1, atexit and thread
shutdown by the interpreter's own exit. The server answers the child's pid, then its exit code.
"""

import builtins
import gc
import os
import socket
import sys
import types
from importlib.machinery import SourceFileLoader

import numpy

import adcore  # noqa: F401  (imported for the children; nothing of it is used here)

# What the blocks inherit lives as long as they do: frozen, their garbage collector never walks it
# again (nor writes to its pages). The 87 docs blocks took 39.6 s of CPU, 25.8 s frozen.
gc.freeze()


def become_script(request: bytes, out: int, err: int) -> None:
    """In the forked child: run the script as `python script.py` would; never returns (SystemExit)."""
    cwd, name, *environment = request.decode().split("\0")
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    os.chdir(cwd)
    os.environ.clear()  # the client's, which differs from the server's only by PYTEST_CURRENT_TEST
    os.environ.update(variable.split("=", 1) for variable in environment)
    path = os.path.join(cwd, name)
    sys.argv, sys.orig_argv, sys.path[0] = [name], [sys.executable, name], cwd
    numpy.random.seed()  # a fresh interpreter's global RandomState is seeded from the OS, not the server's
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path,
        __cached__=None,
        __builtins__=builtins,
        __annotations__={},
        __loader__=SourceFileLoader("__main__", path),
    )
    sys.modules["__main__"] = main  # for good: pickling, multiprocessing's spawn and atexit see the script
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:  # what the interpreter prints: the traceback from the script's frame
        e.__traceback__ = e.__traceback__.tb_next
        sys.excepthook(type(e), e, e.__traceback__)
        raise SystemExit(1) from None
    raise SystemExit(0)


def serve(sock: socket.socket) -> None:
    while True:
        request, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        if not request:  # the client closed its end
            return
        pid = os.fork()
        if pid == 0:
            become_script(request, *fds)
        for fd in fds:
            os.close(fd)
        sock.sendall(str(pid).encode())
        _, status = os.waitpid(pid, 0)
        sock.sendall(str(os.waitstatus_to_exitcode(status)).encode())


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
