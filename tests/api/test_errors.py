"""The errors.json table and ApiError building."""

from __future__ import annotations

import re

import pytest

from pyjetstream.api import ApiError, JetStreamApiError, api_error, codec, errors


def test_table_is_complete_and_consistent() -> None:
    codes = sorted(errors.ERRORS_BY_CODE)
    assert codes == list(range(10002, 10228))  # errors.json (2.15.1) has no gaps
    assert len(errors.ERRORS) == len(errors.ERRORS_BY_CODE) == 226
    for name, entry in errors.ERRORS.items():
        assert getattr(errors, name) is entry
        assert entry.code in (400, 404, 409, 412, 429, 500, 503)
        assert entry.since in ("2.9", "2.10", "2.11", "2.12+", "2.15")
        assert name in errors.__all__


@pytest.mark.parametrize(
    ("entry", "code", "err_code", "description"),
    [
        (errors.JSStreamNotFoundErr, 404, 10059, "stream not found"),
        (errors.JSConsumerNotFoundErr, 404, 10014, "consumer not found"),
        (errors.JSInvalidJSONErr, 400, 10025, "invalid JSON: {err}"),
        (errors.JSStreamStoreFailedF, 503, 10077, "{err}"),
        (
            errors.JSStreamReplicasNotSupportedErr,
            500,
            10074,
            "replicas > 1 not supported in non-clustered mode",
        ),
        (
            errors.JSConsumerPullRequiresAckErr,
            400,
            10084,
            "consumer in pull mode requires explicit ack policy on workqueue stream",
        ),
        (errors.JSStreamWrongLastSequenceConstantErr, 400, 10164, "wrong last sequence"),
        (errors.JSStreamDuplicateMessageConflict, 409, 10158, "duplicate message id is in process"),
        (errors.JSStreamTooManyRequests, 429, 10167, "too many requests"),
    ],
)
def test_known_entries(entry: errors.ErrorDef, code: int, err_code: int, description: str) -> None:
    assert (entry.code, entry.err_code, entry.description) == (code, err_code, description)


def test_older_texts_are_recorded() -> None:
    assert errors.JSInvalidJSONErr.description == "invalid JSON: {err}"
    assert errors.JSInvalidJSONErr.older_description == "invalid JSON"
    assert errors.JSConsumerPullRequiresAckErr.description.endswith("on workqueue stream")
    assert errors.JSStreamReconfigureNotInProgressErr.older_description == "stream move not in progress"


def test_placeholder_substitution() -> None:
    assert errors.JSStreamWrongLastSequenceErrF(seq=7) == ApiError(
        code=400, err_code=10071, description="wrong last sequence: 7"
    )
    assert errors.JSStreamWrongLastMsgIDErrF(id="m1").description == "wrong last msg ID: m1"
    assert errors.JSSequenceNotFoundErrF(seq=9).description == "sequence 9 not found"
    assert (
        errors.JSStreamExternalApiOverlapErrF(prefix="$JS.API", subject="$JS.API").description
        == "stream external api prefix $JS.API must not overlap with $JS.API"
    )
    assert (
        errors.JSConsumerNameTooLongErrF(max=255).description
        == "consumer name is too long, maximum allowed is 255"
    )
    assert (
        errors.JSStreamInvalidConfigF(err="max age needs to be >= 100ms").description
        == "max age needs to be >= 100ms"
    )
    assert errors.JSRestoreSubscribeFailedErrF.placeholders == ("subject", "err")
    # an error value is printed like Go's fmt.Sprint(err)
    inner = errors.JSStreamNotFoundErr()
    assert errors.JSStreamCreateErrF(err=inner).description == "stream not found"
    assert errors.JSStreamCreateErrF(err=ValueError("boom")).description == "boom"
    assert errors.JSStreamCreateErrF(err=True).description == "true"


def test_every_template_placeholder_is_substitutable() -> None:
    for entry in errors.ERRORS.values():
        values = {p: f"<{p}>" for p in entry.placeholders}
        text = entry(**values).description
        assert not re.search(r"\{\w+\}", text), entry.constant


def test_unless_keeps_an_existing_api_error() -> None:
    existing = errors.JSStreamNotFoundErr()
    assert api_error(errors.JSStreamCreateErrF, unless=existing, err="x") is existing
    assert api_error(errors.JSStreamCreateErrF, unless=JetStreamApiError(existing), err="x") is existing
    assert api_error(errors.JSStreamCreateErrF, unless=ValueError("x"), err="bad").description == "bad"


def test_exception_wrapper() -> None:
    exc = JetStreamApiError(errors.JSStreamNameExistErr())
    assert (exc.code, exc.err_code) == (400, 10058)
    assert str(exc) == "stream name already in use with a different configuration"
    assert "10058" in repr(exc)
    assert errors.JSStreamNameExistErr.is_(exc.error)
    assert not errors.JSStreamNotFoundErr.is_(exc.error)
    assert not errors.JSStreamNotFoundErr.is_(None)


def test_api_error_wire_shape() -> None:
    # exactly code, err_code, description (nats.py does APIError(**err)); Go escaping applies
    raw = codec.encode(errors.JSConsumerSmallHeartbeatErr())
    assert (
        raw
        == b'{"code":400,"err_code":10083,"description":"consumer idle heartbeat needs to be \\u003e= 100ms"}'
    )
    assert codec.decode(raw, ApiError).description == "consumer idle heartbeat needs to be >= 100ms"
