"""Subject transforms: map a subject matching ``src`` to a new subject built from ``dest``.

Used by stream ``subject_transform`` and ``republish``. The destination syntax is nats-server's:
plain tokens, ``$N`` or ``{{wildcard(N)}}`` (the N-th ``*`` of the source), ``{{partition(n, i, …)}}``
(FNV-1a 32-bit hash of the chosen wildcard tokens modulo n), ``{{splitFromLeft(i, pos)}}``,
``{{splitFromRight(i, pos)}}``, ``{{sliceFromLeft(i, size)}}``, ``{{sliceFromRight(i, size)}}``,
``{{left(i, n)}}``, ``{{right(i, n)}}``, ``{{split(i, delimiter)}}`` and ``{{random(n)}}``; ``{{partition(n)}}``
hashes the whole subject. A trailing ``>`` in both carries the remaining tokens over. Validation
follows nats-server's ``NewSubjectTransformWithStrict`` / ``indexPlaceHolders`` check for check, so
a bad destination is refused with its exact text.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable

from msgspec import Struct

_ARG_SPLIT = re.compile(r",\s*")  # commaSeparatorRegEx
_ATOI = re.compile(r"^[+-]?[0-9]+$")  # Go's strconv.Atoi (after the caller's Trim of spaces)
_INT32_MAX = 2**31 - 1

# nats-server's mapping-destination errors (errors.go), word for word: a stream answers them in its
# 10156 / 10141 descriptions.
_INVALID_DEST = "invalid mapping destination"
ERR_INDEX_OUT_OF_RANGE = f"{_INVALID_DEST}: wildcard index out of range"
ERR_NOT_ENOUGH_ARGS = f"{_INVALID_DEST}: not enough arguments passed to the function"
ERR_INVALID_ARG = f"{_INVALID_DEST}: function argument is invalid or in the wrong format"
ERR_TOO_MANY_ARGS = f"{_INVALID_DEST}: too many arguments passed to the function"
ERR_UNKNOWN_FUNCTION = f"{_INVALID_DEST}: unknown function"
ERR_INVALID_TRANSFORM = f"{_INVALID_DEST}: invalid transform"  # ErrInvalidMappingDestinationSubject
ERR_BAD_SUBJECT = "invalid subject"


class TransformError(ValueError):
    """The source/destination pair is not a valid transform; the text is nats-server's."""


def _dest_error(token: str, err: str) -> TransformError:
    """nats-server's ``mappingDestinationErr``: ``<err> in <token>``."""
    return TransformError(f"{err} in {token}" if token else err)


@functools.cache
def _function(name: str) -> re.Pattern[str]:
    # Compiled on first use, not at import: most servers start with no mapping to parse (issue 24).
    # nats-server's ``{{\s*[wW]ildcard\s*\((.*)\)\s*}}`` style: the first letter of each word in
    # either case, unanchored.
    pattern = "".join(f"[{c.lower()}{c.upper()}]" if c.isupper() or i == 0 else c for i, c in enumerate(name))
    return re.compile(r"\{\{\s*" + pattern + r"\s*\((.*)\)\s*\}\}")


_WILDCARD = "wildcard"
_PARTITION = "partition"
_TWO_INT_FUNCTIONS = ("splitFromLeft", "splitFromRight", "sliceFromLeft", "sliceFromRight", "right", "left")
_SPLIT = "split"
_RANDOM = "random"


def _args(function: str, token: str) -> list[str] | None:
    """nats-server's ``getMappingFunctionArgs``."""
    m = _function(function).search(token)
    return _ARG_SPLIT.split(m.group(1)) if m else None


def _atoi(text: str, token: str) -> int:
    text = text.strip(" ")
    if not _ATOI.match(text):
        raise _dest_error(token, ERR_INVALID_ARG)
    return int(text)


def _two_args(args: list[str], token: str) -> None:
    """The two arguments of a split/slice/left/right function: fewer or more is nats-server's
    not-enough / too-many error."""
    if len(args) < 2:
        raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
    if len(args) > 2:
        raise _dest_error(token, ERR_TOO_MANY_ARGS)


