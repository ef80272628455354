"""The NATS configuration file format, and its mapping onto :class:`ServerOptions`.

Two layers, one module:

1. **Syntax** (``parse``/``parse_file``): nats-server's ``conf`` package format, a
   relaxed JSON/HOCON hybrid::

       # comments with '#' or '//'
       port: 4222                    # 'key: value', 'key = value' or 'key value'
       listen = 127.0.0.1:4222       # unquoted strings run to the end of the value
       max_payload 1MB               # sizes: k/m/g/t/p/e are powers of 1000,
                                     # kb/ki/kib, mb/mi/mib, ... powers of 1024
       jetstream { store_dir: "/data", max_mem: 1G }
       authorization { users = [ {user: a, password: $PASS} ] }   # variables
       include ./accounts.conf       # relative to the including file

   Values are ``str``, ``int``, ``float``, ``bool`` (true/false/yes/no/on/off),
   ``datetime`` (``2020-01-02T03:04:05Z``), ``list`` and ``dict``. ``$NAME`` refers
   to a key defined earlier in an enclosing block, else to the environment (whose
   value is parsed as a config value). Unquoted ``$2a$...`` bcrypt hashes are
   literal strings. A number followed by letters that are not a size suffix is a
   string, so ``10s`` and ``1h30m`` are strings (durations); note that an unquoted
   ``2m`` is the *number* 2000000, exactly as in nats-server.

2. **Semantics** (``load_config``/``config_to_options``): the keys nats-server
   understands, mapped to ServerOptions, with nats-server's validation and error
   texts. Keys nats-server knows but pyjetstream does not implement (cluster,
   leafnodes, websocket, mqtt, ...) are kept raw in ``ServerOptions.unsupported``
   with a warning; ones whose absence would weaken security (operator/JWT mode,
   auth callout, encryption at rest) are errors. Unknown keys are errors, as in
   nats-server 2.9.10 (``strict=False`` turns them into warnings).

Every error carries ``<file>:<line>:<col>`` (1-based), like nats-server's.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import nkeys

from pyjetstream.server.options import (
    CONNECTION_TYPES,
    DEFAULT_HOST,
    DEFAULT_PORT,
    Account,
    AccountJetStreamLimits,
    NkeyUser,
    Permissions,
    ResponsePermission,
    ServerOptions,
    SubjectPermission,
    TLSOptions,
    User,
)

__all__ = [
    "ConfigError",
    "ConfigIssue",
    "config_to_options",
    "load_config",
    "parse",
    "parse_duration",
    "parse_file",
]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1

# Size suffixes of unquoted numbers (nats-server conf/parse.go).
_SIZE_SUFFIXES: dict[str, int] = {"": 1}
for _i, _letter in enumerate("kmgtpe", start=1):
    _SIZE_SUFFIXES[_letter] = 1000**_i
    for _tail in ("b", "i", "ib"):
        _SIZE_SUFFIXES[_letter + _tail] = 1024**_i

_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
# Unquoted `$2a$...` etc. are bcrypt hashes, not variable references.
_BCRYPT_VARIABLE = re.compile(r"^2[abxy]?\$")
_MAX_INCLUDE_DEPTH = 32


# =============================================================================
# errors
# =============================================================================


@dataclass(frozen=True)
class ConfigIssue:
    """One problem (or warning) found in a configuration, with where it is."""

    message: str
    file: str = ""
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file or '<config>'}:{self.line}:{self.col}: {self.message}"
        if self.file:
            return f"{self.file}: {self.message}"
        return self.message


class ConfigError(ValueError):
    """A configuration that cannot be used; ``issues`` lists every problem found."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


# =============================================================================
# syntax
# =============================================================================


class _Node:
    """A parsed value and where it was written (map entries: where the key is)."""

    __slots__ = ("col", "file", "line", "raw", "used", "value")

    def __init__(self, value: Any, file: str, line: int, col: int, raw: str | None = None) -> None:
        self.value = value
        self.file = file
        self.line = line
        self.col = col
        self.raw = raw  # source text of numbers, to explain `2m` surprises
        self.used = False  # referenced as a $variable: not an unknown key


class _SyntaxError(Exception):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def _is_ws(c: str) -> bool:
    return c == " " or c == "\t"


def _is_nl(c: str) -> bool:
    return c == "\n" or c == "\r"


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9" and len(c) == 1  # ASCII only: str.isdigit() accepts '²'


def _show(c: str) -> str:
    return {"": "EOF", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, c)


