"""A run: the messages of one client read that reached a stream, in order
(`StreamIngest.ingest_run`, the router's ``InternalSub.run``), ingested with the effect of each
one by one (nats-server has no such path: ``processInboundJetStreamMsg`` runs per message).

The run looks for stretches of messages that every check of `StreamIngest.process` passes for
without a lookup beyond the duplicate window: the stream's config leaves nothing else to check
(``StreamIngest.stretches``: not sealed, no counters, republish only
in a file stream without max_msgs / max_bytes — `Run._republish` —, an input transform applied per message,
interest retention with each stretch cut before a message no consumer wants — `Run._wanted` —;
in a schedules stream a stretch ends the schedules on its subjects), and each message is within the size limits, not a batch's, and has no header block
or one whose only ``Nats-`` headers are ``Nats-Msg-Id``, this stream as ``Nats-Expected-Stream``,
where the stream allows TTLs a valid ``Nats-TTL`` (one the markers' TTL does not raise), and the
headers no check reads (``ingest_rules.INERT_HEADERS``: a republished copy's, a direct get's answer's)
— recognised generically: a block without any ``Nats-`` header at once, another parsed once and
the next ones compared with it around the id. Each stretch is cut before each duplicate and its
pieces are stored in one pass (``MessageStore.store_run`` with their TTLs, after ``run_fits`` and
the account's ``room_for_run``), their ids recorded and their PubAcks formatted together; a
duplicate of a message inside the window is answered with its sequence there (every check before
the window's passes for a stretch). Any other message, and a repeat of an id first seen in the
same stretch, goes through `StreamIngest.process` in its place. The writes are held as one by
one holds them (`Run.first_of_read`), so consumers see the messages and publishers get their
PubAcks at the same points of the read.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import add
from typing import TYPE_CHECKING

from pyjetstream.api.codec import duplicate_pub_acks, finish_pub_ack, pub_acks
from pyjetstream.api.fast_batch import FAST_BATCH_SUFFIX
from pyjetstream.api.headers import only_these_nats_headers
from pyjetstream.api.ttl import NS_PER_S, message_ttl
from pyjetstream.server.jetstream.dedupe import msg_id_of
from pyjetstream.server.jetstream.ingest_rules import (
    EXPECT_LAST_SUBJ_HEADERS,
    ID_HEADERS,
    ID_TTL_HEADERS,
    MAX_HEADER_SIZE,
    NATS_PREFIX,
    batched,
    expected_last_subject_seq,
    wrong_stream,
)
from pyjetstream.server.jetstream.schedules import (
    SCHEDULE_LINE,
    Found,
    Shape,
    same_schedule,
    schedule_shape,
    stretch_schedule,
)

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.store.base import MessageStore
    from pyjetstream.server.jetstream.stream_ingest import StreamIngest

_ID_LINE = ID_HEADERS[0]
_EXPECT_LINE = EXPECT_LAST_SUBJ_HEADERS[0]
_SCHEDULE_ANY = b"Nats-Schedule"  # also the start of Nats-Schedule-*, Nats-Scheduler
_TTL_LINE = ID_TTL_HEADERS[-1]
#: A stretch of schedules: their blocks as stored (with the roll-up) and their schedule headers.
Scheduled = tuple[list[bytes], list[Found]]


class Run:
    """One run being ingested: its messages and what is known of them as a whole, from C-speed
    passes once per run — how many have no header block, their sizes summed, whether any block
    has a ``Nats-`` header, and whether every message is within the size limits and not a fast
    batch's (else that is checked per message)."""

    __slots__ = (
        "hdr_bytes",
        "hdrs",
        "ingest",
        "max_size",
        "n",
        "no_nats",
        "nones",
        "payload_bytes",
        "payloads",
        "replies",
        "subject_bytes",
        "subjects",
        "want_from",
        "want_to",
        "within_limits",
    )

    def __init__(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        ingest: StreamIngest,
    ) -> None:
        self.subjects = subjects
        self.replies = replies
        self.hdrs = hdrs
        self.payloads = payloads
        self.ingest = ingest
        self.n = len(subjects)
        self.nones = hdrs.count(None)
        self.subject_bytes = sum(map(len, subjects))
        self.payload_bytes = sum(map(len, payloads))
        blocks = b"".join(filter(None, hdrs)) if self.nones < self.n else b""
        self.hdr_bytes = len(blocks)
        #: No header block has a ``Nats-`` header (none to check: the common case of other headers).
        self.no_nats = blocks.find(NATS_PREFIX) < 0
        self.max_size = ingest.max_size
        joined = "\n".join(replies)
        self.within_limits = FAST_BATCH_SUFFIX + "\n" not in joined + "\n" and self._sizes_within(len(joined))
        #: `_wanted`'s last answer: every message from ``want_from`` to ``want_to`` is wanted.
        self.want_from = self.want_to = -1

    def _sizes_within(self, reply_bytes: int) -> bool:
        """Whether every message is within the ingest queue's, the stream's and the header
        block's size limits: the run's totals when they are (the common case), else its largest."""
        hdr_bytes = self.hdr_bytes
        largest_hdr = hdr_bytes if hdr_bytes <= MAX_HEADER_SIZE else max(map(len, filter(None, self.hdrs)))
        if largest_hdr > MAX_HEADER_SIZE:
            return False
        total = self.subject_bytes + reply_bytes + hdr_bytes + self.payload_bytes
        if total <= self.max_size and total <= self.ingest.ingest_max:
            return True
        largest = largest_hdr + max(map(len, self.payloads))
        return largest <= self.max_size and (
            largest + max(map(len, self.subjects)) + max(map(len, self.replies)) <= self.ingest.ingest_max
        )

    # --- the run ----------------------------------------------------------------------------------
    def ingest_all(self) -> None:
        ingest = self.ingest
        stream = ingest.stream
        replies, hdrs = self.replies, self.hdrs
        k = self.first_of_read()
        n = self.n
        while k < n and not stream.closed:
            hdr = hdrs[k]
            if ingest.stretches and ingest.trace is None and not batched(replies[k], hdr):
                if not (hdr and hdr.find(_SCHEDULE_ANY) >= 0):
                    end, ids, ttls = self._stretch(k)
                    if end > k:
                        self._store_stretch(k, end, ids, ttls)
                        k = end
                        continue
                    if hdr and ingest.expect_stretches and hdr.find(_EXPECT_LINE) >= 0:
                        end = self._expected(k)
                        if end > k:
                            self._commit_stretch(k, end, None, None)
                            k = end
                            continue
                elif ingest.schedule_stretches:
                    end, scheduled = self._schedules(k)
                    if end > k:
                        self._commit_stretch(k, end, None, None, scheduled)
                        k = end
                        continue
            self.one(k)
            k += 1

    def first_of_read(self) -> int:
        """`StreamIngest.on_msg`'s rule for the run's first publishes while a file stream holds
        nothing: the first of the read written alone (one refused by the ingest queue is not it),
        then the writes held until the read is done. Returns the first publish left to the run."""
        ingest = self.ingest
        writes = ingest.writes
        k = 0
        while k < self.n and not writes.holding and not ingest.memory and not ingest.stream.closed:
            subject, reply, hdr, payload = self.subjects[k], self.replies[k], self.hdrs[k], self.payloads[k]
            if ingest.queue_refuses(subject, reply, hdr, payload):
                k += 1
                continue
            ingest.hold_unless_first(reply, hdr)
            if writes.holding:
                break
            answer = ingest.process(subject, reply, hdr, payload)
            if answer is not None and reply:
                writes.respond(reply, answer)
            k += 1
        return k

    def one(self, i: int) -> None:
        """Message ``i`` through the per-message path (the run holds the writes)."""
        ingest = self.ingest
        subject, reply, hdr, payload = self.subjects[i], self.replies[i], self.hdrs[i], self.payloads[i]
        if not self.within_limits and ingest.queue_refuses(subject, reply, hdr, payload):
            return
        answer = ingest.process(subject, reply, hdr, payload)
        if answer is not None and reply:
            ingest.writes.respond(reply, answer)

    # --- stretches --------------------------------------------------------------------------------
    def _stretch(self, k: int) -> tuple[int, list[str], list[int] | None]:
        """How far from ``k`` the messages are ones every check of `StreamIngest.process` passes
        for without a lookup (see the module docstring), their message ids (``""``: none) and,
        where the stream allows TTLs and one has a ``Nats-TTL``, their TTLs (0: none)."""
        n = self.n
        ingest = self.ingest
        if ingest.interest:
            n = self._wanted(k)
        if self.within_limits and self.no_nats:  # no header with anything to check, within the limits
            return n, [""] * (n - k), None
        hdrs = self.hdrs
        name, lines, floor = ingest.name_b, ingest.stretch_lines, ingest.ttl_floor
        raws: list[bytes] = []
        add_raw = raws.append
        ttls: list[int] = []
        add_ttl = ttls.append
        block = head = tail = b""  # the block compared with: whole (no id), or around its id
        lh = lt = ttl = 0  # (ttl: the TTL of the blocks of that shape)
        i = k
        while i < n:
            hdr = hdrs[i]
            if hdr is None or hdr == block:
                add_raw(b"")
                add_ttl(ttl if hdr else 0)
            elif lh and hdr.startswith(head) and hdr.endswith(tail) and len(hdr) >= lh + lt:
                add_raw(hdr[lh : len(hdr) - lt])
                add_ttl(ttl)
            elif hdr.find(NATS_PREFIX) < 0:  # no header with anything to check
                add_raw(b"")
                add_ttl(0)
            else:
                shape = block_shape(hdr, name, lines, floor)
                if shape is None:
                    break
                block, head, tail, raw, ttl = shape
                lh, lt = len(head), len(tail)
                add_raw(raw)
                add_ttl(ttl)
            if not self.within_limits and not self._within_limits(i):
                raws.pop()
                break
            i += 1
        ids = ids_of(raws)
        return k + len(ids), ids, ttls[: len(ids)] if any(ttls) else None

    def _wanted(self, k: int) -> int:
        """Interest retention: the first message from ``k`` that no consumer wants, or the run's
        end (`Stream.has_interest_for` of its subject as stored: `StreamIngest.commit`'s interest
        check, nats-server ``processJetStreamMsg``'s); a stretch ends before it, and
        `StreamIngest.process` skips it (its sequence used up). One lookup in the consumers'
        index a change of subject, and each message looked at once a run: the consumers cannot
        change within a run, so the answer holds for every later ``k`` up to it (``want_to``)
        and serves the stretches that a header or a limit cut short, and `_expected`."""
        if self.want_from <= k <= self.want_to:
            return self.want_to
        ingest = self.ingest
        has = ingest.stream.has_interest_for
        transformed = ingest.transformed if ingest.transform is not None else None
        subjects = self.subjects
        end = self.n
        last = ""
        i = k
        while i < end:
            subject = subjects[i]
            if subject != last:
                if not has(transformed(subject) if transformed is not None else subject):
                    break
                last = subject
            i += 1
        self.want_from, self.want_to = k, i
        return i

    def _expected(self, k: int) -> int:
        """How far from ``k`` the messages are ones every check of `StreamIngest.process`
        passes for, where a ``Nats-Expected-Last-Subject-Sequence`` is the only ``Nats-`` header
        to check (what a KV ``create`` / ``update`` sends; no message id, so none is a duplicate
        and each gets the next sequence): its value equals the last sequence on the message's
        subject as the stretch stands — the index's (`MessageStore.last_seq_on`) or, for a
        subject an earlier message of the stretch is on, that one's sequence. Nothing but the
        per-subject limit may remove a message mid-stretch (``expect_stretches``), and that one
        keeps a subject's newest. The stretch ends before a mismatch: `StreamIngest.process`
        answers it (10071, nats-server ``processJetStreamMsg``'s ``LoadLastMsg`` check)."""
        hdrs = self.hdrs
        subjects = self.subjects
        transformed = self.ingest.transformed if self.ingest.transform is not None else None
        lasts = _Lasts(self.ingest.stream.store)
        end = self._wanted(k) if self.ingest.interest else self.n  # (process skips the one at `end`)
        i = k
        while i < end:
            hdr, subject = hdrs[i], subjects[i]
            if transformed is not None:
                subject = transformed(subject)
            if hdr is not None and hdr.find(NATS_PREFIX) >= 0:
                if not only_these_nats_headers(hdr, EXPECT_LAST_SUBJ_HEADERS):
                    break
                want = expected_last_subject_seq(hdr)
                if want is None:
                    break  # (no expectation: process looks at the other headers)
                if want != lasts.before(subject):
                    break
            if not self.within_limits and not self._within_limits(i):
                break
            lasts.add(subject)
            i += 1
        return i

    def _schedules(self, k: int) -> tuple[int, Scheduled]:
        """How far from ``k`` the messages are schedules a stretch stores
        (`schedules.stretch_schedule`: valid, with no ``Nats-`` header but the schedule's own),
        each on a subject of its own in the stretch and within the size limits once its block
        has the roll-up; their blocks as stored and their schedule headers."""
        stream = self.ingest.stream
        subjects, hdrs, payloads = self.subjects, self.hdrs, self.payloads
        blocks: list[bytes] = []
        founds: list[Found] = []
        seen: set[str] = set()
        shape: Shape | None = None  # (the last block parsed, around its target)
        i = k
        while i < self.n:
            hdr, subject = hdrs[i], subjects[i]
            if hdr is None or hdr.find(SCHEDULE_LINE) < 0 or subject in seen:
                break
            if not self.within_limits and not self._within_limits(i):
                break
            taken = None
            if shape is not None and hdr.startswith(shape[0]) and hdr.endswith(shape[1]):
                taken = same_schedule(stream, subject, hdr, shape)
            if taken is None:
                taken = stretch_schedule(stream, subject, hdr)
                if taken is None:
                    break
                shape = schedule_shape(hdr, taken[1])
            block = taken[0]
            if len(block) > MAX_HEADER_SIZE or len(block) + len(payloads[i]) > self.max_size:
                break  # (the roll-up took it over a limit: process refuses it)
            blocks.append(block)
            founds.append(taken[1])
            seen.add(subject)
            i += 1
        return i, (blocks, founds)

    def _within_limits(self, i: int) -> bool:
        """Whether message ``i`` is within the size limits (the ingest queue's, the stream's
        max_msg_size, the header block's) and not a fast batch's."""
        hdr = self.hdrs[i]
        hl = len(hdr) if hdr is not None else 0
        size = hl + len(self.payloads[i])
        reply = self.replies[i]
        return (
            hl <= MAX_HEADER_SIZE
            and size <= self.max_size
            and size + len(self.subjects[i]) + len(reply) <= self.ingest.ingest_max
            and not reply.endswith(FAST_BATCH_SUFFIX)
        )

    def _store_stretch(self, lo: int, hi: int, ids: list[str], ttls: list[int] | None) -> None:
        """A stretch cut before each duplicate: the pieces stored in one pass each; a duplicate
        of a message inside the window answered with its sequence as `StreamIngest.process`
        answers it (every check before the window's passes for a stretch), a repeat of an id
        first seen in this stretch by `StreamIngest.process` once that one is stored."""
        ingest = self.ingest
        with_ids = ids.count("") < len(ids)
        dups = ingest.dedupe.duplicates(ids) if with_ids else []
        replies, prefix, acks = self.replies, ingest.ack_prefix, not ingest.stream.cfg.no_ack
        if dups and len(dups) == hi - lo and all(seq for _, seq in dups):
            if acks:  # every one a duplicate inside the window: only their answers, together
                found = zip(replies[lo:hi], duplicate_pub_acks(prefix, [seq for _, seq in dups]), strict=True)
                ingest.writes.respond_all([(reply, ack) for reply, ack in found if reply])
            return
        start = lo
        answers: list[tuple[str, bytes]] = []
        answer = answers.append
        for i, seq in [*dups, (hi - lo, 0)]:
            at = lo + i
            if at > start:
                self._answer(answers)
                self._commit_stretch(
                    start,
                    at,
                    ids[start - lo : at - lo] if with_ids else None,
                    ttls[start - lo : at - lo] if ttls is not None else None,
                )
            if at < hi:
                if seq:
                    if acks and replies[at]:
                        answer((replies[at], finish_pub_ack(prefix, seq, True)))
                else:
                    self._answer(answers)
                    self.one(at)
            start = at + 1
        self._answer(answers)

    def _answer(self, answers: list[tuple[str, bytes]]) -> None:
        """The PubAcks of the duplicates met so far, in order (then none are left)."""
        if answers:
            self.ingest.writes.respond_all(answers[:])
            answers.clear()

    def _commit_stretch(
        self, lo: int, hi: int, ids: list[str] | None, ttls: list[int] | None, scheduled: Scheduled | None = None
    ) -> None:
        """`StreamIngest.commit` for each message ``lo`` to ``hi`` (none a duplicate; ``ids``:
        their message ids, ``None``: none has one; ``ttls``: their TTLs, ``None``: none;
        ``scheduled``: a stretch of schedules, their blocks as stored and schedule headers), with
        its PubAck, in one pass when nothing can refuse or trim one of them (the account's room:
        ``room_for_run``; the store's limits: ``run_fits``), else one by one. A write that fails
        stops the pass: the message it failed for is answered with the error (the earlier ones'
        PubAcks become it too: ``WriteBatch.store_failed``) and the rest go one by one."""
        ingest = self.ingest
        stream = ingest.stream
        store = stream.store
        engine = stream.engine
        storage = stream.cfg.storage
        n = hi - lo
        subs, blocks, datas, sizes = self._slice(lo, hi)
        # What commit's checks count, summed: each record_size(len(subject), len(hdr), len(payload)).
        base = store.record_size(0, 0, 0)
        if scheduled is not None:
            blocks = scheduled[0]
            sizes = sum(map(len, subs)) + sum(map(len, blocks)) + sum(map(len, datas))
        with_hdr = n - blocks.count(b"") if self.nones < self.n else 0
        records = n * base + with_hdr * (store.record_size(0, 1, 0) - base - 1) + sizes
        largest = max(map(add, map(len, blocks), map(len, datas))) if stream.cfg.max_msg_size > 0 else 0
        republish = ingest.republish is not None
        if (
            (republish and not ingest.writes.holding)
            or not engine.room_for_run(storage, n, records)
            or not store.run_fits(subs, largest, records)
        ):
            for k in range(lo, hi):
                self.one(k)
            return
        lasts = self._lasts(subs) if republish else None
        first, tss, error = store.store_run(subs, blocks, datas, ttls)
        done = len(tss)
        if done:
            if done < n:
                subs = subs[:done]
                sizes = sum(map(len, subs)) + sum(map(len, blocks[:done])) + sum(map(len, datas[:done]))
            engine.note_writes(storage, done, sizes)
            self._after_store(first, subs, tss, ids, ttls, scheduled)
            if lasts is not None:
                self._republish(first, subs, blocks, datas, tss, lasts)
            if not stream.cfg.no_ack:
                self._ack_stretch(self.replies[lo : lo + done], first)
        if error is not None:
            failed = lo + done
            result = ingest.store_error(error)
            if self.replies[failed] and not stream.cfg.no_ack:
                ingest.writes.respond(self.replies[failed], ingest.error(result))
            for k in range(failed + 1, hi):
                self.one(k)

    def _after_store(
        self,
        first: int,
        subs: list[str],
        tss: Sequence[int],
        ids: list[str] | None,
        ttls: list[int] | None,
        scheduled: Scheduled | None,
    ) -> None:
        """What `StreamIngest.commit` does after each store, for the stored messages of a
        stretch (``subs``, from ``first`` on): the schedules' store hook (a schedule's next run;
        a plain message ends the schedule on its subject) and a schedule's roll-up, the ids
        recorded, the TTLs' and max_age's timer, the consumers told."""
        ingest = self.ingest
        stream = ingest.stream
        schedules = stream.schedules
        if scheduled is not None and schedules is not None:
            schedules.stored_schedules(first, subs, tss, scheduled[1])
            stream.purge_subjects(subs, keep=1)  # (each subject once in the stretch: its roll-up keeps it)
        elif schedules is not None and schedules.entries:
            schedules.stored_plain(subs)
        if ids is not None:
            ingest.dedupe.record_run(ids, first, tss)
        else:
            ingest.dedupe.last = ""
        if ttls is not None:
            self._watch_ttls(tss, ttls)
        if stream.cfg.max_age:
            stream.watch_expiry(0, 0)
        if stream.consumers:
            ingest.writes.signal_run(first, subs)

    def _lasts(self, subs: list[str]) -> list[int]:
        """Before a stretch is stored: the last sequence on each message's subject before it —
        the index's (`MessageStore.last_seq_on`) or an earlier message's of the stretch (the
        stretch is stored from the stream's last sequence + 1 on)."""
        lasts = _Lasts(self.ingest.stream.store)
        out = []
        for subject in subs:
            out.append(lasts.before(subject))
            lasts.add(subject)
        return out

    def _republish(
        self, first: int, subs: list[str], blocks: list[bytes], datas: list[bytes], tss: Sequence[int], lasts: list[int]
    ) -> None:
        """`StreamIngest.commit`'s republish for each stored message of a stretch (nats-server
        ``processJetStreamMsg``'s republish after the store), in order. Only while the writes
        are held (`_commit_stretch`): then one by one too sends every copy at once and the
        PubAcks and the consumers' signals when the writes are committed, as the stretch does."""
        republisher = self.ingest.republisher
        assert republisher is not None  # (the caller checked)
        republisher.stretch(first, subs, blocks, datas, tss, lasts)

    def _watch_ttls(self, tss: Sequence[int], ttls: list[int]) -> None:
        """`Stream.watch_expiry` for the stored message whose TTL ends first: the timer each
        message's own call would leave (it wakes for the earliest expiry of the store)."""
        best = at = 0
        for ts, ttl in zip(tss, ttls, strict=False):
            if ttl > 0 and (not best or ts + ttl * NS_PER_S < best):
                best, at = ts + ttl * NS_PER_S, ts
        if best:
            self.ingest.stream.watch_expiry(at, (best - at) // NS_PER_S)

    def _ack_stretch(self, replies: list[str], first: int) -> None:
        """The PubAcks of messages stored from ``first`` on, formatted together, to those with a
        reply."""
        ingest = self.ingest
        acks = pub_acks(ingest.ack_prefix, first, len(replies))
        if "" in replies:
            ingest.writes.respond_all([(reply, ack) for reply, ack in zip(replies, acks, strict=True) if reply])
        else:
            ingest.writes.respond_all(list(zip(replies, acks, strict=True)))

    def _slice(self, lo: int, hi: int) -> tuple[list[str], list[bytes], list[bytes], int]:
        """Messages ``lo`` to ``hi``: subjects (transformed by the stream's input transform, as
        `StreamIngest.process` takes them), header blocks (``b""``: none), payloads, and the sum
        of their lengths."""
        if self.ingest.transform is not None:
            subjects, payloads = list(map(self.ingest.transformed, self.subjects[lo:hi])), self.payloads[lo:hi]
            size = -1
        elif lo == 0 and hi == self.n:
            subjects, payloads = self.subjects, self.payloads
            size = self.subject_bytes + self.payload_bytes + self.hdr_bytes
        else:
            subjects, payloads = self.subjects[lo:hi], self.payloads[lo:hi]
            size = -1
        if self.nones == self.n:
            blocks = [b""] * (hi - lo)
        elif not self.nones:
            blocks = self.hdrs[lo:hi]  # type: ignore[assignment]  # (no None in it)
        else:
            blocks = [h or b"" for h in self.hdrs[lo:hi]]
        if size < 0:
            size = sum(map(len, subjects)) + sum(map(len, blocks)) + sum(map(len, payloads))
        return subjects, blocks, payloads, size


class _Lasts:
    """Each subject's last sequence as a stretch stands, the stretch stored from the stream's last
    sequence + 1 on: an earlier message's of the stretch, else the index's
    (`MessageStore.last_seq_on`, the message not read) — what `Run._expected` checks and
    `Run._lasts` hands the republished copies."""

    __slots__ = ("_seen", "_seq", "_store")

    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self._seq = store.fast_state().last_seq  # (the sequence the last one of the stretch got)
        self._seen: dict[str, int] = {}

    def before(self, subject: str) -> int:
        """The last sequence on ``subject`` before the next message of the stretch (0: none)."""
        last = self._seen.get(subject)
        return self._store.last_seq_on(subject) if last is None else last

    def add(self, subject: str) -> None:
        """The next message of the stretch is on ``subject``."""
        self._seq += 1
        self._seen[subject] = self._seq


def block_shape(
    hdr: bytes, name: bytes, lines: tuple[bytes, ...] = ID_HEADERS, floor: int = 0
) -> tuple[bytes, bytes, bytes, bytes, int] | None:
    """A header block a stretch may take — its only ``Nats-`` headers a message id, this stream
    (``name``) as the expected one, where ``lines`` has it (the stream allows TTLs) a valid
    ``Nats-TTL`` that the markers' ``floor`` does not raise, and the inert headers ``lines`` holds
    (`StreamIngest.stretch_lines`) — as ``(block, head, tail, id, ttl)``:
    ``block`` itself when it has no id (the next blocks equal to it are the same case), else
    ``head + id + tail`` with the id's raw value; ``None`` for any other block
    (`StreamIngest.process` takes it)."""
    if not only_these_nats_headers(hdr, lines) or wrong_stream(hdr, name):
        return None
    ttl = message_ttl(hdr) if hdr.find(_TTL_LINE) >= 0 else 0
    if ttl is None or 0 < ttl < floor:
        return None  # invalid (refused after the account limits), or raised to the floor
    at = hdr.find(_ID_LINE)
    if at < 0:
        return hdr, b"", b"", b"", ttl
    start = at + len(_ID_LINE)
    end = hdr.find(b"\r\n", start)
    if end < 0:
        return None
    return b"", hdr[:start], hdr[end:], hdr[start:end], ttl


def ids_of(raws: list[bytes]) -> list[str]:
    """The message ids of a stretch (raw values between a block's ``Nats-Msg-Id:`` and its line's
    end; empty: none) as `msg_id_of` of ``get_header``'s value, for as many as are one line
    without ``Nats-`` (a value compared around, not parsed, could hide another line: the stretch
    ends before it). One join, check and decode for the lot in the common case."""
    joined = b"\n".join(raws)
    if joined.find(b"\r") >= 0 or joined.find(NATS_PREFIX) >= 0 or joined.count(b"\n") != len(raws) - 1:
        for i, raw in enumerate(raws):
            if raw.find(b"\r") >= 0 or raw.find(b"\n") >= 0 or raw.find(NATS_PREFIX) >= 0:
                raws = raws[:i]
                break
        joined = b"\n".join(raws)
        if not raws:
            return []
    if joined.find(b" ") < 0:
        return msg_id_of(joined).split("\n")
    return [msg_id_of(raw.lstrip(b" ")) for raw in raws]


__all__ = ["Run", "block_shape", "ids_of"]
