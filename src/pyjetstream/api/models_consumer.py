"""Consumer config, info, create request and pull request (nats-server consumer.go, jetstream_api.go)."""

from __future__ import annotations

from ._wire import WireStruct, always, always_new
from .enums import AckPolicy, ConsumerAction, DeliverPolicy, PriorityPolicy, ReplayPolicy
from .models_common import ClusterInfo
from .timefmt import ZERO_TIME, NanoTime

__all__ = [
    "ConsumerConfig",
    "ConsumerInfo",
    "CreateConsumerRequest",
    "PriorityGroupState",
    "PullRequest",
    "SequenceInfo",
]


class ConsumerConfig(WireStruct):
    """``ConsumerConfig`` with Go zero values as defaults (server defaults are applied by the engine).

    Durations (``ack_wait``, ``backoff``, ``max_expires``, ``idle_heartbeat``,
    ``inactive_threshold``, ``priority_timeout``) are int ns. Order and omit-empty are
    nats-server 2.15's (``idle_heartbeat`` after ``deliver_group``; 2.9.10 wrote it after
    ``max_ack_pending``).
    """

    durable_name: str = ""
    name: str = ""
    description: str = ""
    deliver_policy: DeliverPolicy = always(DeliverPolicy.ALL)
    opt_start_seq: int = 0
    opt_start_time: NanoTime | None = None
    ack_policy: AckPolicy = always(AckPolicy.NONE)  # Go zero value; clients usually send explicit
    ack_wait: int = 0
    max_deliver: int = 0
    backoff: list[int] = []
    filter_subject: str = ""
    filter_subjects: list[str] = []  # ⟨2.10+⟩
    replay_policy: ReplayPolicy = always(ReplayPolicy.INSTANT)
    rate_limit_bps: int = 0
    sample_freq: str = ""
    max_waiting: int = 0
    max_ack_pending: int = 0
    flow_control: bool = False
    headers_only: bool = False
    max_batch: int = 0
    max_expires: int = 0
    max_bytes: int = 0
    deliver_subject: str = ""
    deliver_group: str = ""
    idle_heartbeat: int = 0
    inactive_threshold: int = 0
    num_replicas: int = always(0)
    mem_storage: bool = False
    direct: bool = False
    sourcing: bool = False  # ⟨2.14+⟩ a consumer a sourcing stream created on its origin
    metadata: dict[str, str] = {}  # ⟨2.10+⟩
    pause_until: NanoTime | None = None  # ⟨2.11+⟩
    priority_groups: list[str] = []  # ⟨2.11+⟩
    priority_policy: PriorityPolicy = PriorityPolicy.NONE  # ⟨2.11+⟩ (omitempty on Go's int enum)
    priority_timeout: int = 0  # ⟨2.11+⟩ pinned TTL, ns

    @property
    def is_pull(self) -> bool:
        """A consumer without ``deliver_subject`` is pull based."""
        return not self.deliver_subject

    @property
    def is_durable(self) -> bool:
        return bool(self.durable_name)


class SequenceInfo(WireStruct):
    """``delivered`` / ``ack_floor``: consumer and stream sequence plus last activity."""

    consumer_seq: int = always(0)
    stream_seq: int = always(0)
    last_active: NanoTime | None = None


class PriorityGroupState(WireStruct):
    """⟨2.11+⟩"""

    group: str = always("")
    pinned_client_id: str = ""
    pinned_ts: NanoTime = always(ZERO_TIME)  # Go omitempty never omits a time.Time


class ConsumerInfo(WireStruct):
    stream_name: str = always("")
    name: str = always("")
    created: NanoTime = always(ZERO_TIME)
    config: ConsumerConfig = always_new(ConsumerConfig)
    delivered: SequenceInfo = always_new(SequenceInfo)
    ack_floor: SequenceInfo = always_new(SequenceInfo)
    num_ack_pending: int = always(0)
    num_redelivered: int = always(0)
    num_waiting: int = always(0)
    num_pending: int = always(0)
    cluster: ClusterInfo | None = None
    push_bound: bool = False
    paused: bool = False  # ⟨2.11+⟩
    pause_remaining: int = 0  # ⟨2.11+⟩ ns
    ts: NanoTime | None = None  # ⟨2.10+⟩
    priority_groups: list[PriorityGroupState] = []  # ⟨2.11+⟩


class CreateConsumerRequest(WireStruct):
    """Body of ``CONSUMER.CREATE`` / ``DURABLE.CREATE``.

    ``action`` (⟨2.10+⟩) is omitted when ``""`` (create-or-update) so 2.9-style requests stay
    byte-identical; 2.10's server always writes it but nothing reads it back.
    """

    stream_name: str = always("")
    config: ConsumerConfig = always_new(ConsumerConfig)
    action: ConsumerAction = ConsumerAction.CREATE_OR_UPDATE
    pedantic: bool = False  # ⟨2.11+⟩


class PullRequest(WireStruct):
    """``CONSUMER.MSG.NEXT`` body (``JSApiConsumerGetNextRequest``). ``expires``/``idle_heartbeat`` in ns.

    Use `pyjetstream.api.codec.decode_pull_request` on the server: the body may also be
    empty (batch 1) or a bare integer (batch N).
    """

    expires: int = 0
    batch: int = 0
    max_bytes: int = 0
    no_wait: bool = False
    idle_heartbeat: int = 0
    # ⟨2.11+⟩ priority groups
    group: str = ""
    min_pending: int = 0
    min_ack_pending: int = 0
    id: str = ""
    priority: int = 0  # ⟨2.12+⟩
