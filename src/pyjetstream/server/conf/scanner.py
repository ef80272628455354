"""Reading the config format character by character: positions, blanks and comments, scalar values.

The `Scanner` reads what a value is made of (quoted strings with escapes, numbers with
size suffixes, floats, IP addresses, ISO8601 datetimes, ``( ... )`` blocks); the parser
(`parser`) builds the document's structure on top of it.
"""

from __future__ import annotations

import bisect
import re
from datetime import UTC, datetime
from typing import Any

from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.conf.units import SIZE_SUFFIXES

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


#: A string's characters read a stretch at a time (`Scanner.read_escaped`); off: one at a time.
RUNS = True
#: The characters a string's rules pass over, by quote ("" = unquoted): none of the quote, the
#: escape, and for an unquoted string its ends (blank, new line, ``;,]}``, a single quote).
_PLAIN = {'"': re.compile(r'[^"\\]+'), "": re.compile(r"[^ \t\n\r;,\]}'\\]+")}


class ConfigSyntaxError(Exception):
    """A syntax error at a character index (the parser turns it into a ConfigIssue with line:col)."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def is_ws(c: str) -> bool:
    return c == " " or c == "\t"


def is_nl(c: str) -> bool:
    return c == "\n" or c == "\r"


def is_digit(c: str) -> bool:
    return "0" <= c <= "9" and len(c) == 1  # ASCII only: str.isdigit() accepts '²'


def show_char(c: str) -> str:
    """A character as nats-server's syntax errors show it."""
    return {"": "EOF", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, c)


