"""A short run of scripts/fuzz.py (issue #15; the long run is in the README), and the regression
tests for what it found."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from pyjetstream.protocol.events import ProtocolViolation
from pyjetstream.protocol.parser import ServerSideParser

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz.py"


def _fuzz_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("fuzz_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_script"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_non_utf8_control_line_is_a_violation_not_a_crash() -> None:
    # Found by the parser fuzzer: a SUB whose subject is not UTF-8 raised UnicodeDecodeError.
    for wire in (b"SUB \x80a 1\r\n", b"PUB \x80a 2\r\nhi\r\n", b"UNSUB \xff\r\n", b"HPUB \x80 12 14\r\n"):
        events = ServerSideParser().feed(wire)
        assert len(events) == 1 and isinstance(events[0], ProtocolViolation), (wire, events)


def test_fuzz_short_run() -> None:
    assert _fuzz_module().main(["--budget", "4"]) == 0
