"""Small models shared by streams, consumers and responses (nats-server stream.go, jetstream_api.go)."""

from __future__ import annotations

from ._wire import WireStruct, always
from .timefmt import NanoTime

__all__ = [
    "ApiError",
    "ClusterInfo",
    "DesiredClusterInfo",
    "DesiredClusterInfoOrigin",
    "DesiredClusterInfoStatus",
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
    # None when absent: Go keeps a placement whose tags are an explicit ``[]`` (not DeepEqual to the
    # empty Placement) and shows it as ``{}``; the server stores such tags as None.
    tags: list[str] | None = None
    preferred: str = ""  # ⟨2.12+⟩ a preferred leader; a stream refuses it "for now" (10052)


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
    pending: bool = False  # ⟨2.15+⟩ in the assignment, not yet in the Raft group


class DesiredClusterInfoOrigin(WireStruct):
    """⟨2.15+⟩ what a group had before the change under way."""

    replicas: int = always(0)
    placement: Placement | None = None
    retention: str | None = None


class DesiredClusterInfoStatus(WireStruct):
    """⟨2.15+⟩ what the group leader is doing to reach the desired state."""

    description: str = always("")
    type: str = always("")
    err: str = ""


class DesiredClusterInfo(WireStruct):
    """⟨2.15+⟩ ``cluster.desired``: the placement a stream is being moved or rescaled to."""

    name: str = ""
    replicas: list[PeerInfo] = []
    origin: DesiredClusterInfoOrigin | None = None
    status: DesiredClusterInfoStatus | None = None


class ClusterInfo(WireStruct):
    """A stream's or consumer's group; a single server reports just ``leader`` (its name)."""

    name: str = ""
    raft_group: str = ""
    leader: str = ""
    leader_since: NanoTime | None = None  # ⟨2.12+⟩
    system_account: bool = False  # ⟨2.12+⟩
    traffic_account: str = ""  # ⟨2.12+⟩
    replicas: list[PeerInfo] = []
    desired: DesiredClusterInfo | None = None  # ⟨2.15+⟩


class LostStreamData(WireStruct):
    msgs: list[int] | None = always(None)
    bytes: int = always(0)
