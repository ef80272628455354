"""Stream configuration: defaults, validation and update rules, as nats-server's ``checkStreamCfg``.

Every failure raises `JetStreamApiError` carrying nats-server's code and text, so the API
layer answers exactly what nats-server answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from pyjetstream.api import errors as E
from pyjetstream.api.enums import DiscardPolicy, PersistMode, RetentionPolicy, StorageType
from pyjetstream.api.errors import ErrorDef, JetStreamApiError
from pyjetstream.api.gojson import go_quote
from pyjetstream.api.models_stream import StreamConfig, StreamSource
from pyjetstream.protocol.subjects import (
    is_subset,
    is_valid_publish_subject,
    is_valid_subject,
    subjects_overlap,
)
from pyjetstream.server.subject_transform import SubjectTransform, TransformError, validate_mapping

NS = 1_000_000_000
DEFAULT_DUPLICATE_WINDOW = 120 * NS
MIN_WINDOW = NS // 10  # 100ms: the smallest max_age / duplicate_window nats-server accepts
MAX_NAME_LEN = 255
MAX_DESCRIPTION_LEN = 4096
MAX_METADATA_LEN = 128 * 1024
MAX_REPLICAS = 5
JS_API_SUBJECTS = "$JS.API.>"
JS_API_PREFIX = "$JS.API"

#: Another stream's config by name (None when there is no such stream).
StreamLookup = Callable[[str], StreamConfig | None]


#: The account's max_bytes rule for a config: (max_bytes required, the largest allowed; <= 0 none).
MaxBytesRule = Callable[[StreamConfig], tuple[bool, int]]


def _no_streams(name: str) -> StreamConfig | None:
    return None


def fail(definition: ErrorDef, **values: object) -> JetStreamApiError:
    return JetStreamApiError(definition(**values))


def invalid(text: str) -> JetStreamApiError:
    return fail(E.JSStreamInvalidConfigF, err=text)


def is_valid_name(name: str) -> bool:
    """nats-server ``isValidName``: non-empty and none of whitespace, ``.``, ``*``, ``>``."""
    return bool(name) and not any(c in name for c in " \t\r\n\f.*>")


def _no_account_rule(cfg: StreamConfig) -> tuple[bool, int]:
    return False, 0


def check_stream_config(
    cfg: StreamConfig,
    streams: StreamLookup = _no_streams,
    pedantic: bool = False,
    max_bytes_limits: MaxBytesRule = _no_account_rule,
) -> StreamConfig:
    """Apply defaults and validate a config; ``streams`` finds the other streams, which the
    mirror and source checks look at (nats-server 2.15 ``checkStreamCfg``, in its order).
    ``pedantic`` refuses what would otherwise be silently changed (10157). ``max_bytes_limits``
    is the account's rule for max_bytes (``Account.maxBytesLimits``: required, largest)."""
    _check_names(cfg)
    changes: dict[str, object] = {}
    _check_limits(cfg, pedantic, changes)
    _check_duplicate_window(cfg, pedantic, changes)
    _check_features(cfg, changes)
    if cfg.mirror is not None or cfg.sources:
        changes.update(check_sourcing(cfg, streams, pedantic))
    _check_subjects_and_placement(cfg, pedantic, changes, max_bytes_limits)
    if cfg.first_seq < 0:
        raise invalid("first sequence can not be negative")
    return msgspec.structs.replace(cfg, **changes) if changes else cfg


def _check_names(cfg: StreamConfig) -> None:
    """The name, description and metadata (Go's len() of a string counts bytes)."""
    if not is_valid_name(cfg.name) or "\\" in cfg.name or "/" in cfg.name:
        raise invalid("stream name is required and can not contain '.', '*', '>', '\\', '/'")
    if len(cfg.name.encode()) > MAX_NAME_LEN:
        raise invalid(f"stream name is too long, maximum allowed is {MAX_NAME_LEN}")
    if len(cfg.description.encode()) > MAX_DESCRIPTION_LEN:
        raise invalid(f"stream description is too long, maximum allowed is {MAX_DESCRIPTION_LEN}")
    if sum(len(k.encode()) + len(v.encode()) for k, v in cfg.metadata.items()) > MAX_METADATA_LEN:
        raise invalid(f"stream metadata exceeds maximum size of {MAX_METADATA_LEN} bytes")


