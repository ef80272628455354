"""Every code block of README.md and docs/*.md runs, or is checked for what its label says it is.

See tests/docs/blocks.py for how a block declares its setup. Blocks that talk to a server run against
a fresh server of each kind (embedded and nats-server 2.15.1), so a broken example fails the suite.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.support.targets import KINDS, Target, make_target, nats_server_binary

import pyjetstream as pjs

from . import runner
from .blocks import CHECKED_LANGS, ROOT, Block, all_blocks

BLOCKS = all_blocks()

# Blocks that are not run, per page: each is a deliberate decision (the marker says why), so a new
# one is a change to this table too.
SKIPS = {
    "README.md": 2,  # pip install, and bash scripts/run.sh (minutes of Spark) + scripts/test.sh (this suite)
    "docs/getting-started.md": 2,  # the same
    "docs/scale.md": 3,  # a 3-node NATS cluster and a Spark cluster (tests/cluster/ runs both)
    "docs/benchmarks.md": 1,  # bench/run_all.sh: minutes of benchmarks
}

SHELL_WORDS = ("pyjetstream", "python", "python3", "pip", "bash", "nats", "nats-server", "pytest")


def _params(kinds: bool, *modes: str, langs: tuple[str, ...] = ("python",)) -> list[object]:
    params: list[object] = []
    for block in BLOCKS:
        if block.lang not in langs or block.mode not in modes or block.snippet_path:
            continue
        if kinds and (block.needs_server or block.mode == "with js") and not runner.serve_lines(block):
            params += [pytest.param(block, kind, id=f"{block.id}-{kind}") for kind in KINDS]
        else:
            params.append(pytest.param(block, None, id=block.id))
    return params


@pytest.fixture(scope="module")
def doc_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Target]]:
    """One server of each kind for this module's blocks, started on first use; emptied before each block."""
    started: dict[str, Target] = {}

    def get(kind: str) -> Target:
        if kind not in started:
            started[kind] = make_target(kind, tmp_path_factory.mktemp(f"docs-{kind}"))
        return started[kind]

    yield get
    for target in started.values():
        target.stop()


async def _url(doc_servers: Callable[[str], Target], kind: str | None) -> str | None:
    if kind is None:
        return None
    url = doc_servers(kind).url
    await runner.clean(url)
    return url


# -- the labels ---------------------------------------------------------------------------------


def test_blocks_are_found() -> None:
    assert len(BLOCKS) > 40
    assert {b.path for b in BLOCKS} >= {"README.md", "docs/client.md", "docs/spark.md"}


def test_every_block_says_what_it_is() -> None:
    """A language on every fence, from the vocabulary the tests know; a known marker on every block."""
    bad = [f"{b.id}: ```{b.lang}" for b in BLOCKS if b.lang not in (*runner_langs(), *CHECKED_LANGS)]
    assert not bad, (
        "blocks need a language the docs tests know (python, bash, text, nats, ...):\n" + "\n".join(bad)
    )
    for block in BLOCKS:
        mode = block.mode  # raises on an unknown marker
        if block.lang not in runner_langs():
            assert block.marker is None, f"{block.id}: a marker on a ```{block.lang} block, which never runs"
        if mode == "with spark" or mode == "pytest" or mode == "with js":
            assert block.lang == "python", f"{block.id}: `{mode}` is for Python blocks"


def runner_langs() -> tuple[str, ...]:
    return ("python", "bash", "console")


def test_skips_are_deliberate() -> None:
    """Each skip gives its reason, and the count per page is the one pinned in SKIPS."""
    skips = [b for b in BLOCKS if b.mode == "skip"]
    for block in skips:
        assert len(block.argument) >= 10, f"{block.id}: a skip says why (`<!-- test: skip: REASON -->`)"
    assert Counter(b.path for b in skips) == Counter(SKIPS)


def test_covered_blocks_name_their_test() -> None:
    for block in (b for b in BLOCKS if b.mode == "covered-by"):
        test_file = ROOT / block.argument.split("::")[0]
        assert test_file.is_file(), f"{block.id}: covered by {block.argument}, which does not exist"
        assert Path(block.path).name in test_file.read_text(), f"{test_file} does not read {block.path}"


def test_included_files_run_elsewhere() -> None:
    """A block showing examples/js_*.py is run by tests/client_js/test_examples.py; text may show bench output."""
    for block in (b for b in BLOCKS if b.snippet_path):
        path = block.snippet_path
        assert path is not None and (ROOT / path).is_file(), f"{block.id}: {path} does not exist"
        if block.lang == "python":
            assert re.fullmatch(r"examples/js_\w+\.py", path), (
                f"{block.id}: {path} is not an example the suite runs"
            )
        else:
            assert block.lang == "text" and path.startswith("bench/results/"), f"{block.id}: includes {path}"


