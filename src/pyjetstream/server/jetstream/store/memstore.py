"""MemoryStore: the index plus payloads in RAM (nats-server ``memstore.go``); lost on stop."""

from __future__ import annotations

from .backend import MemoryPayloads
from .base import ACK_EXPLICIT, ConsumerStoreBase, StoreConfig
from .consumer_store import MemoryConsumerStore
from .indexed import IndexedStore
from .seqindex import MEM_PAGE, SeqIndex


class MemoryStore(IndexedStore):
    """Messages in RAM. ``bytes`` is accounted as nats-server's memStoreMsgSize."""

    storage_type = "memory"

    def __init__(self, cfg: StoreConfig | None = None, page_slots: int = MEM_PAGE) -> None:
        cfg = cfg or StoreConfig()
        index = SeqIndex(page_slots)  # (tests use tiny pages to reach every page boundary)
        super().__init__(cfg, index, MemoryPayloads(index))
        self._meta: bytes | None = None
        self._consumers: dict[str, MemoryConsumerStore] = {}
        if cfg.first_seq > 0:  # nats-server purges to first_seq, 1 included (first 1, last 0)
            self._purge(cfg.first_seq)

    # --- lifecycle ---------------------------------------------------------------------
    def flush(self) -> None:
        pass

    def sync(self) -> None:
        pass

    def stop(self) -> None:
        if self._closed:
            return
        for cs in list(self._consumers.values()):
            cs.stop()
        self._closed = True

    def delete(self) -> None:
        self.stop()
        self._backend.reset()
        self._index.reset()
        self._consumers.clear()
        self._meta = None

    # --- metadata ----------------------------------------------------------------------
    def write_meta(self, data: bytes) -> None:
        self._meta = bytes(data)

    def read_meta(self) -> bytes | None:
        return self._meta

    def consumer_store(
        self, name: str, ack_policy: str = ACK_EXPLICIT, max_deliver: int = -1
    ) -> ConsumerStoreBase:
        self._check_open()
        cs = self._consumers.get(name)
        if cs is None or cs.closed:
            cs = MemoryConsumerStore(name, ack_policy, max_deliver, on_delete=self._consumers.pop)
            self._consumers[name] = cs
        else:
            cs.update_config(ack_policy, max_deliver)
        return cs

    def consumer_names(self) -> list[str]:
        return sorted(self._consumers)
