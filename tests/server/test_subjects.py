"""Subject validation and matching: the examples nats-server's sublist tests and the docs use."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.protocol.subjects import (
    has_wildcard,
    is_subset,
    is_valid_literal_subject,
    is_valid_queue_name,
    is_valid_subject,
    num_tokens,
    subject_matches,
    subjects_overlap,
    token_at,
    valid_subject_tokens,
)


@pytest.mark.parametrize(
    ("subject", "valid"),
    [
        ("foo", True),
        ("foo.bar", True),
        ("*", True),
        (">", True),
        ("foo.*", True),
        ("foo.>", True),
        ("*.*.east.>", True),
        ("foo*.bar", True),  # a token with * inside is a literal token
        ("a>b", True),
        ("", False),
        (".", False),
        ("foo.", False),
        (".foo", False),
        ("foo..bar", False),
        ("foo.>.bar", False),
        (">.foo", False),
        ("foo bar", False),
        ("foo\tbar", False),
        ("foo.\nbar", False),
    ],
)
def test_is_valid_subject(subject: str, valid: bool) -> None:
    assert is_valid_subject(subject) is valid


@pytest.mark.parametrize(
    ("subject", "valid"),
    [
        ("foo", True),
        ("foo.bar", True),
        ("foo*.b>", True),
        ("foo.*", False),
        ("foo.>", False),
        ("*", False),
        ("", False),
        ("a..b", False),
        ("a b", False),
    ],
)
def test_is_valid_literal_subject(subject: str, valid: bool) -> None:
    assert is_valid_literal_subject(subject) is valid


def test_queue_names_and_tokens() -> None:
    assert is_valid_queue_name("workers")
    assert is_valid_queue_name("a.b")
    assert not is_valid_queue_name("")
    assert not is_valid_queue_name("a b")
    assert has_wildcard("a.*") and has_wildcard("a.>") and not has_wildcard("a*.b>")
    assert num_tokens("a.b.c") == 3 and num_tokens("") == 0
    assert token_at("a.b.c", 1) == "a" and token_at("a.b.c", 3) == "c" and token_at("a.b.c", 4) == ""


@pytest.mark.parametrize(
    ("filter", "subject", "matches"),
    [
        ("time.*.east", "time.us.east", True),
        ("time.*.east", "time.eu.east", True),
        ("time.*.east", "time.us.east.atlanta", False),
        ("time.us.>", "time.us.east", True),
        ("time.us.>", "time.us.east.atlanta", True),
        ("time.us.>", "time.us", False),
        ("*.*.east.>", "time.us.east.atlanta", True),
        ("time.New*.east", "time.NewYork.east", False),
        (">", "a", True),
        (">", "a.b.c", True),
        ("*", "a", True),
        ("*", "a.b", False),
        ("foo", "foo", True),
        ("foo", "foo.bar", False),
        ("foo.bar", "foo", False),
        ("foo.*", "foo.*", True),  # a literal publish to foo.* is matched by the foo.* filter
        ("foo.bar", "foo.*", False),
    ],
)
def test_subject_matches(filter: str, subject: str, matches: bool) -> None:
    assert subject_matches(filter, subject) is matches


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("foo.*", "foo.bar", True),
        ("foo.*", "foo.>", True),
        ("foo.>", "foo", False),
        ("foo.*", "foo.bar.>", False),
        ("a.*.c", "a.>", True),
        ("*.>", "foo", False),
        ("foo.bar", "foo.baz", False),
        ("foo.*.baz", "foo.bar.*", True),
        ("foo.*", "bar.*", False),
        (">", "anything.at.all", True),
        ("a.b", "a.b.c", False),
        ("a.>", "b.>", False),
    ],
)
def test_subjects_overlap(a: str, b: str, overlap: bool) -> None:
    assert subjects_overlap(a, b) is overlap
    assert subjects_overlap(b, a) is overlap


@pytest.mark.parametrize(
    ("sub", "of", "subset"),
    [
        ("foo.bar", "foo.*", True),
        ("foo.*", "foo.>", True),
        ("foo.>", ">", True),
        ("foo.bar", "foo.bar", True),
        ("foo.*", "foo.bar", False),
        ("foo.>", "foo.*", False),
        ("foo.*", "foo.*", True),
        ("foo.bar.baz", "foo.*", False),
        ("foo", "foo.>", False),
        (">", "foo.>", False),
        ("*.bar", "foo.*", False),
    ],
)
def test_is_subset(sub: str, of: str, subset: bool) -> None:
    assert is_subset(sub, of) is subset


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["a", "*", ">", "", "*a", "a>", "**", " "]), min_size=1, max_size=5).map(".".join))
def test_wildcards_and_tokens_as_the_token_list_says(subject: str) -> None:
    """`has_wildcard` finds its tokens where they stand, `valid_subject_tokens` checks and splits
    at once: both answer as the token list does."""
    tokens = subject.split(".")
    assert has_wildcard(subject) is any(t in ("*", ">") for t in tokens)
    valid = is_valid_subject(subject)
    assert valid_subject_tokens(subject) == (tokens if valid else None)
    assert valid is (" " not in subject and all(tokens) and ">" not in tokens[:-1])