def _check_limits(cfg: StreamConfig, pedantic: bool, changes: dict[str, object]) -> None:
    """Replicas, the -1 ("unlimited") defaults, max_age."""
    if cfg.num_replicas == 0:
        changes["num_replicas"] = 1
    elif cfg.num_replicas > MAX_REPLICAS:
        raise invalid(f"maximum replicas is {MAX_REPLICAS}")
    elif cfg.num_replicas < 0:
        raise fail(E.JSReplicasCountCannotBeNegative)
    for field in ("max_msgs", "max_msgs_per_subject", "max_bytes", "max_msg_size", "max_consumers"):
        value = getattr(cfg, field)
        if value == 0 or value < -1:
            if pedantic and value < -1:
                raise fail(E.JSPedanticErrF, err=f"{field} must be set to -1")
            changes[field] = -1
    if cfg.max_age < 0:
        raise invalid("max age can not be negative")
    if 0 < cfg.max_age < MIN_WINDOW:
        raise invalid("max age needs to be >= 100ms")


def _check_duplicate_window(cfg: StreamConfig, pedantic: bool, changes: dict[str, object]) -> None:
    """The duplicate window: its default (2 min, or max_age when shorter) and bounds."""
    duplicates = cfg.duplicate_window
    if duplicates == 0 and cfg.mirror is None and not cfg.sources:
        if cfg.max_age != 0 and cfg.max_age < DEFAULT_DUPLICATE_WINDOW:
            if pedantic:
                raise fail(E.JSPedanticErrF, err="duplicate window cannot be bigger than max age")
            duplicates = cfg.max_age
        else:
            duplicates = DEFAULT_DUPLICATE_WINDOW
        changes["duplicate_window"] = duplicates
    if duplicates < 0:
        raise invalid("duplicates window can not be negative")
    if cfg.max_age != 0 and duplicates > cfg.max_age:
        raise invalid("duplicates window can not be larger then max age")
    if 0 < duplicates < MIN_WINDOW:
        raise invalid("duplicates window needs to be >= 100ms")


def _check_features(cfg: StreamConfig, changes: dict[str, object]) -> None:
    """Roll-ups, counters, discard new per subject, subject delete markers, schedules, and the
    persist mode: what each needs of the rest of the config."""
    if cfg.deny_purge and cfg.allow_rollup_hdrs:
        raise invalid("roll-ups require the purge permission")
    max_per = changes.get("max_msgs_per_subject", cfg.max_msgs_per_subject)
    if cfg.allow_msg_counter:
        if cfg.discard == DiscardPolicy.NEW:
            raise invalid("counter stream cannot use discard new")
        if cfg.allow_msg_ttl:
            raise invalid("counter stream cannot use message TTLs")
        if cfg.allow_msg_schedules:
            raise invalid("counter stream cannot use message schedules")
        if cfg.retention != RetentionPolicy.LIMITS:
            raise invalid("counter stream can only use limits retention")
    if cfg.discard_new_per_subject:
        if cfg.discard != DiscardPolicy.NEW:
            raise invalid("discard new per subject requires discard new policy to be set")
        if not isinstance(max_per, int) or max_per <= 0:
            raise invalid("discard new per subject requires max msgs per subject > 0")
    _check_markers(cfg, changes)
    if cfg.allow_msg_schedules:
        if cfg.discard == DiscardPolicy.NEW:
            raise invalid("message scheduling cannot use discard new")
        if not cfg.allow_rollup_hdrs and not changes.get("allow_rollup_hdrs"):
            changes["allow_rollup_hdrs"] = True
            changes["deny_purge"] = False
    if cfg.persist_mode == PersistMode.ASYNC:
        # ADR-56: acknowledged before it is flushed, which only a single file-backed copy
        # without all-or-nothing batches can honour (checked before replicas > 1 on a single server).
        if cfg.storage != StorageType.FILE:
            raise invalid("async persist mode is only supported on file storage")
        if cfg.num_replicas > 1:
            raise invalid("async persist mode is not supported on replicated streams")
        if cfg.allow_atomic:
            raise invalid("async persist mode is not supported with atomic batch publish")


