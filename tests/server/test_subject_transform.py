"""Subject transforms as nats-server defines them (republish and stream subject_transform)."""

from __future__ import annotations

import pytest

from pyjetstream.server.subject_transform import SubjectTransform, TransformError


@pytest.mark.parametrize(
    ("src", "dest", "subject", "expected"),
    [
        ("foo.*.*", "bar.$2.{{wildcard(1)}}", "foo.a.b", "bar.b.a"),
        ("orders.>", "repub.>", "orders.x.y", "repub.x.y"),
        ("", "x.>", "q.r", "x.q.r"),
        ("a.*", "{{splitFromLeft(1,2)}}", "a.abcd", "ab.cd"),
        ("a.*", "{{splitFromRight(1,1)}}", "a.abcd", "abc.d"),
        ("a.*", "{{sliceFromLeft(1,2)}}", "a.abcde", "ab.cd.e"),
        ("a.*", "{{sliceFromRight(1,2)}}", "a.abcde", "a.bc.de"),
        ("a.*", "{{split(1,-)}}", "a.x-y--z", "x.y.z"),
        ("a.*", "lit.{{Wildcard(1)}}", "a.k", "lit.k"),
        ("a.b", "c.d", "a.b", "c.d"),
    ],
)
def test_transforms(src: str, dest: str, subject: str, expected: str) -> None:
    assert SubjectTransform.compile(src, dest).match_and_apply(subject) == expected


def test_partition_is_stable_and_in_range() -> None:
    t = SubjectTransform.compile("a.*", "p.{{partition(3,1)}}")
    seen = {t.apply(f"a.k{i}") for i in range(50)}
    assert seen == {"p.0", "p.1", "p.2"}
    assert t.apply("a.k7") == t.apply("a.k7")


def test_non_matching_subject_is_not_transformed() -> None:
    assert SubjectTransform.compile("a.*", "b.$1").match_and_apply("x.y") is None


@pytest.mark.parametrize(
    ("src", "dest"),
    [
        ("a.*", "b.$2"),
        ("a.>", "b.c"),
        ("a.*", "b.*"),
        ("a..b", "c"),
        ("a.*", "{{nope(1)}}"),
        ("a.*", "{{wildcard()}}"),
    ],
)
def test_invalid_transforms_are_refused(src: str, dest: str) -> None:
    with pytest.raises(TransformError):
        SubjectTransform.compile(src, dest)
