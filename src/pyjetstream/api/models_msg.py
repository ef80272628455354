"""Stored-message get/delete models and the PubAck (nats-server jetstream_api.go, stream.go)."""

from __future__ import annotations

from ._wire import WireStruct, always
from .models_common import ApiError
from .timefmt import ZERO_TIME, NanoTime

__all__ = ["MsgDeleteRequest", "MsgGetRequest", "PubAck", "PubAckResponse", "StoredMsg"]


class StoredMsg(WireStruct):
    """``message`` of STREAM.MSG.GET; ``hdrs``/``data`` are raw bytes (base64 on the wire)."""

    subject: str = always("")
    seq: int = always(0)
    hdrs: bytes = b""  # the full header block incl. "NATS/1.0\r\n" and final CRLF
    data: bytes = b""
    time: NanoTime = always(ZERO_TIME)


class MsgGetRequest(WireStruct):
    """STREAM.MSG.GET and DIRECT.GET body: ``seq`` | ``last_by_subj`` | ``next_by_subj`` (+ ``seq``)."""

    seq: int = 0
    last_by_subj: str = ""
    next_by_subj: str = ""
    # ⟨2.11+⟩ batched direct get
    batch: int = 0
    max_bytes: int = 0
    start_time: NanoTime | None = None
    multi_last: list[str] = []
    up_to_seq: int = 0
    up_to_time: NanoTime | None = None
    no_hdr: bool = False  # ⟨2.12+⟩ the message without its headers (not for multi_last)


class MsgDeleteRequest(WireStruct):
    seq: int = always(0)
    no_erase: bool = False


class PubAck(WireStruct):
    """Successful publish acknowledgement. Encode with `pyjetstream.api.codec.encode_pub_ack`
    (nats-server hand-formats it, with spaces)."""

    stream: str = always("")
    seq: int = always(0)
    domain: str = ""
    duplicate: bool = False
    val: str = ""  # ⟨2.12+⟩ a counter's total after this increment
    batch: str = ""  # ⟨2.12+⟩ the committed atomic batch's id
    count: int = 0  # ⟨2.12+⟩ how many messages that batch stored


class PubAckResponse(WireStruct):
    """What a publisher decodes: ``error`` set on failure, otherwise the PubAck fields."""

    error: ApiError | None = None
    stream: str = always("")
    seq: int = always(0)
    domain: str = ""
    duplicate: bool = False
    val: str = ""  # ⟨2.12+⟩ a counter's total after this increment
    batch: str = ""  # ⟨2.12+⟩ the committed atomic batch's id
    count: int = 0  # ⟨2.12+⟩ how many messages that batch stored

    @property
    def ack(self) -> PubAck:
        return PubAck(stream=self.stream, seq=self.seq, domain=self.domain, duplicate=self.duplicate)
