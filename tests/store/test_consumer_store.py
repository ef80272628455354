"""Consumer state stores: nats-server delivered/ack semantics, persistence, validation."""

from __future__ import annotations

import struct
import zlib
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
from pyjetstream.server.jetstream.store.consumer_journal import PackedChanges, pack_consumer_changes
from pyjetstream.server.jetstream.store.consumer_store import (
    PackedState,
    decode_consumer_state,
    decode_consumer_state_gen,
    encode_consumer_state,
    pack_consumer_state,
)

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


def _slot_generations(d: Path) -> dict[str, int]:
    return {p.name: decode_consumer_state_gen(p.read_bytes())[1] for p in sorted(d.glob("o.dat*"))}


def test_state_writes_alternate_between_two_slots(tmp_path: Path) -> None:
    """Each write goes over the older slot (one pwrite, issue #27): the newer valid one is the state."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    cs.update_delivered(1, 1, 1, 1)  # generation 1: o.dat
    assert _slot_generations(d) == {"o.dat": 1}
    cs.update_delivered(2, 2, 1, 2)
    cs.update_acks(1, 1)
    assert _slot_generations(d) == {"o.dat": 3, "o.dat.b": 2}
    cs2 = FileConsumerStore(str(d), "w")
    assert cs2.state() == cs.state() and cs2.state().ack_floor == SequencePair(1, 1)


@pytest.mark.parametrize("pending", [10, 2000])
def test_a_restart_decodes_only_the_newest_slot(tmp_path: Path, pending: int) -> None:
    """Both slots hold a whole state; a restart decodes the one its header names newest, not both
    (step count: one slot decoded at either size; a restart with 100,000 pending acks decoded
    two of ~20 ms each)."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    with cs.batch():
        for seq in range(1, pending + 1):
            cs.update_delivered(seq, seq, 1, seq)
    cs.update_acks(1, 1)
    assert sorted(_slot_generations(d).values()) == [1, 2]
    cs2 = FileConsumerStore(str(d), "w")
    assert cs2.decoded == 1
    assert cs2.state() == cs.state() and len(cs2.state().pending) == pending - 1


@pytest.mark.parametrize("newer", ["o.dat", "o.dat.b"])
def test_the_newer_slot_of_an_older_version_is_the_state(tmp_path: Path, newer: str) -> None:
    """Slots written by an earlier version (3: the pending acks as a map) name their generation
    where later ones do: the newer is decoded first, whichever file holds it (a store written
    before an upgrade)."""
    d = tmp_path / "obs" / "w"
    d.mkdir(parents=True)
    older = "o.dat.b" if newer == "o.dat" else "o.dat"
    old_state = ConsumerState(SequencePair(1, 1), SequencePair(0, 0), {1: (1, 10)}, {})
    new_state = ConsumerState(SequencePair(2, 2), SequencePair(1, 1), {2: (2, 20)}, {})
    for name, state, gen in ((older, old_state, 4), (newer, new_state, 5)):
        rec = bytearray(encode_consumer_state(state, gen))
        rec[4] = 3  # (version 3: the same header, the body a map)
        end = len(rec) - 4
        rec[end:] = zlib.crc32(rec[:end]).to_bytes(4, "little")
        (d / name).write_bytes(bytes(rec))
    cs = FileConsumerStore(str(d), "w")
    assert cs.state_error is None and cs.decoded == 1
    assert cs.state() == new_state


