"""The JetStream API error table (nats-server ``server/errors.json``) and builders.

Each `ErrorDef` is one errors.json entry: Go constant name, HTTP-like ``code``,
JetStream ``err_code`` and the description template with ``{err}``, ``{seq}``, ``{id}``,
``{subject}``, ``{prefix}``, ``{max}``, ``{limit}`` … placeholders, replaced like Go's
``NewJS…Error(…)`` does. Descriptions are nats-server 2.15.1's texts (the reference server,
errors.json); where an older release wrote another text, ``older_description`` has it (clients
may meet both). ``since`` is the release that introduced the entry ("2.9" = present in 2.9.10).

Clients key off ``err_code`` (e.g. 10071/10164 for KV "key exists"); nats.py maps ``code``
(503/500/404/400) to exception classes.
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import Struct

from .models_common import ApiError

__all__ = [
    "ERRORS",
    "ERRORS_BY_CODE",
    "ErrorDef",
    "JetStreamApiError",
    "api_error",
]


class ErrorDef(Struct, frozen=True):
    """One errors.json entry (see the module's docstring); calling it builds the `ApiError`."""

    constant: str
    code: int
    err_code: int
    description: str
    since: str = "2.9"
    older_description: str = ""

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(re.findall(r"\{(\w+)\}", self.description))

    def __call__(self, **values: Any) -> ApiError:
        """Build the ApiError, substituting ``{name}`` placeholders (missing ones stay as written)."""
        description = self.description
        for key, value in values.items():
            description = description.replace("{" + key + "}", _go_sprint(value))
        return ApiError(code=self.code, err_code=self.err_code, description=description)

    def is_(self, error: ApiError | None) -> bool:
        """True if ``error`` is this entry (compares ``err_code``, as Go's IsNatsErr does)."""
        return error is not None and error.err_code == self.err_code


def _go_sprint(value: Any) -> str:
    """``fmt.Sprint`` for the values errors get: errors/strings as text, bools lowercase."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, ApiError):
        return value.description
    if isinstance(value, JetStreamApiError):
        return value.error.description
    return str(value)


class JetStreamApiError(Exception):
    """An `ApiError` as a Python exception (raised inside the engine, or by a client)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.description)
        self.error = error

    @property
    def code(self) -> int:
        return self.error.code

    @property
    def err_code(self) -> int:
        return self.error.err_code

    @property
    def description(self) -> str:
        return self.error.description

    def __repr__(self) -> str:
        return (
            f"JetStreamApiError(code={self.code}, err_code={self.err_code}, description={self.description!r})"
        )


def api_error(definition: ErrorDef, *, unless: Any = None, **values: Any) -> ApiError:
    """``NewJS…Error(…)``: build ``definition`` with placeholders filled.

    ``unless`` mirrors Go's ``Unless(err)`` option: if it already is an ApiError (or a
    `JetStreamApiError`), that error is returned unchanged instead.
    """
    if isinstance(unless, ApiError):
        return unless
    if isinstance(unless, JetStreamApiError):
        return unless.error
    return definition(**values)


