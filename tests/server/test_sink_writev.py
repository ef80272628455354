"""`FrameSink.flush` hands large frames to ``transport.writelines`` as they are (one ``writev``)
instead of joining them; with ``ServerOptions.runs`` off it joins. Both give the subscriber the
same bytes, also when its socket takes little (early writes, stalls); the random traffic of
test_runs_differential.py (payloads of 3,000 and 9,000 bytes among small ones) checks the same."""

from __future__ import annotations

import asyncio

from tests.server.runs_world import World, frame, stalls_by_count

SIZES = (16, 16384, 100, 65536, 4000, 16384, 0, 30000)


async def _run(tight: int) -> None:
    worlds = [World(runs=True), World(runs=False)]
    gathered: list[list[int]] = []
    try:
        for world in worlds:
            await world.start()
            pub, sub = world.connect(), world.connect(tight=tight)
            calls: list[int] = []
            transport = world.clients[sub].transport
            plain = transport.writelines

            def counting(parts: list[bytes], plain=plain, calls=calls) -> None:  # type: ignore[no-untyped-def]
                calls.append(len(parts))
                plain(parts)

            transport.writelines = counting  # type: ignore[method-assign]
            gathered.append(calls)
            world.feed(sub, b"SUB big 1\r\nPING\r\n")
            data = b"".join(frame("big", "", None, bytes([65 + i % 26]) * SIZES[i % len(SIZES)]) for i in range(64))
            for at in range(0, len(data), 70_000):  # reads that cut frames anywhere
                world.feed(pub, data[at : at + 70_000])
                await world.settle()
                world.drain()
                await world.settle()
        on, off = worlds
        assert on.output(1) == off.output(1)
        assert on.output(1).count(b"MSG big 1 ") == 64
        assert gathered[0] and not gathered[1]  # writev with runs, never without
    finally:
        for world in worlds:
            await world.stop()


def test_writev_gives_the_same_bytes() -> None:
    asyncio.run(_run(0))


def test_writev_gives_the_same_bytes_to_a_slow_socket() -> None:
    with stalls_by_count():
        asyncio.run(_run(100_000))
