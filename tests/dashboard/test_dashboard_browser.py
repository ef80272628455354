"""The dashboard in a real browser (headless Chromium): each page loads without console errors and
shows what the test made, live views follow new messages, untrusted text never runs, and the
read-only and write modes hold. Embedded server only: nats-server has no dashboard."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

import pyjetstream as pjs
from pyjetstream.api.enums import AckPolicy, PriorityPolicy
from pyjetstream.api.models_stream import StreamSource
from pyjetstream.server.conf.mapping import config_to_options
from pyjetstream.server.conf.parser import parse
from pyjetstream.server.thread import ServerThread

from .conftest import Dash

pytestmark = pytest.mark.xdist_group("dashboard")
expect.set_options(timeout=15_000)  # (as the pages' default: generous on a loaded machine)

XSS_SUBJECT = "xss.<svg/onload=window.__xss=1>"
XSS_HEADER = '<img src=x onerror="window.__xss=1">'
XSS_PAYLOAD = b'<script>window.__xss=1</script><img src=x onerror="window.__xss=1">'
XSS_OBJECT = '<img src=x onerror="window.__xss=1">.txt'


@pytest.fixture(scope="module")
def data(dash: Dash) -> Dash:
    """A stream with messages (one with a JSON payload, one with headers), a consumer that acked some,
    a KV bucket, an object store — and untrusted text in subjects, headers, payloads and names."""
    js = dash.js
    js.create_stream(pjs.StreamConfig(name="ORDERS", subjects=["orders.>", "xss.>"]))
    for i in range(20):
        js.publish(
            f"orders.{i % 4}", b'{"order": %d, "item": "widget"}' % i, headers={"X-Shop": f"shop-{i % 2}"}
        )
    js.publish(XSS_SUBJECT, XSS_PAYLOAD, headers={"X-Evil": XSS_HEADER})
    consumer = js.create_consumer(
        "ORDERS", pjs.ConsumerConfig(durable_name="billing", ack_policy=AckPolicy.EXPLICIT)
    )
    for msg in consumer.fetch(5, max_wait=5):
        msg.double_ack()
    js.create_stream(
        pjs.StreamConfig(name="AUDIT", subjects=["audit.>"], sources=[StreamSource(name="ORDERS")])
    )
    kv = js.create_key_value(pjs.KeyValueConfig(bucket="settings", history=5))
    kv.put("color", b"blue")
    kv.put("color", b"green")
    kv.put("evil", XSS_PAYLOAD)
    obj = js.create_object_store(pjs.ObjectStoreConfig(bucket="files"))
    obj.put_bytes("report.txt", b"hello object store")
    obj.put_bytes(XSS_OBJECT, b"<script>window.__xss=1</script>")
    return dash


def _open(page: Any, dash: Dash, route: str) -> None:
    page.goto(f"{dash.base}/#/{route}")
    page.wait_for_selector("main h2")


def _no_script_ran(page: Any) -> None:
    assert page.evaluate("window.__xss") is None


def test_overview_shows_the_server_and_charts_traffic_live(page: Any, data: Dash) -> None:
    _open(page, data, "overview")
    page.wait_for_selector("text=JetStream (account $G)")
    assert page.locator("text=API requests").count() == 1
    # The chart: once two ticks came, the polylines have points; traffic makes the rate move.
    page.locator(".chart polyline.in[points]").wait_for(state="attached")
    for i in range(30):
        data.nc.publish(f"chatter.{i}", b"x")
    data.nc.flush()
    expect(page.locator(".legend .muted")).to_have_text(re.compile(r"^max (?:[2-9]|\d{2,})"))  # above 1 msg/s
    total = data.thread.server.message_totals()[0]  # the counters follow too
    expect(page.locator("th:text-is('messages in') + td")).to_have_text(f"{total:,}")


def test_streams_and_a_stream_page(page: Any, data: Dash) -> None:
    _open(page, data, "streams")
    page.wait_for_selector("a:text-is('ORDERS')")
    assert page.locator("a:text-is('KV_settings')").count() == 1
    data.js.publish("audit.manual", b"one more")  # the list is live (AUDIT: its 21 sourced, and this)
    expect(page.locator("tr[data-stream='AUDIT'] td").nth(4)).to_have_text("22")
    page.click("a:text-is('ORDERS')")
    page.wait_for_selector("h2:text-is('Stream ORDERS')")
    page.wait_for_selector("a:text-is('orders.3')")  # the subjects with their counts
    page.fill("main input", "orders.1")
    page.press("main input", "Enter")
    expect(page.locator("a:text-is('orders.3')")).to_have_count(0)
    assert '"max_msgs": -1' in page.inner_text("pre")  # the configuration
    _open(page, data, "stream/AUDIT")  # a stream with a source: the source and its lag
    row = page.locator("h3:text-is('Mirror and sources') + table tr:has(td:text-is('ORDERS'))")
    expect(row.locator("td").nth(0)).to_have_text("source")
    expect(page.locator("main th:text-is('messages') + td")).to_have_text("22")  # 21 sourced, 1 published


def test_messages_page_pages_filters_formats_and_follows(page: Any, data: Dash) -> None:
    _open(page, data, "stream/ORDERS/messages")
    page.wait_for_selector("td:text-is('orders.0')")
    assert page.locator("tbody tr").count() == 21
    page.select_option("main select", "json")
    page.wait_for_selector("pre:has-text('\"order\": 0')")
    page.select_option("main select", "hex")
    page.wait_for_selector("pre:has-text('7b 22 6f 72')")  # {"or
    page.fill("input[placeholder='subject filter']", "orders.2")
    page.press("input[placeholder='subject filter']", "Enter")
    expect(page.locator("main tbody tr")).to_have_count(5)
    # Back to text before following: a change of mode reloads the page's rows, and a reload
    # landing after the live row came would show it as an old one.
    page.select_option("main select", "text")
    expect(page.locator("pre:has-text('7b 22 6f 72')")).to_have_count(0)
    page.check("main input[type=checkbox]")  # follow live, from the page's last sequence on
    data.js.publish("orders.2", b"fresh order")
    data.js.publish("orders.1", b"not this one")
    page.wait_for_selector("tr.new pre:text-is('fresh order')")
    assert page.locator("pre:text-is('not this one')").count() == 0


def test_consumers_page_updates_live(page: Any, data: Dash) -> None:
    _open(page, data, "stream/ORDERS/consumers")
    row = page.locator("tr[data-consumer='billing']")
    row.wait_for()
    assert "5 / 5" in row.inner_text()  # ack floor
    consumer = data.js.consumer("ORDERS", "billing")
    for msg in consumer.fetch(3, max_wait=5):
        msg.double_ack()
    expect(row).to_contain_text("8 / 8")
    # a pinned client (ADR-42) shows in its group, live
    pinned = data.js.create_consumer("ORDERS", pjs.ConsumerConfig(
        durable_name="pinned", priority_groups=["jobs"], priority_policy=PriorityPolicy.PINNED_CLIENT))  # fmt: skip
    pinned.fetch(1, max_wait=5, group="jobs")
    expect(page.locator("tr[data-consumer='pinned']")).to_contain_text("jobs: ")


def test_kv_bucket_keys_history_and_watch(page: Any, data: Dash) -> None:
    _open(page, data, "kv")
    page.click("a:text-is('settings')")
    page.wait_for_selector("tr[data-key='color']")
    assert "green" in page.inner_text("tr[data-key='color']")
    page.click("tr[data-key='color'] a")
    page.wait_for_selector("h3:text-is('History of color')")
    assert page.locator("h3:text-is('History of color') + table tbody tr").count() == 2
    kv = data.js.key_value("settings")
    page.wait_for_timeout(300)
    kv.put("size", b"XL")
    page.wait_for_selector("tr.new pre:text-is('XL')")


def test_object_store_lists_and_downloads(page: Any, data: Dash) -> None:
    _open(page, data, "obj")
    page.click("a:text-is('files')")
    page.wait_for_selector("td:text-is('report.txt')")
    href = page.locator("tr:has(td:text-is('report.txt')) a").get_attribute("href")
    with urllib.request.urlopen(data.base + href) as resp:
        assert resp.read() == b"hello object store"
        assert "report.txt" in resp.headers["Content-Disposition"]


def test_connections_page(page: Any, data: Dash) -> None:
    sub = data.nc.subscribe("watch.this")
    data.nc.flush()
    _open(page, data, "connections")
    page.wait_for_selector("text=python")
    page.click("summary:has-text('subscriptions') >> nth=0")
    page.wait_for_selector("text=watch.this")
    sub.unsubscribe()


def test_untrusted_text_is_shown_never_run(page: Any, data: Dash) -> None:
    """Payloads, subjects, header values, KV values and object names with markup appear as text;
    nothing runs (and the page's CSP would report an inline handler as a console error)."""
    _open(page, data, "stream/ORDERS/messages?filter=xss.>")
    page.wait_for_selector(f"td:text-is('{XSS_SUBJECT}')")
    assert XSS_HEADER in page.inner_text("main")
    assert XSS_PAYLOAD.decode() in page.inner_text("main")
    _no_script_ran(page)
    _open(page, data, "stream/ORDERS")
    page.wait_for_selector(f"a:text-is('{XSS_SUBJECT}')")
    _open(page, data, "kv/settings")
    page.wait_for_selector("tr[data-key='evil']")
    assert XSS_PAYLOAD.decode() in page.inner_text("tr[data-key='evil']")
    _open(page, data, "obj/files")
    page.wait_for_selector(f"td:text-is('{XSS_OBJECT}')")
    page.wait_for_timeout(200)
    _no_script_ran(page)
    assert page.locator("main img, main script, main svg").count() == 0


def _post(dash: Dash, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(dash.base + path, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_read_only_by_default(page: Any, data: Dash) -> None:
    _open(page, data, "stream/ORDERS")
    assert page.inner_text("#mode") == "read-only"
    assert page.locator("button:text-is('Purge stream')").count() == 0
    for route, ready in (("stream/ORDERS/messages", "td:text-is('orders.0')"),
                         ("stream/ORDERS/consumers", "tr[data-consumer='billing']"), ("kv/settings", "tr[data-key='color']")):  # fmt: skip
        _open(page, data, route)
        page.wait_for_selector(ready)
        assert (
            page.locator(
                "main button:text-is('Delete'), main button:text-is('Pause'), main button:text-is('Put')"
            ).count()
            == 0
        )
    status, text = _post(data, "/dashboard/api/action/purge?stream=ORDERS", {"X-Dashboard-Write": "1"})
    assert status == 403 and "--dashboard-write" in text
    assert data.js.stream("ORDERS").info().state.messages > 0


def test_write_actions_with_the_flag(page: Any, dash_write: Dash) -> None:
    js = dash_write.js
    js.create_stream(pjs.StreamConfig(name="JOBS", subjects=["jobs.*"]))
    for i in range(3):
        js.publish("jobs.new", f"job {i}".encode())
    js.create_consumer("JOBS", pjs.ConsumerConfig(durable_name="worker"))
    js.create_key_value(pjs.KeyValueConfig(bucket="cfg"))
    page.on("dialog", lambda dialog: dialog.accept())
    # delete a message
    _open(page, dash_write, "stream/JOBS/messages")
    page.click("tr[data-seq='2'] button:text-is('Delete')")
    expect(page.locator("tr[data-seq='2']")).to_have_count(0)
    assert js.stream("JOBS").info().state.messages == 2
    # pause and resume a consumer
    _open(page, dash_write, "stream/JOBS/consumers")
    page.click("tr[data-consumer='worker'] button:text-is('Pause')")
    page.wait_for_selector("tr[data-consumer='worker'] .badge")
    page.click("tr[data-consumer='worker'] button:text-is('Resume')")
    page.wait_for_selector("tr[data-consumer='worker'] button:text-is('Pause')")
    # put and delete a key
    _open(page, dash_write, "kv/cfg")
    page.fill("input[placeholder='key']", "mode")
    page.fill("input[placeholder='value']", "fast")
    page.click("button:text-is('Put')")
    page.wait_for_selector("tr[data-key='mode'] pre:text-is('fast')")
    assert js.key_value("cfg").get("mode").value == b"fast"
    page.click("tr[data-key='mode'] button:text-is('Delete')")
    page.wait_for_selector("tr[data-key='mode'] td:text-is('DEL')")
    # purge the stream
    _open(page, dash_write, "stream/JOBS")
    page.click("button:text-is('Purge stream')")
    for _ in range(50):
        if js.stream("JOBS").info().state.messages == 0:
            break
        page.wait_for_timeout(100)
    assert js.stream("JOBS").info().state.messages == 0
    # a page of another origin cannot act: no header, or a foreign Origin
    assert _post(dash_write, "/dashboard/api/action/purge?stream=JOBS")[0] == 403
    assert _post(dash_write, "/dashboard/api/action/purge?stream=JOBS",
                 {"X-Dashboard-Write": "1", "Origin": "http://evil.example"})[0] == 403  # fmt: skip


ACCOUNTS_CONF = """
listen: 127.0.0.1:-1
http_port: -1
http_base_path: /mon
jetstream { store_dir: "%s" }
accounts {
  SHOP { jetstream: enabled, users: [{user: shop, password: s}] }
  BANK { jetstream: enabled, users: [{user: bank, password: b}] }
}
"""


@pytest.fixture(scope="module")
def accounts_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two JetStream accounts, each with a stream of its own, and the monitoring port under a base path."""
    tmp = tmp_path_factory.mktemp("dash-acc")
    options = config_to_options(parse(ACCOUNTS_CONF % tmp))
    thread = ServerThread(options).start()
    for user, password, stream in (("shop", "s", "CARTS"), ("bank", "b", "LEDGER")):
        with pjs.sync.connect(thread.url, user=user, password=password) as nc:
            nc.jetstream().create_stream(pjs.StreamConfig(name=stream, subjects=[f"{stream.lower()}.>"]))
            nc.jetstream().publish(f"{stream.lower()}.1", b"one")
    yield thread
    thread.stop()


def test_one_account_at_a_time_under_a_base_path(page: Any, accounts_server: Any) -> None:
    base = f"http://127.0.0.1:{accounts_server.http_port}/mon"
    page.goto(f"{base}#/streams")
    page.wait_for_selector("a:text-is('CARTS')")  # the first JetStream account
    assert page.locator("a:text-is('LEDGER')").count() == 0
    page.select_option("#account", "BANK")
    page.wait_for_selector("a:text-is('LEDGER')")
    assert page.locator("a:text-is('CARTS')").count() == 0
    page.click("a:text-is('LEDGER')")
    page.wait_for_selector("a:text-is('ledger.1')")
    with urllib.request.urlopen(f"{base}/dashboard/api/streams?account=SHOP") as resp:
        assert [s["name"] for s in json.loads(resp.read())["streams"]] == ["CARTS"]
