"""The dashboard's JSON side without a browser: pages cost their own size (steps counted at two
sizes of state, no timing), who is served, and the views' answers."""

from __future__ import annotations

import json
import shlex
import socket
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pyjetstream as pjs
from pyjetstream.cli.serve_args import parse_serve_args
from pyjetstream.server.dashboard import views
from pyjetstream.server.jetstream.store import MemoryStore, StoreConfig
from pyjetstream.testing.process import read_ports_file, server_command, start_on_loopback

from .conftest import Dash

pytestmark = pytest.mark.xdist_group("dashboard")


def _store(subjects: int, msgs: int) -> MemoryStore:
    store = MemoryStore(StoreConfig())
    for i in range(msgs):
        store.store_msg(f"k.{i % subjects}", b"", b"v")
    return store


def _page_steps(store: MemoryStore, filt: str, after: int) -> tuple[int, list[Any]]:
    index = store._index
    before = index.steps + index.subjects.tree.steps
    page = store.subjects_page(filt, after, 100)
    return index.steps + index.subjects.tree.steps - before, page


@pytest.mark.parametrize("subjects", [1_000, 20_000])
def test_a_page_of_subjects_costs_its_size(subjects: int) -> None:
    """A page of every subject (a stream's subjects, a bucket's keys) visits the page, not the
    table: the same steps at 1k and 20k subjects; cursors walk the whole table once, in order."""
    store = _store(subjects, subjects * 2)
    steps, page = _page_steps(store, ">", subjects // 2)
    assert steps == 100 and len(page) == 100
    assert [st.msgs for _, _, st in page] == [2] * 100
    seen, after = [], 0
    while page := store.subjects_page(">", after, 500):
        seen.extend(name for _, name, _ in page)
        after = page[-1][0]
    assert sorted(seen) == sorted(f"k.{i}" for i in range(subjects))


def test_subject_pages_skip_released_subjects_and_filter() -> None:
    store = _store(10, 10)
    store.purge_ex("k.3")
    names = [name for _, name, _ in store.subjects_page(">", 0, 100)]
    assert names == [f"k.{i}" for i in range(10) if i != 3]
    assert [name for _, name, _ in store.subjects_page("k.5", 0, 100)] == ["k.5"]
    page = store.subjects_page("k.*", 2, 3)
    assert [sid for sid, _, _ in page] == [3, 5, 6] and page[0][1] == "k.2"


def _get(dash: Dash, path: str, host: str | None = None) -> tuple[int, str, dict[str, str]]:
    """GET ``path`` with ``Host`` set as a DNS-rebinding page would."""
    with socket.create_connection(("127.0.0.1", dash.thread.http_port), timeout=10) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host or '127.0.0.1'}\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status.split()[1]), body.decode(), headers


def test_who_is_served(dash: Dash) -> None:
    """Loopback with a local Host gets the dashboard; a foreign Host (DNS rebinding) nats-server's
    root page and 404s; the monitoring endpoints answer as before; no CORS on the dashboard."""
    status, body, headers = _get(dash, "/")
    assert (
        status == 200 and "app.js" in body and "varz" in body and "Content-Security-Policy".lower() in headers
    )
    status, body, _ = _get(dash, "/", host="evil.example:8222")
    assert status == 200 and "app.js" not in body and "varz" in body
    assert _get(dash, "/dashboard/api/overview", host="evil.example")[0] == 404
    status, body, headers = _get(dash, "/dashboard/api/overview", host="localhost")
    assert (
        status == 200 and json.loads(body)["account"] == "$G" and "access-control-allow-origin" not in headers
    )
    assert _get(dash, "/varz", host="evil.example")[0] == 200
    assert _get(dash, "/dashboard/static/../../monitor.py")[0] in (307, 404)
    assert _get(dash, "/dashboard/static/index.html")[0] == 404
    assert _get(dash, "/dashboard/api/nope")[0] == 404


def _api(dash: Dash, view: str) -> Any:
    with urllib.request.urlopen(f"{dash.base}/dashboard/api/{view}") as resp:
        return json.loads(resp.read())


def test_message_pages_by_sequence_time_and_filter(dash: Dash) -> None:
    dash.js.create_stream(pjs.StreamConfig(name="PAGES", subjects=["p.*"]))
    acks = [dash.js.publish(f"p.{'ab'[i % 2]}", str(i).encode()) for i in range(30)]
    page = _api(dash, "messages?stream=PAGES&seq=10&limit=5")
    assert [m["seq"] for m in page["messages"]] == [10, 11, 12, 13, 14] and page["next"] == 15
    page = _api(dash, "messages?stream=PAGES&dir=prev&limit=4&filter=p.b")
    assert [m["seq"] for m in page["messages"]] == [24, 26, 28, 30] and page["prev"] == 23
    page = _api(dash, "messages?stream=PAGES&dir=prev&seq=23&limit=4&filter=p.b")
    assert [m["seq"] for m in page["messages"]] == [16, 18, 20, 22]
    assert acks[-1].seq == 30
    first = _api(dash, "messages?stream=PAGES&limit=1")["messages"][0]
    page = _api(dash, f"messages?stream=PAGES&limit=2&time={first['time']}")
    assert page["messages"][0]["seq"] == 1
    subjects = _api(dash, "subjects?stream=PAGES")
    assert {s["subject"]: s["msgs"] for s in subjects["subjects"]} == {"p.a": 15, "p.b": 15}


