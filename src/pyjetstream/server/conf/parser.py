"""The config document's structure: entries, arrays, maps, ``$variables`` and ``include`` files."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pyjetstream.server.conf.errors import ConfigError, ConfigIssue
from pyjetstream.server.conf.nodes import Node, plain
from pyjetstream.server.conf.scanner import ConfigSyntaxError, Scanner, is_digit, is_nl, show_char

_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
# Unquoted `$2a$...` etc. are bcrypt hashes, not variable references.
_BCRYPT_VARIABLE = re.compile(r"^2a\$")  # nats-server bcryptPrefix: "$2a$" only
_MAX_INCLUDE_DEPTH = 32
# Errors nats-server's parser (processItem) gives in its own words; the lexer's are wrapped
# in "Parse error on line N: '...'" when they reach a variable's value.
_ITEM_ERRORS = ("variable reference", "integer '", "float '", "expected Zulu", "error parsing include")


class _Parser(Scanner):
    """Recursive-descent parser producing a tree of Node (one instance per file)."""

    def __init__(
        self,
        text: str,
        filename: str,
        environ: Mapping[str, str],
        includes: tuple[str, ...] = (),
        resolving: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(text, filename)
        self.environ = environ
        self.includes = includes  # real paths of the files being parsed (cycle check)
        self.resolving = resolving  # environment variables being expanded (cycle check)
        self.ctx: list[dict[str, Node]] = []  # enclosing maps, for $variable lookup

    # ---------------------------------------------------------------- document

    def parse_document(self) -> dict[str, Node]:
        root: dict[str, Node] = {}
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
        elif c == "" or is_nl(c) or c in ";,}":
            if c:
                self.i += 1
        else:
            raise self.fail(
                "Expected a top-level value to end with a new line, comment or EOF, "
                f"but got '{show_char(c)}' instead."
            )

    def parse_entry(self, target: dict[str, Node], in_map: bool = False) -> None:
        key_index = self.i
        key, quoted = self.parse_key()
        if not quoted and key.lower() == "include" and self.peek().isspace():
            self.parse_include(target, key_index)
            return
        # Like nats-server, the key may be separated from its value by any space (new lines
        # included); at the top level the value must start on the separator's line (lexValue),
        # inside a map it may start on a later one (lexMapValue skips every space).
        while self.peek().isspace():
            self.i += 1
        c = self.peek()
        if c == "":
            raise self.fail(f"key '{key}' has no value", key_index)
        if c in "=:":
            self.i += 1
            self.skip_ws()
        if in_map:
            while self.peek().isspace():
                self.i += 1
            if self.peek() == ",":
                raise self.fail('Unexpected map value terminator ",".')
        node = self.parse_value()
        line, col = self.where(key_index)  # errors about a setting point at its key
        node.line, node.col = line, col + quoted  # nats-server: a quoted key's first letter
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
        # nats-server lexKey/lexMapKey: a key runs to a space or a separator only, so
        # `jetstream{max_mem: 1G}` is the key "jetstream{max_mem" there, and here.
        while self.i < self.n and not (self.s[self.i].isspace() or self.s[self.i] in "=:"):
            self.i += 1
        return self.s[start : self.i], False

    # ------------------------------------------------------------------ values

    def parse_value(self) -> Node:
        start = self.i
        c = self.peek()
        if c == "":
            raise self.fail("Unexpected EOF.")
        if is_nl(c):
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
            negative = self.parse_negative_number()
            return negative if negative is not None else self.parse_unquoted(start)
        if is_digit(c):
            number = self.scan_number()
            return number if number is not None else self.parse_unquoted(start)
        if c == ".":
            raise self.fail("Floats must start with a digit")
        return self.parse_unquoted(start)

    def parse_unquoted(self, start: int) -> Node:
        """A string, boolean or $variable without quotes, running to the end of the value."""
        self.i = start
        text = self.read_escaped("")
        if "\\" in self.s[start : self.i] or self.quote_ended:
            return self.node(text, start)
        if text.lower() in _BOOLS:
            return self.node(_BOOLS[text.lower()], start)
        if text.startswith("$"):
            return self.resolve_variable(text[1:], start)
        return self.node(text, start)

    # ------------------------------------------------------------- containers

    def parse_array(self) -> Node:
        start = self.i
        self.i += 1
        items: list[Node] = []
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
            if c == "," or is_nl(c):
                self.i += 1
            elif c == "]":
                continue
            elif c == "":
                raise self.fail("Unexpected EOF processing array.")
            else:
                raise self.fail(
                    'Expected an array value terminator "," or an array terminator "]", '
                    f"but got '{show_char(c)}' instead."
                )

    def parse_map_body(self) -> dict[str, Node]:
        """Entries up to the closing '}' (the '{' is already consumed)."""
        entries: dict[str, Node] = {}
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
                # ',' and ';' here start a key, as in nats-server's lexMapKeyStart
                self.parse_entry(entries, in_map=True)
                self.skip_ws()
                if self.at_comment():
                    self.skip_comment()
                c = self.peek()
                if c in ",;" or is_nl(c):
                    self.i += 1
                elif c == "}":
                    continue
                elif c == "":
                    raise self.fail("Unexpected EOF processing map.")
                else:
                    raise self.fail(
                        'Expected a map value terminator "," or a map terminator "}", '
                        f"but got '{show_char(c)}' instead."
                    )
        finally:
            self.ctx.pop()

    # ------------------------------------------------------ variables, include

    def resolve_variable(self, name: str, index: int) -> Node:
        if _BCRYPT_VARIABLE.match(name):
            return self.node("$" + name, index)
        line, _ = self.where(index)
        for scope in reversed(self.ctx):
            found = scope.get(name)
            if found is not None:
                found.used = True
                return self.node(found.value, index, found.raw)
        if name in self.resolving:  # nats-server lookupVariable's envVarReferences
            raise self.fail(
                f"variable reference for '{name}' on line {line} could not be parsed: "
                f"variable reference cycle for '{name}'",
                index,
            )
        if name in self.environ:
            env_parser = _Parser(
                f"pk={self.environ[name]}",
                f"${name}",
                self.environ,
                resolving=self.resolving | {name},
            )
            try:
                value = env_parser.parse_document()["pk"]
            except (ConfigSyntaxError, KeyError, ConfigError) as exc:
                reason = exc.message if isinstance(exc, ConfigSyntaxError) else str(exc)
                if isinstance(exc, ConfigSyntaxError) and not reason.startswith(_ITEM_ERRORS):
                    # a lexer error inside the value: nats-server's parser words it so
                    reason = f"Parse error on line {env_parser.where(exc.index)[0]}: '{reason}'"
                raise self.fail(
                    f"variable reference for '{name}' on line {line} could not be parsed: {reason}", index
                ) from None
            return self.node(value.value, index, value.raw)
        raise self.fail(f"variable reference for '{name}' on line {line} can not be found", index)

    def parse_include(self, target: dict[str, Node], index: int) -> None:
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
            if c in refused or is_digit(c) or c == "-":
                what = refused.get(c, "start of a number")
                raise self.fail(f"Expected include value but found {what}")
            start = self.i
            while self.i < self.n and not (self.s[self.i].isspace() or self.s[self.i] in ";}"):
                self.i += 1
            path = self.s[start : self.i]
        base = os.path.dirname(self.file) if self.file and not self.file.startswith("$") else ""
        # nats-server: filepath.Join(the including file's directory, path), which makes an
        # absolute path relative to that directory too (docs/server.md).
        full = os.path.normpath(os.path.join(base, path.lstrip("/") if base else path))
        real = os.path.realpath(full)
        if real in self.includes or len(self.includes) >= _MAX_INCLUDE_DEPTH:
            raise self.fail(f"include cycle: '{path}' includes itself", index)
        try:
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise self.fail(f"error parsing include file '{path}', {go_os_error(exc, full)}", index) from None
        # An included file is parsed on its own (it sees only its own variables and the
        # environment, as in nats-server); its top-level keys land in the current block.
        included = parse_tree(text, full, self.environ, (*self.includes, real))
        target.update(included)


def parse_tree(
    text: str, filename: str, environ: Mapping[str, str], includes: tuple[str, ...] = ()
) -> dict[str, Node]:
    """The document's top-level entries as nodes (raises ConfigError with file:line:col)."""
    if filename and not includes:
        includes = (os.path.realpath(filename),)
    parser = _Parser(text, filename, environ, includes)
    try:
        return parser.parse_document()
    except ConfigSyntaxError as exc:
        line, col = parser.where(exc.index)
        raise ConfigError([ConfigIssue(exc.message, filename, line, col)]) from None


def parse(text: str, *, filename: str = "", environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse configuration text into plain Python values (raises ConfigError)."""
    return plain(parse_tree(text, filename, os.environ if environ is None else environ))


def read_config_file(path: str) -> str:
    """The file's text; a file that cannot be read is a ConfigError with nats-server's words."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise ConfigError([ConfigIssue(go_os_error(exc, path))]) from None


def go_os_error(exc: OSError, path: str) -> str:
    """An OSError as Go's os.ReadFile words it (nats-server prints those as they are):
    ``open <path>: no such file or directory``, ``read <path>: is a directory``."""
    reason = (exc.strerror or str(exc)).lower()
    return f"{'read' if isinstance(exc, IsADirectoryError) else 'open'} {path}: {reason}"


def parse_file(path: str, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse a configuration file (and its includes) into plain Python values."""
    return plain(parse_tree(read_config_file(path), path, os.environ if environ is None else environ))
