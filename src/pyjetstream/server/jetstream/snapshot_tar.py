"""Restoring the snapshots nats-server ≤ 2.14 streamed: an S2-compressed tar of its file store.

Not supported yet: such a backup is refused with a clear restore error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_stream import StreamConfig

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.jetstream.stream import Stream


def restore_tar(engine: JetStreamEngine, cfg: StreamConfig, raw: bytes) -> Stream:
    raise JetStreamApiError(E.JSStreamRestoreErrF(err="unexpected content (account=$G)"))