class Scanner:
    """A cursor over one config text: where it is, what comes next, scalar values read from it."""

    def __init__(self, text: str, filename: str) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.file = filename
        self.quote_ended = False  # the last unquoted string ended at a single quote
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    # ---------------------------------------------------------------- position

    def where(self, index: int) -> tuple[int, int]:
        """The (line, column) of a character index as nats-server's lexer gives them: lines from
        1, the column in bytes counted from the previous newline — so 0-based on the first line
        (no newline before it) and 1-based on the others."""
        line = bisect.bisect_right(self.line_starts, index)
        start = self.line_starts[line - 1]
        return line, len(self.s[start:index].encode()) + (0 if line == 1 else 1)

    def fail(self, message: str, index: int | None = None) -> ConfigSyntaxError:
        """An error to raise, at ``index`` or at the cursor."""
        return ConfigSyntaxError(self.i if index is None else index, message)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < self.n else ""

    def node(self, value: Any, index: int, raw: str | None = None) -> Node:
        line, col = self.where(index)
        return Node(value, self.file, line, col, raw)

    def at_comment(self) -> bool:
        c = self.peek()
        return c == "#" or (c == "/" and self.peek(1) == "/")

    def skip_comment(self) -> None:
        while self.i < self.n and not is_nl(self.s[self.i]):
            self.i += 1

    def skip_ws(self) -> None:
        while self.i < self.n and is_ws(self.s[self.i]):
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

    # ---------------------------------------------------------------- scalars

    def read_escaped(self, quote: str) -> str:
        """Read a string with backslash escapes up to ``quote`` ("" = unquoted).

        While `RUNS`, each stretch of characters that none of the rules below stops at (`_PLAIN`)
        is taken in one step; off, one character a step, as nats-server's lexer reads them."""
        out = bytearray()
        self.quote_ended = False
        plain = _PLAIN[quote] if RUNS else None
        while True:
            if plain is not None:
                run = plain.match(self.s, self.i)
                if run is not None:
                    out += run.group().encode()
                    self.i = run.end()
            if self.i >= self.n:
                if quote:
                    raise self.fail("Unexpected EOF.")
                return out.decode("utf-8", "replace")
            c = self.s[self.i]
            if quote:
                if c == quote:
                    self.i += 1
                    return out.decode("utf-8", "replace")
            elif is_ws(c) or is_nl(c) or c in ";,]}":
                return out.decode("utf-8", "replace")
            elif c == "'":
                # nats-server lexString: a single quote ends an unquoted string and is dropped
                # (`abc'` is "abc"; `ab'cd` leaves "cd" where a value ended); the value is then
                # a string, never a boolean or a variable.
                self.i += 1
                self.quote_ended = True
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
            if len(digits) < 2 or any(is_nl(d) for d in digits):
                raise self.fail("Expected two hexadecimal digits after '\\x', but hit end of line")
            try:
                value = bytes.fromhex(digits)
            except ValueError:
                raise self.fail(f"Expected two hexadecimal digits after '\\x', but got '{digits}'") from None
            self.i += 4
            return value
        raise self.fail(
            f"Invalid escape character '{show_char(esc)}'. Only the following escape characters "
            'are allowed: \\xXX, \\t, \\n, \\r, \\", \\\\.'
        )

    def parse_block(self) -> Node:
        """``( ... )`` multi-line string, closed by a ')' alone on its line."""
        start = self.i
        for m in re.finditer(r"\r?\n\)(?=\r?\n|$)", self.s[start + 1 :]):
            end = start + 1 + m.start()
            self.i = start + 1 + m.end()
            return self.node(self.s[start + 1 : end], start)
        raise self.fail("Unexpected EOF processing block.", self.n)

    def _is_number_end(self, c: str) -> bool:
        # nats-server's number lexer ends at these only: not at ']' (see scan_number).
        return c == "" or is_ws(c) or is_nl(c) or c in ";,}"

    def scan_number(self) -> Node | None:
        """A number, size, float, IP address or datetime starting with a digit.

        None when the text turns out not to be a number (``10s``, ``1h30m``, ``1_000``):
        the caller re-reads it from the same start as an unquoted string (a duration).
        """
        start = self.i
        while is_digit(self.peek()):
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
            return None  # e.g. 1m30s
        if self._is_number_end(c):
            return self.integer(start)
        if c == "]":
            # nats-server lexNumberOrDateOrStringOrIP takes the ']' as the second character of
            # an unquoted string that runs on to the next terminator: `[1]` leaves the array open
            # (a parse error there), `[1]]` holds the string "1]". (`[1k]` holds "1k".)
            self.i += 1
            head = self.s[start : self.i]
            return self.node(head + self.read_escaped(""), start)
        return None

    def parse_negative_number(self) -> Node | None:
        start = self.i
        self.i += 1
        if not is_digit(self.peek()):
            if self.peek() == ".":
                raise self.fail("Floats must start with a digit, not '.'.")
            raise self.fail(f"Expected a digit but got '{show_char(self.peek())}'.")
        while is_digit(self.peek()):
            self.i += 1
        c = self.peek()
        if c == ".":
            return self.parse_float_or_ip(start)
        if c and c.lower() in "kmgtpe":
            self.i += 1
            while self.peek() and self.peek() in "bBiI":
                self.i += 1
            if not self._is_number_end(self.peek()):
                return None  # nats-server lexConvenientNumber: an unquoted string (`-1k]`: "-1k")
        return self.integer(start)

    def integer(self, start: int) -> Node:
        raw = self.s[start : self.i]
        m = re.fullmatch(r"(-?[0-9]+)([a-zA-Z]*)", raw)
        assert m is not None
        multiplier = SIZE_SUFFIXES.get(m.group(2).lower())
        if multiplier is None:
            raise self.fail(f"invalid size suffix in '{raw}'", start)
        value = int(m.group(1)) * multiplier
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise self.fail(f"integer '{raw}' is out of the range", start)
        return self.node(value, start, raw)

    def parse_float_or_ip(self, start: int) -> Node:
        self.i += 1  # the '.'
        if not is_digit(self.peek()):
            raise self.fail(
                f"Floats must have a digit after the '.', but got '{show_char(self.peek())}' instead."
            )
        while is_digit(self.peek()):
            self.i += 1
        if self.peek() == ".":  # a second dot: an IP address, maybe with a port
            while self.peek() and (is_digit(self.peek()) or self.peek() in ".:-"):
                self.i += 1
            return self.node(self.s[start : self.i], start)
        raw = self.s[start : self.i]
        return self.node(float(raw), start, raw)

    def parse_datetime(self, start: int) -> Node:
        pattern = "00-00T00:00:00Z"
        self.i += 1  # the '-' after the year
        for want in pattern:
            got = self.peek()
            if want == "0":
                if not is_digit(got):
                    raise self.fail(
                        f"Expected digit in ISO8601 datetime, but found '{show_char(got)}' instead."
                    )
            elif got != want:
                raise self.fail(
                    f"Expected '{want}' in ISO8601 datetime, but found '{show_char(got)}' instead."
                )
            self.i += 1
        raw = self.s[start : self.i]
        try:
            value = datetime.strptime(raw, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise self.fail(f"expected Zulu formatted DateTime, but got '{raw}'", start) from None
        return self.node(value, start, raw)
