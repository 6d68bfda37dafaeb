"""Answer GradBench's protocol on stdin/stdout with adcore and one backend (`--backend`).

Every eval module in this package has the same three parts:

- `UNSUPPORTED`: the backends that cannot run the eval, each with the reason the tool gives at `define`;
- `prepare(input, backend)`: untimed, turns the eval's JSON input into arrays (and builds anything a user
  builds once, such as a differentiated function);
- one function per name the eval sends (`primal`/`gradient`, `objective`/`jacobian`, ...), taking what
  `prepare` returned; its result is timed by `gradbench.wrap.multiple_runs` and sent back as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from importlib import import_module
from typing import Any

import numpy as np
from gradbench import wrap

import adcore
from adcore_tool.backends import BACKENDS, options

EVALS = ("hello", "lse", "llsq", "det", "gmm", "kmeans", "ode", "lstm", "ba", "ht", "saddle", "particle")


def to_json(value: Any) -> Any:
    """NumPy arrays and scalars, in dicts, lists and tuples, as plain JSON values."""
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def define(module: str, backend: str) -> dict[str, Any]:
    if module not in EVALS:
        return {"success": False, "error": f"adcore has no module for the eval {module!r}"}
    reason = import_module(f"adcore_tool.{module}").UNSUPPORTED.get(backend)
    if reason is not None:
        return {"success": False, "error": f"adcore-{backend} cannot run {module}: {reason}"}
    # its plugin loaded here, as a long-running program has it, not in a timed run
    adcore.get_backend(options(backend)["backend"])
    return {"success": True}


def evaluate(message: dict[str, Any], backend: str) -> dict[str, Any]:
    eval_module = import_module(f"adcore_tool.{message['module']}")
    function = getattr(eval_module, message["function"])
    repeated = isinstance(message["input"], dict) and "min_runs" in message["input"]
    timing = wrap.multiple_runs if repeated else wrap.function  # hello's inputs are bare numbers, run once
    timed = timing(pre=lambda raw: eval_module.prepare(raw, backend), post=to_json)(function)
    try:
        return dict(timed.wrapped(message["input"]))
    except Exception as error:  # the protocol's answer to any failure is success: false with the traceback
        return {"success": False, "error": "".join(traceback.format_exception(error))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="reverse", choices=tuple(BACKENDS), help="the tool's backend")
    args = parser.parse_args()
    for line in sys.stdin:
        message = json.loads(line)
        response: dict[str, Any] = {}
        if message["kind"] == "start":
            response["tool"] = f"adcore-{args.backend}"
        elif message["kind"] == "define":
            response = define(message["module"], args.backend)
        elif message["kind"] == "evaluate":
            response = evaluate(message, args.backend)
        print(json.dumps({"id": message["id"]} | response), flush=True)


if __name__ == "__main__":
    main()