def _check_markers(cfg: StreamConfig, changes: dict[str, object]) -> None:
    """The subject delete marker TTL; nats-server turns on what markers need (refused only in
    pedantic mode)."""
    sdm_ttl = cfg.subject_delete_marker_ttl
    if sdm_ttl > 0:
        if sdm_ttl < NS:
            raise invalid("subject delete marker TTL must be at least 1 second")
        if not cfg.allow_msg_ttl:
            changes["allow_msg_ttl"] = True
        if not cfg.allow_rollup_hdrs:
            changes["allow_rollup_hdrs"] = True
            changes["deny_purge"] = False
    elif sdm_ttl < 0:
        raise invalid("subject delete marker TTL must not be negative")


def _check_subjects_and_placement(
    cfg: StreamConfig, pedantic: bool, changes: dict[str, object], max_bytes_limits: MaxBytesRule
) -> None:
    """The subjects (the name by default, none on a mirror), the account's max_bytes rule, the
    input transform, republish and placement."""
    subjects = list(cfg.subjects)
    if not subjects:
        if cfg.mirror is None and not cfg.sources:
            subjects = [cfg.name]
            changes["subjects"] = subjects
    else:
        if cfg.mirror is not None:
            raise fail(E.JSMirrorWithSubjectsErr)
        _check_subjects(subjects, cfg.no_ack, changes.get("num_replicas", cfg.num_replicas))
    _check_account_max_bytes(msgspec.structs.replace(cfg, **changes) if changes else cfg, max_bytes_limits)
    if cfg.subject_transform is not None:
        _check_transform(cfg.subject_transform.src, cfg.subject_transform.dest, subjects)
    if cfg.republish is not None:
        changes["republish"] = _check_republish(cfg, subjects, pedantic)
    placement = cfg.placement
    if placement is not None and not placement.cluster and placement.tags is None and not placement.preferred:
        changes["placement"] = None  # an empty placement object is dropped (an explicit "tags": [] is not)
    elif placement is not None and placement.preferred:  # 2.12+: "for now" refused (checkStreamCfg)
        raise invalid("preferred server not permitted in placement")
    elif placement is not None and placement.tags == []:
        changes["placement"] = msgspec.structs.replace(placement, tags=None)  # omitempty shows no tags


def check_sourcing(cfg: StreamConfig, streams: StreamLookup, pedantic: bool = False) -> dict[str, object]:
    """The mirror and source checks of ``checkStreamCfg``, in its order; returns the config
    changes (a mirror of a visible stream inherits its ``allow_direct`` as ``mirror_direct``).

    nats-server 2.9.10's checks, plus 2.10's for names, duplicate sources, ``first_seq`` and
    subject transforms. Since 2.9 a mirror may have a filter, start sequence *and* time, and a
    duplicate window (the old 10032/10033 and "do not make use of a de-duplication window"
    refusals are gone), and the origin need not exist yet. As in 2.9.10 an origin named with an
    ``external`` API prefix is looked up among our streams too (2.10 skips that, as the name may
    be another domain's; on a single node every origin reachable is one of ours).
    """
    changes: dict[str, object] = {}
    found = _Origins()
    if cfg.mirror is not None:
        _check_mirror(cfg, cfg.mirror, streams, pedantic, changes, found)
    if cfg.sources and cfg.allow_msg_schedules:
        raise fail(E.JSSourceWithMsgSchedulesErr)
    _check_sources(cfg, streams, found)
    for prefix in found.deliver_prefixes:
        if not is_valid_publish_subject(prefix):
            raise fail(E.JSStreamInvalidExternalDeliverySubjErrF, prefix=prefix)
        for subject in found.subjects:
            if subjects_overlap(subject, f"{prefix}.{subject}"):
                raise fail(E.JSStreamExternalDelPrefixOverlapsErrF, prefix=prefix, subject=subject)
    for prefix in found.api_prefixes:
        if not is_valid_publish_subject(prefix):
            raise invalid(f'stream external api prefix "{prefix}" must be a valid subject without wildcards')
        if subjects_overlap(prefix, JS_API_PREFIX):
            raise fail(E.JSStreamExternalApiOverlapErrF, prefix=prefix, subject=JS_API_PREFIX)
    _check_cycles(cfg, streams)
    return changes


