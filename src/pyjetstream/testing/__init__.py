"""Testing support: NATS servers for test suites, and the pytest plugin built on them.

The plugin ([`pyjetstream.testing.plugin`][pyjetstream.testing.plugin]) is registered with pytest when pyjetstream is
installed; it gives tests the fixtures ``nats_server``, ``nats_url``, ``nc``, ``js`` and ``nats_names``. The server
handles in [`pyjetstream.testing.servers`][pyjetstream.testing.servers] work without pytest.
"""

from __future__ import annotations

from pyjetstream.testing.servers import (
    BinaryTestServer,
    EmbeddedTestServer,
    ExternalTestServer,
    ServerSpec,
    TestNames,
    TestServer,
    render_config,
    start_test_server,
)

__all__ = [
    "BinaryTestServer",
    "EmbeddedTestServer",
    "ExternalTestServer",
    "ServerSpec",
    "TestNames",
    "TestServer",
    "render_config",
    "start_test_server",
]
