"""``pyjetstream serve`` keeps large buffers' memory in its process (`serve.tune_malloc`): buffers
of a few hundred KiB made and freed over and over (a read of large payloads) no longer fault their
pages in again each time, nor does a file store's active block growing to its 8 MiB with large
records. Counted in page faults (``ru_minflt``) in a fresh interpreter, since ``mallopt`` is
process-wide; ``PYJETSTREAM_MALLOC=default`` leaves glibc as it was."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHURN = """
import resource, sys
from pyjetstream.cli import serve
tuned = serve.tune_malloc()
def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b = b"x" * 300_000
for _ in range(3):
    xs = [b + b"y" for _ in range(4)]; del xs
before = faults()
for _ in range(100):
    xs = [b + b"y" for _ in range(4)]; del xs
print(tuned, faults() - before)
"""


# 800 records of 128 KiB (a 100 MiB object's chunks) into a file store's 8 MiB blocks, after 100.
BLOCKS = """
import resource, sys, tempfile
from pyjetstream.cli import serve
tuned = serve.tune_malloc()
from pyjetstream.server.jetstream.store import FileStore, StoreConfig
from pyjetstream.server.jetstream.store.filestore import FileStoreConfig
def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with tempfile.TemporaryDirectory() as d:
    fs = FileStore(FileStoreConfig(directory=d), StoreConfig(name="O"))
    chunk = b"o" * 131072
    for _ in range(100):
        fs.store_msg("$O.O.C.x", b"", bytes(chunk))
    before = faults()
    for _ in range(800):
        fs.store_msg("$O.O.C.x", b"", bytes(chunk))
    print(tuned, (faults() - before) // 800)
    fs.stop()
"""


def churn(env_value: str | None, script: str = CHURN) -> tuple[bool, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("PYJETSTREAM_MALLOC", None)
    if env_value is not None:
        env["PYJETSTREAM_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    tuned, faults = out.stdout.split()
    return tuned == "True", int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_large_buffers_are_reused_without_page_faults() -> None:
    tuned, faults = churn(None)
    assert tuned and faults < 100  # 400 buffers of 300 KB: ~7,000 faults untuned
    untuned, faults = churn("default")
    assert not untuned and faults > 1000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_an_active_block_growing_with_large_records_reuses_its_pages() -> None:
    """A record of 128 KiB faulted its 32 pages in (one per 4 KiB written) with glibc's 128 KiB top
    pad, whether or not the other two were tuned (`MALLOC_TOP_PAD`)."""
    tuned, faults = churn(None, BLOCKS)
    assert tuned and faults <= 8
    untuned, faults = churn("default", BLOCKS)
    assert not untuned and faults >= 24
