"""A writer process is SIGKILLed mid-stream: nothing it acknowledged may be lost or resurrected."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
)

# Prints "A <seq> <i>" after a store returns (the ack), "T <seq>" before a removal and
# "D <seq>" after it returns; a kill can land anywhere between those.
WRITER = textwrap.dedent(
    """
    import random, sys
    from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig
    directory, seed = sys.argv[1], int(sys.argv[2])
    rnd = random.Random(seed)
    store = FileStore(FileStoreConfig(directory, block_size=4096))
    out = sys.stdout
    i = 0
    while True:
        i += 1
        seq, _ = store.store_msg(f"k.{i % 7}", b"", b"payload-%d." % i * rnd.randint(1, 20))
        out.write(f"A {seq} {i}\\n")
        if i % 3 == 0:
            victim = rnd.randint(max(1, seq - 300), seq)
            out.write(f"T {victim}\\n")
            out.flush()
            if store.remove_msg(victim):
                out.write(f"D {victim}\\n")
        out.flush()
    """
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_loses_no_acknowledged_write(tmp_path: Path, seed: int) -> None:
    directory = str(tmp_path / "s")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, directory, str(seed)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdout is not None
    acked: dict[int, int] = {}
    tried: set[int] = set()
    deleted: set[int] = set()

    def take(line: str) -> None:
        kind, *rest = line.split()
        if kind == "A":
            acked[int(rest[0])] = int(rest[1])
        elif kind == "T":
            tried.add(int(rest[0]))
        else:
            deleted.add(int(rest[0]))

    deadline = time.monotonic() + 30
    target = 1500 + 700 * seed  # blocks of 4 KiB: dozens of rollovers and sealed-block tombstones
    while len(acked) < target and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        take(line)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for line in proc.stdout:  # acknowledged before the kill, still in the pipe
        if line.endswith("\n"):
            take(line)
    assert len(acked) >= 1000

    store = FileStore(FileStoreConfig(directory, block_size=4096))
    try:
        st = store.state()
        # Linux may cut a write() short at a page boundary when SIGKILL arrives mid-call, so the
        # write in flight can be torn; recovery drops that tail. It was never acknowledged:
        # nothing the writer acknowledged may be among what recovery reports as lost.
        if st.lost is not None:
            assert not set(st.lost.msgs) & set(acked)
        assert st.last_seq >= max(acked)
        maybe = tried - deleted  # removal started, not acknowledged: either outcome is fine
        for seq, i in acked.items():
            if seq in deleted:
                with pytest.raises((ErrStoreMsgNotFound, ErrStoreEOF)):
                    store.load_msg(seq)
            elif seq not in maybe:
                msg = store.load_msg(seq)
                assert msg.subject == f"k.{i % 7}" and msg.data.startswith(b"payload-%d." % i)
    finally:
        store.stop()