class _Origins:
    """What the mirror and source checks gather for the checks after them: the subjects of the
    origins found, the external deliver and API prefixes."""

    def __init__(self) -> None:
        self.subjects: list[str] = []
        self.deliver_prefixes: list[str] = []
        self.api_prefixes: list[str] = []


def _check_mirror(
    cfg: StreamConfig,
    mirror: StreamSource,
    streams: StreamLookup,
    pedantic: bool,
    changes: dict[str, object],
    found: _Origins,
) -> None:
    """A mirror's checks: what a mirror cannot have, its consumer, filters and transforms, and
    its origin when it is one of ours."""
    if cfg.first_seq:
        raise fail(E.JSMirrorWithFirstSeqErr)
    if cfg.subjects:
        raise fail(E.JSMirrorWithSubjectsErr)
    if cfg.sources:
        raise fail(E.JSMirrorWithSourcesErr)
    if cfg.allow_msg_counter:
        raise fail(E.JSMirrorWithCountersErr)
    if cfg.allow_atomic:
        raise fail(E.JSMirrorWithAtomicPublishErr)
    if cfg.allow_batched:
        raise fail(E.JSMirrorWithBatchPublishErr)
    if cfg.allow_msg_schedules:
        raise fail(E.JSMirrorWithMsgSchedulesErr)
    if mirror.consumer is not None and not _consumer_source_ok(mirror):
        raise fail(E.JSMirrorDurableConsumerCfgInvalid)
    if mirror.filter_subject and mirror.subject_transforms:
        raise fail(E.JSMirrorMultipleFiltersNotAllowed)
    if cfg.subject_delete_marker_ttl > 0:
        raise invalid("subject delete markers forbidden on mirrors")
    _check_source_transforms(mirror, is_mirror=True)
    if mirror.external is not None:
        _gather_prefixes(mirror, found.deliver_prefixes, found.api_prefixes)
        return
    if not is_valid_name(mirror.name):
        raise fail(E.JSMirrorInvalidStreamName)
    # The origin need not exist; when it does, its sizes and direct gets count.
    origin = streams(mirror.name)
    if origin is not None:
        found.subjects.extend(origin.subjects)
        if 0 < cfg.max_msg_size and 0 < origin.max_msg_size and cfg.max_msg_size < origin.max_msg_size:
            raise fail(E.JSMirrorMaxMessageSizeTooBigErr)
        if pedantic and cfg.mirror_direct != origin.allow_direct:
            raise fail(E.JSPedanticErrF, err="origin stream has direct get set, mirror has it disabled")
        changes["mirror_direct"] = origin.allow_direct


def _check_sources(cfg: StreamConfig, streams: StreamLookup, found: _Origins) -> None:
    """Each source's checks: its name, no duplicate, filters and transforms, its consumer, and
    its origin when it is one of ours."""
    if not cfg.sources:
        return
    # Deferred: a start with no mirror or source does not import sourcing.py (issue 24).
    from pyjetstream.server.jetstream.sourcing import consumer_index_name, index_name

    inames: set[str] = set()
    cnames: set[str] = set()
    for src in cfg.sources:
        if not is_valid_name(src.name):
            raise fail(E.JSSourceInvalidStreamName)
        iname = index_name(src)
        if iname in inames:
            raise fail(E.JSSourceDuplicateDetected)
        inames.add(iname)
        if src.filter_subject and src.subject_transforms:
            raise fail(E.JSSourceMultipleFiltersNotAllowed)
        _check_source_transforms(src, is_mirror=False)
        if src.consumer is not None:
            if not _consumer_source_ok(src):
                raise fail(E.JSSourceDurableConsumerCfgInvalid)
            cname = consumer_index_name(src)
            if cname in cnames:
                raise fail(E.JSSourceDurableConsumerDuplicateDetected)
            cnames.add(cname)
        if src.external is not None:
            _gather_prefixes(src, found.deliver_prefixes, found.api_prefixes)
            continue
        origin = streams(src.name)
        if origin is not None:
            found.subjects.extend(origin.subjects)
            if 0 < cfg.max_msg_size and 0 < origin.max_msg_size and cfg.max_msg_size < origin.max_msg_size:
                raise fail(E.JSSourceMaxMessageSizeTooBigErr)