def test_the_documented_command_serves_the_dashboard(tmp_path: Path) -> None:
    """docs/dashboard.md's ``pyjetstream serve -js -m 8222``, on a free port: the page at ``/``."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "dashboard.md").read_text()
    line = next(x for x in page.splitlines() if x.startswith("pyjetstream serve"))
    args = ["-1" if a == "8222" else a for a in shlex.split(line)[2:]]
    process, _ = start_on_loopback([*server_command("embedded"), *args, "-sd", str(tmp_path)], tmp_path)
    try:
        ports = read_ports_file(tmp_path / "ports")
        assert ports is not None
        base = ports["monitoring"][0].replace("0.0.0.0", "127.0.0.1")
        with urllib.request.urlopen(base + "/", timeout=10) as resp:
            assert b"dashboard/static/app.js" in resp.read()
        with urllib.request.urlopen(base + "/dashboard/api/overview", timeout=10) as resp:
            assert "jetstream" in json.loads(resp.read())
    finally:
        process.stop()


def test_the_serve_flags() -> None:
    opts = parse_serve_args(["-m", "8222", "--dashboard-write", "--dashboard-remote"])
    assert opts.dashboard_write and opts.dashboard_remote and opts.http_port == 8222
    assert not parse_serve_args(["-m", "8222"]).dashboard_write


def _stub_server(store: MemoryStore) -> Any:
    """Just what the views read: ``$G`` with a JetStream engine holding one stream ``S``."""
    engine = SimpleNamespace(streams={"S": SimpleNamespace(name="S", store=store)})
    return SimpleNamespace(accounts={"$G": SimpleNamespace(name="$G", jetstream=engine)}, system_account=None)


@pytest.mark.parametrize("direction", ["next", "prev"])
def test_a_page_of_messages_costs_its_size(direction: str) -> None:
    """A filtered page from the middle, forwards or backwards: the same index steps whether the
    stream holds 20k or 200k messages (over 100 subjects)."""
    costs = []
    for msgs in (20_000, 200_000):
        store = _store(100, msgs)
        server = _stub_server(store)
        query = {"stream": "S", "filter": "k.7", "seq": str(msgs // 2), "limit": "50", "dir": direction}
        views.message_page(server, dict(query))  # (the filter's match built once, as a consumer's)
        index = store._index
        before = index.steps + index.visits + index.subjects.tree.steps
        page = views.message_page(server, query)
        costs.append(index.steps + index.visits + index.subjects.tree.steps - before)
        assert len(page["messages"]) == 50 and {m["subject"] for m in page["messages"]} == {"k.7"}
    assert 0 < costs[1] <= costs[0] * 1.5 + 50, costs


def test_a_live_view_runs_only_while_it_is_open(dash: Dash) -> None:
    """An event stream sends its view, then stops polling once the page goes: nothing of the
    dashboard runs on the server when nobody has it open."""
    dashboard = dash.thread.server._monitor.dashboard
    assert dashboard.live == 0
    with socket.create_connection(("127.0.0.1", dash.thread.http_port), timeout=10) as sock:
        sock.sendall(
            b"GET /dashboard/api/events?view=rates&interval_ms=200 HTTP/1.1\r\nHost: localhost\r\n\r\n"
        )
        data = b""
        while data.count(b"data: ") < 2:
            data += sock.recv(65536)
        assert b"Content-Type: text/event-stream" in data and dashboard.live == 1
        tick = json.loads(data.split(b"data: ")[1].split(b"\n\n")[0])
        assert set(tick) >= {"in_msgs", "out_msgs", "t"}
    deadline = time.monotonic() + 10
    while dashboard.live and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dashboard.live == 0


@pytest.mark.parametrize("ts", [1795914000123456789, 1795914000999999999, 1795914000000000001, 1795914000000000000])
def test_a_shown_time_finds_its_own_message(ts: int) -> None:
    """The page's ``time`` query reads back the time a message is shown with to the nanosecond: a
    float's seconds (``datetime.timestamp``) were off by up to ~240 ns, so the time of message 1
    could find message 2 (test_message_pages_by_sequence_time_and_filter failed so in a full run)."""
    from pyjetstream.api.timefmt import format_time
    from pyjetstream.server.dashboard.views import _parse_time

    assert _parse_time(format_time(ts)) == ts
    assert _parse_time("2026-11-29T01:00:00+01:00") == 1795910400 * 1_000_000_000  # (offsets as before)