def _placeholders(token: str) -> tuple[str, list[int], int, str]:
    """nats-server's ``indexPlaceHolders``: the token's function name (``""`` for a literal), its
    wildcard indexes, its integer and its string argument."""
    if len(token) <= 1:
        return "", [], -1, ""
    if token[0] == "$":  # the old $1, $2 form; a $-token that is not a number is literal
        rest = token[1:]
        return ("wildcard", [int(rest)], -1, "") if _ATOI.match(rest) else ("", [], -1, "")
    if not (len(token) > 4 and token.startswith("{{") and token.endswith("}}")):
        return "", [], -1, ""
    args = _args(_WILDCARD, token)
    if args is not None:
        if len(args) == 1 and not args[0]:
            raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
        if len(args) != 1:
            raise _dest_error(token, ERR_TOO_MANY_ARGS)
        return "wildcard", [_atoi(args[0], token)], -1, ""
    args = _args(_PARTITION, token)
    if args is not None:
        n = _atoi(args[0], token)
        if n > _INT32_MAX:
            raise _dest_error(token, ERR_INVALID_ARG)
        return "partition", [_atoi(a, token) for a in args[1:]], n, ""
    for function in _TWO_INT_FUNCTIONS:
        name = function.lower()
        args = _args(function, token)
        if args is not None:
            _two_args(args, token)
            i = _atoi(args[0], token)
            n = _atoi(args[1], token)
            if not -(2**31) <= n <= _INT32_MAX:  # strconv.ParseInt(..., 32)
                raise _dest_error(token, ERR_INVALID_ARG)
            return name, [i], n, ""
    args = _args(_SPLIT, token)
    if args is not None:
        _two_args(args, token)
        i = _atoi(args[0], token)
        if " " in args[1] or "." in args[1]:
            raise _dest_error(token, ERR_INVALID_ARG)
        return "split", [i], -1, args[1]
    args = _args(_RANDOM, token)
    if args is not None:
        if len(args) != 1:
            raise _dest_error(token, ERR_NOT_ENOUGH_ARGS)
        n = _atoi(args[0], token)
        if n > _INT32_MAX:
            raise _dest_error(token, ERR_INVALID_ARG)
        return "random", [], n, ""
    raise _dest_error(token, ERR_UNKNOWN_FUNCTION)


def _fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def _valid(subject: str) -> bool:
    """nats-server's ``subjectInfo``: no empty token, nothing after ``>`` (white space is let
    through: ``{{right(2, 1)}}`` is one token)."""
    tokens = subject.split(".")
    return all(tokens) and all(t != ">" for t in tokens[:-1])


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


def _left(tok: str, size: int) -> str:
    return tok[:size] if 0 < size < len(tok) else tok


def _right(tok: str, size: int) -> str:
    return tok[len(tok) - size :] if 0 < size < len(tok) else tok


_TWO_INT: dict[str, Callable[[str, int], str]] = {
    "splitfromleft": _split_from_left,
    "splitfromright": _split_from_right,
    "slicefromleft": _slice_from_left,
    "slicefromright": _slice_from_right,
    "left": _left,
    "right": _right,
}


