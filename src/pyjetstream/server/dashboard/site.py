"""The dashboard's HTTP side, beside the monitoring endpoints on the same port: ``/`` (the page),
``/dashboard/static/…`` (its files, shipped in the wheel), ``/dashboard/api/<view>`` (JSON),
``/dashboard/api/events?view=…`` (server-sent events: a live view polled on the server while a
page is open — nothing runs while nobody looks) and ``POST /dashboard/api/action/<name>``.

Who is served: the monitoring port has no authentication (nor has nats-server's), so the dashboard
answers loopback peers only unless ``dashboard_remote`` is set (another peer gets nats-server's
plain root page and 404s), and for them checks the ``Host`` header names localhost or an address
(a DNS-rebinding page cannot read it). Actions need ``dashboard_write``, a loopback peer, a POST
with the ``X-Dashboard-Write`` header (a cross-origin page cannot send it without a preflight,
which is never granted) and no foreign ``Origin``. Its responses carry no CORS header and the page
a Content-Security-Policy that allows no inline script.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import posixpath
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pyjetstream.server.dashboard import buckets, views
from pyjetstream.server.dashboard.actions import ACTIONS
from pyjetstream.server.dashboard.views import ViewError

if TYPE_CHECKING:
    from pyjetstream.server.server import Server

__all__ = ["Dashboard"]

#: ``/dashboard/api/<name>`` → ``fn(server, query) -> dict`` (``overview`` is async).
VIEWS: dict[str, Callable[..., Any]] = {
    "overview": views.overview,
    "rates": lambda server, query: views.rates_tick(server),
    "streams": views.streams,
    "stream": views.stream_detail,
    "subjects": views.subjects,
    "messages": views.message_page,
    "consumers": views.consumers,
    "connections": views.connections,
    "kv": buckets.kv_buckets,
    "kv_keys": buckets.kv_keys,
    "kv_history": buckets.kv_history,
    "kv_watch": buckets.kv_watch,
    "obj": buckets.obj_buckets,
    "obj_list": buckets.obj_list,
}
#: Live views that follow a cursor: the query key the next poll starts from, and the answer's key
#: that gives it (an answer with nothing new is not sent).
_TAILS = {"messages": ("seq", "next", "messages"), "kv_watch": ("after", "last_seq", "entries")}
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}  # fmt: skip
_CSP = ("Content-Security-Policy: default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")  # fmt: skip
_NOSNIFF = "X-Content-Type-Options: nosniff"
_HEARTBEAT = 15.0

Writer = Callable[..., None]


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _host_ok(host_header: str) -> bool:
    """``Host`` names localhost or an address literal (not a name a DNS-rebinding site points here)."""
    host = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
    host = host.strip("[]").lower()
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Dashboard:
    """Answers the dashboard's paths for `MonitorServer` (which writes responses with ``write``)."""

    def __init__(self, server: Server, write: Writer) -> None:
        self.server = server
        self.write = write
        self._files: dict[str, bytes] = {}
        self.live = 0  # open event streams (what a bench checks is 0 when nobody looks)

    def _serves(self, peer: str, headers: dict[str, str]) -> bool:
        if self.server.options.dashboard_remote:
            return True
        return _loopback(peer) and _host_ok(headers.get("host", ""))

    async def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
                     writer: asyncio.StreamWriter, keep_alive: bool) -> bool | None:  # fmt: skip
        """Answer a dashboard path; None: not for this peer (the monitor answers as nats-server)."""
        peer = writer.get_extra_info("peername")
        peer_host = str(peer[0]) if peer else ""
        if not self._serves(peer_host, headers):
            return None
        head = method == "HEAD"
        try:
            if path == "/":
                self._send(writer, 200, _TYPES[".html"], self._index(), keep_alive, head, (_CSP,))
            elif path.startswith("/dashboard/static/"):
                name = path[len("/dashboard/static/") :]
                self._send(writer, 200, _TYPES.get(posixpath.splitext(name)[1], "application/octet-stream"),
                           self._file(name), keep_alive, head)  # fmt: skip
            elif path.startswith("/dashboard/api/action/"):
                self._check_write(method, peer_host, headers)
                action = ACTIONS.get(path[len("/dashboard/api/action/") :])
                if action is None:
                    raise ViewError(404, "no such action")
                self._json(writer, action(self.server, query), keep_alive)
            elif path == "/dashboard/api/events":
                await self._events(writer, query)
                return False
            elif path == "/dashboard/api/obj_download":
                name, data = buckets.obj_download(self.server, query)
                disposition = f"Content-Disposition: attachment; filename*=UTF-8''{quote(name, safe='')}"
                self._send(writer, 200, "application/octet-stream", data, keep_alive, head, (disposition,))
            else:
                self._json(writer, await self._view(path[len("/dashboard/api/") :], query), keep_alive, head)
        except ViewError as exc:
            self._send(writer, exc.status, "text/plain; charset=utf-8", exc.text.encode(), keep_alive, head)
        return keep_alive

    def _send(self, writer: asyncio.StreamWriter, status: int, ctype: str, body: bytes, keep_alive: bool,
              head: bool = False, extra: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.write(
            writer, status, ctype, body, keep_alive, head, extra=(_NOSNIFF, "Cache-Control: no-store", *extra)
        )

    def _json(self, writer: asyncio.StreamWriter, body: Any, keep_alive: bool, head: bool = False) -> None:
        self._send(writer, 200, "application/json", json.dumps(body).encode(), keep_alive, head)

    async def _view(self, name: str, query: dict[str, str]) -> Any:
        fn = VIEWS.get(name) if name and "/" not in name else None
        if fn is None:
            raise ViewError(404, "404 page not found")
        result = fn(self.server, query)
        return await result if asyncio.iscoroutine(result) else result

    def _check_write(self, method: str, peer: str, headers: dict[str, str]) -> None:
        if not self.server.options.dashboard_write:
            raise ViewError(
                403, "read-only dashboard: start the server with --dashboard-write to allow changes"
            )
        if not _loopback(peer):
            raise ViewError(
                403, "changes are taken from loopback peers only (the monitoring port has no auth)"
            )
        if method != "POST" or headers.get("x-dashboard-write") != "1":
            raise ViewError(403, "changes need a POST with the X-Dashboard-Write header")
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{headers.get('host', '')}":
            raise ViewError(403, "changes from another origin are refused")

    # ----------------------------------------------------------------------- files

    def _file(self, name: str) -> bytes:
        data = self._files.get(name)
        if data is None:
            if not name or "/" in name or name.startswith(".") or name == "index.html":
                raise ViewError(404, "404 page not found")
            ref = resources.files(__package__).joinpath("static", name)
            if not ref.is_file():
                raise ViewError(404, "404 page not found")
            data = self._files[name] = ref.read_bytes()
        return data

    def _index(self) -> bytes:
        """The page, with the base path, the write flag and the monitoring endpoints' links."""
        base = self.server.options.http_base_path.rstrip("/")
        if base and not base.startswith("/"):
            base = "/" + base
        links = "".join(
            f'<a href="{_attr(base + p)}">{_attr(p.lstrip("/"))}</a>\n'
            for p in sorted(self.server.monitor_handlers)
        )
        text = resources.files(__package__).joinpath("static", "index.html").read_text()
        text = text.replace("__BASE__", _attr(base)).replace("__LINKS__", links)
        text = text.replace("__WRITE__", "1" if self.server.options.dashboard_write else "0")
        return text.encode()

    # ---------------------------------------------------------------------- events

    async def _events(self, writer: asyncio.StreamWriter, query: dict[str, str]) -> None:
        """A live view: the view's answer every ``interval`` seconds (0.2-10, default 1), sent
        when it changed (a tail view: when something new came, its cursor moved on)."""
        name = query.get("view", "")
        if name not in VIEWS:
            raise ViewError(404, "no such view")
        interval = min(10.0, max(0.2, float(views.query_int(query, "interval_ms", 1000)) / 1000))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                     b"X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 2000\n\n")  # fmt: skip
        tail = _TAILS.get(name)
        last, quiet = b"", 0.0
        self.live += 1
        try:
            while not writer.is_closing():
                try:
                    body = await self._view(name, query)
                except ViewError as exc:
                    body = {"error": exc.text}
                data = json.dumps(body).encode()
                if tail is not None and not body.get(tail[2]):
                    data = last
                elif tail is not None:
                    query[tail[0]] = str(body[tail[1]])
                if data != last or name == "rates":
                    writer.write(b"data: " + data + b"\n\n")
                    last, quiet = data, 0.0
                elif quiet >= _HEARTBEAT:
                    writer.write(b": ping\n\n")
                    quiet = 0.0
                await writer.drain()
                await asyncio.sleep(interval)
                quiet += interval
        except (ConnectionError, RuntimeError):
            return
        finally:
            self.live -= 1


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