class _Parser:
    """Recursive-descent parser producing a tree of _Node (one instance per file)."""

    def __init__(
        self,
        text: str,
        filename: str,
        environ: Mapping[str, str],
        includes: tuple[str, ...] = (),
        resolving: frozenset[str] = frozenset(),
    ) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.file = filename
        self.environ = environ
        self.includes = includes  # real paths of the files being parsed (cycle check)
        self.resolving = resolving  # environment variables being expanded (cycle check)
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.ctx: list[dict[str, _Node]] = []  # enclosing maps, for $variable lookup

    # ----------------------------------------------------------------- helpers

    def where(self, index: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, index)
        return line, index - self.line_starts[line - 1] + 1

    def fail(self, message: str, index: int | None = None) -> _SyntaxError:
        return _SyntaxError(self.i if index is None else index, message)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < self.n else ""

    def node(self, value: Any, index: int, raw: str | None = None) -> _Node:
        line, col = self.where(index)
        return _Node(value, self.file, line, col, raw)

    def at_comment(self) -> bool:
        c = self.peek()
        return c == "#" or (c == "/" and self.peek(1) == "/")

    def skip_comment(self) -> None:
        while self.i < self.n and not _is_nl(self.s[self.i]):
            self.i += 1

    def skip_ws(self) -> None:
        while self.i < self.n and _is_ws(self.s[self.i]):
            self.i += 1

    def skip_blank(self) -> None:
        """Skip whitespace, new lines and comments."""
        while self.i < self.n:
            c = self.s[self.i]
            if c.isspace():
                self.i += 1
            elif self.at_comment():
                self.skip_comment()
            else:
                return

    # ---------------------------------------------------------------- document

    def parse_document(self) -> dict[str, _Node]:
        root: dict[str, _Node] = {}
        self.ctx.append(root)
        while True:
            self.skip_blank()
            c = self.peek()
            if c == "":
                return root
            if c in "{}":  # JSON-style braces around the whole document
                self.i += 1
                continue
            self.parse_entry(root)
            self.end_top_value()

    def end_top_value(self) -> None:
        self.skip_ws()
        c = self.peek()
        if self.at_comment():
            self.skip_comment()
        elif c == "" or _is_nl(c) or c in ";,}":
            if c:
                self.i += 1
        else:
            raise self.fail(
                "Expected a top-level value to end with a new line, comment or EOF, "
                f"but got '{_show(c)}' instead."
            )

    def parse_entry(self, target: dict[str, _Node]) -> None:
        key_index = self.i
        key, quoted = self.parse_key()
        if not quoted and key.lower() == "include" and self.peek().isspace():
            self.parse_include(target, key_index)
            return
        # Like nats-server, the key may be separated from its value by any space
        # (new lines included) but the value must start on the separator's line.
        while self.peek().isspace():
            self.i += 1
        c = self.peek()
        if c == "":
            raise self.fail(f"key '{key}' has no value", key_index)
        if c in "=:":
            self.i += 1
            self.skip_ws()
        node = self.parse_value()
        line, col = self.where(key_index)  # errors about a setting point at its key
        node.line, node.col = line, col
        target[key] = node

    def parse_key(self) -> tuple[str, bool]:
        c = self.peek()
        if c in "\"'":
            start = self.i + 1
            end = self.s.find(c, start)
            if end < 0:
                raise self.fail("Unexpected EOF.", self.n)
            self.i = end + 1
            return self.s[start:end], True
        if c in "=:":
            raise self.fail(f"Unexpected key separator '{c}'")
        start = self.i
        while self.i < self.n and not (self.s[self.i].isspace() or self.s[self.i] in "=:{"):
            self.i += 1
        return self.s[start : self.i], False

    # ------------------------------------------------------------------ values

    def parse_value(self) -> _Node:
        start = self.i
        c = self.peek()
        if c == "":
            raise self.fail("Unexpected EOF.")
        if _is_nl(c):
            raise self.fail("Expected value but found new line")
        if c == "[":
            return self.parse_array()
        if c == "{":
            self.i += 1
            return self.node(self.parse_map_body(), start)
        if c == "'":
            end = self.s.find("'", start + 1)
            if end < 0:
                raise self.fail("Unexpected EOF.", self.n)
            self.i = end + 1
            return self.node(self.s[start + 1 : end], start)
        if c == '"':
            self.i += 1
            return self.node(self.read_escaped('"'), start)
        if c == "(":
            return self.parse_block()
        if c == "-":
            return self.parse_negative_number()
        if _is_digit(c):
            return self.parse_number()
        if c == ".":
            raise self.fail("Floats must start with a digit")
        return self.parse_unquoted(start)

    def read_escaped(self, quote: str) -> str:
        """Read a string with backslash escapes up to ``quote`` ("" = unquoted)."""
        out = bytearray()
        while True:
            if self.i >= self.n:
                if quote:
                    raise self.fail("Unexpected EOF.")
                return out.decode("utf-8", "replace")
            c = self.s[self.i]
            if quote:
                if c == quote:
                    self.i += 1
                    return out.decode("utf-8", "replace")
            elif _is_ws(c) or _is_nl(c) or c in ";,]}":
                return out.decode("utf-8", "replace")
            if c == "\\":
                out += self.read_escape()
                continue
            out += c.encode()
            self.i += 1

    def read_escape(self) -> bytes:
        esc = self.peek(1)
        simple = {"t": b"\t", "n": b"\n", "r": b"\r", '"': b'"', "\\": b"\\"}
        if esc in simple:
            self.i += 2
            return simple[esc]
        if esc == "x":
            digits = self.s[self.i + 2 : self.i + 4]
            if len(digits) < 2 or any(_is_nl(d) for d in digits):
                raise self.fail("Expected two hexadecimal digits after '\\x', but hit end of line")
            try:
                value = bytes.fromhex(digits)
            except ValueError:
                raise self.fail(f"Expected two hexadecimal digits after '\\x', but got '{digits}'") from None
            self.i += 4
            return value
        raise self.fail(
            f"Invalid escape character '{_show(esc)}'. Only the following escape characters "
            'are allowed: \\xXX, \\t, \\n, \\r, \\", \\\\.'
        )

    def parse_unquoted(self, start: int) -> _Node:
        self.i = start
        escaped = "\\" in self.s[start : self.value_end(start)]
        text = self.read_escaped("")
        if escaped:
            return self.node(text, start)
        if text.lower() in _BOOLS:
            return self.node(_BOOLS[text.lower()], start)
        if text.startswith("$"):
            return self.resolve_variable(text[1:], start)
        return self.node(text, start)

    def value_end(self, start: int) -> int:
        j = start
        while j < self.n and not (_is_ws(self.s[j]) or _is_nl(self.s[j]) or self.s[j] in ";,]}"):
            j += 1
        return j

    def parse_block(self) -> _Node:
        """``( ... )`` multi-line string, closed by a ')' alone on its line."""
        start = self.i
        for m in re.finditer(r"\r?\n\)(?=\r?\n|$)", self.s[start + 1 :]):
            end = start + 1 + m.start()
            self.i = start + 1 + m.end()
            return self.node(self.s[start + 1 : end], start)
        raise self.fail("Unexpected EOF processing block.", self.n)

    def _is_number_end(self, c: str) -> bool:
        return c == "" or _is_ws(c) or _is_nl(c) or c in ";,]}"

    def parse_number(self) -> _Node:
        start = self.i
        while _is_digit(self.peek()):
            self.i += 1
        c = self.peek()
        if c == "-":
            if self.i - start != 4:
                raise self.fail("All ISO8601 dates must be in full Zulu form.")
            return self.parse_datetime(start)
        if c == ".":
            return self.parse_float_or_ip(start)
        if c and c.lower() in "kmgtpe":
            j = self.i + 1
            while j < self.n and self.s[j] in "bBiI":
                j += 1
            nxt = self.s[j] if j < self.n else ""
            if self._is_number_end(nxt):
                self.i = j
                return self.integer(start)
            return self.parse_unquoted(start)  # e.g. 1m30s: a string (a duration)
        if self._is_number_end(c):
            return self.integer(start)
        return self.parse_unquoted(start)  # e.g. 10s, 1h30m, 1_000: strings

    def parse_negative_number(self) -> _Node:
        start = self.i
        self.i += 1
        if not _is_digit(self.peek()):
            if self.peek() == ".":
                raise self.fail("Floats must start with a digit, not '.'.")
            raise self.fail(f"Expected a digit but got '{_show(self.peek())}'.")
        while _is_digit(self.peek()):
            self.i += 1
        c = self.peek()
        if c == ".":
            return self.parse_float_or_ip(start)
        if c and c.lower() in "kmgtpe":
            self.i += 1
            while self.peek() and self.peek() in "bBiI":
                self.i += 1
        return self.integer(start)

    def integer(self, start: int) -> _Node:
        raw = self.s[start : self.i]
        m = re.fullmatch(r"(-?[0-9]+)([a-zA-Z]*)", raw)
        assert m is not None
        multiplier = _SIZE_SUFFIXES.get(m.group(2).lower())
        if multiplier is None:
            raise self.fail(f"invalid size suffix in '{raw}'", start)
        value = int(m.group(1)) * multiplier
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise self.fail(f"integer '{raw}' is out of the range", start)
        return self.node(value, start, raw)

    def parse_float_or_ip(self, start: int) -> _Node:
        self.i += 1  # the '.'
        if not _is_digit(self.peek()):
            raise self.fail(
                f"Floats must have a digit after the '.', but got '{_show(self.peek())}' instead."
            )
        while _is_digit(self.peek()):
            self.i += 1
        if self.peek() == ".":  # a second dot: an IP address, maybe with a port
            while self.peek() and (_is_digit(self.peek()) or self.peek() in ".:-"):
                self.i += 1
            return self.node(self.s[start : self.i], start)
        raw = self.s[start : self.i]
        return self.node(float(raw), start, raw)

    def parse_datetime(self, start: int) -> _Node:
        pattern = "00-00T00:00:00Z"
        self.i += 1  # the '-' after the year
        for want in pattern:
            got = self.peek()
            if want == "0":
                if not _is_digit(got):
                    raise self.fail(f"Expected digit in ISO8601 datetime, but found '{_show(got)}' instead.")
            elif got != want:
                raise self.fail(f"Expected '{want}' in ISO8601 datetime, but found '{_show(got)}' instead.")
            self.i += 1
        raw = self.s[start : self.i]
        try:
            value = datetime.strptime(raw, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise self.fail(f"expected Zulu formatted DateTime, but got '{raw}'", start) from None
        return self.node(value, start, raw)

    # ------------------------------------------------------------- containers

    def parse_array(self) -> _Node:
        start = self.i
        self.i += 1
        items: list[_Node] = []
        while True:
            self.skip_blank()
            c = self.peek()
            if c == "]":
                self.i += 1
                return self.node(items, start)
            if c == "":
                raise self.fail("Unexpected EOF processing array.")
            if c == ",":
                raise self.fail("Unexpected array value terminator ','.")
            items.append(self.parse_value())
            self.skip_ws()
            if self.at_comment():
                self.skip_comment()
            c = self.peek()
            if c == "," or _is_nl(c):
                self.i += 1
            elif c == "]":
                continue
            elif c == "":
                raise self.fail("Unexpected EOF processing array.")
            else:
                raise self.fail(
                    'Expected an array value terminator "," or an array terminator "]", '
                    f"but got '{_show(c)}' instead."
                )

    def parse_map_body(self) -> dict[str, _Node]:
        """Entries up to the closing '}' (the '{' is already consumed)."""
        entries: dict[str, _Node] = {}
        self.ctx.append(entries)
        try:
            while True:
                self.skip_blank()
                c = self.peek()
                if c == "}":
                    self.i += 1
                    return entries
                if c == "":
                    raise self.fail("Unexpected EOF processing map.")
                if c in "=:":
                    raise self.fail(f"Unexpected key separator '{c}'.")
                if c == "]":
                    raise self.fail("Unexpected array end ']' processing map.")
                if c in ",;":
                    raise self.fail(f"Unexpected map value terminator '{c}'.")
                self.parse_entry(entries)
                self.skip_ws()
                if self.at_comment():
                    self.skip_comment()
                c = self.peek()
                if c in ",;" or _is_nl(c):
                    self.i += 1
                elif c == "}":
                    continue
                elif c == "":
                    raise self.fail("Unexpected EOF processing map.")
                else:
                    raise self.fail(
                        'Expected a map value terminator "," or a map terminator "}", '
                        f"but got '{_show(c)}' instead."
                    )
        finally:
            self.ctx.pop()

    # ------------------------------------------------------ variables, include

    def resolve_variable(self, name: str, index: int) -> _Node:
        if _BCRYPT_VARIABLE.match(name):
            return self.node("$" + name, index)
        line, _ = self.where(index)
        for scope in reversed(self.ctx):
            found = scope.get(name)
            if found is not None:
                found.used = True
                return self.node(found.value, index, found.raw)
        if name in self.environ and name not in self.resolving:
            env_parser = _Parser(
                f"pk={self.environ[name]}",
                f"${name}",
                self.environ,
                resolving=self.resolving | {name},
            )
            try:
                value = env_parser.parse_document()["pk"]
            except (_SyntaxError, KeyError, ConfigError) as exc:
                reason = exc.message if isinstance(exc, _SyntaxError) else str(exc)
                raise self.fail(
                    f"variable reference for '{name}' on line {line} could not be parsed: {reason}", index
                ) from None
            return self.node(value.value, index, value.raw)
        raise self.fail(f"variable reference for '{name}' on line {line} can not be found", index)

    def parse_include(self, target: dict[str, _Node], index: int) -> None:
        self.skip_ws()
        c = self.peek()
        if c in "'\"":
            end = self.s.find(c, self.i + 1)
            if end < 0:
                raise self.fail("Unexpected EOF.", self.n)
            path = self.s[self.i + 1 : end]
            self.i = end + 1
        else:
            refused = {
                "[": "start of an array",
                "{": "start of a map",
                "(": "start of a block",
                "\\": "escape sequence",
                "\n": "new line",
                "\r": "new line",
                "": "EOF",
            }
            if c in refused or _is_digit(c) or c == "-":
                what = refused.get(c, "start of a number")
                raise self.fail(f"Expected include value but found {what}")
            start = self.i
            while self.i < self.n and not (self.s[self.i].isspace() or self.s[self.i] in ";}"):
                self.i += 1
            path = self.s[start : self.i]
        base = os.path.dirname(self.file) if self.file and not self.file.startswith("$") else ""
        full = os.path.normpath(os.path.join(base, path))  # absolute paths stay absolute
        real = os.path.realpath(full)
        if real in self.includes or len(self.includes) >= _MAX_INCLUDE_DEPTH:
            raise self.fail(f"include cycle: '{path}' includes itself", index)
        try:
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise self.fail(f"error parsing include file '{path}', {exc.strerror}: {full}", index) from None
        # An included file is parsed on its own (it sees only its own variables and the
        # environment, as in nats-server); its top-level keys land in the current block.
        included = _parse_tree(text, full, self.environ, (*self.includes, real))
        target.update(included)


def _parse_tree(
    text: str, filename: str, environ: Mapping[str, str], includes: tuple[str, ...] = ()
) -> dict[str, _Node]:
    if filename and not includes:
        includes = (os.path.realpath(filename),)
    parser = _Parser(text, filename, environ, includes)
    try:
        return parser.parse_document()
    except _SyntaxError as exc:
        line, col = parser.where(exc.index)
        raise ConfigError([ConfigIssue(exc.message, filename, line, col)]) from None


def _plain(value: Any) -> Any:
    if isinstance(value, _Node):
        value = value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse(text: str, *, filename: str = "", environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse configuration text into plain Python values (raises ConfigError)."""
    return _plain(_parse_tree(text, filename, os.environ if environ is None else environ))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise ConfigError([ConfigIssue(f"error opening config file: {exc.strerror}", path)]) from None


def parse_file(path: str, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse a configuration file (and its includes) into plain Python values."""
    return _plain(_parse_tree(_read(path), path, os.environ if environ is None else environ))


# =============================================================================
# Go durations
# =============================================================================

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # both micro signs, as Go accepts
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` ("1h30m", "300ms", "-1.5s"), in seconds.

    Raises ValueError with Go's message, e.g. ``time: invalid duration "x"``.
    """
    s = text
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = 0.0
    while s:
        m = _DURATION_PART.match(s)
        assert m is not None
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise ValueError(f'time: invalid duration "{text}"')
        if not unit:
            raise ValueError(f'time: missing unit in duration "{text}"')
        if unit not in _DURATION_UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{text}"')
        number = float(f"{whole or '0'}.{frac or '0'}")
        total += number * _DURATION_UNITS[unit]
        s = s[m.end() :]
    return sign * total


# =============================================================================
# semantics: tree -> ServerOptions
# =============================================================================


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {
        str: "string",
        int: "integer",
        float: "float",
        dict: "map",
        list: "array",
        datetime: "datetime",
    }.get(type(value), type(value).__name__)


class _Invalid(Exception):
    """A value of the wrong shape; reported at the node it concerns."""

    def __init__(self, node: _Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict | list) or value is None:
        return _type_name(value)
    return f"{_type_name(value)} {value}"


def _expect(node: _Node, kind: type | tuple[type, ...], what: str, key: str) -> Any:
    value = node.value
    kinds = _as_tuple(kind)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _Invalid(node, f"'{key}' expected {what}, got {_describe(value)}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _int(node: _Node, key: str) -> int:
    return int(_expect(node, int, "an integer", key))


def _str(node: _Node, key: str) -> str:
    return str(_expect(node, str, "a string", key))


def _bool(node: _Node, key: str) -> bool:
    return bool(_expect(node, bool, "a boolean", key))


def _map(node: _Node, key: str) -> dict[str, _Node]:
    return _expect(node, dict, "a map", key)


def _list(node: _Node, key: str) -> list[_Node]:
    return _expect(node, list, "an array", key)


def _strings(node: _Node, key: str) -> list[str]:
    """A string or an array of strings."""
    if isinstance(node.value, str):
        return [node.value]
    return [_str(item, key) for item in _list(node, key)]


def _go_duration(node: _Node, key: str) -> float:
    text = _expect(node, str, 'a duration string such as "2m" or "10s"', key)
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise _Invalid(node, f"error parsing {key}: {exc}") from None


def _seconds(node: _Node, key: str) -> float:
    """A number of seconds, or a duration string."""
    if isinstance(node.value, str):
        return _go_duration(node, key)
    return float(_expect(node, (int, float), "a number of seconds or a duration string", key))


def _storage_size(node: _Node, key: str) -> int:
    """An integer, or a string ending in K, M, G or T (powers of 1024)."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise _Invalid(node, f"{key} must be int64 or string")
    if value == "":
        return 0
    m = re.fullmatch(r"\s*(-?[0-9]+)\s*([KMGT])(?:i?B)?\s*", value, re.IGNORECASE)
    if not m:
        raise _Invalid(node, f"{key} sizes defined as strings must end in K, M, G, T")
    return int(m.group(1)) << (10 * ("KMGT".index(m.group(2).upper()) + 1))


def _split_host_port(text: str) -> tuple[str, str]:
    """Go's net.SplitHostPort (enough of it for listen addresses)."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ValueError
        return text[1:end], text[end + 2 :]
    host, sep, port = text.rpartition(":")
    if not sep or ":" in host:
        raise ValueError
    return host, port


def _listen(node: _Node, key: str) -> tuple[str | None, int]:
    """``port`` or ``"host:port"``; returns (host or None, port)."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        return None, value
    if not isinstance(value, str):
        raise _Invalid(node, f"expected port or host:port, got {_type_name(value)}")
    try:
        host, port = _split_host_port(value)
    except ValueError:
        raise _Invalid(node, f'could not parse address string "{value}"') from None
    if not re.fullmatch(r"[+-]?[0-9]+", port):
        raise _Invalid(node, f'could not parse port "{port}"')
    return host, int(port)


_SUBJECT_TOKEN = re.compile(r"[^\s.]+")


def _valid_subject(subject: str) -> bool:
    if not subject or any(c.isspace() for c in subject):
        return False
    tokens = subject.split(".")
    for i, token in enumerate(tokens):
        if not _SUBJECT_TOKEN.fullmatch(token):
            return False
        if token == ">" and i != len(tokens) - 1:
            return False
    return True


def _valid_public_nkey(key: str, prefix: int) -> bool:
    try:
        raw = base64.b32decode(key + "=" * (-len(key) % 8))
    except (binascii.Error, ValueError):
        return False
    if len(raw) != 35 or raw[0] != prefix:
        return False
    return nkeys.crc16_checksum(raw[:-2]) == raw[-2:]


# Top-level keys nats-server knows that pyjetstream ignores (warning, raw value kept).
_IGNORED_TOP_LEVEL = {
    "cluster": "clustering (the embedded server is a single node)",
    "gateway": "gateways",
    "leaf": "leaf nodes",
    "leafnodes": "leaf nodes",
    "websocket": "websocket",
    "ws": "websocket",
    "mqtt": "MQTT",
    "mappings": "subject mappings",
    "maps": "subject mappings",
    "ocsp": "OCSP stapling",
    "ocsp_cache": "OCSP stapling",
    "syslog": "syslog logging",
    "remote_syslog": "syslog logging",
    "prof_port": "the profiling port",
    "prof_block_rate": "the profiling port",
    "connect_error_reports": "route/gateway/leaf error reports",
    "reconnect_error_reports": "route/gateway/leaf error reports",
    "default_js_domain": "per-account default JetStream domains",
    "disable_sublist_cache": "the sublist cache switch",
    "no_sublist_cache": "the sublist cache switch",
    "server_metadata": "server metadata",
    "proxies": "trusted proxies",
    "no_fast_producer_stall": "the fast-producer stall switch",
}
# Keys whose silent omission would weaken security: refused with an error.
_REFUSED_TOP_LEVEL = {
    key: "operator/JWT authentication is not supported by pyjetstream "
    "(use authorization {} or accounts {} users)"
    for key in (
        "operator",
        "operators",
        "root",
        "roots",
        "root_operator",
        "root_operators",
        "resolver",
        "account_resolver",
        "accounts_resolver",
        "resolver_tls",
        "resolver_preload",
        "resolver_pinned_accounts",
        "trusted",
        "trusted_keys",
    )
}
_JS_ENCRYPTION_KEYS = {"key", "ek", "encryption_key", "prev_key", "prev_encryption_key", "cipher", "tpm"}


# A block's handlers: "key|alias" -> handler(key, node), or (attribute, converter) to
# set ``target.attribute = converter(node, key)``.
_Handler = Callable[[str, _Node], None] | tuple[str, Callable[[_Node, str], Any]]


class _Mapper:
    """Applies a parsed tree to a ServerOptions, collecting all errors and warnings."""

    def __init__(self, opts: ServerOptions, strict: bool, filename: str) -> None:
        self.o = opts
        self.strict = strict
        self.filename = filename
        self.errors: list[ConfigIssue] = []
        self.auth_timeout_set = False
        self.store_dir_seen = False

    # ------------------------------------------------------------- reporting

    def issue(self, node: _Node, message: str) -> ConfigIssue:
        return ConfigIssue(message, node.file or self.filename, node.line, node.col)

    def error(self, node: _Node, message: str) -> None:
        self.errors.append(self.issue(node, message))

    def warn(self, node: _Node, message: str) -> None:
        self.o.warnings.append(str(self.issue(node, message)))

    def unknown(self, key: str, node: _Node) -> None:
        if node.used:  # a variable definition that was referenced
            return
        if self.strict:
            self.error(node, f'unknown field "{key}"')
        else:
            self.warn(node, f'unknown field "{key}" ignored')

    def each(
        self,
        entries: dict[str, _Node],
        spec: Mapping[str, _Handler],
        target: Any = None,
        unknown: Callable[[str, _Node], None] | None = None,
    ) -> None:
        """Dispatch every entry of a block (keys are case-insensitive, as in nats-server)."""
        table = {alias: h for names, h in spec.items() for alias in names.split("|")}
        for key, node in entries.items():
            handler = table.get(key.lower())
            try:
                if handler is None:
                    (unknown or self.unknown)(key, node)
                elif isinstance(handler, tuple):
                    attr, convert = handler
                    setattr(self.o if target is None else target, attr, convert(node, key))
                else:
                    handler(key, node)
            except _Invalid as exc:
                self.errors.append(self.issue(exc.node, exc.message))

    # ------------------------------------------------------------- top level

    def apply(self, tree: dict[str, _Node]) -> None:
        spec: dict[str, _Handler] = {
            "listen": self.listen,
            "port": ("port", _client_port),
            "host|net": ("host", lambda n, k: _str(n, k) or DEFAULT_HOST),
            "server_name": ("server_name", _str),
            "client_advertise": ("client_advertise", _str),
            "http": self.http,
            "https": self.https,
            "http_port|monitor_port": ("http_port", _int),
            "https_port": ("https_port", _int),
            "http_base_path": ("http_base_path", _str),
            "jetstream": self.jetstream,
            "store_dir|storedir": self.store_dir,
            "authorization": self.authorization,
            "no_auth_user": ("no_auth_user", _str),
            "accounts": self.accounts,
            "system_account|system": ("system_account", _str),
            "no_system_account|no_system|no_sys_acc": ("no_system_account", _bool),
            "max_payload": ("max_payload", _int32),
            "max_control_line": ("max_control_line", _int32),
            "max_pending": ("max_pending", _int),
            "max_connections|max_conn": ("max_connections", _int),
            "max_subscriptions|max_subs": ("max_subscriptions", _int),
            "max_sub_tokens|max_subscription_tokens": ("max_sub_tokens", _sub_tokens),
            "ping_interval": ("ping_interval", self.legacy_duration),
            "ping_max": ("ping_max", _int),
            "write_deadline": ("write_deadline", self.legacy_duration),
            "lame_duck_duration": ("lame_duck_duration", _lame_duck_duration),
            "lame_duck_grace_period": ("lame_duck_grace_period", _grace_period),
            "disable_short_first_ping": ("disable_short_first_ping", _bool),
            "no_header_support": ("no_header_support", _bool),
            "debug": ("debug", _bool),
            "trace": ("trace", _bool),
            "trace_verbose": self.trace_verbose,
            "logtime": ("logtime", _bool),
            "logtime_utc": ("logtime_utc", _bool),
            "logfile|log_file": ("logfile", _str),
            "logfile_size_limit|log_size_limit": ("log_size_limit", _storage_size),
            "logfile_max_num|log_max_num": ("log_max_num", _int),
            "max_traced_msg_len": ("max_traced_msg_len", _int),
            "pidfile|pid_file": ("pid_file", _str),
            "ports_file_dir": ("ports_file_dir", _str),
            "server_tags": ("server_tags", _strings),
            "tls": self.tls,
            "allow_non_tls": ("allow_non_tls", _bool),
            "|".join(_IGNORED_TOP_LEVEL): self.ignored,
            "|".join(_REFUSED_TOP_LEVEL): self.refused,
        }
        self.each(tree, spec)
        o = self.o
        if o.tls is not None and not self.auth_timeout_set:
            o.auth_timeout = o.tls.timeout + 1.0  # nats-server's default with TLS
        for problem in o.problems():
            self.errors.append(ConfigIssue(problem, self.filename))

    def legacy_duration(self, node: _Node, key: str) -> float:
        """A duration string; a bare number is seconds, with nats-server's warning."""
        if isinstance(node.value, int | float) and not isinstance(node.value, bool):
            hint = ""
            if node.raw and node.raw[-1:].lower() == "m":
                hint = f' (the unquoted {node.raw} is the number {node.value}; write "{node.raw}")'
            self.warn(node, f"{key} should be converted to a duration{hint}")
            return float(node.value)
        return _go_duration(node, key)

    def ignored(self, key: str, node: _Node) -> None:
        self.o.unsupported[key] = _plain(node)
        what = _IGNORED_TOP_LEVEL[key.lower()]
        self.warn(node, f'"{key}" ignored: {what} is not supported by pyjetstream')

    def refused(self, key: str, node: _Node) -> None:
        self.error(node, f'"{key}": {_REFUSED_TOP_LEVEL[key.lower()]}')

    def listen(self, key: str, node: _Node) -> None:
        host, port = _listen(node, key)
        self.o.host = host or DEFAULT_HOST
        self.o.port = DEFAULT_PORT if port == 0 else port

    def http(self, key: str, node: _Node) -> None:
        host, self.o.http_port = _listen(node, key)
        if host is not None:
            self.o.http_host = host

    def https(self, key: str, node: _Node) -> None:
        host, self.o.https_port = _listen(node, key)
        if host is not None:
            self.o.http_host = host

    def trace_verbose(self, key: str, node: _Node) -> None:
        self.o.trace_verbose = self.o.trace = _bool(node, key)

    # -------------------------------------------------------------- JetStream

    def store_dir(self, key: str, node: _Node) -> None:
        if self.store_dir_seen:
            raise _Invalid(node, "Duplicate 'store_dir' configuration")
        self.store_dir_seen = True
        self.o.store_dir = _str(node, key)

    def jetstream(self, key: str, node: _Node) -> None:
        value = node.value
        if not isinstance(value, dict):
            self.o.jetstream = _enabled(node, key)
            return
        o = self.o
        state = {"enable": True}  # a jetstream {} block enables JetStream unless it says not to

        def enable(k: str, n: _Node) -> None:
            state["enable"] = _bool(n, k)

        def sync(k: str, n: _Node) -> None:
            o.sync_always = isinstance(n.value, str) and n.value.lower() == "always"
            if not o.sync_always:
                o.sync_interval = self.legacy_duration(n, k)

        def encryption(k: str, n: _Node) -> None:
            self.error(n, f'"{k}": JetStream encryption at rest is not supported by pyjetstream')

        def cluster_only(k: str, n: _Node) -> None:
            self.warn(n, f'"{k}" ignored: it only applies to clustered JetStream')

        def accepted(k: str, n: _Node) -> None:
            pass  # meaningful to nats-server only (e.g. 2.11 API strictness)

        self.each(
            value,
            {
                "store|store_dir|storedir": self.store_dir,
                "max_memory_store|max_mem_store|max_mem": ("max_memory_store", _sized("max_mem_store")),
                "max_file_store|max_file": ("max_file_store", _sized("max_file_store")),
                "domain": ("jetstream_domain", _str),
                "enable|enabled": enable,
                "sync|sync_interval": sync,
                "max_buffered_size": ("jetstream_max_buffered_size", _storage_size),
                "max_buffered_msgs": ("jetstream_max_buffered_msgs", _int),
                "limits": self.jetstream_limits,
                "unique_tag|max_outstanding_catchup": cluster_only,
                "extension_hint|strict|request_queue_limit": accepted,
                "|".join(_JS_ENCRYPTION_KEYS): encryption,
            },
        )
        o.jetstream = state["enable"]

    def jetstream_limits(self, key: str, node: _Node) -> None:
        spec: dict[str, _Handler] = {
            "max_ack_pending": ("max_ack_pending", _int),
            "max_ha_assets": ("max_ha_assets", _int),
            "max_request_batch": ("max_request_batch", _int),
            "duplicate_window": ("duplicate_window", _go_duration),
        }
        self.each(_map(node, key), spec, self.o.jetstream_limits)

    # ------------------------------------------------------------------- auth

    def authorization(self, key: str, node: _Node) -> None:
        auth = _Fields(user="", password="", token="", users=[], nkeys=[], perms=None)

        def timeout(k: str, n: _Node) -> None:
            self.o.auth_timeout = _seconds(n, k)
            self.auth_timeout_set = True

        def users(k: str, n: _Node) -> None:
            auth.users, auth.nkeys = self.users(n, k, account="")

        def callout(k: str, n: _Node) -> None:
            self.error(n, f'"{k}": auth callout is not supported by pyjetstream')

        spec: dict[str, _Handler] = {
            "user|username": ("user", _str),
            "pass|password": ("password", _str),
            "token": ("token", _str),
            "timeout": timeout,
            "users": users,
            "default_permission|default_permissions|permissions": ("perms", self.permissions),
            "auth_callout|callout": callout,
        }
        self.each(_map(node, key), spec, auth)
        if (auth.user or auth.password) and auth.token:
            raise _Invalid(node, "Cannot have a user/pass and token")
        if auth.users or auth.nkeys:
            if auth.user:
                raise _Invalid(node, "Can not have a single user/pass and a users array")
            if auth.token:
                raise _Invalid(node, "Can not have a token and a users array")
        o = self.o
        o.username, o.password, o.token = auth.user, auth.password, auth.token
        if auth.perms is not None:
            o.default_permissions = auth.perms
            _apply_default_permissions(auth.users, auth.nkeys, auth.perms)
        o.users.extend(auth.users)
        o.nkeys.extend(auth.nkeys)

    def users(self, node: _Node, key: str, account: str) -> tuple[list[User], list[NkeyUser]]:
        users: list[User] = []
        nkey_users: list[NkeyUser] = []
        spec: dict[str, _Handler] = {
            "nkey": ("nkey", _str),
            "user|username": ("user", _str),
            "pass|password": ("password", _str),
            "permission|permissions|authorization": ("perms", self.permissions),
            "allowed_connection_types|connection_types|clients": ("types", _connection_types),
        }
        for entry in _list(node, key):
            if not isinstance(entry.value, dict):
                self.error(entry, f"Expected user entry to be a map/struct, got {_plain(entry)!r}")
                continue
            f = _Fields(nkey="", user="", password="", perms=None, types=None)
            self.each(entry.value, spec, f)
            if not f.nkey and not f.user:
                raise _Invalid(entry, "User entry requires a user")
            if not f.nkey:
                users.append(
                    User(
                        username=f.user,
                        password=f.password,
                        permissions=f.perms,
                        account=account,
                        allowed_connection_types=f.types,
                    )
                )
                continue
            if not _valid_public_nkey(f.nkey, nkeys.PREFIX_BYTE_USER):
                raise _Invalid(entry, "Not a valid public nkey for a user")
            if f.user or f.password:
                raise _Invalid(entry, "Nkey users do not take usernames or passwords")
            nkey_users.append(
                NkeyUser(nkey=f.nkey, permissions=f.perms, account=account, allowed_connection_types=f.types)
            )
        return users, nkey_users

    def permissions(self, node: _Node, key: str) -> Permissions:
        perms = Permissions()

        def publish(k: str, n: _Node) -> None:
            perms.publish = self.subject_permission(n, k, queue_ok=False)

        def subscribe(k: str, n: _Node) -> None:
            perms.subscribe = self.subject_permission(n, k, queue_ok=True)

        def responses(k: str, n: _Node) -> None:
            if isinstance(n.value, bool):
                perms.response = ResponsePermission() if n.value else None
                return
            if not isinstance(n.value, dict):
                raise _Invalid(n, "error parsing response permissions, expected a boolean or a map")
            rp = ResponsePermission()
            spec: dict[str, _Handler] = {  # 0 keeps the default; negative means unlimited
                "max|max_msgs|max_messages|max_responses": ("max_msgs", lambda n2, k2: _int(n2, k2) or 1),
                "expires|expiration|ttl": ("expires", lambda n2, k2: _go_duration(n2, k2) or 120.0),
            }
            self.each(n.value, spec, rp)
            perms.response = rp

        spec: dict[str, _Handler] = {
            "pub|publish|import": publish,
            "sub|subscribe|export": subscribe,
            "publish_allow_responses|allow_responses": responses,
        }
        self.each(_map(node, key), spec)
        if perms.response is not None:
            # Responses alone turn the blanket publish allow off.
            perms.publish = perms.publish or SubjectPermission()
            if perms.publish.allow is None:
                perms.publish.allow = []
        return perms

    def subject_permission(self, node: _Node, key: str, queue_ok: bool) -> SubjectPermission:
        def subjects(n: _Node, k: str) -> list[str]:
            return _subjects(n, k, queue_ok)

        if not isinstance(node.value, dict):
            return SubjectPermission(allow=subjects(node, key))
        sp = SubjectPermission()
        self.each(node.value, {"allow": ("allow", subjects), "deny": ("deny", subjects)}, sp)
        return sp

    # ---------------------------------------------------------------- accounts

    def accounts(self, key: str, node: _Node) -> None:
        o = self.o
        if isinstance(node.value, list):
            for item in node.value:
                name = _str(item, key)
                if name == "$G":
                    self.error(item, '"$G" is a Reserved Account')
                elif any(a.name == name for a in o.accounts):
                    self.error(item, f"Duplicate Account Entry: {name}")
                else:
                    o.accounts.append(Account(name=name))
            return
        seen: set[str] = {u.username for u in o.users} | {n.nkey for n in o.nkeys}
        for name, acc_node in _map(node, key).items():
            if acc_node.used:  # a variable defined in the accounts block
                continue
            if not isinstance(acc_node.value, dict):
                self.error(acc_node, "Expected map entries for accounts")
                continue
            if name == "$G":
                self.error(acc_node, '"$G" is a Reserved Account')
                continue
            try:
                account = self.account(name, acc_node.value)
            except _Invalid as exc:
                self.errors.append(self.issue(exc.node, exc.message))
                continue
            o.accounts.append(account)
            for user in account.users:
                if user.username in seen:
                    self.error(acc_node, f'Duplicate user "{user.username}" detected')
                else:
                    seen.add(user.username)
                    o.users.append(user)
            for nk in account.nkeys:
                if nk.nkey in seen:
                    self.error(acc_node, f'Duplicate nkey "{nk.nkey}" detected')
                else:
                    seen.add(nk.nkey)
                    o.nkeys.append(nk)

    def account(self, name: str, entries: dict[str, _Node]) -> Account:
        acc = Account(name=name)

        def users(k: str, n: _Node) -> None:
            acc.users, acc.nkeys = self.users(n, k, account=name)

        def jetstream(k: str, n: _Node) -> None:
            acc.jetstream = _enabled(n, k) if not isinstance(n.value, dict) else True
            if acc.jetstream:
                acc.jetstream_limits = AccountJetStreamLimits()
            if isinstance(n.value, dict):
                self.each(n.value, _ACCOUNT_JS_LIMITS, acc.jetstream_limits)

        def limits(k: str, n: _Node) -> None:
            self.each(_map(n, k), _ACCOUNT_LIMITS, acc.limits)

        def unsupported(k: str, n: _Node) -> None:
            acc.unsupported[k] = _plain(n)
            self.warn(n, f'"{k}" of account "{name}" ignored: not supported by pyjetstream')

        spec: dict[str, _Handler] = {
            "nkey": ("nkey", _account_nkey),
            "users": users,
            "jetstream": jetstream,
            "default_permissions": ("default_permissions", self.permissions),
            "limits": limits,
            "imports|exports|mappings|maps": unsupported,
        }
        self.each(entries, spec, acc)
        if acc.default_permissions is not None:
            _apply_default_permissions(acc.users, acc.nkeys, acc.default_permissions)
        return acc

    # -------------------------------------------------------------------- TLS

    def tls(self, key: str, node: _Node) -> None:
        tls = TLSOptions()
        errors_before = len(self.errors)
        self.each(_map(node, key), _TLS_FIELDS, tls, unknown=_tls_unknown)
        if len(self.errors) > errors_before:
            return
        tls.verify = tls.verify or tls.verify_and_map
        if not tls.cert_file or not tls.key_file:
            missing = "cert_file" if not tls.cert_file else "key_file"
            raise _Invalid(node, f"error parsing tls config, missing '{missing}'")
        try:
            tls.server_context()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise _Invalid(node, f"error parsing X509 certificate/key pair: {exc}") from None
        self.o.tls = tls


class _Fields:
    """A scratch record for a block's fields before they are checked together."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:  # pragma: no cover - typing aid only
        raise AttributeError(name)


# ------------------------------------------------------------ value converters


def _client_port(node: _Node, key: str) -> int:
    port = _int(node, key)
    return DEFAULT_PORT if port == 0 else port  # nats-server: 0 means the default port


def _int32(node: _Node, key: str) -> int:
    value = _int(node, key)
    if value > _INT32_MAX:
        raise _Invalid(node, f"{key} value is too big")
    return value


def _sub_tokens(node: _Node, key: str) -> int:
    value = _int(node, key)
    if value > 255:
        raise _Invalid(node, f"{key} value is too big")
    if value <= 0:
        raise _Invalid(node, f"{key} value can not be negative")
    return value


def _lame_duck_duration(node: _Node, key: str) -> float:
    value = _go_duration(node, key)
    if value < 30:
        raise _Invalid(node, f"invalid lame_duck_duration of {node.value}, minimum is 30 seconds")
    return value


def _grace_period(node: _Node, key: str) -> float:
    value = _go_duration(node, key)
    if value < 0:
        raise _Invalid(node, "invalid lame_duck_grace_period, needs to be positive")
    return value


def _enabled(node: _Node, key: str) -> bool:
    """``true``/``false`` or ``"enabled"``/``"disabled"`` (JetStream switches)."""
    value = node.value
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("enabled", "enable", "disabled", "disable"):
        return value.lower().startswith("enable")
    if isinstance(value, str):
        raise _Invalid(node, f"Expected 'enabled' or 'disabled' for string value, got '{value}'")
    raise _Invalid(node, f"Expected map, bool or string to define JetStream, got {_type_name(value)}")


def _sized(label: str) -> Callable[[_Node, str], int]:
    return lambda node, key: _storage_size(node, label)


def _connection_types(node: _Node, key: str) -> list[str]:
    types = [t.upper() for t in _strings(node, key)]
    for t in types:
        if t not in CONNECTION_TYPES:
            raise _Invalid(node, f'unknown connection type "{t}"')
    return types


def _subjects(node: _Node, key: str, queue_ok: bool) -> list[str]:
    subjects = _strings(node, key)
    for subject in subjects:
        parts = subject.split()
        ok = _valid_subject(subject) or (queue_ok and len(parts) == 2 and _valid_subject(parts[0]))
        if not ok:
            raise _Invalid(node, f'subject "{subject}" is not a valid subject')
    return subjects


def _account_nkey(node: _Node, key: str) -> str:
    value = node.value
    if not isinstance(value, str) or not _valid_public_nkey(value, nkeys.PREFIX_BYTE_ACCOUNT):
        raise _Invalid(node, f'Not a valid public nkey for an account: "{value}"')
    return value


def _js_limit(node: _Node, key: str) -> int:
    if not isinstance(node.value, int) or isinstance(node.value, bool):
        raise _Invalid(node, f'Expected a parseable size for "{key}", got {node.value}')
    return node.value


def _js_flag(node: _Node, key: str) -> bool:
    if not isinstance(node.value, bool):
        raise _Invalid(node, f'Expected a parseable bool for "{key}", got {node.value}')
    return node.value


_ACCOUNT_JS_LIMITS: dict[str, _Handler] = {
    "max_memory|max_mem|mem|memory": ("max_memory", _js_limit),
    "max_store|max_file|max_disk|store|disk": ("max_store", _js_limit),
    "max_streams|streams": ("max_streams", _js_limit),
    "max_consumers|consumers": ("max_consumers", _js_limit),
    "max_ack_pending": ("max_ack_pending", _js_limit),
    "max_bytes_required|max_stream_bytes|max_bytes": ("max_bytes_required", _js_flag),
}
_ACCOUNT_LIMITS: dict[str, _Handler] = {
    "max_connections|max_conn": ("max_connections", _int),
    "max_subscriptions|max_subs": ("max_subscriptions", _int),
    "max_payload|max_pay": ("max_payload", _int),
    "max_leafnodes|max_leafs": ("max_leafnodes", _int),
}


def _tls_filename(node: _Node, key: str) -> str:
    if not isinstance(node.value, str):
        raise _Invalid(node, f"error parsing tls config, expected '{key}' to be filename")
    return node.value


def _tls_flag(node: _Node, key: str) -> bool:
    if not isinstance(node.value, bool):
        raise _Invalid(node, f"error parsing tls config, expected '{key}' to be a boolean")
    return node.value


def _tls_names(node: _Node, key: str) -> list[str]:
    values = _strings(node, key)
    if not values:
        raise _Invalid(node, f"error parsing tls config, '{key}' cannot be empty")
    return values


def _tls_timeout(node: _Node, key: str) -> float:
    value = node.value
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise _Invalid(node, f"error parsing tls config, 'timeout' {exc}") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise _Invalid(node, "error parsing tls config, 'timeout' wrong type")


def _tls_rate_limit(node: _Node, key: str) -> int:
    if not isinstance(node.value, int) or isinstance(node.value, bool):
        raise _Invalid(node, "error parsing tls config, 'connection_rate_limit' wrong type")
    return node.value


def _tls_pinned(node: _Node, key: str) -> list[str]:
    certs = [c.lower() for c in _strings(node, key)]
    for cert in certs:
        if not re.fullmatch(r"[0-9a-f]{64}", cert):
            raise _Invalid(
                node,
                f"error parsing tls config, 'pinned_certs' key {cert} does not look like "
                "hex-encoded sha256 of DER encoded SubjectPublicKeyInfo",
            )
    return certs


def _tls_handshake_first(node: _Node, key: str) -> bool:
    value = node.value
    if isinstance(value, str):  # 2.10: "auto" or a fallback delay also enable it
        return value.lower() in ("auto", "auto_fallback") or _go_duration(node, key) >= 0
    return _bool(node, key)


def _tls_unknown(key: str, node: _Node) -> None:
    raise _Invalid(node, f'error parsing tls config, unknown field ["{key}"]')


def _tls_known_urls(node: _Node, key: str) -> bool:
    if _bool(node, key):
        raise _Invalid(node, f"{key} not supported in this context")
    return False


_TLS_FIELDS: dict[str, _Handler] = {
    "cert_file": ("cert_file", _tls_filename),
    "key_file": ("key_file", _tls_filename),
    "ca_file": ("ca_file", _tls_filename),
    "verify": ("verify", _tls_flag),
    "verify_and_map": ("verify_and_map", _tls_flag),
    "insecure": ("insecure", _tls_flag),
    "verify_cert_and_check_known_urls": ("insecure", _tls_known_urls),
    "cipher_suites": ("cipher_suites", _tls_names),
    "curve_preferences": ("curve_preferences", _tls_names),
    "timeout": ("timeout", _tls_timeout),
    "connection_rate_limit": ("connection_rate_limit", _tls_rate_limit),
    "pinned_certs": ("pinned_certs", _tls_pinned),
    "handshake_first|first": ("handshake_first", _tls_handshake_first),
}


def _apply_default_permissions(users: list[User], nkey_users: list[NkeyUser], perms: Permissions) -> None:
    for user in users:
        if user.permissions is None:
            user.permissions = perms
    for nk in nkey_users:
        if nk.permissions is None:
            nk.permissions = perms


def _wrap_plain(value: Any, filename: str) -> _Node:
    """Plain values (e.g. from json.load) as position-less nodes."""
    if isinstance(value, _Node):
        return value
    if isinstance(value, Mapping):
        value = {str(k): _wrap_plain(v, filename) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        value = [_wrap_plain(v, filename) for v in value]
    return _Node(value, filename, 0, 0)


def _apply_tree(
    tree: dict[str, _Node], base: ServerOptions | None, strict: bool, filename: str
) -> ServerOptions:
    opts = ServerOptions() if base is None else base.copy()
    if filename:
        opts.config_file = filename
    mapper = _Mapper(opts, strict, filename)
    mapper.apply(tree)
    if mapper.errors:
        raise ConfigError(mapper.errors)
    return opts


def config_to_options(
    config: Mapping[str, Any],
    *,
    base: ServerOptions | None = None,
    strict: bool = True,
    filename: str = "",
) -> ServerOptions:
    """Map a parsed configuration (``parse``'s result, or any plain dict) to options.

    ``base`` (copied, not modified) supplies values the configuration does not set.
    Raises ConfigError listing every problem; non-fatal findings go to ``warnings``.
    """
    node = _wrap_plain(dict(config), filename)
    return _apply_tree(node.value, base, strict, filename)


def load_config(
    path: str,
    *,
    base: ServerOptions | None = None,
    strict: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ServerOptions:
    """Read a NATS configuration file into ServerOptions (raises ConfigError)."""
    tree = _parse_tree(_read(path), path, os.environ if environ is None else environ)
    return _apply_tree(tree, base, strict, path)
