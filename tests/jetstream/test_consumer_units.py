"""Unit tests of the consumer engine's pure parts: config defaults and checks, pull requests, the
waiting queue, subject filters, the rate limiter and the meta encoding."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.jetstream.scale_steps import count_calls

from pyjetstream.api.codec import PullRequestError, decode_pull_request
from pyjetstream.api.enums import AckPolicy, DeliverPolicy, PriorityPolicy, RetentionPolicy
from pyjetstream.api.headers import Status, heartbeat_block, pending_status_block
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.protocol.subjects import is_subset, is_valid_subject
from pyjetstream.server.jetstream import consumer_config
from pyjetstream.server.jetstream.consumer_config import (
    apply_defaults,
    check_config,
    check_name,
    check_update,
    new_ephemeral_name,
    stamp_inactive_threshold,
)
from pyjetstream.server.jetstream.consumer_persistence import decode_consumer_meta, encode_consumer_meta
from pyjetstream.server.jetstream.pull_delivery import WaitingRequest, WaitQueue
from pyjetstream.server.jetstream.push_delivery import RateLimiter
from pyjetstream.server.jetstream.subject_filter import SubjectFilter

STREAM = StreamConfig(name="S", subjects=["s.>"], num_replicas=1)


def err_code(cfg: ConsumerConfig, stream: StreamConfig = STREAM) -> int | None:
    error = check_config(apply_defaults(cfg), stream)
    return None if error is None else error.err_code


# --- defaults ---------------------------------------------------------------------------------


def test_defaults_pull_explicit() -> None:
    cfg = apply_defaults(ConsumerConfig(ack_policy=AckPolicy.EXPLICIT))
    assert (cfg.max_waiting, cfg.ack_wait, cfg.max_deliver, cfg.max_ack_pending) == (
        512,
        30_000_000_000,
        -1,
        1000,
    )


def test_defaults_push_ack_none_and_backoff() -> None:
    cfg = apply_defaults(ConsumerConfig(deliver_subject="d", ack_policy=AckPolicy.NONE))
    assert (cfg.max_waiting, cfg.ack_wait, cfg.max_ack_pending) == (0, 0, 0)
    cfg = apply_defaults(ConsumerConfig(ack_policy=AckPolicy.ALL, backoff=[7, 9], max_deliver=5))
    assert cfg.ack_wait == 7 and cfg.max_deliver == 5


def test_ephemerals_get_an_inactive_threshold() -> None:
    assert stamp_inactive_threshold(ConsumerConfig()).inactive_threshold == 5_000_000_000
    assert stamp_inactive_threshold(ConsumerConfig(inactive_threshold=7)).inactive_threshold == 7
    assert stamp_inactive_threshold(ConsumerConfig(durable_name="D")).inactive_threshold == 0


# --- config checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "code"),
    [
        (ConsumerConfig(backoff=[1]), None),  # ⟨2.11+⟩ max_deliver -1 (unlimited) takes any backoff
        (ConsumerConfig(backoff=[1, 2], max_deliver=2), None),
        (ConsumerConfig(backoff=[1, 2, 3], max_deliver=2), 10116),
        (ConsumerConfig(backoff=[-1]), 10184),
        (ConsumerConfig(ack_wait=-1), 10183),
        (ConsumerConfig(description="x" * 4097), 10107),
        (ConsumerConfig(deliver_subject="a.*"), 10079),
        (ConsumerConfig(deliver_subject="a..b"), 10112),
        (ConsumerConfig(deliver_subject="s.x"), 10081),
        (ConsumerConfig(deliver_subject="d", max_waiting=1), 10080),
        (ConsumerConfig(deliver_subject="d", max_ack_pending=1), 10082),
        (ConsumerConfig(deliver_subject="d", idle_heartbeat=1000), 10083),
        (ConsumerConfig(rate_limit_bps=1), 10086),
        (ConsumerConfig(max_waiting=-1), None),  # ⟨2.11+⟩ corrected to the default
        (ConsumerConfig(idle_heartbeat=100_000_000), 10088),
        (ConsumerConfig(flow_control=True), 10089),
        (ConsumerConfig(max_batch=-1), None),
        (ConsumerConfig(max_expires=999_999), 10115),
        (ConsumerConfig(direct=True), 10090),
        (ConsumerConfig(deliver_subject="d", direct=True, durable_name="D"), 10091),
        (ConsumerConfig(filter_subject="t.x"), None),  # ⟨2.10+⟩ 10093 is gone
        (ConsumerConfig(filter_subject="t..x"), 10052),
        (ConsumerConfig(priority_policy=PriorityPolicy.OVERFLOW), 10159),
        (ConsumerConfig(priority_policy=PriorityPolicy.OVERFLOW, priority_groups=[""]), 10161),
        (ConsumerConfig(priority_policy=PriorityPolicy.OVERFLOW, priority_groups=["a.b"]), 10162),
        (ConsumerConfig(priority_policy=PriorityPolicy.OVERFLOW, priority_groups=["x" * 17]), 10162),
        (ConsumerConfig(priority_policy=PriorityPolicy.PINNED_CLIENT, priority_groups=["A-z/0_9="]), None),
        (ConsumerConfig(priority_groups=["A"]), 10196),
        (ConsumerConfig(priority_timeout=1), 10197),
        (
            ConsumerConfig(deliver_subject="d", priority_policy=PriorityPolicy.OVERFLOW, priority_groups=["A"]),
            10178,
        ),
        (ConsumerConfig(filter_subject="s.a", filter_subjects=["s.b"]), 10136),
        (ConsumerConfig(filter_subjects=["s.a", ""]), 10139),
        (ConsumerConfig(filter_subjects=["s.a", "s.*"]), 10138),
        (ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT), 10094),
        (ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE), 10094),
        (ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME), 10094),
        (ConsumerConfig(opt_start_seq=1), 10094),
        (ConsumerConfig(sample_freq="x%"), 10095),
        (ConsumerConfig(deliver_subject="d", flow_control=True), 10108),
        (ConsumerConfig(durable_name="A", name="B"), 10132),
        (ConsumerConfig(num_replicas=-1), 10133),
        (ConsumerConfig(num_replicas=2), 10126),
        (ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, filter_subject="s.>", sample_freq="50%"), None),
        (ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT, filter_subjects=["s.a", "s.b"]), None),
    ],
)
def test_config_checks(cfg: ConsumerConfig, code: int | None) -> None:
    assert err_code(cfg) == code


def _filters_naive(filters: list[str]) -> int | None:
    """nats-server's ``checkConsumerCfg`` filter loop as written: every pair compared."""
    for i, outer in enumerate(filters):
        if not is_valid_subject(outer):
            return 10052
        if any(i != j and is_subset(outer, inner) for j, inner in enumerate(filters)):
            return 10138
    return None


