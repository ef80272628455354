"""The ``accounts {}`` block: accounts with their users, JetStream limits and connection limits."""

from __future__ import annotations

import os

from pyjetstream.api.jwt import JWTError, verify
from pyjetstream.protocol.subjects import is_subset, is_valid_publish_subject, is_valid_subject
from pyjetstream.server.conf.converters import (
    Invalid,
    as_bool,
    as_duration,
    as_enabled,
    as_int,
    as_list,
    as_map,
    as_str,
    as_strings,
    go_type,
)
from pyjetstream.server.conf.mapping_auth import AuthKeys, apply_default_permissions, valid_public_nkey
from pyjetstream.server.conf.mapping_base import Handler
from pyjetstream.server.conf.mapping_subjects import parse_mappings
from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.conf.parser import go_os_error
from pyjetstream.server.options import Account, AccountExport, AccountImport, AccountJetStreamLimits

_RESPONSE_TYPES = ("singleton", "stream", "chunked")


def _export(item: Node) -> AccountExport:
    """``{stream: subj}`` or ``{service: subj, response_type, response_threshold}``, + ``accounts``."""
    entries = as_map(item, "exports")
    kind = "stream" if "stream" in entries else "service" if "service" in entries else ""
    if not kind:
        raise Invalid(item, "Expected a stream or service export")
    subject = as_str(entries[kind], kind)
    if not is_valid_subject(subject):
        raise Invalid(entries[kind], f'Invalid subject "{subject}" for {kind} export')
    export = AccountExport(kind=kind, subject=subject)
    if "accounts" in entries:
        export.accounts = as_strings(entries["accounts"], "accounts")
    if "response_type" in entries or "response" in entries:
        node = entries.get("response_type") or entries["response"]
        rt = as_str(node, "response_type").lower()
        if kind != "service" or rt not in _RESPONSE_TYPES:
            raise Invalid(node, f'Unknown response type: "{rt}"')
        export.response_type = rt
    if "response_threshold" in entries:
        export.response_threshold = as_duration(entries["response_threshold"], "response_threshold")
    if "allow_trace" in entries:
        if kind != "service":
            raise Invalid(entries["allow_trace"], "Detected allow_trace directive on non-service")
        export.allow_trace = as_bool(entries["allow_trace"], "allow_trace")
    return export


def _import(item: Node) -> AccountImport:
    """``{stream|service: {account, subject}, to|prefix, allow_trace, share}``."""
    entries = as_map(item, "imports")
    kind = "stream" if "stream" in entries else "service" if "service" in entries else ""
    if not kind:
        raise Invalid(item, "Expected a stream or service import")
    source = as_map(entries[kind], kind)
    if "account" not in source or "subject" not in source:
        raise Invalid(entries[kind], f"Expect an account name and a subject for {kind} import")
    imp = AccountImport(
        kind=kind, account=as_str(source["account"], "account"), subject=as_str(source["subject"], "subject")
    )
    if "to" in entries:
        imp.to = as_str(entries["to"], "to")
    if "prefix" in entries:
        imp.prefix = as_str(entries["prefix"], "prefix")
    if "allow_trace" in entries:
        if kind != "stream":
            raise Invalid(entries["allow_trace"], "Detected allow_trace directive on a non-stream")
        imp.allow_trace = as_bool(entries["allow_trace"], "allow_trace")
    if "share" in entries:  # nats-server parseImportStreamOrService: ``mv.(bool)``, kept for services only
        node = entries["share"]
        if not isinstance(node.value, bool):
            raise Invalid(node, f"interface conversion: interface {{}} is {go_type(node.value)}, not bool")
        imp.share = kind == "service" and node.value
    return imp


def _msg_trace(acc: Account, key: str, node: Node) -> None:
    """``msg_trace: "dest"`` or ``msg_trace { dest, sampling }`` (nats-server
    ``parseAccountMsgTrace``, its error texts included); a destination without a sampling
    traces every sampled ``traceparent``."""

    def dest(n: Node, k: str) -> None:
        if not isinstance(n.value, str):
            raise Invalid(n, f'Field "{k}" should be a string, got {_go_type(n.value)}')
        if not is_valid_publish_subject(n.value):
            raise Invalid(n, f'Trace destination "{n.value}" is not valid')
        acc.msg_trace_dest = n.value

    def sampling(n: int, at: Node) -> None:
        if n <= 0 or n > 100:
            raise Invalid(at, f"Ttrace destination sampling value {n} is invalid, needs to be [1..100]")
        acc.msg_trace_sampling = n

    value = node.value
    if isinstance(value, str):
        dest(node, key)
    elif isinstance(value, dict):
        for k, n in value.items():
            lk = k.lower()
            if lk == "dest":
                dest(n, k)
            elif lk == "sampling":
                v = n.value
                if isinstance(v, int) and not isinstance(v, bool):
                    sampling(v, n)
                elif isinstance(v, str):
                    text = v.removesuffix("%")
                    try:
                        number = int(text)
                    except ValueError:
                        raise Invalid(n, f'Invalid trace destination sampling value "{v}"') from None
                    sampling(number, n)
                else:
                    raise Invalid(
                        n,
                        f'Trace destination sampling field "{k}" should be an integer or a percentage, '
                        f"got {_go_type(v)}",
                    )
            elif not n.used:
                raise Invalid(n, f'Unknown field "{k}" parsing account message trace map/struct "{key}"')
    else:
        raise Invalid(node, f'Expected account message trace "{key}" to be a string or a map/struct, got {_go_type(value)}')
    if acc.msg_trace_dest and not acc.msg_trace_sampling:
        acc.msg_trace_sampling = 100


