"""The ``authorization {}`` block: single user, token, users and nkeys, permissions."""

from __future__ import annotations

import base64
import binascii
import re

from pyjetstream.server.conf.converters import (
    Invalid,
    as_duration,
    as_int,
    as_list,
    as_map,
    as_str,
    as_strings,
    go_value,
)
from pyjetstream.server.conf.mapping_base import BlockMapper, Fields, Handler
from pyjetstream.server.conf.nodes import Node, plain
from pyjetstream.server.conf.units import parse_duration
from pyjetstream.server.options import (
    CONNECTION_TYPES,
    NkeyUser,
    Permissions,
    ResponsePermission,
    SubjectPermission,
    User,
)


def _connection_types(node: Node, key: str) -> list[str]:
    types = [t.upper() for t in as_strings(node, key)]
    for t in types:
        if t not in CONNECTION_TYPES:
            unknown = ", ".join(f'"{u}"' for u in types if u not in CONNECTION_TYPES)
            raise Invalid(node, f"invalid connection types [{unknown}]")  # nats-server's %q of a list
    return types


def _unknown_permission(key: str, node: Node) -> None:
    """nats-server parseSubjectPermissions: an error whether or not the file is strict."""
    if not node.used:
        raise Invalid(
            node,
            f'Unknown field name "{key}" parsing subject permissions, only \'allow\' or \'deny\' are permitted',
        )


def _subject_list(node: Node, key: str, queue_ok: bool) -> list[str]:
    subjects = as_strings(node, key)
    for subject in subjects:
        parts = subject.split()
        ok = _valid_subject(subject) or (queue_ok and len(parts) == 2 and _valid_subject(parts[0]))
        if not ok:
            raise Invalid(node, f'subject "{subject}" is not a valid subject')
    return subjects


_SUBJECT_TOKEN = re.compile(r"[^\s.]+")


def _valid_subject(subject: str) -> bool:
    """A subject or wildcard ('>' only last), checked as nats-server checks permission subjects."""
    if not subject or any(c.isspace() for c in subject):
        return False
    tokens = subject.split(".")
    for i, token in enumerate(tokens):
        if not _SUBJECT_TOKEN.fullmatch(token):
            return False
        if token == ">" and i != len(tokens) - 1:
            return False
    return True


def valid_public_nkey(key: str, prefix: int) -> bool:
    """A public nkey of the given kind (user, account), with a correct checksum."""
    try:
        raw = base64.b32decode(key + "=" * (-len(key) % 8))
    except (binascii.Error, ValueError):
        return False
    if len(raw) != 35 or raw[0] != prefix:
        return False
    # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
    import nkeys

    return nkeys.crc16_checksum(raw[:-2]) == raw[-2:]


def apply_default_permissions(users: list[User], nkey_users: list[NkeyUser], perms: Permissions) -> None:
    """Give ``perms`` to every user that has no permissions of its own."""
    for user in users:
        if user.permissions is None:
            user.permissions = perms
    for nk in nkey_users:
        if nk.permissions is None:
            nk.permissions = perms