_TOKENS = st.sampled_from(["a", "b", "*", ">", "", "a*", "b>", "*x", " "])
_FILTER = st.lists(_TOKENS, min_size=1, max_size=3).map(".".join).filter(bool)


@given(st.lists(_FILTER, min_size=2, max_size=8))
def test_filter_checks_agree_with_every_pair(filters: list[str]) -> None:
    """`_check_filters` compares only the pairs that can collide; its answers are the all-pairs loop's."""
    assert err_code(ConsumerConfig(filter_subjects=filters)) == _filters_naive(filters)


def test_plain_filters_are_not_compared_pairwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step count (issue 24): 1,000 filters without wildcards cost no subset test at all, and a few
    wildcard ones cost one per filter each, not one per pair (nats-server's loop: 999,000)."""
    plain = [f"s.{i}" for i in range(1000)]
    wild = [f"w.{i}.*" for i in range(10)]
    with count_calls(monkeypatch, consumer_config, "is_subset") as calls:
        assert err_code(ConsumerConfig(filter_subjects=plain)) is None
        assert calls["is_subset"] == 0
        assert err_code(ConsumerConfig(filter_subjects=[*plain, "s.1"])) == 10138
        calls.clear()
        assert err_code(ConsumerConfig(filter_subjects=plain + wild)) is None
        assert calls["is_subset"] == len(plain + wild) * len(wild) - len(wild)


def test_pull_ack_none_refused_on_workqueue() -> None:
    wq = StreamConfig(name="W", subjects=["w.>"], retention=RetentionPolicy.WORKQUEUE, num_replicas=1)
    assert err_code(ConsumerConfig(ack_policy=AckPolicy.NONE), wq) == 10084
    assert err_code(ConsumerConfig(ack_policy=AckPolicy.EXPLICIT), wq) is None


def test_policy_error_texts() -> None:
    error = check_config(
        apply_defaults(ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)), STREAM
    )
    assert error is not None
    assert (
        error.description
        == "consumer delivery policy is deliver last per subject, but optional filter subject is not set"
    )
    error = check_config(apply_defaults(ConsumerConfig(sample_freq="abc")), STREAM)
    assert error is not None
    assert (
        error.description
        == 'failed to parse consumer sampling configuration: strconv.Atoi: parsing "abc": invalid syntax'
    )