@pytest.mark.parametrize("cut", [0.3, 0.9])
def test_a_torn_state_write_leaves_the_one_before(tmp_path: Path, cut: float) -> None:
    """A write cut short (``kill -9`` between pages, a power cut) fails its crc: the other slot,
    written before it (so holding every ack confirmed until then), is the state."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    for seq in range(1, 201):
        cs.update_delivered(seq, seq, 1, seq)
    before = cs.state()
    cs.update_acks(1, 1)  # generation 201: o.dat, torn below
    newest = d / "o.dat"
    data = newest.read_bytes()
    old = (d / "o.dat.b").read_bytes()  # what a torn write leaves behind its cut: older bytes
    newest.write_bytes(data[: int(len(data) * cut)] + old[int(len(data) * cut) :])
    cs2 = FileConsumerStore(str(d), "w")
    assert cs2.state_error is None and cs2.state() == before
    assert cs2.decoded == 2  # the newer slot named by its header, then the one before
    cs2.update_acks(2, 2)  # the next write goes over the torn slot
    assert FileConsumerStore(str(d), "w").state().ack_floor == SequencePair(0, 0)
    assert 2 not in FileConsumerStore(str(d), "w").state().pending


def test_a_version_1_state_file_still_opens(tmp_path: Path) -> None:
    """Stores written before the slots (one ``o.dat``, header version 1) open, and the next
    write goes to the other slot."""
    d = tmp_path / "obs" / "w"
    d.mkdir(parents=True)
    body = struct.pack("<4sB3xQQQQQQ", b"PJSC", 1, 2, 20, 3, 30, 1, 0) + struct.pack("<3Q", 30, 3, 99)
    (d / "o.dat").write_bytes(body + zlib.crc32(body).to_bytes(4, "little"))
    cs = FileConsumerStore(str(d), "w")
    st = cs.state()
    assert st.ack_floor == SequencePair(2, 20) and st.delivered == SequencePair(3, 30) and st.pending == {30: (3, 99)}
    cs.update_acks(3, 30)
    assert _slot_generations(d) == {"o.dat": 1, "o.dat.b": 2}
    assert FileConsumerStore(str(d), "w").state().ack_floor == SequencePair(3, 30)


def test_a_shorter_state_is_read_past_the_older_bytes_behind_it(tmp_path: Path) -> None:
    """A slot is not cut on every write: the record's own length says where it ends."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    for seq in range(1, 1001):
        cs.update_delivered(seq, seq, 1, seq)
    for seq in range(1, 1001):
        cs.update_acks(seq, seq)
    assert FileConsumerStore(str(d), "w").state() == cs.state()
    assert cs.state().pending == {}


def test_a_version_2_state_file_still_opens(tmp_path: Path) -> None:
    """Slots written before the maps were packed (header version 2: the maps as columns of 8-byte
    integers) open, and the next write (version 3) goes to the other slot."""
    d = tmp_path / "obs" / "w"
    d.mkdir(parents=True)
    header = struct.pack("<4sB3xQQQQQQQ", b"PJSC", 2, 2, 20, 4, 40, 2, 1, 5)
    body = header + struct.pack("<2Q2Q2q1Q1Q", 30, 40, 3, 4, 99, -1, 30, 2)
    (d / "o.dat").write_bytes(body + zlib.crc32(body).to_bytes(4, "little"))
    cs = FileConsumerStore(str(d), "w")
    st = cs.state()
    assert st.ack_floor == SequencePair(2, 20) and st.delivered == SequencePair(4, 40)
    assert st.pending == {30: (3, 99), 40: (4, -1)} and st.redelivered == {30: 2}
    cs.update_acks(4, 40)
    assert _slot_generations(d) == {"o.dat": 5, "o.dat.b": 6}
    assert FileConsumerStore(str(d), "w").state().pending == {30: (3, 99)}


def _packed(delivered: int, floor: int, pending: dict[int, tuple[int, int]], red: dict[int, int]) -> PackedState:
    return pack_consumer_state(SequencePair(delivered, delivered), SequencePair(floor, floor), pending, red)


def _changes(
    delivered: int,
    floor: int,
    seqs: list[int],
    pending: dict[int, tuple[int, int]],
    red: dict[int, int],
    gone: list[int] | None = None,
    firsts: list[int] | None = None,
) -> PackedChanges:
    return pack_consumer_changes(
        SequencePair(delivered, delivered), SequencePair(floor, floor), seqs, gone or [], pending, red, firsts or ()
    )


