"""NATS subject matching for filters the server cannot apply (several filters on a 2.9 server)."""

from __future__ import annotations

__all__ = ["subject_matches", "subjects_overlap"]


def subject_matches(subject: str, pattern: str) -> bool:
    """Whether a literal ``subject`` matches ``pattern`` (``*`` one token, ``>`` the rest)."""
    tokens = subject.split(".")
    parts = pattern.split(".")
    for i, part in enumerate(parts):
        if part == ">":
            return len(tokens) > i
        if i >= len(tokens):
            return False
        if part != "*" and part != tokens[i]:
            return False
    return len(tokens) == len(parts)


def subjects_overlap(a: str, b: str) -> bool:
    """Whether some subject matches both patterns (nats-server refuses overlapping filters)."""
    ta, tb = a.split("."), b.split(".")
    for i in range(max(len(ta), len(tb))):
        x = ta[i] if i < len(ta) else None
        y = tb[i] if i < len(tb) else None
        if x == ">" or y == ">":
            return x is not None and y is not None
        if x is None or y is None:
            return False
        if x != "*" and y != "*" and x != y:
            return False
    return True