def test_names() -> None:
    assert check_name("ok-name_1") is None
    assert check_name("a.b").err_code == 10103  # type: ignore[union-attr]
    assert check_name("a b").err_code == 10103  # type: ignore[union-attr]
    assert check_name("a/b").err_code == 10127  # type: ignore[union-attr]
    assert check_name("x" * 256).err_code == 10102  # type: ignore[union-attr]
    names = {new_ephemeral_name() for _ in range(200)}
    assert len(names) == 200
    assert all(len(n) == 8 and n.isalnum() and n.isascii() for n in names)


def test_update_rules() -> None:
    old = apply_defaults(ConsumerConfig(durable_name="D", ack_policy=AckPolicy.EXPLICIT))

    def update(**changes: object) -> str | None:
        import msgspec

        new = apply_defaults(msgspec.structs.replace(old, **changes))
        error = check_update(old, new, lambda subject: subject == "bound")
        return None if error is None else error.description

    assert update() is None
    assert update(description="new", max_ack_pending=5, ack_wait=10) is None
    assert update(deliver_policy=DeliverPolicy.NEW) == "deliver policy can not be updated"
    assert update(ack_policy=AckPolicy.ALL) == "ack policy can not be updated"
    assert update(max_waiting=3) == "max waiting can not be updated"
    assert update(deliver_subject="x") == "can not update pull consumer to push based"
    push = apply_defaults(
        ConsumerConfig(durable_name="D", deliver_subject="bound", ack_policy=AckPolicy.EXPLICIT)
    )
    import msgspec

    moved = msgspec.structs.replace(push, deliver_subject="other")
    assert check_update(push, moved, lambda s: s == "bound").err_code == 10013  # type: ignore[union-attr]
    assert check_update(push, moved, lambda s: False) is None
    pulled = msgspec.structs.replace(push, deliver_subject="", max_waiting=0)
    assert (
        check_update(push, pulled, lambda s: False).description
        == "can not update push consumer to pull based"
    )  # type: ignore[union-attr]


def test_meta_round_trip() -> None:
    cfg = apply_defaults(
        ConsumerConfig(
            durable_name="D",
            deliver_policy=DeliverPolicy.BY_START_TIME,
            opt_start_time=NanoTime(1_700_000_000_123_456_789),
            ack_policy=AckPolicy.EXPLICIT,
            filter_subject="s.>",
            metadata={"k": "v"},
        )
    )
    name, decoded, created = decode_consumer_meta(encode_consumer_meta("D", cfg, 1_700_000_000_000_000_001))
    assert (name, decoded, created) == ("D", cfg, 1_700_000_000_000_000_001)


# --- pull requests -----------------------------------------------------------------------------


