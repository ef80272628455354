"""Message schedules (nats-server 2.12+ / 2.14+): the server publishes for you — once at a time,
every interval, or on a cron expression.

python examples/js_schedules.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta

from pyjetstream.api.api_levels import Feature
from pyjetstream.client import connect
from pyjetstream.client.jetstream import SCHEDULE_HOURLY, MsgSchedule, StreamConfig, errors, jetstream

FEATURES = (Feature.SCHEDULES, Feature.SCHEDULE_CRON)


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    stream = await js.create_stream(
        StreamConfig(
            name="REMINDERS",
            subjects=["schedules.>", "reminders.>", "sensors.>"],
            allow_msg_schedules=True,
            allow_msg_ttl=True,
        )
    )
    # Once, two seconds from now: the body is published to the target subject then.
    when = datetime.now(UTC) + timedelta(seconds=2)
    await js.publish("schedules.once", b"stand-up!", schedule=MsgSchedule(target="reminders.team", at=when))
    # Every second: sample the latest reading of a subject, each copy living one minute.
    await js.publish("sensors.temp", b"21.5")
    every = MsgSchedule(target="reminders.temp", every=1, source="sensors.temp", ttl=60)
    await js.publish("schedules.temp", b"", schedule=every)
    # Hourly, and a 6-field cron in a time zone (9:00 on weekdays in Paris).
    await js.publish("schedules.hourly", b"tick", schedule=MsgSchedule(target="reminders.tick", cron=SCHEDULE_HOURLY))
    weekdays = MsgSchedule(target="reminders.office", cron="0 0 9 * * 1-5", time_zone="Europe/Paris")
    await js.publish("schedules.office", b"good morning", schedule=weekdays)

    for subject in ("reminders.temp", "reminders.team"):
        while True:
            try:
                msg = await stream.get_last_msg_for_subject(subject)
                break
            except errors.MsgNotFound:
                await asyncio.sleep(0.2)
        scheduler = msg.headers.get("Nats-Scheduler") if msg.headers else None
        print(f"{subject}: {msg.data!r} (from schedule {scheduler})")

    await js.delete_stream("REMINDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