def _consumer_source_ok(src: StreamSource) -> bool:
    """⟨2.14⟩ ``StreamSource.consumer``: a valid name, a literal deliver subject, no start or filter."""
    consumer = src.consumer
    assert consumer is not None
    return (
        is_valid_name(consumer.name)
        and is_valid_publish_subject(consumer.deliver_subject)
        and not src.opt_start_seq
        and src.opt_start_time is None
        and not src.filter_subject
    )


def _gather_prefixes(src: StreamSource, deliver: list[str], api: list[str]) -> None:
    assert src.external is not None
    if src.external.deliver:
        deliver.append(src.external.deliver)
    if src.external.api:
        api.append(src.external.api)


def _check_source_transforms(src: StreamSource, is_mirror: bool) -> None:
    """⟨2.10⟩ A mirror's or source's subject transforms: valid, and filters that do not overlap."""
    transforms = src.subject_transforms
    for t in transforms:
        if t.src and not is_valid_subject(t.src):
            bad = E.JSMirrorInvalidSubjectFilter if is_mirror else E.JSSourceInvalidSubjectFilter
            raise fail(bad, err=f"invalid subject {t.src}")
        if t.dest:
            try:
                validate_mapping(t.src, t.dest)  # nats-server ValidateMapping
            except TransformError as exc:
                bad = (
                    E.JSMirrorInvalidTransformDestination
                    if is_mirror
                    else E.JSSourceInvalidTransformDestination
                )
                raise fail(bad, err=str(exc)) from exc
    for i, a in enumerate(transforms):
        for j, b in enumerate(transforms):
            if i == j:
                continue
            # nats-server: SubjectsCollide for a mirror's filters, subset match for a source's.
            if is_mirror and subjects_overlap(a.src or ">", b.src or ">"):
                raise fail(E.JSMirrorOverlappingSubjectFilters)
            if not is_mirror and is_subset(a.src or ">", b.src or ">"):
                raise fail(E.JSSourceOverlappingSubjectFilters)


def _check_cycles(cfg: StreamConfig, streams: StreamLookup) -> None:
    """nats-server's cycle check: follow sources and mirrors (not external ones) from ``cfg``; a
    source back to a visited stream is a cycle when its filter overlaps that stream's subjects, a
    mirror of a visited stream always is."""
    to_visit = [cfg]
    visited: set[str] = set()
    while to_visit:
        current = to_visit.pop(0)
        visited.add(current.name)
        for src in current.sources:
            if src.external is not None:
                continue
            if src.name in visited:
                if not src.filter_subject or any(
                    subjects_overlap(s, src.filter_subject) for s in current.subjects
                ):
                    raise invalid("detected cycle")
            else:
                other = streams(src.name)
                if other is not None:
                    to_visit.append(other)
        mirror = current.mirror
        if mirror is not None and mirror.external is None:
            if mirror.name in visited:
                raise invalid("detected cycle")
            other = streams(mirror.name)
            if other is not None:
                to_visit.append(other)


def _check_account_max_bytes(cfg: StreamConfig, max_bytes_limits: MaxBytesRule) -> None:
    """checkStreamCfg on the account's limits: max_bytes required (10113), and within the
    largest one stream of its storage may have (10122)."""
    required, largest = max_bytes_limits(cfg)
    if required and cfg.max_bytes <= 0:
        raise fail(E.JSStreamMaxBytesRequired)
    if largest > 0 and cfg.max_bytes > largest:
        raise fail(E.JSStreamMaxStreamBytesExceeded)