def test_decode_pull_request_forms() -> None:
    assert decode_pull_request(b"").batch == 1
    assert decode_pull_request(b"  7 ").batch == 7
    assert decode_pull_request(b"garbage").batch == 1  # nats-server falls back to one message
    req = decode_pull_request(
        json.dumps(
            {"batch": 5, "expires": 10**9, "max_bytes": 100, "no_wait": True, "idle_heartbeat": 10**8}
        ).encode()
    )
    assert (req.batch, req.expires, req.max_bytes, req.no_wait, req.idle_heartbeat) == (5, 10**9, 100, True, 10**8)
    assert decode_pull_request(b'{"BATCH": 3}').batch == 3  # Go matches keys case-insensitively
    assert decode_pull_request(b'{"batch": 0}').batch == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"expires": 100, "idle_heartbeat": 60}', "heartbeat value too large"),
        (b'{"idle_heartbeat": 60}', "heartbeat value too large"),
        (b"{bad", "invalid character 'b' looking for beginning of object key string"),
        (b'{"batch":', "unexpected end of JSON input"),
        (b'{"batch": 1} x', "invalid character 'x' after top-level value"),
    ],
)
def test_decode_pull_request_errors(body: bytes, reason: str) -> None:
    with pytest.raises(PullRequestError) as info:
        decode_pull_request(body)
    assert str(info.value) == reason


@given(st.integers(min_value=-5, max_value=10**6))
def test_parse_integer_body(n: int) -> None:
    assert decode_pull_request(str(n).encode()).batch == max(n, 1)


def test_status_bytes() -> None:
    assert pending_status_block(Status.REQUEST_TIMEOUT, 3, 0) == (
        b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\nNats-Pending-Bytes: 0\r\n\r\n"
    )
    assert (
        heartbeat_block(4, 9)
        == b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 4\r\nNats-Last-Stream: 9\r\n\r\n"
    )
    assert heartbeat_block(1, 2, "$JS.FC.S.C.abcd").endswith(
        b"Nats-Consumer-Stalled: $JS.FC.S.C.abcd\r\n\r\n"
    )


def test_wait_queue_round_robin_and_capacity() -> None:
    q = WaitQueue(2)
    a = WaitingRequest("a", 2, 0, 0.0, False, 0.0)
    b = WaitingRequest("b", 1, 0, 0.0, False, 0.0)
    assert q.add(a) and q.add(b)
    assert not q.add(WaitingRequest("c", 1, 0, 0.0, False, 0.0))
    assert q.pop() is a  # a still wants one more: it moves behind b
    assert [w.reply for w in q] == ["b", "a"]
    assert q.pop() is b  # b is done and leaves
    assert q.pop() is a
    assert len(q) == 0


# --- filters and rate limit ---------------------------------------------------------------------


def test_subject_filter() -> None:
    f = SubjectFilter([])
    assert f.match_all and f.single == "" and f.matches("anything")
    f = SubjectFilter(["a.b"])
    assert f.single == "a.b" and f.matches("a.b") and not f.matches("a.c")
    f = SubjectFilter(["a.*", "b.>"])
    assert f.single is None
    assert f.matches("a.x") and f.matches("b.x.y") and not f.matches("c") and not f.matches("a.x.y")
    assert SubjectFilter([">"]).match_all


@given(
    st.lists(st.sampled_from(["a", "b", "*"]), min_size=1, max_size=3),
    st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=3),
)
def test_subject_filter_matches_like_subject_matches(ftoks: list[str], stoks: list[str]) -> None:
    from pyjetstream.protocol.subjects import subject_matches

    f = ".".join(ftoks)
    s = ".".join(stoks)
    assert SubjectFilter([f]).matches(s) == subject_matches(f, s)


def test_rate_limiter() -> None:
    limiter = RateLimiter(1000.0, 100)
    assert limiter.delay_for(100) == 0.0  # the burst is available at once
    wait = limiter.delay_for(50)
    assert 0.04 < wait <= 0.051
