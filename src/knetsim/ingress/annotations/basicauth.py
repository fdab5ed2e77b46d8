"""Basic authentication from a Secret: ``auth-type: basic``, ``auth-secret``, ``auth-secret-type``, ``auth-realm``.

Parsing is ingress-nginx's ``auth`` parser: without ``auth-type`` the family is absent; the Secret
(``name`` or ``namespace/name``; another namespace only with the ConfigMap's
``allow-cross-namespace-resources``) must exist and hold an ``auth`` key (``auth-file``, an
htpasswd file) — or, with ``auth-secret-type: auth-map``, one key per user whose value is the
password hash. Anything missing denies the location (503). ``auth-type: digest`` needs a module
knetsim does not simulate (reported).

Behaviour: ``auth_basic "<realm>"; auth_basic_user_file <file>;`` then ``proxy_set_header
Authorization ""`` — a request without valid credentials gets 401 with ``WWW-Authenticate: Basic
realm="<realm>"``, a valid one is proxied without its Authorization header. The hash formats are
those nginx's ``ngx_crypt`` reads — ``{PLAIN}``, ``{SHA}``, ``{SSHA}``, ``$apr1$`` — and the C
library's ``crypt()`` for the rest (``$1$``, ``$5$``, ``$6$``, bcrypt ``$2a$``/``$2b$``/``$2y$``,
traditional DES), all checked here with passlib.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from passlib import hash as passlib_hash

from .base import DENIED, IGNORED, REJECTED, Context, FamilyDropped, split_key
from .values import CHARS_WITH_SPACE, MISSING, VALIDATION, matches, options

_TYPE = re.compile(r"basic|digest")  # unanchored, as the parser's authTypeRegex


@dataclass(frozen=True, slots=True)
class BasicAuthConfig:
    type: str  # basic | digest
    realm: str
    secret: str  # namespace/name
    secret_type: str  # auth-file | auth-map
    users: tuple[tuple[str, str], ...]  # (user, hash) in file order


def secret_data(obj_raw: dict, key: str) -> str | None:  # type: ignore[type-arg]
    """A Secret's value for ``key``: stringData as written, data base64-decoded."""
    string_data = obj_raw.get("stringData") or {}
    if isinstance(string_data, dict) and key in string_data:
        return str(string_data[key])
    data = obj_raw.get("data") or {}
    if isinstance(data, dict) and key in data:
        try:
            return base64.b64decode(str(data[key]), validate=False).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    return None


def _secret_keys(obj_raw: dict) -> list[str]:  # type: ignore[type-arg]
    keys = set((obj_raw.get("data") or {}).keys()) | set((obj_raw.get("stringData") or {}).keys())
    return sorted(str(k) for k in keys)


def htpasswd_users(text: str) -> tuple[tuple[str, str], ...]:
    """``user:hash`` lines as nginx reads them (``#`` comments and blank lines skipped)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#") or ":" not in line:
            continue
        user, _, rest = line.partition(":")
        out.append((user, rest.split(":", 1)[0].rstrip("\r")))
    return tuple(out)


def parse(ctx: Context) -> BasicAuthConfig | None:
    r = ctx.reader
    auth_type = r.string("auth-type", matches(_TYPE, remove_space=True))
    if auth_type.error == MISSING:
        return None
    if not auth_type.ok or auth_type.value is None:
        effect = REJECTED if auth_type.error == VALIDATION else IGNORED
        ctx.reported(auth_type, effect, "the Ingress is refused" if effect == REJECTED else "no authentication")
        raise FamilyDropped()
    secret_type = r.string("auth-secret-type", options(("auth-file", "auth-map")))
    if secret_type.error == VALIDATION:
        ctx.reported(secret_type, REJECTED, "the Ingress is refused")
        raise FamilyDropped()
    kind = secret_type.value.strip() if secret_type.ok and secret_type.value else "auth-file"
    secret = r.string("auth-secret")
    if not secret.ok or secret.value is None:
        ctx.reported(secret, DENIED, "error reading secret name from annotation: every location of this Ingress "
                                     "answers 503")
        raise FamilyDropped()
    ns = ctx.ingress.namespace
    key = split_key(secret.value, ns)
    if key is None:
        ctx.report(secret.name, DENIED, f"error reading secret name from annotation: unexpected key format: "
                                        f"{secret.value!r}: every location of this Ingress answers 503")
        raise FamilyDropped()
    if key[0] != ns and not ctx.config.allow_cross_namespace_resources:
        ctx.report(secret.name, DENIED, "cross namespace usage of secrets is not allowed: every location of this "
                                        "Ingress answers 503")
        raise FamilyDropped()
    name = f"{key[0]}/{key[1]}"
    realm = r.string("auth-realm", matches(CHARS_WITH_SPACE))
    if realm.error == VALIDATION:
        ctx.reported(realm, REJECTED, "the Ingress is refused")
        raise FamilyDropped()
    obj = ctx.secret(*key)
    if obj is None:
        ctx.report(secret.name, DENIED, f"unexpected error reading secret {name}: Secret {name} not found (not in "
                                        "the input): every location of this Ingress answers 503")
        raise FamilyDropped()
    if kind == "auth-map":
        users = tuple((user, secret_data(obj.raw, user) or "") for user in _secret_keys(obj.raw))
    else:
        text = secret_data(obj.raw, "auth")
        if text is None:
            ctx.report(secret.name, DENIED, f"the secret {name} does not contain a key with value auth: every "
                                            "location of this Ingress answers 503")
            raise FamilyDropped()
        users = htpasswd_users(text)
    return BasicAuthConfig(auth_type.value.strip(), realm.value or "", name, kind, users)



def _verify(password: str, stored: str) -> bool:
    if stored.startswith("{PLAIN}"):
        return password == stored[7:]
    if stored.startswith("{SHA}"):
        return base64.b64encode(hashlib.sha1(password.encode()).digest()).decode() == stored[5:]
    if stored.startswith("{SSHA}"):
        try:
            raw = base64.b64decode(stored[6:])
        except (binascii.Error, ValueError):
            return False
        digest, salt = raw[:20], raw[20:]
        return hashlib.sha1(password.encode() + salt).digest() == digest
    for scheme in (passlib_hash.apr_md5_crypt, passlib_hash.md5_crypt, passlib_hash.sha256_crypt,
                   passlib_hash.sha512_crypt, passlib_hash.bcrypt, passlib_hash.des_crypt):
        if scheme.identify(stored):
            try:
                return bool(scheme.verify(password, stored))
            except ValueError:
                return False
    return False


def check(config: BasicAuthConfig, authorization: str | None) -> tuple[bool, str]:
    """(allowed, why) for the request's Authorization header."""
    if not authorization:
        return False, "no Authorization header"
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return False, f"Authorization scheme {scheme!r} is not Basic"
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return False, "the Basic credentials are not base64"
    user, sep, password = decoded.partition(":")
    if not sep:
        return False, "the Basic credentials have no ':'"
    stored = next((h for u, h in config.users if u == user), None)
    if stored is None:
        return False, f"user {user!r} is not in Secret {config.secret}"
    if not _verify(password, stored):
        return False, f"password mismatch for user {user!r}"
    return True, f"user {user!r} authenticated against Secret {config.secret}"


def challenge(config: BasicAuthConfig) -> str:
    return f'Basic realm="{config.realm}"'
