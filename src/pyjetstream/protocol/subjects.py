"""Subjects: validation, tokens and wildcard matching (nats-server ``sublist.go`` semantics).

The one home of the subject grammar: the server (router, sublist, permissions, JetStream), the
stores, the client and Spark all use these functions; none has its own copy.

A subject is ``.``-separated tokens. In a *filter* (a subscription, a stream's subjects, a
consumer's filter) a token that is exactly ``*`` matches any one token and a final token that is
exactly ``>`` matches one or more tokens; ``foo*`` or ``a>b`` are ordinary tokens.

The vocabulary:

- `is_valid_subject` / `is_valid_literal_subject` / `is_valid_queue_name`
- `subject_matches` — does a filter match a subject
- `subjects_overlap` — can one subject match both filters (nats-server ``SubjectsCollide``)
- `is_subset` — is every subject matched by one filter also matched by another
  (nats-server ``subjectIsSubsetMatch``)
- `compile_filter` — the same match as a cached predicate, for scanning many stored
  subjects against one filter (nats-server's store ``isMatch`` loops); `is_match_all`
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final

__all__ = [
    "FWC",
    "PWC",
    "SEP",
    "Matcher",
    "compile_filter",
    "has_wildcard",
    "is_match_all",
    "is_subset",
    "is_valid_literal_subject",
    "is_valid_publish_subject",
    "is_valid_queue_name",
    "is_valid_subject",
    "num_tokens",
    "subject_matches",
    "subjects_overlap",
    "token_at",
    "tokenize",
    "valid_subject_tokens",
]

# Final: the compiled modules use them as constants, not as globals looked up at each use.
SEP: Final = "."
PWC: Final = "*"  # partial wildcard: exactly one token
FWC: Final = ">"  # full wildcard: one or more trailing tokens

# nats-server IsValidSubject rejects these inside tokens (" \t\n\r\f").
_WHITESPACE = frozenset(" \t\n\r\f")


def tokenize(subject: str) -> list[str]:
    return subject.split(SEP)


def num_tokens(subject: str) -> int:
    return subject.count(SEP) + 1 if subject else 0


def token_at(subject: str, index: int) -> str:
    """The ``index``-th token, 1-based as in nats-server's ``tokenAt`` ("" when out of range)."""
    tokens = subject.split(SEP)
    return tokens[index - 1] if 0 < index <= len(tokens) else ""


def _has_whitespace(text: str) -> bool:
    # Fast path: almost every subject is free of whitespace.
    if " " not in text and "\t" not in text and "\n" not in text and "\r" not in text and "\f" not in text:
        return False
    return True


def is_valid_subject(subject: str) -> bool:
    """A subject or filter: non-empty tokens, ``>`` only last, no whitespace (``IsValidSubject``)."""
    return valid_subject_tokens(subject) is not None


def valid_subject_tokens(subject: str) -> list[str] | None:
    """The tokens of a valid subject or filter (`is_valid_subject`), None for an invalid one: one
    split for a caller that walks the tokens after checking them (the sublist's insert)."""
    if not subject or _has_whitespace(subject):
        return None
    tokens = subject.split(SEP)
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if not token or (token == FWC and i != last):
            return None
    return tokens


def is_valid_literal_subject(subject: str) -> bool:
    """A valid subject without wildcard tokens (``IsValidLiteralSubject``)."""
    if not subject or _has_whitespace(subject):
        return False
    for token in subject.split(SEP):
        if not token or token == PWC or token == FWC:
            return False
    return True


# What pedantic mode requires of a publish subject.
is_valid_publish_subject = is_valid_literal_subject


def is_valid_queue_name(queue: str) -> bool:
    """A queue group name: non-empty and no whitespace (it may contain dots)."""
    return bool(queue) and not _has_whitespace(queue)


def has_wildcard(subject: str) -> bool:
    """Whether any token is exactly ``*`` or ``>`` (found where they stand: no token list for
    every subscription's subject)."""
    return _is_token(subject, PWC) or _is_token(subject, FWC)


def _is_token(subject: str, wildcard: str) -> bool:
    """Whether some token of ``subject`` is exactly ``wildcard`` (one character)."""
    end = len(subject) - 1
    pos = subject.find(wildcard)
    while pos >= 0:
        if (pos == 0 or subject[pos - 1] == SEP) and (pos == end or subject[pos + 1] == SEP):
            return True
        pos = subject.find(wildcard, pos + 1)
    return False


