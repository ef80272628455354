"""A connection's publish/subscribe permissions, checked as nats-server 2.9 ``client.go`` does.

- Publish (``pubAllowedFullCheck``): with an allow list, some allow pattern must match the subject;
  then no deny pattern may match. Patterns are matched like a sublist matches a subject, so a
  publish subject is taken literally (``foo.*`` is matched by ``foo.*``, ``foo.>`` and ``*.*``).
  Decisions are cached per subject.
- Subscribe (``canSubscribe``): the subscription subject, wildcards and all, is matched against
  the patterns the same way, so ``foo.*`` is allowed by ``foo.*`` or ``foo.>`` but not by
  ``foo.bar``. Entries ``"<subject> <queue>"`` restrict queue subscriptions: when any matches,
  the queue must be one of theirs (allow) or none of theirs (deny).
- A wildcard subscription that can overlap a deny entry (``foo.*`` with ``deny: foo.bar``, or
  ``*.z`` with ``deny: y.*``) is allowed, but from then on messages to the connection are filtered
  through the deny list (nats-server's ``mperms``, loaded by ``loadMsgDenyFilterIfNeeded`` when
  ``SubjectsCollide``), so ``foo.bar`` / ``y.z`` never reach it.
- ``allow_responses``: a reply subject of a message delivered to the connection may be published
  to ``max_msgs`` times within ``expires`` seconds, even when the publish lists forbid it.
"""

from __future__ import annotations

import time

from pyjetstream.protocol.subjects import has_wildcard, is_subset, subject_matches, subjects_overlap
from pyjetstream.server.options import Permissions, ResponsePermission, SubjectPermission

__all__ = ["ConnectionPermissions", "pub_violation", "sub_violation"]

# nats-server maxPermCacheSize / replyPermLimit: beyond these the caches are pruned.
_MAX_CACHE = 128
_MAX_REPLIES = 4096


def pub_violation(subject: str) -> bytes:
    return f"-ERR 'Permissions Violation for Publish to \"{subject}\"'\r\n".encode()


def sub_violation(subject: str, queue: str = "") -> bytes:
    if queue:
        text = f'Permissions Violation for Subscription to "{subject}" using queue "{queue}"'
    else:
        text = f'Permissions Violation for Subscription to "{subject}"'
    return f"-ERR '{text}'\r\n".encode()


def _split_queue(entry: str) -> tuple[str, str]:
    """``"foo.bar v1"`` -> ("foo.bar", "v1"); a plain subject has no queue."""
    fields = entry.split()
    if len(fields) == 2:
        return fields[0], fields[1]
    return entry.strip(), ""


class _SubjectRules:
    """One allow or deny list: plain patterns, and (pattern, queue) entries for queue subscribers."""

    __slots__ = ("plain", "queued")

    def __init__(self, entries: list[str]) -> None:
        self.plain: list[str] = []
        self.queued: list[tuple[str, str]] = []
        for entry in entries:
            subject, queue = _split_queue(entry)
            if queue:
                self.queued.append((subject, queue))
            else:
                self.plain.append(subject)

    def matches(self, subject: str) -> bool:
        return any(subject_matches(p, subject) for p in self.plain)

    def queues_for(self, subject: str) -> list[str]:
        return [q for p, q in self.queued if subject_matches(p, subject)]


def _queue_in(queue: str, queues: list[str]) -> bool:
    # nats-server queueMatches: '*' and '>' are valid queue names, so the literal name counts first.
    return any(queue == q or (has_wildcard(q) and is_subset(queue, q)) for q in queues)


def _rules(perm: SubjectPermission | None, allow: bool, keep_empty: bool = False) -> _SubjectRules | None:
    if perm is None:
        return None
    entries = perm.allow if allow else perm.deny
    # An empty list restricts nothing, except the publish allow list that allow_responses empties.
    if entries is None or (not entries and not keep_empty):
        return None
    return _SubjectRules(entries)


