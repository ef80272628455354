"""Subject filter matching for store queries (private; the server's subject index is elsewhere).

A filter token ``*`` matches exactly one token, a final ``>`` one or more trailing tokens; a
token is a wildcard only when it is the whole token (``foo*`` is a literal), as in nats-server.
Stored subjects are literal publish subjects, so a filter ``*`` also matches a literal ``*``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

Matcher = Callable[[str], bool]


def is_match_all(filter_subject: str) -> bool:
    return filter_subject == "" or filter_subject == ">"


def has_wildcard(subject: str) -> bool:
    if "*" not in subject and ">" not in subject:
        return False
    return any(tok == "*" or tok == ">" for tok in subject.split("."))


@lru_cache(maxsize=4096)
def compile_filter(filter_subject: str) -> Matcher:
    """A fast predicate ``subject -> bool`` for a filter (literal or with wildcards)."""
    if is_match_all(filter_subject):
        return _match_all
    if not has_wildcard(filter_subject):
        return filter_subject.__eq__
    parts: list[str] = []
    tokens = filter_subject.split(".")
    for i, tok in enumerate(tokens):
        if tok == "*":
            parts.append(r"[^.]+")
        elif tok == ">" and i == len(tokens) - 1:
            parts.append(r"[^.]+(?:\.[^.]+)*")
        else:
            parts.append(re.escape(tok))
    fullmatch = re.compile(r"\.".join(parts), re.DOTALL).fullmatch
    return lambda subject: fullmatch(subject) is not None


def _match_all(subject: str) -> bool:
    return True


def subject_matches(filter_subject: str, subject: str) -> bool:
    return compile_filter(filter_subject)(subject)
