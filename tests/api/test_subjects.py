"""API subject builders and server-side matching."""

from __future__ import annotations

import pytest

from pyjetstream.api import subjects
from pyjetstream.api.subjects import (
    ApiEndpoint,
    ApiMatch,
    JSApi,
    api_prefix,
    domain_api_to_local,
    match_api_subject,
)

js = JSApi()


def test_prefixes() -> None:
    assert api_prefix() == "$JS.API"
    assert api_prefix(domain="hub") == "$JS.hub.API"
    assert api_prefix(domain="hub", prefix="imported.JS.API.") == "imported.JS.API"
    assert JSApi.for_domain("hub").info() == "$JS.hub.API.INFO"
    assert JSApi.for_domain(prefix="x.y").stream_names() == "x.y.STREAM.NAMES"
    assert domain_api_to_local("$JS.hub.API.STREAM.INFO.S", "hub") == "$JS.API.STREAM.INFO.S"
    assert domain_api_to_local("$JS.other.API.INFO", "hub") is None
    assert domain_api_to_local("$JS.API.INFO", "") is None


@pytest.mark.parametrize(
    ("subject", "built"),
    [
        ("$JS.API.INFO", js.info()),
        ("$JS.API.STREAM.CREATE.S", js.stream_create("S")),
        ("$JS.API.STREAM.UPDATE.S", js.stream_update("S")),
        ("$JS.API.STREAM.NAMES", js.stream_names()),
        ("$JS.API.STREAM.LIST", js.stream_list()),
        ("$JS.API.STREAM.INFO.S", js.stream_info("S")),
        ("$JS.API.STREAM.DELETE.S", js.stream_delete("S")),
        ("$JS.API.STREAM.PURGE.S", js.stream_purge("S")),
        ("$JS.API.STREAM.SNAPSHOT.S", js.stream_snapshot("S")),
        ("$JS.API.STREAM.RESTORE.S", js.stream_restore("S")),
        ("$JS.API.STREAM.MSG.GET.S", js.stream_msg_get("S")),
        ("$JS.API.STREAM.MSG.DELETE.S", js.stream_msg_delete("S")),
        ("$JS.API.STREAM.PEER.REMOVE.S", js.stream_remove_peer("S")),
        ("$JS.API.STREAM.LEADER.STEPDOWN.S", js.stream_leader_stepdown("S")),
        ("$JS.API.DIRECT.GET.S", js.direct_get("S")),
        ("$JS.API.DIRECT.GET.S.a.b", js.direct_get_last("S", "a.b")),
        ("$JS.API.CONSUMER.CREATE.S", js.consumer_create("S")),
        ("$JS.API.CONSUMER.CREATE.S.C", js.consumer_create("S", "C")),
        ("$JS.API.CONSUMER.CREATE.S.C", js.consumer_create("S", "C", ">")),
        ("$JS.API.CONSUMER.CREATE.S.C.a.*", js.consumer_create("S", "C", "a.*")),
        ("$JS.API.CONSUMER.DURABLE.CREATE.S.C", js.consumer_durable_create("S", "C")),
        ("$JS.API.CONSUMER.NAMES.S", js.consumer_names("S")),
        ("$JS.API.CONSUMER.LIST.S", js.consumer_list("S")),
        ("$JS.API.CONSUMER.INFO.S.C", js.consumer_info("S", "C")),
        ("$JS.API.CONSUMER.DELETE.S.C", js.consumer_delete("S", "C")),
        ("$JS.API.CONSUMER.MSG.NEXT.S.C", js.consumer_msg_next("S", "C")),
        ("$JS.API.CONSUMER.LEADER.STEPDOWN.S.C", js.consumer_leader_stepdown("S", "C")),
        ("$JS.API.CONSUMER.PAUSE.S.C", js.consumer_pause("S", "C")),
        ("$JS.API.CONSUMER.UNPIN.S.C", js.consumer_unpin("S", "C")),
        ("$JS.API.STREAM.TEMPLATE.CREATE.T", js.template_create("T")),
        ("$JS.API.STREAM.TEMPLATE.NAMES", js.template_names()),
        ("$JS.API.STREAM.TEMPLATE.INFO.T", js.template_info("T")),
        ("$JS.API.STREAM.TEMPLATE.DELETE.T", js.template_delete("T")),
        ("$JS.API.META.LEADER.STEPDOWN", js.meta_leader_stepdown()),
        ("$JS.API.SERVER.REMOVE", js.server_remove()),
        ("$JS.API.ACCOUNT.PURGE.A", js.account_purge("A")),
        ("$JS.API.ACCOUNT.STREAM.MOVE.A.S", js.account_stream_move("A", "S")),
        ("$JS.API.ACCOUNT.STREAM.CANCEL_MOVE.A.S", js.account_stream_cancel_move("A", "S")),
    ],
)
def test_builders_and_matcher_agree(subject: str, built: str) -> None:
    assert built == subject
    assert match_api_subject(subject) is not None


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("$JS.API.INFO", ApiMatch(ApiEndpoint.INFO)),
        ("$JS.API.STREAM.INFO.ORDERS", ApiMatch(ApiEndpoint.STREAM_INFO, stream="ORDERS")),
        ("$JS.API.STREAM.INFO.TEMPLATE", ApiMatch(ApiEndpoint.STREAM_INFO, stream="TEMPLATE")),
        ("$JS.API.STREAM.TEMPLATE.NAMES", ApiMatch(ApiEndpoint.TEMPLATE_NAMES)),
        ("$JS.API.STREAM.MSG.GET.S", ApiMatch(ApiEndpoint.STREAM_MSG_GET, stream="S")),
        ("$JS.API.CONSUMER.CREATE.S", ApiMatch(ApiEndpoint.CONSUMER_CREATE, stream="S", legacy=True)),
        ("$JS.API.CONSUMER.CREATE.S.C", ApiMatch(ApiEndpoint.CONSUMER_CREATE, stream="S", consumer="C")),
        (
            "$JS.API.CONSUMER.CREATE.S.C.orders.*.>",
            ApiMatch(ApiEndpoint.CONSUMER_CREATE, stream="S", consumer="C", filter_subject="orders.*.>"),
        ),
        ("$JS.API.CONSUMER.DURABLE.CREATE.S.C", ApiMatch(ApiEndpoint.CONSUMER_DURABLE_CREATE, "S", "C")),
        ("$JS.API.CONSUMER.MSG.NEXT.S.C", ApiMatch(ApiEndpoint.CONSUMER_MSG_NEXT, "S", "C")),
        ("$JS.API.DIRECT.GET.KV_b", ApiMatch(ApiEndpoint.DIRECT_GET, stream="KV_b")),
        (
            "$JS.API.DIRECT.GET.KV_b.$KV.b.k",
            ApiMatch(ApiEndpoint.DIRECT_GET_LAST, stream="KV_b", subject="$KV.b.k"),
        ),
        ("$JS.API.ACCOUNT.PURGE.ACC", ApiMatch(ApiEndpoint.ACCOUNT_PURGE, stream="ACC")),
    ],
)
def test_match(subject: str, expected: ApiMatch) -> None:
    assert match_api_subject(subject) == expected