def _check_subjects(subjects: list[str], no_ack: bool, replicas: object) -> None:
    """Each subject valid, no duplicates, ``>`` and the API spaces only with ``no_ack``, and no
    two overlapping (nats-server 2.15 order)."""
    seen: set[str] = set()
    for i, subject in enumerate(subjects):
        if not is_valid_subject(subject):
            raise invalid("invalid subject")
        if subject in seen:
            raise invalid("duplicate subjects detected")
        if subject == ">":
            if not no_ack:
                raise invalid("capturing all subjects requires no-ack to be true")
            if replicas != 1:
                raise invalid("capturing all subjects requires replicas of 1")
        if not no_ack:
            for namespace in ("$JS.>", "$JSC.>", "$NRG.>"):
                # An exception for $JS.EVENT.>, which older servers allowed.
                if subjects_overlap(subject, namespace) and not is_subset(subject, "$JS.EVENT.>"):
                    raise invalid("subjects that overlap with jetstream api require no-ack to be true")
            if subjects_overlap(subject, "$SYS.>") and not is_subset(subject, "$SYS.ACCOUNT.>"):
                raise invalid("subjects that overlap with system api require no-ack to be true")
        for other in subjects[i + 1 :]:
            if subjects_overlap(other, subject):
                raise invalid(f"subject {go_quote(subject)} overlaps with {go_quote(other)}")  # Go's %q
        seen.add(subject)


def _check_transform(src: str, dest: str, subjects: Iterable[str]) -> None:
    if src and not is_valid_subject(src):
        raise fail(E.JSStreamTransformInvalidSource, err=f"invalid subject {src}")
    if not dest:
        return
    try:
        validate_mapping(src, dest)  # nats-server ValidateMapping
    except TransformError as exc:
        raise fail(E.JSStreamTransformInvalidDestination, err=str(exc)) from exc


def _check_republish(cfg: StreamConfig, subjects: list[str], pedantic: bool) -> object:
    """nats-server 2.15: an empty source means ``>``; ``>`` to ``>`` behind a one-subject transform
    republishes the transformed subjects; the destination must not feed the stream back."""
    republish = cfg.republish
    assert republish is not None
    src, dest = republish.src, republish.dest
    if not src:
        if pedantic:
            raise fail(E.JSPedanticErrF, err="republish source can not be empty")
        src = ">"
    transform = cfg.subject_transform
    if dest == ">" and src == ">" and transform is not None and len(subjects) == 1 and transform.src == subjects[0]:
        if pedantic:
            raise fail(E.JSPedanticErrF, err="implicit republish based on subject transform")
        src = dest = transform.dest
    if dest and any(subjects_overlap(dest, s) for s in subjects):
        raise invalid("stream configuration for republish destination forms a cycle")
    try:
        if dest:
            SubjectTransform.compile(src, dest)
    except TransformError as exc:
        raise invalid(f"stream configuration for republish with transform from '{src}' to '{dest}' not valid") from exc
    return msgspec.structs.replace(republish, src=src, dest=dest)


def check_stream_update(old: StreamConfig, new: StreamConfig) -> StreamConfig:
    """Validate an update of ``old`` to ``new`` (already defaulted); return the config to apply
    (nats-server 2.15 ``configUpdateCheck``, after ``checkStreamCfg``). Replicas > 1 is refused by
    the caller, right after the name check."""
    if new.storage != old.storage:
        raise invalid("stream configuration update can not change storage type")
    if new.retention != old.retention and RetentionPolicy.WORKQUEUE in (old.retention, new.retention):
        raise invalid("stream configuration update can not change retention policy to/from workqueue")
    if old.sealed and not new.sealed:
        raise invalid("stream configuration update can not unseal a sealed stream")
    if old.deny_delete and not new.deny_delete:
        raise invalid("stream configuration update can not cancel deny message deletes")
    if old.deny_purge and not new.deny_purge:
        raise invalid("stream configuration update can not cancel deny purge")
    # Removing the mirror promotes the stream (2.12+); changing it is refused.
    if new.mirror is not None and new.mirror != old.mirror:
        raise fail(E.JSStreamMirrorNotUpdatableErr)
    if old.allow_msg_ttl and not new.allow_msg_ttl:
        raise invalid("message TTL status can not be disabled")
    if new.allow_msg_counter != old.allow_msg_counter:
        raise invalid("stream configuration update can not change message counter setting")
    if old.allow_msg_schedules and not new.allow_msg_schedules:
        raise invalid("message schedules can not be disabled")
    if old.persist_mode != new.persist_mode:
        raise invalid("stream configuration update can not change persist mode")
    if new.sealed:
        # A sealed stream keeps everything forever and refuses every change to its contents.
        new = msgspec.structs.replace(
            new,
            max_age=0,
            discard=DiscardPolicy.NEW,
            deny_delete=True,
            deny_purge=True,
            allow_rollup_hdrs=False,
        )
    return new
