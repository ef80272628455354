"""Consumer state stores: nats-server delivered/ack semantics, persistence, validation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ConsumerState,
    ConsumerStoreBase,
    ErrBadConsumerState,
    ErrNoAckPolicy,
    ErrStoreClosed,
    ErrStoreMsgNotFound,
    FileConsumerStore,
    MemoryConsumerStore,
    SequencePair,
)
from pyjetstream.server.jetstream.store.consumer_store import decode_consumer_state, encode_consumer_state

Factory = Callable[..., ConsumerStoreBase]


@pytest.fixture(params=["memory", "file"])
def make_cs(request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
    def make(ack_policy: str = "explicit", max_deliver: int = -1) -> ConsumerStoreBase:
        if request.param == "memory":
            return MemoryConsumerStore("c", ack_policy, max_deliver)
        return FileConsumerStore(str(tmp_path / "obs" / "c"), "c", False, ack_policy, max_deliver)

    return make


def test_explicit_acks_move_the_floor(make_cs: Factory) -> None:
    cs = make_cs()
    for seq in range(1, 6):
        cs.update_delivered(seq, seq * 10, 1, 100 + seq)
    st = cs.state()
    assert st.delivered == SequencePair(5, 50)
    assert sorted(st.pending) == [10, 20, 30, 40, 50]
    cs.update_acks(2, 20)  # out of order: floor stays
    assert cs.state().ack_floor == SequencePair(0, 0)
    cs.update_acks(1, 10)  # floor jumps over the already-acked 20
    assert cs.state().ack_floor == SequencePair(2, 29)
    cs.update_acks(3, 30)
    assert cs.state().ack_floor == SequencePair(3, 39)
    cs.update_acks(5, 50)
    cs.update_acks(4, 40)  # last pending: floor = delivered
    st = cs.state()
    assert (st.ack_floor, st.pending) == (SequencePair(5, 50), {})
    with pytest.raises(ErrStoreMsgNotFound):
        cs.update_acks(6, 60)


def test_redelivery_tracking_and_max_deliver(make_cs: Factory) -> None:
    cs = make_cs(max_deliver=3)
    cs.update_delivered(1, 1, 1, 10)
    cs.update_delivered(2, 1, 2, 20)  # redelivery keeps the original delivery seq
    st = cs.state()
    assert st.pending == {1: (1, 20)} and st.redelivered == {1: 1}
    assert st.delivered == SequencePair(2, 1)
    cs.update_delivered(3, 1, 3, 30)
    cs.update_delivered(4, 1, 4, 40)  # past max_deliver: no longer pending
    st = cs.state()
    assert st.pending == {} and st.redelivered == {1: 3}


def test_ack_all(make_cs: Factory) -> None:
    cs = make_cs("all")
    for seq in range(1, 6):
        cs.update_delivered(seq, seq, 1, seq)
    cs.update_delivered(6, 2, 2, 9)
    cs.update_acks(4, 4)
    st = cs.state()
    assert st.ack_floor == SequencePair(4, 4)
    assert sorted(st.pending) == [5] and st.redelivered == {}


def test_ack_none(make_cs: Factory) -> None:
    cs = make_cs("none")
    cs.update_delivered(1, 7, 1, 1)
    st = cs.state()
    assert (st.delivered, st.ack_floor, st.pending) == (SequencePair(1, 7), SequencePair(1, 7), {})
    with pytest.raises(ErrNoAckPolicy) as exc:
        cs.update_acks(1, 7)
    assert str(exc.value) == "ack policy is none"
    with pytest.raises(ErrNoAckPolicy):
        cs.update_delivered(2, 7, 2, 1)


def test_set_starting_and_update_validation(make_cs: Factory) -> None:
    cs = make_cs()
    cs.set_starting(41)
    assert cs.state().delivered.stream_seq == 41
    good = ConsumerState(SequencePair(10, 50), SequencePair(8, 45), {47: (9, 1), 50: (10, 2)}, {47: 2})
    cs.update(good)
    assert cs.state() == good
    bad_floor = ConsumerState(SequencePair(10, 50), SequencePair(11, 45))
    with pytest.raises(ErrBadConsumerState, match="bad ack floor for consumer"):
        cs.update(bad_floor)
    bad_pending = ConsumerState(SequencePair(10, 50), SequencePair(8, 45), {44: (1, 1)})
    with pytest.raises(ErrBadConsumerState, match=r"bad pending entry, sequence \[44\] out of range"):
        cs.update(bad_pending)
    with pytest.raises(ErrBadConsumerState, match="old update ignored"):
        cs.update(ConsumerState(SequencePair(9, 50), SequencePair(8, 45)))
    cs.stop()
    with pytest.raises(ErrStoreClosed):
        cs.update_delivered(11, 51, 1, 1)


def test_state_codec_roundtrip() -> None:
    st = ConsumerState(
        SequencePair(1 << 40, 1 << 50),
        SequencePair(5, 6),
        {7: (6, -1), 1 << 50: (1 << 40, 1_700_000_000_000_000_000)},
        {7: 3},
    )
    assert decode_consumer_state(encode_consumer_state(st)) == st
    raw = bytearray(encode_consumer_state(st))
    raw[10] ^= 1
    with pytest.raises(ErrBadConsumerState):
        decode_consumer_state(bytes(raw))


def test_file_consumer_persistence_and_batch(tmp_path: Path) -> None:
    d = str(tmp_path / "obs" / "w")
    cs = FileConsumerStore(d, "w")
    assert not cs.has_state()
    with cs.batch():
        for seq in range(1, 101):
            cs.update_delivered(seq, seq, 1, seq)
        for seq in range(1, 51):
            cs.update_acks(seq, seq)
        assert not (tmp_path / "obs" / "w" / "o.dat").exists()  # written once, at batch end
    expected = cs.state()
    cs2 = FileConsumerStore(d, "w")  # as after a crash: each update was already written
    assert cs2.has_state() and cs2.state() == expected
    assert expected.ack_floor == SequencePair(50, 50) and len(expected.pending) == 50
    cs2.write_meta(b'{"ack_policy":"explicit"}')
    cs2.stop()
    assert FileConsumerStore(d, "w").read_meta() == b'{"ack_policy":"explicit"}'
    FileConsumerStore(d, "w").delete()
    assert not (tmp_path / "obs" / "w").exists()


def test_corrupt_consumer_state_file_is_reported(tmp_path: Path) -> None:
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    cs.update_delivered(1, 1, 1, 1)
    for bad in (b"garbage", b""):
        (d / "o.dat").write_bytes(bad)
        # Started without it (nats-server's readStoredState ignores the error): redelivers, never loses.
        cs2 = FileConsumerStore(str(d), "w")
        assert cs2.state_error == "consumer state file is corrupt"
        assert not cs2.has_state()
        cs2.update_delivered(1, 1, 1, 1)
        cs2.stop()
    cs3 = FileConsumerStore(str(d), "w")
    assert cs3.state_error is None and cs3.has_state()