class ConnectionPermissions:
    """The permission state of one connection (the pattern lists are the user's, caches its own)."""

    __slots__ = (
        "deny_array",
        "deny_cache",
        "deny_filter",
        "pub_allow",
        "pub_cache",
        "pub_deny",
        "replies",
        "response",
        "restricts_publish",
        "sub_allow",
        "sub_deny",
    )

    def __init__(self, perms: Permissions) -> None:
        response: ResponsePermission | None = perms.response
        self.response = response
        self.pub_allow = _rules(perms.publish, allow=True, keep_empty=response is not None)
        self.pub_deny = _rules(perms.publish, allow=False)
        self.sub_allow = _rules(perms.subscribe, allow=True)
        self.sub_deny = _rules(perms.subscribe, allow=False)
        sub_perm = perms.subscribe
        # The deny entries as (subject, queue), as nats-server's darray ("" = any queue or none).
        deny = list(sub_perm.deny or []) if sub_perm is not None else []
        self.deny_array: list[tuple[str, str]] = [_split_queue(entry) for entry in deny]
        self.restricts_publish = self.pub_allow is not None or self.pub_deny is not None
        self.pub_cache: dict[str, bool] = {}
        self.replies: dict[str, list[float]] = {}  # reply -> [time recorded, times published]
        self.deny_filter = False  # messages are checked against deny_array (nats-server mperms)
        self.deny_cache: dict[tuple[str, str], bool] = {}

    @property
    def filters_delivery(self) -> bool:
        """Whether messages delivered to the connection need `deliver_allowed`."""
        return self.deny_filter or self.response is not None

    # ------------------------------------------------------------------ publish

    def can_publish(self, subject: str) -> bool:
        cached = self.pub_cache.get(subject)
        if cached is not None:
            return cached
        allowed = True
        if self.pub_allow is not None:
            allowed = self.pub_allow.matches(subject)
        if allowed and self.pub_deny is not None:
            allowed = not self.pub_deny.matches(subject)
        if not allowed and self.response is not None:
            # A reply subject's allowance is counted per use, so it is never cached.
            return self._response_allowed(subject)
        cache = self.pub_cache
        if len(cache) >= _MAX_CACHE:
            cache.clear()
        cache[subject] = allowed
        return allowed

    def _response_allowed(self, subject: str) -> bool:
        resp = self.replies.get(subject)
        if resp is None:
            return False
        rp = self.response
        assert rp is not None
        resp[1] += 1
        if rp.max_msgs > 0 and resp[1] > rp.max_msgs:
            del self.replies[subject]
            return False
        if rp.expires > 0 and time.monotonic() - resp[0] > rp.expires:
            del self.replies[subject]
            return False
        return True

    # ---------------------------------------------------------------- subscribe

    def can_subscribe(self, subject: str, queue: str = "") -> bool:
        allowed = True
        if self.sub_allow is not None:
            allowed = self.sub_allow.matches(subject)
            if queue:
                queues = self.sub_allow.queues_for(subject)
                if queues:
                    allowed = _queue_in(queue, queues)
        if allowed and self.sub_deny is not None:
            allowed = not self.sub_deny.matches(subject)
            if queue:
                queues = self.sub_deny.queues_for(subject)
                if queues:
                    allowed = not _queue_in(queue, queues)
            if allowed and not self.deny_filter and (queue or has_wildcard(subject)):
                # A wildcard (or a queue subscription) that can reach denied subjects: filter what
                # is delivered from now on (loadMsgDenyFilterIfNeeded).
                self.deny_filter = any(subjects_overlap(d, subject) for d, _ in self.deny_array)
        return allowed

    # ------------------------------------------------------------------ deliver

    def deliver_allowed(self, subject: str, reply: str, queue: str = "") -> bool:
        """Whether a message may be delivered to a subscription in ``queue`` (the deny filter,
        nats-server checkDenySub: a plain entry denies the subject, a "subject queue" entry only
        that queue), recording its reply subject for ``allow_responses``."""
        if self.deny_filter:
            key = (subject, queue)
            denied = self.deny_cache.get(key)
            if denied is None:
                hits = [q for d, q in self.deny_array if subject_matches(d, subject)]
                denied = "" in hits or bool(queue and hits and _queue_in(queue, hits))
                if len(self.deny_cache) >= _MAX_CACHE:
                    self.deny_cache.clear()
                self.deny_cache[key] = denied
            if denied:
                return False
        if reply and self.response is not None:
            replies = self.replies
            replies[reply] = [time.monotonic(), 0]
            if len(replies) > _MAX_REPLIES:
                self._prune_replies()
        return True

    def _prune_replies(self) -> None:
        rp = self.response
        assert rp is not None
        now = time.monotonic()
        for reply, (at, n) in list(self.replies.items()):
            if (rp.max_msgs > 0 and n >= rp.max_msgs) or (rp.expires > 0 and now - at > rp.expires):
                del self.replies[reply]