# fmt: off
_E = ErrorDef
JSAccountResourcesExceededErr = _E("JSAccountResourcesExceededErr", 400, 10002, "resource limits exceeded for account")
JSBadRequestErr = _E("JSBadRequestErr", 400, 10003, "bad request")
JSClusterIncompleteErr = _E("JSClusterIncompleteErr", 503, 10004, "incomplete results")
JSClusterNoPeersErrF = _E("JSClusterNoPeersErrF", 400, 10005, "{err}")
JSClusterNotActiveErr = _E("JSClusterNotActiveErr", 500, 10006, "JetStream not in clustered mode")
JSClusterNotAssignedErr = _E("JSClusterNotAssignedErr", 500, 10007, "JetStream cluster not assigned to this server")
JSClusterNotAvailErr = _E("JSClusterNotAvailErr", 503, 10008, "JetStream system temporarily unavailable")
JSClusterNotLeaderErr = _E("JSClusterNotLeaderErr", 500, 10009, "JetStream cluster can not handle request")
JSClusterRequiredErr = _E("JSClusterRequiredErr", 503, 10010, "JetStream clustering support required")
JSClusterTagsErr = _E("JSClusterTagsErr", 400, 10011, "tags placement not supported for operation")
JSConsumerCreateErrF = _E("JSConsumerCreateErrF", 500, 10012, "{err}")
JSConsumerNameExistErr = _E("JSConsumerNameExistErr", 400, 10013, "consumer name already in use")
JSConsumerNotFoundErr = _E("JSConsumerNotFoundErr", 404, 10014, "consumer not found")
JSSnapshotDeliverSubjectInvalidErr = _E("JSSnapshotDeliverSubjectInvalidErr", 400, 10015, "deliver subject not valid")
JSConsumerDurableNameNotInSubjectErr = _E("JSConsumerDurableNameNotInSubjectErr", 400, 10016, "consumer expected to be durable but no durable name set in subject")
JSConsumerDurableNameNotMatchSubjectErr = _E("JSConsumerDurableNameNotMatchSubjectErr", 400, 10017, "consumer name in subject does not match durable name in request")
JSConsumerDurableNameNotSetErr = _E("JSConsumerDurableNameNotSetErr", 400, 10018, "consumer expected to be durable but a durable name was not set")
JSConsumerEphemeralWithDurableInSubjectErr = _E("JSConsumerEphemeralWithDurableInSubjectErr", 400, 10019, "consumer expected to be ephemeral but detected a durable name set in subject")
JSConsumerEphemeralWithDurableNameErr = _E("JSConsumerEphemeralWithDurableNameErr", 400, 10020, "consumer expected to be ephemeral but a durable name was set in request")
JSStreamExternalApiOverlapErrF = _E("JSStreamExternalApiOverlapErrF", 400, 10021, "stream external api prefix {prefix} must not overlap with {subject}")
JSStreamExternalDelPrefixOverlapsErrF = _E("JSStreamExternalDelPrefixOverlapsErrF", 400, 10022, "stream external delivery prefix {prefix} overlaps with stream subject {subject}")
JSInsufficientResourcesErr = _E("JSInsufficientResourcesErr", 503, 10023, "insufficient resources")
JSStreamInvalidExternalDeliverySubjErrF = _E("JSStreamInvalidExternalDeliverySubjErrF", 400, 10024, "stream external delivery prefix {prefix} must not contain wildcards")
JSInvalidJSONErr = _E("JSInvalidJSONErr", 400, 10025, "invalid JSON: {err}", older_description="invalid JSON")
JSMaximumConsumersLimitErr = _E("JSMaximumConsumersLimitErr", 400, 10026, "maximum consumers limit reached")
JSMaximumStreamsLimitErr = _E("JSMaximumStreamsLimitErr", 400, 10027, "maximum number of streams reached")
JSMemoryResourcesExceededErr = _E("JSMemoryResourcesExceededErr", 500, 10028, "insufficient memory resources available")
JSMirrorConsumerSetupFailedErrF = _E("JSMirrorConsumerSetupFailedErrF", 500, 10029, "{err}")
JSMirrorMaxMessageSizeTooBigErr = _E("JSMirrorMaxMessageSizeTooBigErr", 400, 10030, "stream mirror must have max message size >= source")
JSMirrorWithSourcesErr = _E("JSMirrorWithSourcesErr", 400, 10031, "stream mirrors can not also contain other sources")
JSMirrorWithStartSeqAndTimeErr = _E("JSMirrorWithStartSeqAndTimeErr", 400, 10032, "stream mirrors can not have both start seq and start time configured")
JSMirrorWithSubjectFiltersErr = _E("JSMirrorWithSubjectFiltersErr", 400, 10033, "stream mirrors can not contain filtered subjects")
JSMirrorWithSubjectsErr = _E("JSMirrorWithSubjectsErr", 400, 10034, "stream mirrors can not contain subjects")
JSNoAccountErr = _E("JSNoAccountErr", 503, 10035, "account not found")
JSClusterUnSupportFeatureErr = _E("JSClusterUnSupportFeatureErr", 503, 10036, "not currently supported in clustered mode")
JSNoMessageFoundErr = _E("JSNoMessageFoundErr", 404, 10037, "no message found")
JSNotEmptyRequestErr = _E("JSNotEmptyRequestErr", 400, 10038, "expected an empty request payload")
JSNotEnabledForAccountErr = _E("JSNotEnabledForAccountErr", 503, 10039, "JetStream not enabled for account")
JSClusterPeerNotMemberErr = _E("JSClusterPeerNotMemberErr", 400, 10040, "peer not a member")
JSRaftGeneralErrF = _E("JSRaftGeneralErrF", 500, 10041, "{err}")
JSRestoreSubscribeFailedErrF = _E("JSRestoreSubscribeFailedErrF", 500, 10042, "JetStream unable to subscribe to restore snapshot {subject}: {err}")
JSSequenceNotFoundErrF = _E("JSSequenceNotFoundErrF", 400, 10043, "sequence {seq} not found")
JSClusterServerNotMemberErr = _E("JSClusterServerNotMemberErr", 400, 10044, "server is not a member of the cluster")
JSSourceConsumerSetupFailedErrF = _E("JSSourceConsumerSetupFailedErrF", 500, 10045, "{err}")
JSSourceMaxMessageSizeTooBigErr = _E("JSSourceMaxMessageSizeTooBigErr", 400, 10046, "stream source must have max message size >= target")
JSStorageResourcesExceededErr = _E("JSStorageResourcesExceededErr", 500, 10047, "insufficient storage resources available")
JSStreamAssignmentErrF = _E("JSStreamAssignmentErrF", 500, 10048, "{err}")
JSStreamCreateErrF = _E("JSStreamCreateErrF", 500, 10049, "{err}")
JSStreamDeleteErrF = _E("JSStreamDeleteErrF", 500, 10050, "{err}")
JSStreamGeneralErrorF = _E("JSStreamGeneralErrorF", 500, 10051, "{err}")
JSStreamInvalidConfigF = _E("JSStreamInvalidConfigF", 500, 10052, "{err}")
JSStreamLimitsErrF = _E("JSStreamLimitsErrF", 500, 10053, "{err}")
JSStreamMessageExceedsMaximumErr = _E("JSStreamMessageExceedsMaximumErr", 400, 10054, "message size exceeds maximum allowed")
JSStreamMirrorNotUpdatableErr = _E("JSStreamMirrorNotUpdatableErr", 400, 10055, "stream mirror configuration can not be updated")
JSStreamMismatchErr = _E("JSStreamMismatchErr", 400, 10056, "stream name in subject does not match request")
JSStreamMsgDeleteFailedF = _E("JSStreamMsgDeleteFailedF", 500, 10057, "{err}")
JSStreamNameExistErr = _E("JSStreamNameExistErr", 400, 10058, "stream name already in use with a different configuration")
JSStreamNotFoundErr = _E("JSStreamNotFoundErr", 404, 10059, "stream not found")
JSStreamNotMatchErr = _E("JSStreamNotMatchErr", 400, 10060, "expected stream does not match")
JSStreamReplicasNotUpdatableErr = _E("JSStreamReplicasNotUpdatableErr", 400, 10061, "Replicas configuration can not be updated")
JSStreamRestoreErrF = _E("JSStreamRestoreErrF", 500, 10062, "restore failed: {err}")
JSStreamSequenceNotMatchErr = _E("JSStreamSequenceNotMatchErr", 503, 10063, "expected stream sequence does not match")
JSStreamSnapshotErrF = _E("JSStreamSnapshotErrF", 500, 10064, "snapshot failed: {err}")
JSStreamSubjectOverlapErr = _E("JSStreamSubjectOverlapErr", 400, 10065, "subjects overlap with an existing stream")
JSStreamTemplateCreateErrF = _E("JSStreamTemplateCreateErrF", 500, 10066, "{err}")
JSStreamTemplateDeleteErrF = _E("JSStreamTemplateDeleteErrF", 500, 10067, "{err}")
JSStreamTemplateNotFoundErr = _E("JSStreamTemplateNotFoundErr", 404, 10068, "template not found")
JSStreamUpdateErrF = _E("JSStreamUpdateErrF", 500, 10069, "{err}")
JSStreamWrongLastMsgIDErrF = _E("JSStreamWrongLastMsgIDErrF", 400, 10070, "wrong last msg ID: {id}")
JSStreamWrongLastSequenceErrF = _E("JSStreamWrongLastSequenceErrF", 400, 10071, "wrong last sequence: {seq}")
JSTempStorageFailedErr = _E("JSTempStorageFailedErr", 500, 10072, "JetStream unable to open temp storage for restore")
JSTemplateNameNotMatchSubjectErr = _E("JSTemplateNameNotMatchSubjectErr", 400, 10073, "template name in subject does not match request")
JSStreamReplicasNotSupportedErr = _E("JSStreamReplicasNotSupportedErr", 500, 10074, "replicas > 1 not supported in non-clustered mode")
JSPeerRemapErr = _E("JSPeerRemapErr", 503, 10075, "peer remap failed")
JSNotEnabledErr = _E("JSNotEnabledErr", 503, 10076, "JetStream not enabled")
JSStreamStoreFailedF = _E("JSStreamStoreFailedF", 503, 10077, "{err}")
JSConsumerConfigRequiredErr = _E("JSConsumerConfigRequiredErr", 400, 10078, "consumer config required")
JSConsumerDeliverToWildcardsErr = _E("JSConsumerDeliverToWildcardsErr", 400, 10079, "consumer deliver subject has wildcards")
JSConsumerPushMaxWaitingErr = _E("JSConsumerPushMaxWaitingErr", 400, 10080, "consumer in push mode can not set max waiting")
JSConsumerDeliverCycleErr = _E("JSConsumerDeliverCycleErr", 400, 10081, "consumer deliver subject forms a cycle")
JSConsumerMaxPendingAckPolicyRequiredErr = _E("JSConsumerMaxPendingAckPolicyRequiredErr", 400, 10082, "consumer requires ack policy for max ack pending")
JSConsumerSmallHeartbeatErr = _E("JSConsumerSmallHeartbeatErr", 400, 10083, "consumer idle heartbeat needs to be >= 100ms")
JSConsumerPullRequiresAckErr = _E("JSConsumerPullRequiresAckErr", 400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream", older_description="consumer in pull mode requires ack policy")
JSConsumerPullNotDurableErr = _E("JSConsumerPullNotDurableErr", 400, 10085, "consumer in pull mode requires a durable name")
JSConsumerPullWithRateLimitErr = _E("JSConsumerPullWithRateLimitErr", 400, 10086, "consumer in pull mode can not have rate limit set")
JSConsumerMaxWaitingNegativeErr = _E("JSConsumerMaxWaitingNegativeErr", 400, 10087, "consumer max waiting needs to be positive")
JSConsumerHBRequiresPushErr = _E("JSConsumerHBRequiresPushErr", 400, 10088, "consumer idle heartbeat requires a push based consumer")
JSConsumerFCRequiresPushErr = _E("JSConsumerFCRequiresPushErr", 400, 10089, "consumer flow control requires a push based consumer")
JSConsumerDirectRequiresPushErr = _E("JSConsumerDirectRequiresPushErr", 400, 10090, "consumer direct requires a push based consumer")
JSConsumerDirectRequiresEphemeralErr = _E("JSConsumerDirectRequiresEphemeralErr", 400, 10091, "consumer direct requires an ephemeral consumer")
JSConsumerOnMappedErr = _E("JSConsumerOnMappedErr", 400, 10092, "consumer direct on a mapped consumer")
JSConsumerFilterNotSubsetErr = _E("JSConsumerFilterNotSubsetErr", 400, 10093, "consumer filter subject is not a valid subset of the interest subjects")
JSConsumerInvalidPolicyErrF = _E("JSConsumerInvalidPolicyErrF", 400, 10094, "{err}")
JSConsumerInvalidSamplingErrF = _E("JSConsumerInvalidSamplingErrF", 400, 10095, "failed to parse consumer sampling configuration: {err}")
JSStreamInvalidErr = _E("JSStreamInvalidErr", 500, 10096, "stream not valid")
JSStreamHeaderExceedsMaximumErr = _E("JSStreamHeaderExceedsMaximumErr", 400, 10097, "header size exceeds maximum allowed of 64k")
JSConsumerWQRequiresExplicitAckErr = _E("JSConsumerWQRequiresExplicitAckErr", 400, 10098, "workqueue stream requires explicit ack")
JSConsumerWQMultipleUnfilteredErr = _E("JSConsumerWQMultipleUnfilteredErr", 400, 10099, "multiple non-filtered consumers not allowed on workqueue stream")
JSConsumerWQConsumerNotUniqueErr = _E("JSConsumerWQConsumerNotUniqueErr", 400, 10100, "filtered consumer not unique on workqueue stream")
JSConsumerWQConsumerNotDeliverAllErr = _E("JSConsumerWQConsumerNotDeliverAllErr", 400, 10101, "consumer must be deliver all on workqueue stream")
JSConsumerNameTooLongErrF = _E("JSConsumerNameTooLongErrF", 400, 10102, "consumer name is too long, maximum allowed is {max}")
JSConsumerBadDurableNameErr = _E("JSConsumerBadDurableNameErr", 400, 10103, "durable name can not contain '.', '*', '>'")
JSConsumerStoreFailedErrF = _E("JSConsumerStoreFailedErrF", 500, 10104, "error creating store for consumer: {err}")
JSConsumerExistingActiveErr = _E("JSConsumerExistingActiveErr", 400, 10105, "consumer already exists and is still active")
JSConsumerReplacementWithDifferentNameErr = _E("JSConsumerReplacementWithDifferentNameErr", 400, 10106, "consumer replacement durable config not the same")
JSConsumerDescriptionTooLongErrF = _E("JSConsumerDescriptionTooLongErrF", 400, 10107, "consumer description is too long, maximum allowed is {max}")
JSConsumerWithFlowControlNeedsHeartbeats = _E("JSConsumerWithFlowControlNeedsHeartbeats", 400, 10108, "consumer with flow control also needs heartbeats")
JSStreamSealedErr = _E("JSStreamSealedErr", 400, 10109, "invalid operation on sealed stream")
JSStreamPurgeFailedF = _E("JSStreamPurgeFailedF", 500, 10110, "{err}")
JSStreamRollupFailedF = _E("JSStreamRollupFailedF", 500, 10111, "{err}")
JSConsumerInvalidDeliverSubject = _E("JSConsumerInvalidDeliverSubject", 400, 10112, "invalid push consumer deliver subject")
JSStreamMaxBytesRequired = _E("JSStreamMaxBytesRequired", 400, 10113, "account requires a stream config to have max bytes set")
JSConsumerMaxRequestBatchNegativeErr = _E("JSConsumerMaxRequestBatchNegativeErr", 400, 10114, "consumer max request batch needs to be > 0")
JSConsumerMaxRequestExpiresTooSmall = _E("JSConsumerMaxRequestExpiresTooSmall", 400, 10115, "consumer max request expires needs to be >= 1ms")
JSConsumerMaxDeliverBackoffErr = _E("JSConsumerMaxDeliverBackoffErr", 400, 10116, "max deliver is required to be > length of backoff values")
JSStreamInfoMaxSubjectsErr = _E("JSStreamInfoMaxSubjectsErr", 500, 10117, "subject details would exceed maximum allowed")
JSStreamOfflineErr = _E("JSStreamOfflineErr", 500, 10118, "stream is offline")
JSConsumerOfflineErr = _E("JSConsumerOfflineErr", 500, 10119, "consumer is offline")
JSNoLimitsErr = _E("JSNoLimitsErr", 400, 10120, "no JetStream default or applicable tiered limit present")
JSConsumerMaxPendingAckExcessErrF = _E("JSConsumerMaxPendingAckExcessErrF", 400, 10121, "consumer max ack pending exceeds system limit of {limit}")
JSStreamMaxStreamBytesExceeded = _E("JSStreamMaxStreamBytesExceeded", 400, 10122, "stream max bytes exceeds account limit max stream bytes")
JSStreamMoveAndScaleErr = _E("JSStreamMoveAndScaleErr", 400, 10123, "can not move and scale a stream in a single update")
JSStreamMoveInProgressErr = _E("JSStreamMoveInProgressErr", 400, 10124, "stream move already in progress")
JSConsumerMaxRequestBatchExceededF = _E("JSConsumerMaxRequestBatchExceededF", 400, 10125, "consumer max request batch exceeds server limit of {limit}")
JSConsumerReplicasExceedsStream = _E("JSConsumerReplicasExceedsStream", 400, 10126, "consumer config replica count exceeds parent stream")
JSConsumerNameContainsPathSeparatorsErr = _E("JSConsumerNameContainsPathSeparatorsErr", 400, 10127, "Consumer name can not contain path separators")
JSStreamNameContainsPathSeparatorsErr = _E("JSStreamNameContainsPathSeparatorsErr", 400, 10128, "Stream name can not contain path separators")
JSStreamReconfigureNotInProgressErr = _E("JSStreamReconfigureNotInProgressErr", 400, 10129, "stream reconfiguration not in progress", older_description="stream move not in progress")
JSStreamMoveNotInProgress = JSStreamReconfigureNotInProgressErr  # its name before 2.15
JSStreamNameExistRestoreFailedErr = _E("JSStreamNameExistRestoreFailedErr", 400, 10130, "stream name already in use, cannot restore")
JSConsumerCreateFilterSubjectMismatchErr = _E("JSConsumerCreateFilterSubjectMismatchErr", 400, 10131, "Consumer create request did not match filtered subject from create subject")
JSConsumerCreateDurableAndNameMismatch = _E("JSConsumerCreateDurableAndNameMismatch", 400, 10132, "Consumer Durable and Name have to be equal if both are provided")
JSReplicasCountCannotBeNegative = _E("JSReplicasCountCannotBeNegative", 400, 10133, "replicas count cannot be negative")
JSConsumerReplicasShouldMatchStream = _E("JSConsumerReplicasShouldMatchStream", 400, 10134, "consumer config replicas must match interest retention stream's replicas", "2.10")
JSConsumerMetadataLengthErrF = _E("JSConsumerMetadataLengthErrF", 400, 10135, "consumer metadata exceeds maximum size of {limit}", "2.10")
JSConsumerDuplicateFilterSubjects = _E("JSConsumerDuplicateFilterSubjects", 400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified", "2.10")
JSConsumerMultipleFiltersNotAllowed = _E("JSConsumerMultipleFiltersNotAllowed", 400, 10137, "consumer with multiple subject filters cannot use subject based API", "2.10")
JSConsumerOverlappingSubjectFilters = _E("JSConsumerOverlappingSubjectFilters", 400, 10138, "consumer subject filters cannot overlap", "2.10")
JSConsumerEmptyFilter = _E("JSConsumerEmptyFilter", 400, 10139, "consumer filter in FilterSubjects cannot be empty", "2.10")
JSSourceDuplicateDetected = _E("JSSourceDuplicateDetected", 400, 10140, "duplicate source configuration detected", "2.10")
JSSourceInvalidStreamName = _E("JSSourceInvalidStreamName", 400, 10141, "sourced stream name is invalid", "2.10")
JSMirrorInvalidStreamName = _E("JSMirrorInvalidStreamName", 400, 10142, "mirrored stream name is invalid", "2.10")
JSMirrorWithFirstSeqErr = _E("JSMirrorWithFirstSeqErr", 400, 10143, "stream mirrors can not have first sequence configured", "2.10")
JSSourceMultipleFiltersNotAllowed = _E("JSSourceMultipleFiltersNotAllowed", 400, 10144, "source with multiple subject transforms cannot also have a single subject filter", "2.10")
JSSourceInvalidSubjectFilter = _E("JSSourceInvalidSubjectFilter", 400, 10145, "source transform source: {err}", "2.10")
JSSourceInvalidTransformDestination = _E("JSSourceInvalidTransformDestination", 400, 10146, "source transform: {err}", "2.10")
JSSourceOverlappingSubjectFilters = _E("JSSourceOverlappingSubjectFilters", 400, 10147, "source filters can not overlap", "2.10")
JSConsumerAlreadyExists = _E("JSConsumerAlreadyExists", 400, 10148, "consumer already exists", "2.10")
JSConsumerDoesNotExist = _E("JSConsumerDoesNotExist", 400, 10149, "consumer does not exist", "2.10")
JSMirrorMultipleFiltersNotAllowed = _E("JSMirrorMultipleFiltersNotAllowed", 400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter", "2.10")
JSMirrorInvalidSubjectFilter = _E("JSMirrorInvalidSubjectFilter", 400, 10151, "mirror transform source: {err}", "2.10")
JSMirrorOverlappingSubjectFilters = _E("JSMirrorOverlappingSubjectFilters", 400, 10152, "mirror subject filters can not overlap", "2.10")
JSConsumerInactiveThresholdExcess = _E("JSConsumerInactiveThresholdExcess", 400, 10153, "consumer inactive threshold exceeds system limit of {limit}", "2.10")
JSMirrorInvalidTransformDestination = _E("JSMirrorInvalidTransformDestination", 400, 10154, "mirror transform: {err}", "2.10")
JSStreamTransformInvalidSource = _E("JSStreamTransformInvalidSource", 400, 10155, "stream transform source: {err}", "2.10")
JSStreamTransformInvalidDestination = _E("JSStreamTransformInvalidDestination", 400, 10156, "stream transform: {err}", "2.10")
JSPedanticErrF = _E("JSPedanticErrF", 400, 10157, "pedantic mode: {err}", "2.11")
JSStreamDuplicateMessageConflict = _E("JSStreamDuplicateMessageConflict", 409, 10158, "duplicate message id is in process", "2.11")
JSConsumerPriorityPolicyWithoutGroup = _E("JSConsumerPriorityPolicyWithoutGroup", 400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set", "2.11")
JSConsumerInvalidPriorityGroupErr = _E("JSConsumerInvalidPriorityGroupErr", 400, 10160, "Provided priority group does not exist for this consumer", "2.11")
JSConsumerEmptyGroupName = _E("JSConsumerEmptyGroupName", 400, 10161, "Group name cannot be an empty string", "2.11")
JSConsumerInvalidGroupNameErr = _E("JSConsumerInvalidGroupNameErr", 400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters", "2.11")
JSStreamExpectedLastSeqPerSubjectNotReady = _E("JSStreamExpectedLastSeqPerSubjectNotReady", 503, 10163, "expected last sequence per subject temporarily unavailable", "2.11")
JSStreamWrongLastSequenceConstantErr = _E("JSStreamWrongLastSequenceConstantErr", 400, 10164, "wrong last sequence", "2.11")
JSMessageTTLInvalidErr = _E("JSMessageTTLInvalidErr", 400, 10165, "invalid per-message TTL", "2.11")
JSMessageTTLDisabledErr = _E("JSMessageTTLDisabledErr", 400, 10166, "per-message TTL is disabled", "2.11")
JSStreamTooManyRequests = _E("JSStreamTooManyRequests", 429, 10167, "too many requests", "2.11")
JSMessageIncrDisabledErr = _E("JSMessageIncrDisabledErr", 400, 10168, "message counters is disabled", "2.12+")
JSMessageIncrMissingErr = _E("JSMessageIncrMissingErr", 400, 10169, "message counter increment is missing", "2.12+")
JSMessageIncrPayloadErr = _E("JSMessageIncrPayloadErr", 400, 10170, "message counter has payload", "2.12+")
JSMessageIncrInvalidErr = _E("JSMessageIncrInvalidErr", 400, 10171, "message counter increment is invalid", "2.12+")
JSMessageCounterBrokenErr = _E("JSMessageCounterBrokenErr", 400, 10172, "message counter is broken", "2.12+")
JSMirrorWithCountersErr = _E("JSMirrorWithCountersErr", 400, 10173, "stream mirrors can not also calculate counters", "2.12+")
JSAtomicPublishDisabledErr = _E("JSAtomicPublishDisabledErr", 400, 10174, "atomic publish is disabled", "2.12+")
JSAtomicPublishMissingSeqErr = _E("JSAtomicPublishMissingSeqErr", 400, 10175, "atomic publish sequence is missing", "2.12+")
JSAtomicPublishIncompleteBatchErr = _E("JSAtomicPublishIncompleteBatchErr", 400, 10176, "atomic publish batch is incomplete", "2.12+")
JSAtomicPublishUnsupportedHeaderBatchErr = _E("JSAtomicPublishUnsupportedHeaderBatchErr", 400, 10177, "atomic publish unsupported header used: {header}", "2.12+")
JSConsumerPushWithPriorityGroupErr = _E("JSConsumerPushWithPriorityGroupErr", 400, 10178, "priority groups can not be used with push consumers", "2.12+")
JSAtomicPublishInvalidBatchIDErr = _E("JSAtomicPublishInvalidBatchIDErr", 400, 10179, "atomic publish batch ID is invalid", "2.12+")
JSStreamMinLastSeqErr = _E("JSStreamMinLastSeqErr", 412, 10180, "min last sequence", "2.12+")
JSConsumerAckPolicyInvalidErr = _E("JSConsumerAckPolicyInvalidErr", 400, 10181, "consumer ack policy invalid", "2.12+")
JSConsumerReplayPolicyInvalidErr = _E("JSConsumerReplayPolicyInvalidErr", 400, 10182, "consumer replay policy invalid", "2.12+")
JSConsumerAckWaitNegativeErr = _E("JSConsumerAckWaitNegativeErr", 400, 10183, "consumer ack wait needs to be positive", "2.12+")
JSConsumerBackOffNegativeErr = _E("JSConsumerBackOffNegativeErr", 400, 10184, "consumer backoff needs to be positive", "2.12+")
JSRequiredApiLevelErr = _E("JSRequiredApiLevelErr", 412, 10185, "JetStream minimum api level required", "2.12+")
JSMirrorWithMsgSchedulesErr = _E("JSMirrorWithMsgSchedulesErr", 400, 10186, "stream mirrors can not also schedule messages", "2.12+")
JSSourceWithMsgSchedulesErr = _E("JSSourceWithMsgSchedulesErr", 400, 10187, "stream source can not also schedule messages", "2.12+")
JSMessageSchedulesDisabledErr = _E("JSMessageSchedulesDisabledErr", 400, 10188, "message schedules is disabled", "2.12+")
JSMessageSchedulesPatternInvalidErr = _E("JSMessageSchedulesPatternInvalidErr", 400, 10189, "message schedules pattern is invalid", "2.12+")
JSMessageSchedulesTargetInvalidErr = _E("JSMessageSchedulesTargetInvalidErr", 400, 10190, "message schedules target is invalid", "2.12+")
JSMessageSchedulesTTLInvalidErr = _E("JSMessageSchedulesTTLInvalidErr", 400, 10191, "message schedules invalid per-message TTL", "2.12+")
JSMessageSchedulesRollupInvalidErr = _E("JSMessageSchedulesRollupInvalidErr", 400, 10192, "message schedules invalid rollup", "2.12+")
JSStreamExpectedLastSeqPerSubjectInvalid = _E("JSStreamExpectedLastSeqPerSubjectInvalid", 400, 10193, "missing sequence for expected last sequence per subject", "2.12+")
JSStreamOfflineReasonErrF = _E("JSStreamOfflineReasonErrF", 500, 10194, "stream is offline: {err}", "2.12+")
JSConsumerOfflineReasonErrF = _E("JSConsumerOfflineReasonErrF", 500, 10195, "consumer is offline: {err}", "2.12+")
JSConsumerPriorityGroupWithPolicyNone = _E("JSConsumerPriorityGroupWithPolicyNone", 400, 10196, "consumer can not have priority groups when policy is none", "2.12+")
JSConsumerPinnedTTLWithoutPriorityPolicyNone = _E("JSConsumerPinnedTTLWithoutPriorityPolicyNone", 400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none", "2.12+")
JSMirrorWithAtomicPublishErr = _E("JSMirrorWithAtomicPublishErr", 400, 10198, "stream mirrors can not also use atomic publishing", "2.12+")
JSAtomicPublishTooLargeBatchErrF = _E("JSAtomicPublishTooLargeBatchErrF", 400, 10199, "atomic publish batch is too large: {size}", "2.12+")
JSAtomicPublishInvalidBatchCommitErr = _E("JSAtomicPublishInvalidBatchCommitErr", 400, 10200, "atomic publish batch commit is invalid", "2.12+")
JSAtomicPublishContainsDuplicateMessageErr = _E("JSAtomicPublishContainsDuplicateMessageErr", 400, 10201, "atomic publish batch contains duplicate message id", "2.12+")
JSClusterServerMemberChangeInflightErr = _E("JSClusterServerMemberChangeInflightErr", 400, 10202, "cluster member change is in progress", "2.12+")
JSMessageSchedulesSourceInvalidErr = _E("JSMessageSchedulesSourceInvalidErr", 400, 10203, "message schedules source is invalid", "2.12+")
JSConsumerInvalidResetErr = _E("JSConsumerInvalidResetErr", 400, 10204, "invalid reset: {err}", "2.12+")
JSBatchPublishDisabledErr = _E("JSBatchPublishDisabledErr", 400, 10205, "batch publish is disabled", "2.12+")
JSBatchPublishInvalidPatternErr = _E("JSBatchPublishInvalidPatternErr", 400, 10206, "batch publish pattern is invalid", "2.12+")
JSBatchPublishInvalidBatchIDErr = _E("JSBatchPublishInvalidBatchIDErr", 400, 10207, "batch publish ID is invalid", "2.12+")
JSBatchPublishUnknownBatchIDErr = _E("JSBatchPublishUnknownBatchIDErr", 400, 10208, "batch publish ID unknown", "2.12+")
JSMirrorWithBatchPublishErr = _E("JSMirrorWithBatchPublishErr", 400, 10209, "stream mirrors can not also use batch publishing", "2.12+")
JSAtomicPublishTooManyInflight = _E("JSAtomicPublishTooManyInflight", 429, 10210, "atomic publish too many inflight", "2.12+")
JSBatchPublishTooManyInflight = _E("JSBatchPublishTooManyInflight", 429, 10211, "batch publish too many inflight", "2.12+")
JSMessageSchedulesSchedulerInvalidErr = _E("JSMessageSchedulesSchedulerInvalidErr", 400, 10212, "message schedules invalid scheduler", "2.12+")
JSMirrorDurableConsumerCfgInvalid = _E("JSMirrorDurableConsumerCfgInvalid", 400, 10213, "stream mirror consumer config is invalid", "2.12+")
JSMirrorConsumerRequiresAckFCErr = _E("JSMirrorConsumerRequiresAckFCErr", 400, 10214, "stream mirror consumer requires flow control ack policy", "2.12+")
JSSourceDurableConsumerCfgInvalid = _E("JSSourceDurableConsumerCfgInvalid", 400, 10215, "stream source consumer config is invalid", "2.12+")
JSSourceDurableConsumerDuplicateDetected = _E("JSSourceDurableConsumerDuplicateDetected", 400, 10216, "duplicate stream source consumer detected", "2.12+")
JSSourceConsumerRequiresAckFCErr = _E("JSSourceConsumerRequiresAckFCErr", 400, 10217, "stream source consumer requires flow control ack policy", "2.12+")
JSConsumerAckFCRequiresPushErr = _E("JSConsumerAckFCRequiresPushErr", 400, 10218, "flow control ack policy requires a push based consumer", "2.12+")
JSConsumerAckFCRequiresFCErr = _E("JSConsumerAckFCRequiresFCErr", 400, 10219, "flow control ack policy requires flow control", "2.12+")
JSConsumerAckFCRequiresMaxAckPendingErr = _E("JSConsumerAckFCRequiresMaxAckPendingErr", 400, 10220, "flow control ack policy requires max ack pending", "2.12+")
JSConsumerAckFCRequiresNoAckWaitErr = _E("JSConsumerAckFCRequiresNoAckWaitErr", 400, 10221, "flow control ack policy requires unset ack wait", "2.12+")
JSConsumerAckFCRequiresNoMaxDeliverErr = _E("JSConsumerAckFCRequiresNoMaxDeliverErr", 400, 10222, "flow control ack policy requires unset max deliver", "2.12+")
JSMessageSchedulesTimeZoneInvalidErr = _E("JSMessageSchedulesTimeZoneInvalidErr", 400, 10223, "message schedules time zone is invalid", "2.12+")
JSClusterRescueErr = _E("JSClusterRescueErr", 400, 10224, "JetStream system rescue not applied: {err}", "2.12+")
JSConsumerStreamIdentityMismatchF = _E("JSConsumerStreamIdentityMismatchF", 400, 10225, "consumer's stream identity does not match: {msg}", "2.12+")
JSStreamReconfigureInProgressErr = _E("JSStreamReconfigureInProgressErr", 400, 10226, "stream reconfiguration already in progress", "2.12+")
JSMessageSourceHdrNotAllowedErr = _E("JSMessageSourceHdrNotAllowedErr", 400, 10227, "message stream source header is not allowed", "2.15")
# fmt: on

ERRORS: dict[str, ErrorDef] = {v.constant: v for v in list(globals().values()) if isinstance(v, ErrorDef)}
"""Go constant name → entry, every errors.json entry."""

ERRORS_BY_CODE: dict[int, ErrorDef] = {v.err_code: v for v in ERRORS.values()}
"""``err_code`` → entry."""

__all__ += sorted(ERRORS)