class SubjectTransform(Struct):
    """A compiled subject transform (nats-server ``subjectTransform``): source tokens and destination parts."""

    src: str
    dest: str
    _src_tokens: list[str]
    _parts: list[_Part | str]
    _carry_rest: bool
    #: No ``{{random()}}``: the same subject always gives the same result (a mapping may cache it).
    deterministic: bool = True

    @classmethod
    def compile(cls, src: str, dest: str) -> SubjectTransform:
        """nats-server's ``NewSubjectTransformWithStrict`` (not strict): the same checks in the
        same order, with its error texts."""
        src = src or ">"
        if not _valid(src) or not _valid(dest):
            raise TransformError(ERR_BAD_SUBJECT)
        stoks = src.split(".")
        dtoks = dest.split(".")
        if "*" in dtoks or (stoks[-1] == ">") != (dtoks[-1] == ">"):
            raise TransformError(ERR_BAD_SUBJECT)
        # The N-th '*' of the source (1-based) to its token index (Go's ``sti`` map: a missing
        # index reads as 0, the first token).
        wildcard_index = [i for i, t in enumerate(stoks) if t == "*"]
        has_wildcards = bool(wildcard_index) or stoks[-1] == ">"
        parts: list[_Part | str] = []
        deterministic = True  # no ``{{random()}}`` among the tokens
        for tok in dtoks:
            name, indexes, n, text = _placeholders(tok)
            if tok == ">":
                break
            if name == "random":
                deterministic = False
            if not name:
                parts.append(tok)
                continue
            if has_wildcards:
                if name != "random":
                    for idx in indexes:
                        if idx > len(wildcard_index):
                            raise _dest_error(f"{tok}: [{idx}]", ERR_INDEX_OUT_OF_RANGE)
                    indexes = [wildcard_index[idx - 1] if idx >= 1 else 0 for idx in indexes]
            elif name in ("random", "partition"):
                indexes = []
            else:
                raise _dest_error(tok, ERR_INDEX_OUT_OF_RANGE)
            parts.append(cls._part(name, indexes, n, text))
        return cls(src, dest, stoks, parts, dtoks[-1] == ">", deterministic)

    @staticmethod
    def _part(name: str, indexes: list[int], n: int, text: str) -> _Part:
        """The runtime of one destination function (``TransformTokenizedSubject``)."""
        if name == "wildcard":
            i = indexes[0]
            return lambda ts: ts[i] if i < len(ts) else ""
        if name == "partition":
            if not indexes:
                return lambda ts: str(_fnv1a32(".".join(ts).encode()) % n) if n else "0"
            return lambda ts: str(_fnv1a32("".join(ts[i] for i in indexes).encode()) % n) if n else "0"
        if name == "random":
            return lambda ts: str(random.randrange(n)) if n > 0 else "0"
        i = indexes[0]
        if name == "split":
            return lambda ts: _split(ts[i], text)
        fn = _TWO_INT[name]
        return lambda ts: fn(ts[i], n)

    def matches(self, subject: str) -> bool:
        return self._matches_tokens(subject.split("."))

    def _matches_tokens(self, tokens: list[str]) -> bool:
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
        return self.apply_tokens(subject.split("."))

    def apply_tokens(self, tokens: list[str]) -> str:
        """nats-server ``TransformTokenizedSubject``: the subject already split into tokens."""
        out = [p if isinstance(p, str) else p(tokens) for p in self._parts]
        if self._carry_rest:
            out.extend(tokens[len(self._src_tokens) - 1 :])
        return ".".join(out)

    def match_and_apply(self, subject: str) -> str | None:
        """``subject`` transformed when ``src`` takes it, else None (the subject split once)."""
        tokens = subject.split(".")
        return self.apply_tokens(tokens) if self._matches_tokens(tokens) else None


_FUNCTIONS = (_PARTITION, _WILDCARD, *_TWO_INT_FUNCTIONS, _SPLIT, _RANDOM)
_SPACE = frozenset("\t\n\f\r ")


#: Built transforms kept by (source, destination) (`validate_mapping`); off: each built again.
CACHE_VALIDATED = True


def validate_mapping(src: str, dest: str) -> SubjectTransform | None:
    """nats-server ``ValidateMapping`` then ``NewSubjectTransform``: the destination's tokens
    checked in order (an empty token or one after ``>``, a ``{{...}}`` that names no function,
    white space), then the transform built — the rule a subject mapping and a stream's
    ``subject_transform`` both follow. None for an empty destination (nats-server: no transform).

    A transform is built once per (source, destination) while `CACHE_VALIDATED` (a bounded cache;
    a transform is never changed once built): the configuration's check of every mapping and the
    account's mappings built from it then compile each once — a start with 10,000 mappings compiled
    20,000 transforms, ~25 µs each. A refused one is checked again each time (raises)."""
    if CACHE_VALIDATED:
        return _validated(src, dest)
    return _validate(src, dest)


@functools.lru_cache(maxsize=1 << 16)
def _validated(src: str, dest: str) -> SubjectTransform | None:
    return _validate(src, dest)


def _validate(src: str, dest: str) -> SubjectTransform | None:
    if not dest:
        return None
    after_fwc = False
    for tok in dest.split("."):
        if not tok or after_fwc:
            raise _dest_error(tok, ERR_INVALID_TRANSFORM)
        if len(tok) > 4 and tok.startswith("{{") and tok.endswith("}}"):
            if not any(_function(f).search(tok) for f in _FUNCTIONS):
                raise _dest_error(tok, ERR_UNKNOWN_FUNCTION)
            continue
        if tok == ">":
            after_fwc = True
        elif not _SPACE.isdisjoint(tok):
            raise TransformError(ERR_INVALID_TRANSFORM)
    return SubjectTransform.compile(src, dest)


def transform_tokenize(subject: str) -> str:
    """nats-server ``transformTokenize``: each ``*`` of a subject as its ``$N`` place holder
    (``foo.*.*`` -> ``foo.$1.$2``), the identity destination of a wildcard source."""
    n = 0
    out = []
    for tok in subject.split("."):
        if tok == "*":
            n += 1
            tok = f"${n}"
        out.append(tok)
    return ".".join(out)
