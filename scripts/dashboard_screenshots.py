"""Writes the dashboard's screenshots into docs/images/dashboard/ (shown by docs/dashboard.md).

Run: ``.venv/bin/python scripts/dashboard_screenshots.py``. Starts an embedded server with JetStream
and monitoring, makes example data (an orders stream with a consumer part-way, a KV bucket with
history, an object store, some traffic for the live chart), and photographs each page in Debian's
Chromium (``/usr/bin/chromium``, driven by Playwright as the tests drive it). Not part of the suite.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyjetstream as pjs
from pyjetstream.api.enums import AckPolicy
from pyjetstream.api.models_stream import StreamSource
from pyjetstream.server.thread import ServerThread

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dashboard.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

OUT = ROOT / "docs" / "images" / "dashboard"
PAGES = {
    "overview": "overview",
    "streams": "streams",
    "stream": "stream/ORDERS",
    "messages": "stream/ORDERS/messages?filter=orders.eu.>",
    "consumers": "stream/ORDERS/consumers",
    "kv": "kv/settings",
    "objects": "obj/files",
    "connections": "connections",
}


def make_data(js: object, nc: object) -> None:
    js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["orders.>"], description="customer orders"))  # type: ignore[attr-defined]
    for i in range(120):
        region = ("eu", "us", "apac")[i % 3]
        body = json.dumps({"order": 1000 + i, "item": ("widget", "gadget", "gizmo")[i % 3], "qty": i % 5 + 1})
        js.publish(f"orders.{region}.new", body.encode(), headers={"Customer": f"c-{i % 17}"})  # type: ignore[attr-defined]
    js.create_stream(
        pjs.StreamConfig(name="AUDIT", subjects=["audit.>"], sources=[StreamSource(name="ORDERS")])
    )  # type: ignore[attr-defined]
    billing = js.create_consumer(
        "ORDERS", pjs.ConsumerConfig(durable_name="billing", ack_policy=AckPolicy.EXPLICIT)
    )  # type: ignore[attr-defined]
    for msg in billing.fetch(40, max_wait=5):
        msg.double_ack()
    js.create_consumer("ORDERS", pjs.ConsumerConfig(durable_name="shipping", filter_subject="orders.eu.>"))  # type: ignore[attr-defined]
    kv = js.create_key_value(pjs.KeyValueConfig(bucket="settings", history=5))  # type: ignore[attr-defined]
    for key, value in (
        ("theme", "dark"),
        ("theme", "light"),
        ("limits.max_orders", "500"),
        ("region", "eu-west"),
    ):
        kv.put(key, value.encode())
    obj = js.create_object_store(pjs.ObjectStoreConfig(bucket="files"))  # type: ignore[attr-defined]
    obj.put_bytes("report-2026-11.csv", b"order,qty\n" * 4000)
    obj.put_bytes("logo.svg", b"<svg></svg>")
    nc.subscribe("orders.>")  # type: ignore[attr-defined]
    nc.subscribe("telemetry.>")  # type: ignore[attr-defined]


def traffic(nc: object, stop: threading.Event) -> None:
    n = 0
    while not stop.is_set():
        for _ in range(50 + (n % 7) * 30):
            nc.publish("telemetry.tick", b"x")  # type: ignore[attr-defined]
        n += 1
        time.sleep(0.1)


def main() -> None:
    from playwright.sync_api import sync_playwright  # (a dev tool's dependency)

    OUT.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="dash-shots-")
    thread = ServerThread(
        jetstream=True, store_dir=tmp, port=-1, http_port=-1, host="127.0.0.1", server_name="demo"
    )
    thread.start()
    stop = threading.Event()
    try:
        with pjs.sync.connect(thread.url, name="orders-service") as nc:
            make_data(nc.jetstream(), nc)
            pump = threading.Thread(target=traffic, args=(nc, stop), daemon=True)
            pump.start()
            base = f"http://127.0.0.1:{thread.http_port}"
            profile = tempfile.mkdtemp(prefix="dash-shots-chromium-")
            with sync_playwright() as pw:
                browser = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                                headless=True, viewport={"width": 1280, "height": 800})  # fmt: skip
                page = browser.new_page()
                for name, route in PAGES.items():
                    page.goto(f"{base}/#/{route}")
                    page.wait_for_selector("main h2")
                    page.wait_for_timeout(20000 if name == "overview" else 800)
                    if name == "kv":
                        page.click("tr[data-key='theme'] a")
                        page.wait_for_selector("h3:text-is('History of theme')")
                    page.screenshot(path=str(OUT / f"{name}.png"), full_page=False)
                    print("wrote", OUT / f"{name}.png")
                browser.close()
            shutil.rmtree(profile, ignore_errors=True)
            stop.set()
            pump.join()
    finally:
        thread.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
