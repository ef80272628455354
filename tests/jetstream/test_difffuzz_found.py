"""Differential regressions found by scripts/difffuzz.py (issue #15): each case is the fuzzer's
shrunk reproducer, sent to both targets and compared (times normalised)."""

from __future__ import annotations

import pytest
from tests.jetstream import pair_fixtures
from tests.jetstream.differential import first_difference, pub, req, run_case

target_pair = pair_fixtures.target_pair


def create(name: str, **cfg: object) -> object:
    return req(f"STREAM.CREATE.{name}", {"name": name, **cfg})


def update_(name: str, **cfg: object) -> object:
    return req(f"STREAM.UPDATE.{name}", {"name": name, **cfg})


def consumer(stream: str, name: str, **cfg: object) -> object:
    return req(f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": {"name": name, **cfg}})


CASES: dict[str, list] = {
    # checkConsumerCfg refuses a filter that is a subset of another, not two that merely collide.
    "consumer-filters-colliding-not-subsets": [
        create("T", subjects=["a.*", "b.c", "e"]),
        consumer("T", "C", filter_subjects=["e", "a.*", "*.c"]),
        consumer("T", "D", filter_subjects=["a.*", "a.b"]),
        consumer("T", "E", filter_subjects=["a.>", "*.c"]),
    ],
    # PersistModeType.UnmarshalJSON takes "" as the default.
    "persist-mode-empty-string": [
        create("U", persist_mode=""),
        create("V", persist_mode="Async"),
        create("W", discard_new_per_subject=True, persist_mode=""),
    ],
    # jsMsgGetRequest / jsMsgDeleteRequest check the body before looking the stream up.
    "msg-get-delete-body-before-stream": [
        req("STREAM.MSG.GET.NOPE", {}),
        req("STREAM.MSG.GET.NOPE", b""),
        req("STREAM.MSG.GET.NOPE", {"seq": 1, "batch": 2}),
        req("STREAM.MSG.GET.NOPE", {"seq": 1, "last_by_subj": "a"}),
        req("STREAM.MSG.GET.NOPE", {"seq": 1}),
        req("STREAM.MSG.DELETE.NOPE", b""),
        req("STREAM.MSG.DELETE.NOPE", {"seq": 1}),
        create("S", subjects=["a", "b"]),
        pub("a", "1"),
        pub("b", "2"),
        req("STREAM.MSG.GET.S", {"start_time": "2001-01-01T00:00:00Z"}),
        req("STREAM.MSG.GET.S", {"start_time": "2001-01-01T00:00:00Z", "next_by_subj": "b"}),
        req("STREAM.MSG.GET.S", {"start_time": "2001-01-01T00:00:00Z", "seq": 1}),
        req("STREAM.MSG.GET.S", {"seq": 1, "max_bytes": 10}),
        req("STREAM.MSG.GET.S", {"seq": 2, "no_hdr": True}),
    ],
    # Subject transform destinations are checked as NewSubjectTransform does, with its texts.
    "transform-destination-errors": [
        create("S", subject_transform={"src": src, "dest": dest})
        for src, dest in [
            ("a.*", "x.{{wildcard(2)}}"),
            ("a.*", "x.$2"),
            ("a.*", "x.{{wildcard()}}"),
            ("a.*", "x.{{wildcard(1,2)}}"),
            ("a.*", "x.{{nope(1)}}"),
            ("a.*", "x.{{partition(a)}}"),
            ("a.*", "x.{{split(1)}}"),
            ("a.*", "x.{{left(1,2,3)}}"),
            ("a.*", "x.{{splitFromLeft(1)}}"),
            ("a.*", "x.{{random(1,2)}}"),
            ("a.b", "x.{{wildcard(1)}}"),
            ("a.b", "x.$1"),
            ("a.>", "x.{{wildcard(1)}}.>"),
        ]
    ]
    + [req("STREAM.DELETE.S")],
    "transform-destination-functions-accepted": [
        create(f"S{i}", subjects=[f"a{i}.*.*"], subject_transform={"src": f"a{i}.*.*", "dest": dest})
        for i, dest in enumerate([
            "x.{{partition(3)}}.{{wildcard(2)}}.$1",
            "x.{{left(1,2)}}.{{right(2, 1)}}",
            "x.{{random(5)}}.$1.$2",
            "x.{{Wildcard(1)}}.{{wildcard(0)}}.$2",
            "x.$a.$1.$2",
        ])
    ],
    # SubjectsCollide compares a subject with the later ones before they are validated.
    "subjects-overlap-before-later-validity": [
        create("T", subjects=["a.b.c", "a.>.b", "c"]),
        create("T", subjects=["c", "a.>.b"]),
        create("U", subjects=["*", "a\tb"]),  # the texts quote as Go's %q
    ],
    "placement-preferred-refused": [
        create("S", placement={"preferred": "n1"}),
        create("S", placement={"cluster": "", "preferred": "n1"}),
    ],
    # An explicit "tags": [] keeps the placement (not DeepEqual to the empty one), shown as {}.
    "placement-empty-tags-kept": [
        create("S", placement={"cluster": "", "tags": []}),
        create("T", placement={"cluster": ""}),
        create("U", placement={}),
    ],
    # first_seq 1 is a purge to 1 as any other: the empty state starts at 1.
    "first-seq-one": [
        create("U", first_seq=1),
        create("M", first_seq=1, storage="memory"),
        pub("U", "x"),
        req("STREAM.INFO.U"),
    ],
    # 2.15.1 checks max_msg_size on the message as sent before looking at any header.
    "max-msg-size-before-headers": [
        create("S", subjects=["a"], max_msg_size=1),
        pub("a", "", ("Nats-Schedule", "0 0 * * * *")),
        pub("a", "", ("Nats-Expected-Stream", "X")),
        pub("a", "", ("Nats-TTL", "1h")),
        pub("a", "", ("Nats-Incr", "1")),
        pub("a", "", ("Nats-Expected-Last-Sequence", "5")),
        pub("a", "", ("Nats-Rollup", "all")),
        pub("a", "x"),
        create("T", subjects=["b"], max_msg_size=1, allow_msg_counter=True),
        pub("b", "xx"),
        pub("b", "", ("Nats-Incr", "1")),
    ],
    # "rollup value invalid: %q": Go's %q keeps printable non-ASCII as it is (JSON would escape
    # it), for a single publish and inside an atomic batch alike.
    "rollup-value-quoted-as-go": [
        create("S", subjects=["a"], allow_rollup_hdrs=True, allow_atomic=True),
        pub("a", "x", ("Nats-Rollup", 'éx"\\')),
        pub("a", "x", ("Nats-Batch-Id", "B"), ("Nats-Batch-Sequence", "1"), ("Nats-Batch-Commit", "1"),
            ("Nats-Rollup", "ü")),
    ],
    # An update is checked twice (jsStreamUpdateRequest, then configUpdateCheck): the
    # allow_msg_ttl a marker TTL turns on meets the counter rule.
    "update-checked-twice": [
        create("S", allow_msg_counter=True),
        update_("S", subject_delete_marker_ttl=120_000_000_000, allow_msg_counter=True),
        create("T", allow_msg_counter=True, subject_delete_marker_ttl=120_000_000_000),
    ],
    # jsStreamPurgeRequest reads a JSON body (and refuses seq with keep) before the lookup; a
    # body that is not a JSON object or array is no request at all.
    "purge-body-before-stream": [
        req("STREAM.PURGE.NOPE", {"seq": 2, "keep": 1}),
        req("STREAM.PURGE.NOPE", b"{bad"),
        req("STREAM.PURGE.NOPE", b"x"),
        create("S", subjects=["a"]),
        pub("a", "1"),
        req("STREAM.PURGE.S", b"junk"),
        req("STREAM.INFO.S"),
    ],
    # On an interest stream nobody listens to, the message is skipped before its TTL is read.
    "interest-no-consumer-skips-before-ttl": [
        create("S", subjects=["b.>"], retention="interest"),
        pub("b.x", "1", ("Nats-TTL", "-1")),
        pub("b.x", "2", ("Nats-TTL", "x")),
        req("STREAM.INFO.S"),
    ],
    # jsNonClusteredStreamLimitsCheck runs on the request's config before checkStreamCfg.
    "create-limits-before-config-check": [
        create("T", max_bytes=9223372036854775807, storage="memory", num_replicas=6),
        create("T", max_bytes=9223372036854775807, num_replicas=6),
        create("T", max_bytes=1024, num_replicas=6),
        create("T", max_bytes=9223372036854775807, storage="file", num_replicas=6),
        create("T", max_bytes=9223372036854775807),
        create("T", max_bytes=9223372036854775807, num_replicas=2),
        create("T", max_bytes=9223372036854775807, storage="memory", num_replicas=2),
    ],
    # An external source with an empty api prefix asks ".CONSUMER.CREATE...": nobody answers, so
    # a stream sourcing itself that way never copies anything (it looped here before).
    "external-empty-api-goes-nowhere": [
        create("T", subjects=["a.>"], sources=[{"name": "T", "external": {"api": "", "deliver": "dx"}}]),
        pub("a.b", "1"),
        pub("a.x", "2"),
        pub("a.y", "3"),
        req("STREAM.INFO.T", mask=("sources", "state")),
        req("STREAM.MSG.GET.T", {"seq": 4}),
    ],
    # A CONSUMER.RESET reply shows the config's metadata as a create or info reply does.
    "reset-reply-metadata": [
        create("U"),
        req("CONSUMER.DURABLE.CREATE.U.D", {"stream_name": "U", "config": {"durable_name": "D"}}),
        req("CONSUMER.RESET.U.D"),
        req("CONSUMER.RESET.U.D", {"seq": 3}),
    ],
    # stream.update turns an empty republish destination into ">" (a create leaves it empty).
    "update-republish-empty-dest": [
        create("U", allow_msg_counter=True),
        update_("U", republish={"src": "a.>", "dest": ""}, allow_msg_counter=True),
        create("V", subjects=["a.>"], republish={"src": "a.>", "dest": ""}),
        update_("V", subjects=["a.>"], republish={"src": "a.>", "dest": ""}),
        pub("a.x", "1"),
        pub("a.x", "2"),
        req("STREAM.INFO.V"),
    ],
    # Lowering consumer_limits below what an existing consumer has is refused (updateWithAdvisory).
    "update-consumer-limits-violated": [
        create("U"),
        consumer("U", "E", ack_policy="all"),
        update_("U", consumer_limits={"max_ack_pending": 5}),
        update_("U", consumer_limits={"max_ack_pending": 2000}),
        update_("U", consumer_limits={"inactive_threshold": 1_000_000_000}),
        consumer("U", "F", ack_policy="explicit", inactive_threshold=10_000_000_000),
        update_("U", consumer_limits={"inactive_threshold": 5_000_000_000, "max_ack_pending": 2000}),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_difffuzz_regression(name: str, target_pair: dict) -> None:
    steps = CASES[name]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)
