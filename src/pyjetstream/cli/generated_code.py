"""The methods ``@dataclass`` generates, compiled once and kept across starts (``pyjetstream serve``).

Why: a ``@dataclass`` writes the source of its ``__init__``, ``__repr__``, ``__eq__``… as text and
compiles it (``exec`` of a string, ``dataclasses._create_fn``) each time the class is created, so
every process start parses and compiles it again: the ~55 dataclasses a server start defines
(``ServerOptions`` alone has 74 fields) took ~20 ms of CPU, 18% of the instructions of a whole
start (callgrind, CPython 3.11 built without PGO). A ``.pyc`` file does not help, since the source
is made at run time. This is what the ``.pyc`` does for that text: `GeneratedCode` stands in for
``exec`` inside the ``dataclasses`` module (a module global shadows the builtin), looks the source
text up among the code objects compiled by earlier starts and compiles only a text it has not seen;
`save` writes them back (``marshal``, as a ``.pyc``) when there were new ones.

The key is the whole source text, so a hit is the very code ``compile`` would make of it (same
text, same ``<string>`` file name): an edited class, another Python or another ``dataclasses``
makes another text and misses. The ``typing`` module's ``compile`` is stood in for the same way:
``ForwardRef`` compiles each string annotation msgspec resolves (`GeneratedCode.compile`), and the
``collections`` module's ``eval`` (``namedtuple``'s ``__new__``). Texts are compiled without this
module's ``__future__`` flags (``dont_inherit``), as the stood-in ``exec``/``eval``/``compile`` do.
So is the ``re`` module's compiler (`GeneratedCode.compile_pattern`): a pattern's parse and
compilation to the engine's code run in Python, ~43 patterns at a start (most of them the standard
library's). The file sits in ``__pycache__`` beside this module (or under ``sys.pycache_prefix``), is tagged with the interpreter's bytecode magic number, and is written,
like ``.pyc`` files, unless ``sys.dont_write_bytecode`` (``PYTHONDONTWRITEBYTECODE``); a missing,
unreadable or foreign file is a cache miss, a file that cannot be written is left as it is. Only
the ``serve`` command installs it: the process is the server's alone (as `serve.tune_gc`).
"""

from __future__ import annotations

import _sre
import builtins
import importlib.util
import marshal
import os
import re._compiler
import re._parser
import sys
from collections.abc import Callable
from types import CodeType
from typing import Any

from pyjetstream.cli.module_paths import cache_file, write_file

__all__ = ["ENV", "MAX_ENTRIES", "GeneratedCode", "active", "default_path", "install", "save"]

# ``PYJETSTREAM_CODE_CACHE=off`` in the environment: ``serve`` compiles every generated method again.
ENV = "PYJETSTREAM_CODE_CACHE"

# A file holding more texts than this keeps, when it is written, only those this process used (old
# versions of edited classes would otherwise pile up).
MAX_ENTRIES = 2048
# What the file starts with: the interpreter's bytecode magic number, this format's own tag and the
# regular expression engine's (its compiled code's format).
_HEADER = importlib.util.MAGIC_NUMBER + b"pjs-generated-code-4 sre %d\n" % _sre.MAGIC
# The key of an ``eval`` text's code (`GeneratedCode.compile`) is the text after this prefix.
_EVAL = "\0eval\0"


def default_path() -> str | None:
    """Where the cache of this interpreter lives: ``__pycache__`` beside this module (``sys.pycache_prefix``
    honoured, as for ``.pyc`` files), or None where the interpreter keeps no bytecode cache.

    A path as text, read and written with ``os`` functions: ``pathlib`` (with ``urllib.parse`` and
    ``ipaddress``, ~4% of a start's instructions) is imported by nothing else a start runs."""
    return cache_file("dataclass-methods")


# A regular expression's key (its pattern and flags) and what ``_sre.compile`` takes besides the
# pattern: flags, code, the number of groups, the group index and the index's inverse.
PatternKey = tuple[str | bytes, int]
Compiled = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
_re_compile = re._compiler.compile  # (the one `uninstall` puts back)