@pytest.mark.parametrize(
    "subject",
    [
        "$JS.API",
        "$JS.API.",
        "$JS.API.INFO.X",  # INFO takes no name
        "$JS.API.STREAM.INFO",  # missing name
        "$JS.API.STREAM.INFO.A.B",  # too many tokens for STREAM.INFO.*
        "$JS.API.STREAM.NAMES.X",
        "$JS.API.CONSUMER.INFO.S",
        "$JS.API.CONSUMER.DURABLE.CREATE.S",
        "$JS.API.CONSUMER.DURABLE.CREATE.S.C.x",  # exactly 7 tokens (else 10016 in the engine)
        "$JS.API.CONSUMER.CREATE",
        "$JS.API.DIRECT.GET",
        "$JS.API.STREAM..INFO",
        "$JS.API.UNKNOWN.X",
        "$JS.APIX.INFO",
        "$KV.b.k",
    ],
)
def test_no_match(subject: str) -> None:
    assert match_api_subject(subject) is None


def test_match_with_custom_prefix() -> None:
    assert match_api_subject("$JS.hub.API.STREAM.NAMES", prefix="$JS.hub.API") == ApiMatch(
        ApiEndpoint.STREAM_NAMES
    )
    assert match_api_subject("$JS.API.STREAM.NAMES", prefix="$JS.hub.API") is None


def test_advisory_and_misc_subjects() -> None:
    assert subjects.advisory_stream_created("S") == "$JS.EVENT.ADVISORY.STREAM.CREATED.S"
    assert subjects.advisory_stream_deleted("S") == "$JS.EVENT.ADVISORY.STREAM.DELETED.S"
    assert subjects.advisory_stream_updated("S") == "$JS.EVENT.ADVISORY.STREAM.UPDATED.S"
    assert subjects.advisory_consumer_created("S", "C") == "$JS.EVENT.ADVISORY.CONSUMER.CREATED.S.C"
    assert subjects.advisory_consumer_deleted("S", "C") == "$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.C"
    assert subjects.advisory_max_deliveries("S", "C") == "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.C"
    assert subjects.advisory_msg_naked("S", "C") == "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.S.C"
    assert subjects.advisory_msg_terminated("S", "C") == "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.S.C"
    assert subjects.metric_consumer_ack("S", "C") == "$JS.EVENT.METRIC.CONSUMER.ACK.S.C"
    assert subjects.advisory_snapshot_create("S") == "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.S"
    assert subjects.advisory_restore_complete("S") == "$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE.S"
    assert subjects.API_AUDIT_ADVISORY == "$JS.EVENT.ADVISORY.API"
    assert subjects.flow_control_subject("S", "C", "ab12") == "$JS.FC.S.C.ab12"
    assert subjects.flow_control_subscription("S", "C") == "$JS.FC.S.C.*"
    assert subjects.snapshot_ack_subject("S", "n") == "$JS.SNAPSHOT.ACK.S.n"
    assert subjects.snapshot_ack_subject("S", "n", 10, 2) == "$JS.SNAPSHOT.ACK.S.n.10.2"
    assert subjects.snapshot_restore_subject("S", "n") == "$JS.SNAPSHOT.RESTORE.S.n"
