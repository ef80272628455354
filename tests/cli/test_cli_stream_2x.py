"""The 2.11+ stream fields in ``stream add`` / ``edit`` / ``info`` (the nats CLI's flags), on both targets."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli


def test_stream_add_with_2x_flags(cli: Cli) -> None:
    cfg = cli(
        "stream", "add", "X", "--subjects", "x.>", "--defaults", "--json",
        "--allow-msg-ttl", "--subject-del-markers-ttl", "10s",
        "--allow-batch", "--allow-schedules",
    ).json()["config"]  # fmt: skip
    assert cfg["allow_msg_ttl"] is True and cfg["subject_delete_marker_ttl"] == 10 * 10**9
    assert cfg["allow_atomic"] is True and cfg["allow_msg_schedules"] is True
    info = cli("stream", "info", "X").ok().out
    assert "Allows Atomic Batches: yes" in info and "Allows Schedules: yes" in info
    assert "Subject Delete Markers TTL: 10s" in info

    cfg = cli("stream", "add", "C", "--subjects", "c.>", "--defaults", "--allow-counter", "--json").json()["config"]
    assert cfg["allow_msg_counter"] is True
    assert "Allows Counters: yes" in cli("stream", "info", "C").ok().out

    edited = cli("stream", "edit", "X", "--allow-fast", "-f", "--json").json()["config"]
    assert edited["allow_batched"] is True


def test_durable_sourcing_through_config_file_and_info(cli: Cli, tmp_path: Path) -> None:
    """ADR-60 ``StreamSource.consumer``: set with ``--config`` (the nats CLI has prompts, no flags),
    shown by ``stream info`` as the nats CLI's ``renderSource`` does."""
    cli("stream", "add", "O", "--subjects", "o.>", "--retention", "work", "--defaults").ok()
    cli(
        "consumer", "add", "O", "EXPORT", "--target", "export.o", "--ack", "flow_control", "--defaults",
    ).ok()  # fmt: skip
    config = tmp_path / "a.json"
    source = {"name": "O", "consumer": {"name": "EXPORT", "deliver_subject": "export.o"}}
    config.write_text(json.dumps({"name": "A", "sources": [source], "storage": "file"}))
    cfg = cli("stream", "add", "A", "--config", str(config), "--json").json()["config"]
    assert cfg["sources"] == [source]
    assert "Source: O, Consumer Name: EXPORT (export.o)" in cli("stream", "info", "A").ok().out