def test_skipped_blocks_parse() -> None:
    for block in (b for b in BLOCKS if b.mode == "skip"):
        if block.lang == "python":
            compile(block.text, block.id, "exec", flags=0x2000)  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        else:
            result = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
            assert result.returncode == 0, f"{block.id}: {result.stderr}"


# -- blocks that are not programs ---------------------------------------------------------------


def _checked(lang: str) -> list[object]:
    return [pytest.param(b, id=b.id) for b in BLOCKS if b.lang == lang and not b.snippet_path]


@pytest.mark.parametrize("block", _checked("text"))
def test_text_is_not_code(block: Block) -> None:
    """Output and listings only: a shell session or a Python program belongs in a block that runs."""
    for line in block.text.splitlines():
        words = line.split()
        assert not line.startswith("$ "), f"{block.id}: a shell session in a text block"
        command = len(words) > 1 and words[0] in SHELL_WORDS and re.fullmatch(r"-{0,2}[a-z][\w.-]*", words[1])
        assert not command, f"{block.id}: a command in a text block: {line}"
    assert not re.search(r"^(import |from \w+ import |async def |await )", block.text, re.M), (
        f"{block.id}: Python in a text block"
    )


@pytest.mark.parametrize("block", _checked("json"))
def test_json_parses(block: Block) -> None:
    json.loads(block.text)


@pytest.mark.parametrize("block", _checked("toml"))
def test_toml_parses(block: Block) -> None:
    tomllib.loads(block.text)


@pytest.mark.parametrize("block", _checked("javascript"))
def test_javascript_parses(block: Block, tmp_path: Path) -> None:
    node = subprocess.run(["which", "node"], capture_output=True, text=True).stdout.strip()
    if not node:
        pytest.skip("node is not installed")
    (tmp_path / "block.mjs").write_text(block.text)
    result = subprocess.run([node, "--check", str(tmp_path / "block.mjs")], capture_output=True, text=True)
    assert result.returncode == 0, f"{block.id}: {result.stderr}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("block", _checked("nats"))
def test_nats_config_loads(block: Block, kind: str, tmp_path: Path) -> None:
    """A configuration shown in the docs is one both servers take (``-t``: check it and exit)."""
    conf = tmp_path / "server.conf"
    conf.write_text(block.text)
    exe = [sys.executable, "-m", "pyjetstream", "serve"] if kind == "embedded" else [nats_server_binary()]
    env = runner.block_env(tmp_path, None)
    env.update({name: "secret" for name in re.findall(r"\$([A-Z_][A-Z0-9_]*)", block.text)})
    result = subprocess.run(
        [*exe, "-t", "-c", str(conf)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"{block.id} refused by {kind}:\n{result.stdout}\n{result.stderr}"


# -- blocks that run ----------------------------------------------------------------------------


@pytest.mark.parametrize(("block", "kind"), _params(True, "program"))
async def test_python_program(
    block: Block, kind: str | None, doc_servers: Callable[[str], Target], tmp_path: Path
) -> None:
    url = await _url(doc_servers, kind)
    runner.run_program(block, tmp_path, url)


@pytest.mark.parametrize(("block", "kind"), _params(True, "with js"))
async def test_python_snippet(block: Block, kind: str, doc_servers: Callable[[str], Target]) -> None:
    url = await _url(doc_servers, kind)
    assert url is not None
    nc = await pjs.connect(url)
    try:
        namespace = {"pjs": pjs, "nc": nc, "js": pjs.jetstream(nc), "url": url, "__name__": "__doc_block__"}
        await runner.run_snippet(block, namespace, url)
    finally:
        await nc.close()


@pytest.mark.parametrize(("block", "kind"), _params(True, "program", langs=("bash", "console")))
async def test_shell(
    block: Block, kind: str | None, doc_servers: Callable[[str], Target], tmp_path: Path
) -> None:
    url = await _url(doc_servers, kind)
    runner.run_shell(block, tmp_path, url)


@pytest.mark.parametrize(("block", "kind"), _params(False, "pytest"))
def test_pytest_module(block: Block, kind: None, tmp_path: Path) -> None:
    runner.run_pytest(block, tmp_path)


def test_snippets_with_js_need_a_server() -> None:
    """``with js`` gives a client: a snippet that never uses it is a program and should say so."""
    for block in (b for b in BLOCKS if b.mode == "with js"):
        assert re.search(r"\b(js|nc|url)\b", block.text), (
            f"{block.id}: `with js` but uses none of js, nc, url"
        )