def _go_type(value: object) -> str:
    """The Go type nats-server's config parser gives a value (for its ``%T`` error texts)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def check_imports(accounts: list[Account]) -> list[tuple[Account, AccountImport, str]]:
    """Imports naming an unknown account or a subject not exported to the importer
    (nats-server refuses to start: ``Error adding stream import "x": stream import not authorized``)."""
    by_name = {a.name: a for a in accounts}
    problems = []
    for account in accounts:
        for imp in account.imports:
            exporter = by_name.get(imp.account)
            if exporter is None:
                problems.append((account, imp, f'"{imp.account}" account not defined for {imp.kind} import'))
                continue
            allowed = any(
                e.kind == imp.kind
                and is_subset(imp.subject, e.subject)
                and (not e.accounts or account.name in e.accounts)
                for e in exporter.exports
            )
            if not allowed:
                problems.append(
                    (account, imp, f'Error adding {imp.kind} import "{imp.subject}": {imp.kind} import not authorized')
                )
    return problems


def _account_nkey(node: Node, key: str) -> str:
    # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
    import nkeys

    value = node.value
    if not isinstance(value, str) or not valid_public_nkey(value, nkeys.PREFIX_BYTE_ACCOUNT):
        raise Invalid(node, f'Not a valid public nkey for an account: "{value}"')
    return value


def _js_limit(node: Node, key: str) -> int:
    if not isinstance(node.value, int) or isinstance(node.value, bool):
        raise Invalid(node, f'Expected a parseable size for "{key}", got {node.value}')
    return node.value


def _js_flag(node: Node, key: str) -> bool:
    if not isinstance(node.value, bool):
        raise Invalid(node, f'Expected a parseable bool for "{key}", got {node.value}')
    return node.value


def _cluster_traffic(node: Node, key: str) -> str:
    value = node.value
    if not isinstance(value, str):
        raise Invalid(node, f"Expected either 'system' or 'owner' string value for \"{key}\", got {value}")
    if value not in ("system", "", "owner"):
        raise Invalid(node, f"Expected 'system' or 'owner' string value for \"{key}\", got {value}")
    return value


_ACCOUNT_JS_LIMITS: dict[str, Handler] = {
    "max_memory|max_mem|mem|memory": ("max_memory", _js_limit),
    "max_store|max_file|max_disk|store|disk": ("max_store", _js_limit),
    "max_streams|streams": ("max_streams", _js_limit),
    "max_consumers|consumers": ("max_consumers", _js_limit),
    "max_ack_pending": ("max_ack_pending", _js_limit),
    "max_bytes_required|max_stream_bytes|max_bytes": ("max_bytes_required", _js_flag),
    "mem_max_stream_bytes|memory_max_stream_bytes": ("memory_max_stream_bytes", _js_limit),
    "disk_max_stream_bytes|store_max_stream_bytes": ("store_max_stream_bytes", _js_limit),
    "cluster_traffic": ("cluster_traffic", _cluster_traffic),
}
_ACCOUNT_LIMITS: dict[str, Handler] = {
    "max_connections|max_conn": ("max_connections", as_int),
    "max_subscriptions|max_subs": ("max_subscriptions", as_int),
    "max_payload|max_pay": ("max_payload", as_int),
    "max_leafnodes|max_leafs": ("max_leafnodes", as_int),
}


def _read_jwt(node: Node, text: str, base_dir: str) -> str:
    """An inline JWT, or a file holding one (plain or between ``-----BEGIN …-----`` lines)."""

    if text.count(".") == 2 and " " not in text and not os.path.exists(os.path.join(base_dir, text)):
        return text
    path = text if os.path.isabs(text) else os.path.join(base_dir, text)
    try:
        with open(path, encoding="utf-8") as fh:
            content = fh.read()
    except OSError as exc:
        raise Invalid(node, f"error parsing operator JWT: {go_os_error(exc, text)}") from None
    for line in content.splitlines():
        line = line.strip()
        if line.count(".") == 2 and not line.startswith("-"):
            return line
    raise Invalid(node, f"error parsing operator JWT: no JWT found in {text}")


class AccountKeys(AuthKeys):
    """``accounts``: a list of names, or a map of accounts with users, limits and JetStream;
    ``operator``, ``resolver`` and ``resolver_preload`` of operator (JWT) mode."""

    def operator(self, key: str, node: Node) -> None:


        base_dir = os.path.dirname(os.path.abspath(self.filename)) if self.filename else os.getcwd()
        items = node.value if isinstance(node.value, list) else [node]
        for item in items:
            token = _read_jwt(item, as_str(item, key), base_dir)
            try:
                verify(token, "operator")
            except JWTError as exc:
                raise Invalid(item, f"error parsing operator JWT: {exc}") from None
            self.o.operator_jwts.append(token)

    def resolver(self, key: str, node: Node) -> None:
        o = self.o
        if isinstance(node.value, str):
            kind = node.value.strip().upper()
            if kind != "MEMORY":
                raise Invalid(node, f'resolver "{node.value}" is not supported by pyjetstream (MEMORY or a "full" directory)')
            o.resolver = "MEMORY"
            return
        entries = as_map(node, key)
        kind = as_str(entries["type"], "type").lower() if "type" in entries else "full"
        if kind not in ("full", "cache"):
            raise Invalid(node, f"resolver type {kind} is not supported by pyjetstream")
        o.resolver = "FULL"
        if "dir" in entries:
            o.resolver_dir = as_str(entries["dir"], "dir")
        if "allow_delete" in entries:
            o.resolver_allow_delete = bool(entries["allow_delete"].value)

    def resolver_preload(self, key: str, node: Node) -> None:
        if not isinstance(node.value, dict):
            raise Invalid(node, "preload should be a map of account_public_key:account_jwt")
        for pub, jwt_node in as_map(node, key).items():
            self.o.resolver_preload[pub] = as_str(jwt_node, pub)

    def accounts(self, key: str, node: Node) -> None:
        o = self.o
        if isinstance(node.value, list):
            for item in node.value:
                name = as_str(item, key)
                if name == "$G":
                    self.error(item, '"$G" is a Reserved Account')
                elif any(a.name == name for a in o.accounts):
                    self.error(item, f"Duplicate Account Entry: {name}")
                else:
                    o.accounts.append(Account(name=name))
            return
        seen: set[str] = {u.username for u in o.users} | {n.nkey for n in o.nkeys}
        for name, acc_node in as_map(node, key).items():
            if acc_node.used:  # a variable defined in the accounts block
                continue
            if not isinstance(acc_node.value, dict):
                self.error(acc_node, "Expected map entries for accounts")
                continue
            if name == "$G":
                self.error(acc_node, '"$G" is a Reserved Account')
                continue
            try:
                account = self.account(name, acc_node.value)
            except Invalid as exc:
                self.errors.append(self.issue(exc.node, exc.message))
                continue
            o.accounts.append(account)
            for user in account.users:
                if user.username in seen:
                    self.error(acc_node, f'Duplicate user "{user.username}" detected')
                else:
                    seen.add(user.username)
                    o.users.append(user)
            for nk in account.nkeys:
                if nk.nkey in seen:
                    self.error(acc_node, f'Duplicate nkey "{nk.nkey}" detected')
                else:
                    seen.add(nk.nkey)
                    o.nkeys.append(nk)
        for _account, _imp, message in check_imports(o.accounts):
            self.error(node, message)

    def account(self, name: str, entries: dict[str, Node]) -> Account:
        acc = Account(name=name)

        def users(k: str, n: Node) -> None:
            acc.users, acc.nkeys = self.users(n, k, account=name)

        def jetstream(k: str, n: Node) -> None:
            acc.jetstream = as_enabled(n, k) if not isinstance(n.value, dict) else True
            if acc.jetstream:
                acc.jetstream_limits = AccountJetStreamLimits()
            if isinstance(n.value, dict):
                self.each(n.value, _ACCOUNT_JS_LIMITS, acc.jetstream_limits)

        def limits(k: str, n: Node) -> None:
            self.each(as_map(n, k), _ACCOUNT_LIMITS, acc.limits)

        def exports(k: str, n: Node) -> None:
            for item in as_list(n, k):
                acc.exports.append(_export(item))

        def imports(k: str, n: Node) -> None:
            for item in as_list(n, k):
                acc.imports.append(_import(item))

        def msg_trace(k: str, n: Node) -> None:
            _msg_trace(acc, k, n)

        def mappings(k: str, n: Node) -> None:
            acc.mappings.update(parse_mappings(self, n))

        spec: dict[str, Handler] = {
            "nkey": ("nkey", _account_nkey),
            "users": users,
            "jetstream": jetstream,
            "default_permissions": ("default_permissions", self.permissions),
            "limits": limits,
            "exports": exports,
            "imports": imports,
            "mappings|maps": mappings,
            "msg_trace|trace_dest": msg_trace,
        }
        self.each(entries, spec, acc)
        if acc.default_permissions is not None:
            apply_default_permissions(acc.users, acc.nkeys, acc.default_permissions)
        return acc
