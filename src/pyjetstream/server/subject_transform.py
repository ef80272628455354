"""Subject transforms: map a subject matching ``src`` to a new subject built from ``dest``.

Used by stream ``subject_transform`` and ``republish``. The destination syntax is nats-server's:
plain tokens, ``$N`` or ``{{wildcard(N)}}`` (the N-th ``*`` of the source), ``{{partition(n, i, …)}}``
(FNV-1a 32-bit hash of the chosen wildcard tokens modulo n), ``{{splitFromLeft(i, pos)}}``,
``{{splitFromRight(i, pos)}}``, ``{{sliceFromLeft(i, size)}}``, ``{{sliceFromRight(i, size)}}`` and
``{{split(i, delimiter)}}``. A trailing ``>`` in both carries the remaining tokens over.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_FUNCTION = re.compile(r"^\{\{\s*([A-Za-z]+)\s*\((.*)\)\s*\}\}$")
_ARG_SPLIT = re.compile(r",\s*")


class TransformError(ValueError):
    """The source/destination pair is not a valid transform."""


def _fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def _valid(subject: str) -> bool:
    tokens = subject.split(".")
    if any(not t or any(c in t for c in " \t\r\n\f") for t in tokens):
        return False
    return all(t != ">" for t in tokens[:-1])


def _int(text: str, token: str) -> int:
    try:
        return int(text.strip())
    except ValueError as exc:
        raise TransformError(f"invalid argument in {token!r}") from exc


# A compiled destination token: a function of the source tokens returning the text to write.
_Part = Callable[[list[str]], str]


def _split_from_left(tok: str, pos: int) -> str:
    return f"{tok[:pos]}.{tok[pos:]}" if 0 < pos < len(tok) else tok


def _split_from_right(tok: str, pos: int) -> str:
    return f"{tok[: len(tok) - pos]}.{tok[len(tok) - pos :]}" if 0 < pos < len(tok) else tok


def _slice_from_left(tok: str, size: int) -> str:
    if not 0 < size < len(tok):
        return tok
    return ".".join(tok[i : i + size] for i in range(0, len(tok), size))


def _slice_from_right(tok: str, size: int) -> str:
    if not 0 < size < len(tok):
        return tok
    rem = len(tok) % size
    parts = [tok[:rem]] if rem else []
    parts += [tok[i : i + size] for i in range(rem, len(tok), size)]
    return ".".join(parts)


def _split(tok: str, delim: str) -> str:
    return ".".join(p for p in tok.split(delim) if p)


@dataclass(slots=True)
class SubjectTransform:
    src: str
    dest: str
    _src_tokens: list[str]
    _parts: list[_Part | str]
    _carry_rest: bool

    @classmethod
    def compile(cls, src: str, dest: str) -> SubjectTransform:
        src = src or ">"
        if not _valid(src) or not _valid(dest):
            raise TransformError("invalid subject")
        stoks = src.split(".")
        dtoks = dest.split(".")
        if "*" in dtoks or (stoks[-1] == ">") != (dtoks[-1] == ">"):
            raise TransformError("invalid subject")
        # Map the N-th '*' of the source (1-based) to its token index.
        wildcard_index = [i for i, t in enumerate(stoks) if t == "*"]
        parts: list[_Part | str] = []
        for tok in dtoks:
            if tok == ">":
                break
            parts.append(cls._compile_token(tok, wildcard_index))
        return cls(src, dest, stoks, parts, dtoks[-1] == ">")

    @staticmethod
    def _compile_token(tok: str, wildcard_index: list[int]) -> _Part | str:
        def source_index(arg: str) -> int:
            n = _int(arg, tok)
            if n < 1 or n > len(wildcard_index):
                raise TransformError(f"wildcard index out of range in {tok!r}")
            return wildcard_index[n - 1]

        if len(tok) > 1 and tok[0] == "$":
            if not tok[1:].isdigit():
                return tok  # other things rely on $-tokens; a non-numeric one is literal
            i = source_index(tok[1:])
            return lambda ts: ts[i]
        match = _FUNCTION.match(tok)
        if not match:
            return tok
        name, args = match.group(1).lower(), _ARG_SPLIT.split(match.group(2))
        if name == "wildcard":
            if len(args) != 1 or not args[0]:
                raise TransformError(f"wrong number of arguments in {tok!r}")
            i = source_index(args[0])
            return lambda ts: ts[i]
        if name == "partition":
            if len(args) < 2:
                raise TransformError(f"not enough arguments in {tok!r}")
            buckets = _int(args[0], tok)
            idx = [source_index(a) for a in args[1:]]
            return lambda ts: str(_fnv1a32("".join(ts[i] for i in idx).encode()) % buckets)
        two_int: dict[str, Callable[[str, int], str]] = {
            "splitfromleft": _split_from_left,
            "splitfromright": _split_from_right,
            "slicefromleft": _slice_from_left,
            "slicefromright": _slice_from_right,
        }
        if name in two_int:
            if len(args) != 2:
                raise TransformError(f"wrong number of arguments in {tok!r}")
            i, n, fn = source_index(args[0]), _int(args[1], tok), two_int[name]
            return lambda ts: fn(ts[i], n)
        if name == "split":
            if len(args) != 2 or " " in args[1] or "." in args[1] or not args[1]:
                raise TransformError(f"invalid arguments in {tok!r}")
            i, delim = source_index(args[0]), args[1]
            return lambda ts: _split(ts[i], delim)
        raise TransformError(f"unknown function in {tok!r}")

    def matches(self, subject: str) -> bool:
        tokens = subject.split(".")
        stoks = self._src_tokens
        if stoks[-1] == ">":
            if len(tokens) < len(stoks):
                return False
        elif len(tokens) != len(stoks):
            return False
        for s, t in zip(stoks, tokens, strict=False):
            if s == ">":
                return True
            if s != "*" and s != t:
                return False
        return True

    def apply(self, subject: str) -> str:
        """Transform ``subject`` (which must match ``src``)."""
        tokens = subject.split(".")
        out = [p if isinstance(p, str) else p(tokens) for p in self._parts]
        if self._carry_rest:
            out.extend(tokens[len(self._src_tokens) - 1 :])
        return ".".join(out)

    def match_and_apply(self, subject: str) -> str | None:
        return self.apply(subject) if self.matches(subject) else None