def subject_matches(filter: str, subject: str) -> bool:
    """Whether ``filter`` (which may hold wildcards) matches ``subject``.

    ``subject`` is taken literally: a ``*`` token in it is matched only by a ``*`` or ``>`` in the
    filter, as nats-server routes a publish to ``foo.*``.
    """
    if filter == subject:
        return True
    ftoks = filter.split(SEP)
    stoks = subject.split(SEP)
    n = len(stoks)
    for i, ftok in enumerate(ftoks):
        if i >= n:
            return False
        if ftok == FWC:
            return True
        stok = stoks[i]
        if ftok == PWC:
            if not stok:
                return False
            continue
        if ftok != stok:
            return False
    return len(ftoks) == n


def _wildcards(tokens: list[str]) -> tuple[bool, bool]:
    """nats-server's ``analyzeTokens``: whether any token is ``*`` / ``>`` (in any position)."""
    return PWC in tokens, FWC in tokens


def subjects_overlap(a: str, b: str) -> bool:
    """Whether some literal subject matches both ``a`` and ``b``: nats-server's ``SubjectsCollide``
    step for step, so that it answers as nats-server also for a subject not yet validated
    (``a.>.b`` collides with ``a.b.c``: a stream's subject list is compared pair by pair before
    the later ones are checked)."""
    if a == b:
        return True
    ta = a.split(SEP)
    tb = b.split(SEP)
    pwc_a, fwc_a = _wildcards(ta)
    pwc_b, fwc_b = _wildcards(tb)
    lit_a, lit_b = not (pwc_a or fwc_a), not (pwc_b or fwc_b)
    if lit_a and lit_b:
        return False
    if lit_a:
        return _is_subset_tokens(ta, tb)
    if lit_b:
        return _is_subset_tokens(tb, ta)
    la, lb = len(ta), len(tb)
    if not fwc_a and not fwc_b and la != lb:
        return False
    if la != lb and ((la < lb and not fwc_a) or (lb < la and not fwc_b)):
        return False
    for x, y in zip(ta, tb, strict=False):
        # tokensCanMatch: empty tokens never match; a token starting with a wildcard matches.
        if not x or not y:
            return False
        if x[0] in "*>" or y[0] in "*>":
            continue
        if x != y:
            return False
    return True


def is_subset(sub: str, of: str) -> bool:
    """Whether every subject matched by ``sub`` is also matched by ``of`` (nats-server's
    ``subjectIsSubsetMatch``).

    ``foo.bar`` ⊂ ``foo.*`` ⊂ ``foo.>`` ⊂ ``>``; ``foo.*`` is not a subset of ``foo.bar``.
    """
    return _is_subset_tokens(sub.split(SEP), of.split(SEP))


def _is_subset_tokens(stoks: list[str], otoks: list[str]) -> bool:
    """nats-server's ``isSubsetMatchTokenized``."""
    n = len(stoks)
    for i, otok in enumerate(otoks):
        if i >= n or not otok:
            return False
        if otok == FWC:
            return True
        stok = stoks[i]
        if not stok or stok == FWC:
            return False
        if stok == PWC:
            if otok != PWC:
                return False
            continue
        if otok[0] != PWC and otok != stok:
            return False
    return n == len(otoks)


Matcher = Callable[[str], bool]


def is_match_all(filter_subject: str) -> bool:
    """An empty filter or ``>``: every subject (a stream's or consumer's "no filter")."""
    return filter_subject == "" or filter_subject == FWC


@lru_cache(maxsize=4096)
def compile_filter(filter_subject: str) -> Matcher:
    """A fast predicate ``subject -> bool`` for one filter (literal or with wildcards).

    Same answers as `subject_matches` for valid literal subjects (what a store holds), with
    an empty filter matching everything; a regular expression is several times faster than the
    token loop when one filter is tested against many stored subjects.
    """
    if is_match_all(filter_subject):
        return _match_all
    if not has_wildcard(filter_subject):
        return filter_subject.__eq__
    parts: list[str] = []
    tokens = filter_subject.split(SEP)
    for i, tok in enumerate(tokens):
        if tok == PWC:
            parts.append(r"[^.]+")
        elif tok == FWC and i == len(tokens) - 1:
            parts.append(r"[^.]+(?:\.[^.]+)*")
        else:
            parts.append(re.escape(tok))
    fullmatch = re.compile(r"\.".join(parts), re.DOTALL).fullmatch
    return lambda subject: fullmatch(subject) is not None


def _match_all(subject: str) -> bool:
    return True