def test_changes_are_journaled_and_replayed(tmp_path: Path) -> None:
    """A consumer's changes since its whole state go to the journal (``o.jnl``), one record a
    write; a restart applies them to the newest slot, in order."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    pending = {s: (s, 100 + s) for s in range(1, 11)}
    cs.adopt_packed(_packed(10, 0, pending, {}))
    del pending[1], pending[5]  # acked; 11 and 12 delivered (12 acked ahead, then delivered); 3 redelivered
    pending[11] = (11, 211)
    pending[12] = (12, 212)
    pending[3] = (3, 300)
    red = {3: 1}
    cs.adopt_changes(_changes(12, 1, [3], pending, red, gone=[1, 5, 12], firsts=[11, 12]))
    del pending[2]
    cs.adopt_changes(_changes(12, 2, [], pending, red, gone=[2]))
    expected = ConsumerState(SequencePair(12, 12), SequencePair(2, 2), dict(pending), dict(red))
    assert cs.state() == expected
    assert (d / "o.jnl").stat().st_size > 0 and _slot_generations(d) == {"o.dat": 1}
    assert FileConsumerStore(str(d), "w").state() == expected


def test_a_torn_journal_record_leaves_the_ones_before(tmp_path: Path) -> None:
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    pending = {s: (s, s) for s in range(1, 6)}
    cs.adopt_packed(_packed(5, 0, pending, {}))
    del pending[2]
    cs.adopt_changes(_changes(5, 0, [2], pending, {}))
    first = cs.state()
    size = (d / "o.jnl").stat().st_size
    del pending[1]
    cs.adopt_changes(_changes(5, 2, [1], pending, {}))
    journal = (d / "o.jnl").read_bytes()
    (d / "o.jnl").write_bytes(journal[: size + (len(journal) - size) // 2])
    cs2 = FileConsumerStore(str(d), "w")
    assert cs2.state() == first
    # The next record goes where the torn one was, and follows.
    cs2.adopt_changes(_changes(5, 2, [1], pending, {}))
    assert FileConsumerStore(str(d), "w").state() == cs.state()


def test_a_whole_state_write_ends_the_journal(tmp_path: Path) -> None:
    """After a slot is written the journal's records (of the slot before) are never applied: cut,
    or, when a crash came before the cut, of another generation."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    pending = {s: (s, s) for s in range(1, 6)}
    cs.adopt_packed(_packed(5, 0, pending, {}))
    del pending[3]
    cs.adopt_changes(_changes(5, 0, [3], pending, {}))
    journal = (d / "o.jnl").read_bytes()
    later = {s: (s, s) for s in range(3, 9)}
    cs.adopt_packed(_packed(8, 2, later, {}))
    assert (d / "o.jnl").stat().st_size == 0
    (d / "o.jnl").write_bytes(journal)  # as if the cut had not happened
    assert FileConsumerStore(str(d), "w").state() == ConsumerState(SequencePair(8, 8), SequencePair(2, 2), later, {})


def test_changes_are_refused_without_a_journal_following_the_state(tmp_path: Path) -> None:
    """Before a whole state (a new store) or after a write failed, changes would follow a state
    the files do not hold: refused (the consumer writes its whole state)."""
    d = tmp_path / "obs" / "w"
    cs = FileConsumerStore(str(d), "w")
    with pytest.raises(ErrBadConsumerState):
        cs.adopt_changes(_changes(1, 0, [1], {1: (1, 1)}, {}))
    cs.adopt_packed(_packed(1, 0, {1: (1, 1)}, {}))
    (d / "o.jnl").mkdir()  # the next append fails
    with pytest.raises(OSError):
        cs.adopt_changes(_changes(2, 0, [2], {1: (1, 1), 2: (2, 2)}, {}))
    with pytest.raises(ErrBadConsumerState):
        cs.adopt_changes(_changes(3, 0, [3], {1: (1, 1), 2: (2, 2), 3: (3, 3)}, {}))
    (d / "o.jnl").rmdir()
    cs.adopt_packed(_packed(3, 0, {1: (1, 1), 2: (2, 2), 3: (3, 3)}, {}))
    cs.adopt_changes(_changes(3, 1, [1], {2: (2, 2), 3: (3, 3)}, {}))
    assert FileConsumerStore(str(d), "w").state().pending == {2: (2, 2), 3: (3, 3)}
    with pytest.raises(ErrBadConsumerState):
        MemoryConsumerStore("m").adopt_changes(_changes(1, 0, [1], {1: (1, 1)}, {}))
