"""Running a documentation block as its reader would: a script, a shell session, a snippet, a test file."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import shlex
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

import pyjetstream as pjs

from .blocks import DEFAULT_URL, Block

TIMEOUT = 120.0  # a whole block, on a loaded 2-core machine
VENV_BIN = str(Path(sys.executable).parent)

# a server a block starts: `pyjetstream serve ARGS [&] [# comment]`, not `-t` (test the config and exit)
_SERVE = re.compile(r"^\s*pyjetstream\s+serve\b(?P<args>(?:(?!\s-t\b)[^#&])*)(?P<bg>&)?\s*(#.*)?$")


def block_env(tmp: Path, url: str | None) -> dict[str, str]:
    """The reader's environment, contained in ``tmp``: the venv's commands first on PATH, the temp
    directory (nats-server's and our default store), HOME (nats CLI contexts) and NATS_URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        TMPDIR=str(tmp),
        HOME=str(tmp),
        XDG_CONFIG_HOME=str(tmp / ".config"),
        PYTHONUNBUFFERED="1",
    )
    if url is not None:
        env["NATS_URL"] = url
    return env


def with_url(text: str, url: str | None) -> str:
    return text.replace(DEFAULT_URL, url) if url is not None else text


def _check(result: subprocess.CompletedProcess[str], block: Block, source: str) -> None:
    if result.returncode != 0:
        raise AssertionError(
            f"{block.id} exited {result.returncode}\n--- block as run\n{source}\n"
            f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"
        )


def run_program(block: Block, tmp: Path, url: str | None) -> str:
    """A Python block as a script: ``python block.py`` in an empty directory."""
    source = with_url(block.text, url)
    script = tmp / "block.py"
    script.write_text(source)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp,
        env=block_env(tmp, url),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    _check(result, block, source)
    return result.stdout


def start_snippet(block: Block, namespace: dict[str, Any], url: str | None) -> Any:
    """Run a Python snippet in ``namespace`` (``js``, ``spark`` ...): a coroutine when it awaits."""
    source = with_url(block.text, url)
    code = compile(source, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    return eval(code, namespace)


async def run_snippet(block: Block, namespace: dict[str, Any], url: str | None) -> None:
    """A Python snippet with top-level ``await``."""
    result = start_snippet(block, namespace, url)
    if inspect.iscoroutine(result):
        await asyncio.wait_for(result, TIMEOUT)


_SERVE_PRELUDE = r"""
__doc_serve() {  # __doc_serve DIR ARGS...: a `pyjetstream serve` line, on random ports, waited for
  local dir=$1; shift; mkdir -p "$dir"
  pyjetstream serve "$@" -p -1 --ports_file_dir "$dir" >"$dir.log" 2>&1 &
  local pid=$! i
  for i in $(seq 600); do
    if NATS_URL=$(python -c 'import glob,json,sys; print(json.load(open(glob.glob(sys.argv[1])[0]))["nats"][0])' \
        "$dir/*.ports" 2>/dev/null); then export NATS_URL; return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "pyjetstream serve $* did not start:" >&2; cat "$dir.log" >&2; return 1; }
    sleep 0.05
  done
  echo "pyjetstream serve $* did not start in 30 s" >&2; return 1
}
trap '__status=$?; jobs -p | xargs -r kill 2>/dev/null; wait; exit $__status' EXIT
"""


def shell_lines(block: Block) -> list[str]:
    """The commands of a bash block (a ``console`` block's ``$`` lines)."""
    if block.lang == "console":
        return [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    return block.text.splitlines()


def serve_lines(block: Block) -> list[str]:
    return [line for line in shell_lines(block) if _SERVE.match(line)]


def shell_script(block: Block, url: str | None, ports: Path) -> str:
    """The block as bash runs it: each ``pyjetstream serve`` line (in the background or not) starts that
    server on random ports, with its own flags, waits until it is ready and points NATS_URL at it."""
    lines = [_SERVE_PRELUDE]
    for n, line in enumerate(shell_lines(block)):
        match = _SERVE.match(line)
        if match is None:
            lines.append(with_url(line, url))
            continue
        args = match["args"].strip()
        if re.search(r"(^|\s)(-m|--http_port)(\s|=)", args):
            args += " -m -1"
        lines.append(f"__doc_serve {shlex.quote(str(ports / str(n)))} {args}")
    return "\n".join(lines) + "\n"


def run_shell(block: Block, tmp: Path, url: str | None) -> str:
    """A bash block with ``bash -e -o pipefail`` in an empty directory."""
    script = shell_script(block, url, tmp / ".ports")
    proc = subprocess.Popen(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp,
        env=block_env(tmp, url),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # a server the block left running
    _check(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), block, script)
    return stdout


def run_pytest(block: Block, tmp: Path) -> str:
    """A test module: pytest with the plugin, on both kinds of server, as a user's suite runs."""
    (tmp / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "nats_server_kinds = embedded,nats-server\n"
    )
    (tmp / "test_block.py").write_text(block.text)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
        cwd=tmp,
        env=block_env(tmp, None),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    _check(result, block, block.text)
    return result.stdout


async def clean(url: str) -> None:
    """Delete every stream (KV and object buckets are streams): each block starts from nothing."""
    nc = await pjs.connect(url)
    try:
        js = pjs.jetstream(nc)
        for name in [name async for name in js.stream_names()]:
            await js.delete_stream(name)
    finally:
        await nc.close()
