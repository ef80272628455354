"""A consumer's `SubjectFilter` with several filters: matched through their trie
(`subject_filter.INDEXED`) as by testing each filter (differential, on == off, random filters and
subjects); and a subject seen for the first time costs no filter test however many
``filter_subjects`` the consumer has (issue 24: counted on the embedded server, a limit removing
each message of an ever-new subject beside a consumer with 10 and with 1,000 filters)."""

from __future__ import annotations

import random

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import count_calls, embedded
from tests.support.random_subjects import random_filter, random_subject

from pyjetstream.server.jetstream import subject_filter
from pyjetstream.server.jetstream.subject_filter import SubjectFilter


@pytest.mark.parametrize("seed", range(8))
def test_the_trie_answers_as_each_filter_tested(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        filters = sorted({random_filter(rng) for _ in range(rng.randint(2, 12))} - {">"})
        subjects = [random_subject(rng) for _ in range(100)]
        monkeypatch.setattr(subject_filter, "INDEXED", True)
        on = SubjectFilter(filters)
        assert on._trie is not None or len(filters) < 2
        got = [on.matches(s) for s in subjects]
        monkeypatch.setattr(subject_filter, "INDEXED", False)
        off = SubjectFilter(filters)
        assert [off.matches(s) for s in subjects] == got, filters


async def _filter_tests(monkeypatch: pytest.MonkeyPatch, filters: int) -> float:
    """Filters tested per message of a new subject that the stream's ``max_msgs`` removes (the
    consumer's pending count asks its filter: `Consumer.dec_stream_pending`)."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["f.>"], storage="memory", max_msgs=10)
            got = await nc.add_consumer(
                "S", "c", ack_policy="explicit", filter_subjects=[f"f.{i}.*" for i in range(filters)]
            )
            assert "error" not in got, got
            for j in range(20):
                await nc.publish_js(f"f.0.first{j}")
            with count_calls(monkeypatch, subject_filter, "subject_matches") as calls:
                for j in range(200):
                    await nc.publish_js(f"f.{j % filters}.k{j}")
            info = await nc.consumer_info("S", "c")
            assert info["num_pending"] == 10, info
            return calls["subject_matches"] / 200
        finally:
            await nc.close()


async def test_a_new_subject_tests_no_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _filter_tests(monkeypatch, 10)
    large = await _filter_tests(monkeypatch, 1000)
    assert small == large == 0, (small, large)
    monkeypatch.setattr(subject_filter, "INDEXED", False)
    off = await _filter_tests(monkeypatch, 1000)
    assert off >= 50, off  # (each filter tested until one takes the subject: ~90)
