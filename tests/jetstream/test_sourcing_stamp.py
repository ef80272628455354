"""A source's copies are stamped with ``Nats-Stream-Source`` from parts made once per feed
(``SourceFeed._stamp_parts``, switch ``sourcing.FAST_STAMP``): the same header blocks as
``source_header`` + ``append_headers`` (``SourceFeed.stamped``, the switch off) for any origin
header, subject, sequence, index name and origin identity."""

from __future__ import annotations

import random

import pytest

from pyjetstream.api.models_common import SubjectTransformConfig
from pyjetstream.api.models_stream import StreamSource
from pyjetstream.server.jetstream import sourcing
from pyjetstream.server.jetstream.sourcing import Delivery, SourceFeed, index_name

HDRS = [
    None,
    b"",
    b"NATS/1.0\r\n\r\n",
    b"NATS/1.0\r\nA: 1\r\n\r\n",
    b"NATS/1.0\r\nNats-Stream-Source: UP 7 > > u.x\r\nB: two\r\n\r\n",
    b"NATS/1.0\r\nNats-Expected-Stream: O\r\nNats-Msg-Id: m1\r\nNats-Expected-Last-Sequence: 3\r\n\r\n",
]
SUBJECTS = ["o.1.x", "o.%d.%s", "o.ü.é", "a", ""]
SOURCES = [
    StreamSource(name="O"),
    StreamSource(name="O2", filter_subject="o.2.>"),
    StreamSource(name="O3", subject_transforms=[SubjectTransformConfig(src="o.*", dest="t.{{wildcard(1)}}")]),
    StreamSource(
        name="O4",
        subject_transforms=[SubjectTransformConfig(src="a.>", dest="b.>"), SubjectTransformConfig(src="c.>", dest="")],
    ),
]


def _feed(src: StreamSource, ident: str) -> SourceFeed:
    feed = object.__new__(SourceFeed)
    feed.iname, feed.ident = index_name(src), ident
    feed._stamp = ("", b"", b"", b"")
    feed._transforms = []
    return feed


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_copies_stamped_from_parts_are_those_of_source_header(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    for src in SOURCES:
        feed = _feed(src, "")
        for ident in ("", "Id3nt1ty", "", "0th3r"):  # (the identity changes: the parts are made again)
            feed.ident = ident
            pending = [
                (rng.choice(SUBJECTS), rng.choice(HDRS), b"p", Delivery("C", 1, rng.choice([1, rng.randrange(2**64)]), 1, 0, 0))
                for _ in range(40)
            ]
            monkeypatch.setattr(sourcing, "FAST_STAMP", True)
            on = feed.copies(pending)
            monkeypatch.setattr(sourcing, "FAST_STAMP", False)
            off = feed.copies(pending)
            assert on == off
            assert all(b"Nats-Stream-Source: " + src.name.encode() + b" " in hdr for hdr in on[1])

