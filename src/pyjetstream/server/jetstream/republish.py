"""A stream's republish: the at-most-once copy of each stored message to the config's destination
(nats-server ``stream.go``, ``processJetStreamMsg`` after the store: ``tr.Match`` of the subject, the
copy's headers, ``mset.outq.send``).

nats-server queues each copy on the stream's ``outq``, and its internal send loop routes what the queue
holds together; here a run's stretch of stored messages (`ingest_run.Run._commit_stretch`) hands its
copies to the router as one run of the server's own (`Republisher.stretch` -> `Host.publish_run` ->
`Router.route_msgs`: one lookup per distinct destination, each receiving connection's deliveries
framed in one call), routed as `Republisher.one` routes each in turn. Imported for a stream that
republishes (a start whose streams do not, does not import it: issue 24). `RUNS` (False) sends a stretch's copies one by one — the
differential test (``tests/jetstream/test_republish_runs.py``) proves both give every subscriber the
same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyjetstream.api.timefmt import format_time

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream
    from pyjetstream.server.subject_transform import SubjectTransform

#: A stretch's copies routed as one run (`Republisher.stretch`); False: each alone (`Republisher.one`).
RUNS = True

_EMPTY = b"NATS/1.0\r\n\r\n"


def copy_header(
    stream: str, subject: str, seq: int, ts: int, last: int, hdr: bytes | None, size: int, headers_only: bool
) -> bytes:
    """The copy's header block: the message's own (or an empty one) with nats-server 2.10's five
    headers added (``Nats-Time-Stamp`` is 2.10's addition; 2.9 sends the other four) and, for
    ``headers_only``, ``Nats-Msg-Size``."""
    base = hdr if hdr else _EMPTY
    added = (
        f"Nats-Stream: {stream}\r\nNats-Subject: {subject}\r\nNats-Sequence: {seq}\r\n"
        f"Nats-Time-Stamp: {format_time(ts)}\r\nNats-Last-Sequence: {last}\r\n"
    )
    if headers_only:
        added += f"Nats-Msg-Size: {size}\r\n"
    return base[:-2] + added.encode() + b"\r\n"


class Republisher:
    """A stream's republish: its copies to the destinations its transform gives (made for a stream
    that republishes, `StreamIngest.configure`)."""

    __slots__ = ("stream", "transform")

    def __init__(self, stream: Stream, transform: SubjectTransform) -> None:
        self.stream = stream
        self.transform = transform

    def one(
        self, dest: str, subject: str, seq: int, ts: int, last: int, hdr: bytes | None, payload: bytes
    ) -> None:
        """One stored message's copy to ``dest`` (its subject transformed by the republish rule)."""
        stream = self.stream
        rp = stream.cfg.republish
        assert rp is not None
        only = rp.headers_only
        new_hdr = copy_header(stream.name, subject, seq, ts, last, hdr, len(payload), only)
        stream.server.publish_internal(dest, b"" if only else payload, hdr=new_hdr)

    def stretch(
        self,
        first: int,
        subs: Sequence[str],
        blocks: Sequence[bytes],
        datas: Sequence[bytes],
        tss: Sequence[int],
        lasts: Sequence[int],
    ) -> None:
        """The copies of a stretch of stored messages (``subs[i]`` stored as ``first + i`` at
        ``tss[i]``, its subject's last sequence before it ``lasts[i]``; ``blocks[i]`` its header
        block, ``b""``: none), in order: those whose subject the republish source takes."""
        stream = self.stream
        rp = stream.cfg.republish
        assert rp is not None
        only = rp.headers_only
        name = stream.name
        match = self.transform.match_and_apply
        if not RUNS:
            for i, subject in enumerate(subs):
                dest = match(subject)
                if dest is not None:
                    self.one(dest, subject, first + i, tss[i], lasts[i], blocks[i] or None, datas[i])
            return
        dests: list[str] = []
        hdrs: list[bytes | None] = []
        payloads: list[bytes] = []
        for i, subject in enumerate(subs):
            dest = match(subject)
            if dest is None:
                continue
            payload = datas[i]
            dests.append(dest)
            hdrs.append(
                copy_header(name, subject, first + i, tss[i], lasts[i], blocks[i], len(payload), only)
            )
            payloads.append(b"" if only else payload)
        if dests:
            stream.server.publish_run(dests, hdrs, payloads)