class GeneratedCode:
    """``exec`` for the ``dataclasses`` module, with the code of the source texts it was given kept in
    ``path`` (see the module's docstring). ``hits`` and ``compiled`` count the texts found and compiled;
    ``patterns`` holds the regular expressions `compile_pattern` compiled, counted apart.

    Each entry is kept in the file marshalled on its own and read as those bytes, unmarshalled at its
    first hit (`_code`, `_pattern`): the file holds the texts of every start that wrote it (a start
    recovering a consumer, one with a KV bucket…), and a start hit 98 of its 263 texts and 42 of its
    263 patterns; unmarshalling them all was ~1.7% of the instructions of a start and a megabyte of
    fresh memory (~420 page faults)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = path
        self.codes: dict[str, CodeType | bytes] = {}
        self.patterns: dict[PatternKey, Compiled | bytes] = {}
        self._load()
        self.used: set[str] = set()
        self.used_patterns: set[PatternKey] = set()
        self.hits = self.compiled = 0
        self.pattern_hits = self.patterns_compiled = 0
        self._saved = (0, 0)  # `compiled`, `patterns_compiled` when the file was last written

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as f:
                data = f.read()
            if not data.startswith(_HEADER):
                return
            content = marshal.loads(data[len(_HEADER) :])
        except (OSError, ValueError, EOFError, TypeError):
            return
        if not (isinstance(content, tuple) and len(content) == 2):
            return
        codes, patterns = content
        if isinstance(codes, dict):
            self.codes = {k: v for k, v in codes.items() if isinstance(k, str) and isinstance(v, bytes)}
        if isinstance(patterns, dict):
            self.patterns = {k: v for k, v in patterns.items() if isinstance(v, bytes)}

    def _code(self, key: str) -> CodeType | None:
        """The code kept for ``key``, unmarshalled at its first hit; None for none (or an entry
        that is not a code object: a miss, compiled again)."""
        code = _first_hit(self.codes, key, lambda v: isinstance(v, CodeType))
        return code if isinstance(code, CodeType) else None

    def _pattern(self, key: PatternKey) -> Compiled | None:
        """What `_cached_pattern` kept for ``key``, unmarshalled at its first hit (as `_code`)."""
        found = _first_hit(self.patterns, key, lambda v: isinstance(v, tuple) and len(v) == 5)
        return found if isinstance(found, tuple) else None

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
        """``builtins.exec``, a source text's code taken from the cache (compiled on a miss)."""
        if isinstance(source, str):
            code = self._code(source)
            if code is None:
                code = self.codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
                self.compiled += 1
            else:
                self.hits += 1
            self.used.add(source)
            source = code
        builtins.exec(source, globals, locals, **kwargs)

    def compile(self, source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        """``builtins.compile`` for the ``typing`` module, an ``eval`` text's code taken from the cache.

        Why: ``typing.ForwardRef`` compiles its text when it is made, and msgspec makes one for
        each string annotation of a Struct it builds a decoder or encoder for (``from __future__
        import annotations`` makes every annotation a string): 87 texts at a start. Kept beside
        the dataclass texts under `_EVAL` + the text (no ``exec`` text starts with a NUL)."""
        if args or kwargs or mode != "eval" or filename != "<string>" or not isinstance(source, str):
            return builtins.compile(source, filename, mode, *args, **kwargs)
        return self._eval_code(source)

    def eval(self, source: Any, globals: Any = None, locals: Any = None, /) -> Any:
        """``builtins.eval`` for the ``collections`` module: ``namedtuple`` evaluates the text of
        each class's ``__new__`` (12 at a start); its code is kept as ``typing``'s texts are."""
        if isinstance(source, str):
            source = self._eval_code(source.lstrip(" \t"))  # (as eval strips a text)
        return builtins.eval(source, globals, locals)

    def _eval_code(self, source: str) -> CodeType:
        key = _EVAL + source
        code = self._code(key)
        if code is None:
            code = self.codes[key] = builtins.compile(source, "<string>", "eval", dont_inherit=True)
            self.compiled += 1
        else:
            self.hits += 1
        self.used.add(key)
        return code

    def compile_pattern(self, p: Any, flags: int = 0) -> re.Pattern[Any]:
        """``re._compiler.compile``, a pattern's compiled code taken from the cache (the ``re``
        module's own cache lives only as long as the process).

        Why: the ``re`` module parses and compiles a pattern in Python; a start compiled ~43 (the
        standard library's — ``decimal``, ``logging``, ``string``, ``json``, ``platform`` — and
        ours at module level), ~3 ms of CPU. What ``_sre.compile`` is given is kept: the code a
        parse of the same pattern and flags makes (the engine's format is in the file's header)."""
        if not isinstance(p, (str, bytes)) or flags & re.DEBUG:
            return _re_compile(p, flags)
        try:
            return self._cached_pattern(p, flags)
        except (AttributeError, TypeError, ValueError):  # another Python's internals: the plain way
            return _re_compile(p, flags)

    def _cached_pattern(self, p: str | bytes, flags: int) -> re.Pattern[Any]:
        key = (p, int(flags))
        found = self._pattern(key)
        if found is None:
            parsed = re._parser.parse(p, flags)
            code = [int(op) for op in re._compiler._code(parsed, flags)]  # (opcodes are int subclasses)
            groupindex = dict(parsed.state.groupdict)
            indexgroup: list[str | None] = [None] * parsed.state.groups
            for name, i in groupindex.items():
                indexgroup[i] = name
            found = self.patterns[key] = (
                int(flags | parsed.state.flags), code, parsed.state.groups - 1, groupindex, tuple(indexgroup)
            )
            self.patterns_compiled += 1
        else:
            self.pattern_hits += 1
        self.used_patterns.add(key)
        return _sre.compile(p, found[0], found[1], found[2], found[3], found[4])

    def install(self) -> None:
        """Make the ``dataclasses`` module's ``exec``, the ``typing`` module's ``compile``, the
        ``collections`` module's ``eval`` and the ``re`` module's compiler this one's (until `uninstall`)."""
        import collections
        import dataclasses
        import typing

        setattr(dataclasses, "exec", self.exec)  # noqa: B010 (a module global shadowing the builtin)
        setattr(typing, "compile", self.compile)  # noqa: B010 (the same, for ForwardRef)
        setattr(collections, "eval", self.eval)  # noqa: B010 (the same, for namedtuple)
        re._compiler.compile = self.compile_pattern

    @staticmethod
    def uninstall() -> None:
        import collections
        import dataclasses
        import typing

        vars(dataclasses).pop("exec", None)
        vars(typing).pop("compile", None)
        vars(collections).pop("eval", None)
        re._compiler.compile = _re_compile

    def save(self) -> bool:
        """Write the cache when texts were compiled since it was read or last written (not under
        ``sys.dont_write_bytecode``); returns whether it wrote. Written to a temporary file and
        renamed over, so that a server starting beside this one reads the old file or the new one."""
        now = (self.compiled, self.patterns_compiled)
        if self.path is None or now == self._saved or sys.dont_write_bytecode:
            return False
        codes, patterns = self.codes, self.patterns
        if len(codes) > MAX_ENTRIES:
            codes = {k: v for k, v in codes.items() if k in self.used}
        if len(patterns) > MAX_ENTRIES:
            patterns = {k: v for k, v in patterns.items() if k in self.used_patterns}
        try:
            kept = ({k: _marshalled(v) for k, v in codes.items()}, {k: _marshalled(v) for k, v in patterns.items()})
            data = _HEADER + marshal.dumps(kept)
        except ValueError:  # (an unmarshallable value: not written)
            return False
        if not write_file(os.fspath(self.path), data):
            return False
        self._saved = now
        return True


def _first_hit(table: dict[Any, Any], key: Any, valid: Callable[[Any], bool]) -> Any:
    """``table[key]``, unmarshalled in place at its first hit (the file's entries are read as their
    bytes); None for none, or for an entry that does not load as ``valid`` wants (dropped: a miss)."""
    found = table.get(key)
    if isinstance(found, bytes):
        try:
            loaded = marshal.loads(found)
        except (ValueError, EOFError, TypeError):
            loaded = None
        found = loaded if valid(loaded) else None
        if found is None:
            del table[key]
        else:
            table[key] = found
    return found


def _marshalled(value: Any) -> bytes:
    """An entry as the file keeps it: marshalled on its own (one not hit since it was read still is)."""
    return value if isinstance(value, bytes) else marshal.dumps(value)


#: The cache `install` put in place (the ``serve`` command's), else None.
active: GeneratedCode | None = None


def install() -> GeneratedCode | None:
    """Put the cache in place for this process (``serve``, before it imports the server), unless
    `ENV` is ``off``; returns it."""
    global active
    if active is None and os.environ.get(ENV, "") != "off":
        active = GeneratedCode(default_path())
        active.install()
    return active


def save() -> bool:
    """Write the installed cache if it compiled new texts (see `GeneratedCode.save`)."""
    return active is not None and active.save()
