"""Small models shared by streams, consumers and responses (nats-server stream.go, jetstream_api.go)."""

from __future__ import annotations

from ._wire import WireStruct, always

__all__ = [
    "ApiError",
    "ClusterInfo",
    "ExternalStream",
    "LostStreamData",
    "PeerInfo",
    "Placement",
    "SubjectTransformConfig",
]


class ApiError(WireStruct):
    """The ``error`` object of every API response and PubAck.

    Exactly these three keys: nats.py builds its exception with ``APIError(**err)``.
    """

    code: int = always(0)
    err_code: int = 0
    description: str = ""

    def __str__(self) -> str:
        return f"{self.description} (code={self.code}, err_code={self.err_code})"


class Placement(WireStruct):
    cluster: str = ""
    tags: list[str] = []


class ExternalStream(WireStruct):
    """Qualifies a source/mirror in another account or domain (``api`` prefix, ``deliver`` prefix)."""

    api: str = always("")
    deliver: str = always("")

    @property
    def domain(self) -> str:
        """The domain named by an ``$JS.<domain>.API`` prefix, else ``""`` (stream.go ExternalStream.Domain)."""
        tokens = self.api.split(".")
        return tokens[1] if len(tokens) > 1 and self.api else ""


class SubjectTransformConfig(WireStruct):
    """⟨2.10+⟩ ``{src, dest}`` subject transform."""

    src: str = always("")
    dest: str = always("")


class PeerInfo(WireStruct):
    name: str = always("")
    current: bool = always(False)
    offline: bool = False
    active: int = always(0)  # ns since last seen
    lag: int = 0
    peer: str = always("")


class ClusterInfo(WireStruct):
    name: str = ""
    raft_group: str = ""
    leader: str = ""
    replicas: list[PeerInfo] = []


class LostStreamData(WireStruct):
    msgs: list[int] | None = always(None)
    bytes: int = always(0)
