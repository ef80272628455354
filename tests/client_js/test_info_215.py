"""The client's stream info carries nats-server 2.15's new fields: ``StreamSourceInfo.seq``,
``cluster.desired`` and ``PeerInfo.pending``."""

from __future__ import annotations

from tests.client_js.conftest import wait_for

from pyjetstream.api import codec
from pyjetstream.api.models_stream import StreamSource
from pyjetstream.api.responses import StreamInfoResponse
from pyjetstream.client.jetstream import JetStream, StreamConfig


async def test_source_info_reports_the_highest_sourced_sequence(js: JetStream) -> None:
    await js.create_stream(StreamConfig(name="ORIGIN", subjects=["o.>"]))
    agg = await js.create_stream(StreamConfig(name="AGG", sources=[StreamSource(name="ORIGIN")]))
    for i in range(3):
        await js.publish(f"o.{i}", b"x")

    async def sourced() -> bool:
        info = await agg.info()
        return info.state.messages == 3 and info.sources[0].lag == 0

    await wait_for(sourced, timeout=20, what="the three messages sourced")
    source = (await agg.info()).sources[0]
    assert source.name == "ORIGIN" and source.seq in (0, 3)  # 0: a server before 2.15 does not report it
    if js.nc.server_info.get("version", "").startswith("2.15"):
        assert source.seq == 3


def test_cluster_desired_and_peer_pending_decode() -> None:
    body = (
        b'{"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"S"},'
        b'"created":"2026-01-01T00:00:00Z","state":{"messages":0,"bytes":0,"first_seq":0,'
        b'"first_ts":"0001-01-01T00:00:00Z","last_seq":0,"last_ts":"0001-01-01T00:00:00Z","consumer_count":0},'
        b'"cluster":{"name":"C","leader":"n1","replicas":[{"name":"n2","current":false,"active":0,'
        b'"peer":"p2","pending":true}],"desired":{"name":"C2","replicas":[{"name":"n3","current":false,'
        b'"active":0,"peer":"p3"}]}},"ts":"2026-01-01T00:00:00Z"}'
    )
    info = codec.decode_response(body, StreamInfoResponse).payload()
    assert info.cluster is not None and info.cluster.replicas[0].pending
    assert info.cluster.desired is not None and info.cluster.desired.name == "C2"
    assert info.cluster.desired.replicas[0].name == "n3"
