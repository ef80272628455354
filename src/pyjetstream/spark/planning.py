"""Driver-side questions to the server while Spark plans a read: the stream's state and the
sequence range that options and pushed filters leave."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeAlias, TypeVar

from pyjetstream.api import StreamState
from pyjetstream.spark.connection import TaskLoop, open_client
from pyjetstream.spark.filters import ReadBounds
from pyjetstream.spark.jsapi import JetStreamApi
from pyjetstream.spark.options import JetStreamOptions, OptionError

__all__ = [
    "DriverConnection",
    "bounds_from_options",
    "first_seq_at",
    "require_stream",
    "resolve_range",
    "stream_state",
    "with_api",
]

T = TypeVar("T")


def require_stream(opts: JetStreamOptions) -> str:
    if not opts.stream:
        raise OptionError("option 'stream' is required to read from JetStream")
    return opts.stream


def with_api(opts: JetStreamOptions, step: Callable[[JetStreamApi], Coroutine[Any, Any, T]]) -> T:
    """Run ``step`` against a fresh connection (the driver keeps none between Spark calls)."""

    async def run() -> T:
        nc = await open_client(opts.connect)
        try:
            return await step(JetStreamApi(nc, opts.connect.request_timeout))
        finally:
            await nc.close()

    with TaskLoop() as loop:
        return loop.run(run())


class DriverConnection:
    """A connection kept by a long-lived driver-side object (the streaming reader asks for the
    stream's state every trigger). Not pickled: tasks get the object without it."""

    def __init__(self, opts: JetStreamOptions) -> None:
        self.opts = opts
        self._loop: TaskLoop | None = None
        self._api: JetStreamApi | None = None

    def call(self, step: Callable[[JetStreamApi], Coroutine[Any, Any, T]]) -> T:
        if self._loop is None:
            self._loop = TaskLoop()
        api = self._api
        if api is None or api.nc.is_closed:
            nc = self._loop.run(open_client(self.opts.connect))
            api = self._api = JetStreamApi(nc, self.opts.connect.request_timeout)
        return self._loop.run(step(api))

    def close(self) -> None:
        loop, api = self._loop, self._api
        self._loop = self._api = None
        if loop is None:
            return
        try:
            if api is not None and not api.nc.is_closed:
                loop.run(api.nc.close())
        finally:
            loop.close()

    def __getstate__(self) -> dict[str, object]:
        return {"opts": self.opts}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["opts"])  # type: ignore[misc]


# What runs a step against the driver's connection (results are the steps' own, typed where used).
Caller: TypeAlias = Callable[[Callable[[JetStreamApi], Coroutine[Any, Any, Any]]], Any]


def _caller(opts: JetStreamOptions, conn: DriverConnection | None) -> Caller:
    if conn is not None:
        return conn.call
    return lambda step: with_api(opts, step)


def stream_state(opts: JetStreamOptions, conn: DriverConnection | None = None) -> StreamState:
    """The stream's state now (raises `StreamNotFoundError` for a missing stream)."""
    stream = require_stream(opts)

    async def step(api: JetStreamApi) -> StreamState:
        return (await api.stream_info(stream)).state

    return _caller(opts, conn)(step)


def bounds_from_options(opts: JetStreamOptions) -> ReadBounds:
    bounds = ReadBounds()
    if opts.start_sequence is not None:
        bounds.at_least_seq(opts.start_sequence)
    if opts.end_sequence is not None:
        bounds.at_most_seq(opts.end_sequence)
    if opts.start_time_ns is not None:
        bounds.from_time(opts.start_time_ns)
    if opts.end_time_ns is not None:
        bounds.before_time(opts.end_time_ns + 1)  # endTime is inclusive
    return bounds


def resolve_range(
    opts: JetStreamOptions, bounds: ReadBounds, conn: DriverConnection | None = None
) -> tuple[int, int]:
    """``(first, last)`` sequences to read now (``first > last`` when nothing is left)."""
    stream = require_stream(opts)

    async def step(api: JetStreamApi) -> tuple[int, int]:
        state = (await api.stream_info(stream)).state
        if bounds.empty or state.messages == 0:
            return 1, 0
        first = max(bounds.first_seq, state.first_seq)
        last = state.last_seq if bounds.last_seq is None else min(bounds.last_seq, state.last_seq)
        if bounds.start_time_ns is not None and first <= last:
            first = max(first, await api.first_seq_at(stream, bounds.start_time_ns))
        if bounds.end_time_ns is not None and first <= last:
            last = min(last, await api.first_seq_at(stream, bounds.end_time_ns) - 1)
        return first, last

    return _caller(opts, conn)(step)


def first_seq_at(opts: JetStreamOptions, time_ns: int, conn: DriverConnection | None = None) -> int:
    """The first sequence stored at or after ``time_ns`` (the stream's last sequence + 1 if none)."""
    stream = require_stream(opts)

    async def step(api: JetStreamApi) -> int:
        return await api.first_seq_at(stream, time_ns)

    return _caller(opts, conn)(step)
