"""MemoryStore: the index plus payloads in a list (nats-server ``memstore.go``); lost on stop."""

from __future__ import annotations

from .base import ACK_EXPLICIT, ConsumerStoreBase, StoreConfig
from .consumer_store import MemoryConsumerStore
from .indexed import IndexedStore


class MemoryStore(IndexedStore):
    """Messages in RAM. ``bytes`` is accounted as nats-server's memStoreMsgSize."""

    storage_type = "memory"

    def __init__(self, cfg: StoreConfig | None = None) -> None:
        cfg = cfg or StoreConfig()
        super().__init__(cfg)
        self._payloads: list[tuple[bytes, bytes] | None] = []
        self._meta: bytes | None = None
        self._consumers: dict[str, MemoryConsumerStore] = {}
        if cfg.first_seq > 1:
            self._purge(cfg.first_seq)

    # memStoreMsgSize: subject + headers + payload + 16 (seq and timestamp).
    _SIZE_BASE = 16
    _SIZE_HDR = 0

    # --- physical hooks ----------------------------------------------------------------

    def _p_append(self, seq: int, ts: int, subject: bytes, hdr: bytes, data: bytes) -> None:
        self._payloads.append((bytes(hdr), bytes(data)))

    def _p_read(self, idx: int, seq: int) -> tuple[bytes, bytes]:
        payload = self._payloads[idx]
        assert payload is not None
        return payload

    def _p_remove(self, seq: int, idx: int, erase: bool) -> None:
        # Erase: nothing else references the bytes once dropped (Python bytes are immutable,
        # so there is no buffer to scribble over as memstore.go does).
        self._payloads[idx] = None

    def _p_remove_range(self, lo: int, hi: int) -> None:
        self._payloads[lo:hi] = [None] * (hi - lo)

    def _p_skip(self, seq: int, num: int, ts: int) -> None:
        pass

    def _p_purge(self, new_first: int) -> None:
        pass

    def _p_truncate(self, seq: int) -> None:
        pass

    def _p_reset(self) -> None:
        pass

    def _p_slots_extend(self, n: int) -> None:
        self._payloads.extend([None] * n)

    def _p_slots_trim(self, k: int) -> None:
        del self._payloads[:k]

    def _p_slots_cut(self, n: int) -> None:
        del self._payloads[n:]

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
        self._payloads = []
        self._subjects.clear()
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
