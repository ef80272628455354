"""The JetStream API level this server implements, and the ``Nats-Required-Api-Level`` check.

nats-server 2.15's ``JSApiLevel`` is 5. A request (or a batch message, or a direct get) whose
``Nats-Required-Api-Level`` header is not a number or is above it is refused
(``errorOnRequiredApiLevel`` in jetstream_versioning.go): 10185 for API requests and batches,
``412 Required Api Level`` for a direct get.
"""

from __future__ import annotations

import re

from pyjetstream.api import headers as H
from pyjetstream.api.versioning import JS_API_LEVEL
from pyjetstream.protocol.headers import get_header

SERVER_API_LEVEL = JS_API_LEVEL
_GO_INT = re.compile(rb"[+-]?[0-9]+")  # what Go's strconv.Atoi takes
REQUIRED_API_LEVEL = H.REQUIRED_API_LEVEL.encode()


def required_level_refused(hdr: bytes | None) -> bool:
    """True when the header asks for more than this server's level (or is not a number)."""
    if not hdr:
        return False
    level = get_header(hdr, REQUIRED_API_LEVEL)
    if not level:
        return False
    return _GO_INT.fullmatch(level) is None or int(level) > SERVER_API_LEVEL