class AuthKeys(BlockMapper):
    """``authorization``, and the users and permissions that accounts share with it."""

    auth_timeout_set = False  # else a tls {} block sets nats-server's longer default

    def auth_timeout(self, node: Node, key: str, block: str = "authorization") -> float:
        """nats-server parseAuthorization's ``timeout`` (``block`` "leafnode authorization" for
        parseLeafAuthorization's): seconds (integer or float) or a duration string, with its
        texts; above 60 s its warning (often an unquoted ``2m``: two million seconds)."""
        value = node.value
        if isinstance(value, str):
            try:
                seconds = parse_duration(value)
            except ValueError as exc:
                raise Invalid(node, f"error parsing {block} config, 'timeout' {exc}") from None
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            raise Invalid(node, f"error parsing {block} config, 'timeout' wrong type")
        if seconds > 60:
            self.nats_warning(
                node,
                key,
                f"timeout of {go_value(value)} ({seconds:f} seconds) is high, consider keeping it under "
                "60 seconds. possibly caused by unquoted duration; use '1m' instead of 1m, for example",
            )
        return seconds

    def authorization(self, key: str, node: Node) -> None:
        auth = Fields(user="", password="", token="", users=[], nkeys=[], perms=None)

        def timeout(k: str, n: Node) -> None:
            self.o.auth_timeout = self.auth_timeout(n, k)
            self.auth_timeout_set = True

        def users(k: str, n: Node) -> None:
            auth.users, auth.nkeys = self.users(n, k, account="")

        def callout(k: str, n: Node) -> None:
            self.error(n, f'"{k}": auth callout is not supported by pyjetstream')

        spec: dict[str, Handler] = {
            "user|username": ("user", as_str),
            "pass|password": ("password", as_str),
            "token": ("token", as_str),
            "timeout": timeout,
            "users": users,
            "default_permission|default_permissions|permissions": ("perms", self.permissions),
            "auth_callout|callout": callout,
        }
        self.each(as_map(node, key), spec, auth)
        if (auth.user or auth.password) and auth.token:
            raise Invalid(node, "Cannot have a user/pass and token")
        if auth.users or auth.nkeys:
            if auth.user:
                raise Invalid(node, "Can not have a single user/pass and a users array")
            if auth.token:
                raise Invalid(node, "Can not have a token and a users array")
        o = self.o
        o.username, o.password, o.token = auth.user, auth.password, auth.token
        if auth.perms is not None:
            o.default_permissions = auth.perms
            apply_default_permissions(auth.users, auth.nkeys, auth.perms)
        o.users.extend(auth.users)
        o.nkeys.extend(auth.nkeys)

    def users(self, node: Node, key: str, account: str) -> tuple[list[User], list[NkeyUser]]:
        users: list[User] = []
        nkey_users: list[NkeyUser] = []
        spec: dict[str, Handler] = {
            "nkey": ("nkey", as_str),
            "user|username": ("user", as_str),
            "pass|password": ("password", as_str),
            "permission|permissions|authorization": ("perms", self.permissions),
            "allowed_connection_types|_connection_types|clients": ("types", _connection_types),
        }
        for entry in as_list(node, key):
            if not isinstance(entry.value, dict):
                self.error(entry, f"Expected user entry to be a map/struct, got {plain(entry)!r}")
                continue
            f = Fields(nkey="", user="", password="", perms=None, types=None)
            self.each(entry.value, spec, f)
            if not f.nkey and not f.user:
                raise Invalid(entry, "User entry requires a user")
            if not f.nkey:
                users.append(
                    User(
                        username=f.user,
                        password=f.password,
                        permissions=f.perms,
                        account=account,
                        allowed_connection_types=f.types,
                    )
                )
                continue
            # Deferred: start-up time (nkeys loads libsodium's bindings; only nkey and JWT settings need it).
            import nkeys

            if not valid_public_nkey(f.nkey, nkeys.PREFIX_BYTE_USER):
                raise Invalid(entry, "Not a valid public nkey for a user")
            if f.user or f.password:
                raise Invalid(entry, "Nkey users do not take usernames or passwords")
            nkey_users.append(
                NkeyUser(nkey=f.nkey, permissions=f.perms, account=account, allowed_connection_types=f.types)
            )
        return users, nkey_users

    def permissions(self, node: Node, key: str) -> Permissions:
        perms = Permissions()

        def publish(k: str, n: Node) -> None:
            perms.publish = self.subject_permission(n, k, queue_ok=False)

        def subscribe(k: str, n: Node) -> None:
            perms.subscribe = self.subject_permission(n, k, queue_ok=True)

        def responses(k: str, n: Node) -> None:
            if isinstance(n.value, bool):
                perms.response = ResponsePermission() if n.value else None
                return
            if not isinstance(n.value, dict):
                raise Invalid(n, "error parsing response permissions, expected a boolean or a map")
            rp = ResponsePermission()
            spec: dict[str, Handler] = {  # 0 keeps the default; negative means unlimited
                "max|max_msgs|max_messages|max_responses": ("max_msgs", lambda n2, k2: as_int(n2, k2) or 1),
                "expires|expiration|ttl": ("expires", lambda n2, k2: as_duration(n2, k2) or 120.0),
            }
            self.each(n.value, spec, rp)
            perms.response = rp

        spec: dict[str, Handler] = {
            "pub|publish|import": publish,
            "sub|subscribe|export": subscribe,
            "publish_allow_responses|allow_responses": responses,
        }
        self.each(as_map(node, key), spec)
        if perms.response is not None:
            # Responses alone turn the blanket publish allow off.
            perms.publish = perms.publish or SubjectPermission()
            if perms.publish.allow is None:
                perms.publish.allow = []
        return perms

    def subject_permission(self, node: Node, key: str, queue_ok: bool) -> SubjectPermission:
        def subjects(n: Node, k: str) -> list[str]:
            return _subject_list(n, k, queue_ok)

        if not isinstance(node.value, dict):
            return SubjectPermission(allow=subjects(node, key))
        sp = SubjectPermission()
        self.each(node.value, {"allow": ("allow", subjects), "deny": ("deny", subjects)}, sp, _unknown_permission)
        return sp
