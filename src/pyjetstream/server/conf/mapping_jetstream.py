"""The ``jetstream {}`` block and the top-level ``store_dir``."""

from __future__ import annotations

from collections.abc import Callable

from pyjetstream.server.conf.converters import (
    Invalid,
    as_bool,
    as_duration,
    as_enabled,
    as_int,
    as_map,
    as_storage_size,
    as_str,
)
from pyjetstream.server.conf.mapping_base import BlockMapper, Handler
from pyjetstream.server.conf.nodes import Node

# Refused rather than ignored: silently storing data unencrypted would betray the config's intent.
_JS_ENCRYPTION_KEYS = {"key", "ek", "encryption_key", "prev_key", "prev_ek", "prev_encryption_key", "cipher", "tpm"}


def _sized(label: str) -> Callable[[Node, str], int]:
    """A storage size whose errors name ``label`` (nats-server's name) rather than the alias used."""
    return lambda node, key: as_storage_size(node, label)


class JetStreamKeys(BlockMapper):
    """``jetstream`` (a switch or a block) and ``store_dir``, which may be given only once."""

    store_dir_seen = False

    def store_dir(self, key: str, node: Node) -> None:
        if self.store_dir_seen:
            raise Invalid(node, "Duplicate 'store_dir' configuration")
        self.store_dir_seen = True
        self.o.store_dir = as_str(node, key)

    def jetstream(self, key: str, node: Node) -> None:
        value = node.value
        if not isinstance(value, dict):
            self.o.jetstream = as_enabled(node, key)
            return
        o = self.o
        state = {"enable": True}  # a jetstream {} block enables JetStream unless it says not to

        def enable(k: str, n: Node) -> None:
            state["enable"] = as_bool(n, k)

        def sync(k: str, n: Node) -> None:
            o.sync_always = isinstance(n.value, str) and n.value.lower() == "always"
            if not o.sync_always:
                o.sync_interval = self.legacy_duration(n, k, field=k)  # nats-server names it as written

        def encryption(k: str, n: Node) -> None:
            self.error(n, f'"{k}": JetStream encryption at rest is not supported by pyjetstream')

        def cluster_only(k: str, n: Node) -> None:
            self.warn(n, f'"{k}" ignored: it only applies to clustered JetStream')

        def accepted(k: str, n: Node) -> None:
            pass  # meaningful to nats-server only (e.g. 2.11 API strictness)

        self.each(
            value,
            {
                "store|store_dir|storedir": self.store_dir,
                "max_memory_store|max_mem_store|max_mem": ("max_memory_store", _sized("max_mem_store")),
                "max_file_store|max_file": ("max_file_store", _sized("max_file_store")),
                "domain": ("jetstream_domain", as_str),
                "enable|enabled": enable,
                "sync|sync_interval": sync,
                "max_buffered_size": ("jetstream_max_buffered_size", as_storage_size),
                "max_buffered_msgs": ("jetstream_max_buffered_msgs", as_int),
                "limits": self.jetstream_limits,
                "unique_tag|max_outstanding_catchup|meta_compact|meta_compact_size|meta_compact_sync": cluster_only,
                "strict": ("jetstream_strict", as_bool),
                "extension_hint|request_queue_limit|info_queue_limit|max_concurrent_io": accepted,
                "|".join(_JS_ENCRYPTION_KEYS): encryption,
            },
        )
        o.jetstream = state["enable"]

    def jetstream_limits(self, key: str, node: Node) -> None:
        spec: dict[str, Handler] = {
            "max_ack_pending": ("max_ack_pending", as_int),
            "max_ha_assets": ("max_ha_assets", as_int),
            "max_request_batch": ("max_request_batch", as_int),
            "default_max_consumers": ("default_max_consumers", as_int),
            "duplicate_window": ("duplicate_window", as_duration),
            "batch": self.jetstream_batch_limits,
        }
        self.each(as_map(node, key), spec, self.o.jetstream_limits)

    def jetstream_batch_limits(self, key: str, node: Node) -> None:
        """⟨2.12+⟩ ``limits { batch { … } }``: atomic / fast batch publish limits."""
        spec: dict[str, Handler] = {
            "max_msgs": ("batch_max_msgs", as_int),
            "max_inflight_per_stream": ("batch_max_inflight_per_stream", as_int),
            "max_inflight_total": ("batch_max_inflight_total", as_int),
            "timeout": ("batch_timeout", as_duration),
        }
        self.each(as_map(node, key), spec, self.o.jetstream_limits)

