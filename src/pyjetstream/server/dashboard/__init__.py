"""A web dashboard on the monitoring port (``-m``): the server's streams, messages, consumers, KV
buckets, object stores and connections, read from its own state (`views`, `buckets`), live by
server-sent events, with a few actions behind ``dashboard_write`` (`actions`); `site` answers its
paths for the monitor. The page is plain HTML, CSS and JavaScript in ``static/`` (package data: no
build step, nothing fetched from elsewhere)."""

from pyjetstream.server.dashboard.site import Dashboard

__all__ = ["Dashboard"]
