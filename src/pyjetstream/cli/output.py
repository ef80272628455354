"""Output: JSON for scripts (``--json``), readable tables and sections for people.

JSON of API models is the server's wire JSON (through the shared codec), pretty-printed, so
``pyjetstream stream info X --json`` prints what ``nats stream info X --json`` prints. Tables
and progress bars are rich's; colours only when stdout is a terminal.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__ = [
    "console",
    "err_console",
    "human_bytes",
    "human_count",
    "human_duration",
    "human_time",
    "print_json",
    "print_sections",
    "print_table",
    "progress_bar",
    "to_jsonable",
]

_console: Console | None = None
_err_console: Console | None = None


def console() -> Console:
    global _console
    if _console is None:
        # Deferred: rich is slow to import and only this output needs it (CLI start-up speed).
        from rich.console import Console

        _console = Console(highlight=False, soft_wrap=True, emoji=False, width=_width(sys.stdout))
    return _console


def err_console() -> Console:
    global _err_console
    if _err_console is None:
        # Deferred: rich is slow to import and only this output needs it (CLI start-up speed).
        from rich.console import Console

        _err_console = Console(
            stderr=True, highlight=False, soft_wrap=True, emoji=False, width=_width(sys.stderr)
        )
    return _err_console


def progress_bar(shown: bool, amount: str = "", *, transient: bool = False) -> Progress | None:
    """A started progress bar on stderr, its tasks added by the caller; None where it would not
    show: stderr is no terminal, or the command asked for none (``shown`` false: ``--json``,
    ``--no-progress``, ``--quiet`` ...). ``amount`` is the column after the bar: ``"bytes"``
    (done / total in bytes), ``"count"`` (done / total), or rich's default columns."""
    if not shown or not sys.stderr.isatty():
        return None
    # Deferred: rich is slow to import and only this output needs it (CLI start-up speed).
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    if amount:
        done = DownloadColumn() if amount == "bytes" else MofNCompleteColumn()
        columns = (TextColumn("{task.description}"), BarColumn(), done, TimeElapsedColumn())
        bar = Progress(*columns, console=err_console(), transient=transient)
    else:
        bar = Progress(console=err_console(), transient=transient)
    bar.start()
    return bar


def _width(stream: Any) -> int | None:
    """Let tables be as wide as they need when output goes to a pipe or file (rich assumes 80)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return None if tty or os.environ.get("COLUMNS") else 250


def to_jsonable(value: Any) -> Any:
    """API models (msgspec Structs) as their wire JSON values; everything else unchanged."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    import msgspec

    if isinstance(value, msgspec.Struct):
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.api import encode

        return json.loads(encode(value))
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_json_line(value: Any) -> None:
    """One compact JSON document per line (for streams of messages)."""
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    justify: Sequence[str] | None = None,
    caption: str | None = None,
    footer: Sequence[Any] | None = None,
) -> None:
    """A boxed table (``justify`` per column, default left; ``footer``: a totals row under a rule).
    Columns empty in every row (an unused Description) are left out, and the first column never
    wraps: names stay whole on narrow terminals."""
    # Deferred: rich is slow to import and only this output needs it (CLI start-up speed).
    from rich import box
    from rich.table import Table

    cells = [["" if cell is None else str(cell) for cell in row] for row in rows]
    foot = ["" if cell is None else str(cell) for cell in footer] if footer is not None else None
    keep = [i for i in range(len(columns)) if not cells or any(row[i] for row in cells)]
    table = Table(title=title, box=box.ROUNDED, caption=caption, title_justify="left", show_footer=foot is not None)
    for i in keep:
        table.add_column(
            columns[i],
            justify=(justify[i] if justify else "left"),  # type: ignore[arg-type]
            no_wrap=i == 0,
            footer=foot[i] if foot is not None else "",
        )
    for row in cells:
        table.add_row(*(row[i] for i in keep))
    console().print(table)


def print_sections(title: str | None, sections: Sequence[tuple[str, Sequence[tuple[str, Any]]]]) -> None:
    """nats-CLI style info output: a heading per section, then right-aligned ``label: value`` lines."""
    out = console()
    if title:
        out.print(title)
        out.print()
    for heading, pairs in sections:
        pairs = [(k, v) for k, v in pairs if v is not None]
        if not pairs:
            continue
        out.print(f"{heading}:")
        out.print()
        width = max(len(k) for k, _ in pairs)
        for key, value in pairs:
            out.print(f"  {key.rjust(width)}: {value}", markup=False)
        out.print()


def human_bytes(n: int | float) -> str:
    """1024-based, as the nats CLI: ``1.5 KiB``, ``12 MiB``; ``-1`` is ``unlimited``."""
    if n < 0:
        return "unlimited"
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}".replace(".0 ", " ")
    raise AssertionError("unreachable")


def human_count(n: int) -> str:
    return f"{n:,}"


def human_duration(ns: int, *, zero: str = "0s") -> str:
    """``1d2h3m4s`` style; sub-second values as ``250ms`` / ``15µs``. ``ns``: integer nanoseconds
    (a wire model's), or the client's `pyjetstream.api.durations.Seconds` (its ``.ns``)."""
    ns = getattr(ns, "ns", ns)
    if ns <= 0:
        return zero
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.3g}µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.3g}ms"
    seconds = ns / 1e9
    parts = []
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            count = int(seconds // size)
            parts.append(f"{count}{unit}")
            seconds -= count * size
    if seconds >= 0.001 or not parts:
        parts.append(f"{seconds:.2f}".rstrip("0").rstrip(".") + "s")
    return "".join(parts)


def human_time(value: Any) -> str:
    """A NanoTime / ns / datetime as local-independent UTC text, or ``never``."""
    ns = int(value) if value is not None else 0
    if ns <= 0:
        return "never"
    dt = datetime.fromtimestamp(ns / 1e9, UTC)
    return dt.strftime("%Y-%m-%d %H:%M:%S UTC")


def human_age(value: Any) -> str:
    """How long ago a NanoTime / ns was, compactly (``4s ago``, ``3d2h ago``), or ``never``."""
    ns = int(value) if value is not None else 0
    if ns <= 0:
        return "never"
    age = time.time_ns() - ns
    if age < 1_000_000_000:
        return "now"
    text = human_duration(age - age % 1_000_000_000)
    # Two units are plenty for a table cell.
    units = [u for u in ("y", "d", "h", "m", "s") if u in text]
    if len(units) > 2:
        text = text[: text.index(units[1]) + 1]
    return f"{text} ago"


def short_time(value: Any) -> str:
    """A table cell's timestamp: ``2024-05-01 12:00:00`` (UTC)."""
    text = human_time(value)
    return text.removesuffix(" UTC")


def limit(n: int, fmt: Any = human_count) -> str:
    """A limit value: ``unlimited`` for 0/-1 (the server's "no limit"), formatted otherwise."""
    return "unlimited" if n <= 0 else fmt(n)
