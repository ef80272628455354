"""``pyjetstream serve`` keeps large buffers' memory in its process (`serve.tune_malloc`): buffers
of a few hundred KiB made and freed over and over (a read of large payloads) no longer fault their
pages in again each time. Counted in page faults (``ru_minflt``) in a fresh interpreter, since
``mallopt`` is process-wide; ``PYJETSTREAM_MALLOC=default`` leaves glibc as it was."""

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


def churn(env_value: str | None) -> tuple[bool, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("PYJETSTREAM_MALLOC", None)
    if env_value is not None:
        env["PYJETSTREAM_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", CHURN], env=env, capture_output=True, text=True, check=True)
    tuned, faults = out.stdout.split()
    return tuned == "True", int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_large_buffers_are_reused_without_page_faults() -> None:
    tuned, faults = churn(None)
    assert tuned and faults < 100  # 400 buffers of 300 KB: ~7,000 faults untuned
    untuned, faults = churn("default")
    assert not untuned and faults > 1000
