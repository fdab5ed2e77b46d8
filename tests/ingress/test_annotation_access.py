"""Access annotations: source ranges with the client address, basic auth from a Secret, auth-url, satisfy.

Address plan: clients 10.1.2.3 (inside 10.0.0.0/8), 203.0.113.10 (the default external client),
198.51.100.7 (a proxy in front of the controller). Given one protected Ingress, then each client
gets what ingress-nginx's generated location gives it: 403, 401 with its challenge, the auth
service's answer, or the backend.
"""

from __future__ import annotations

import base64

import pytest
from passlib import hash as passlib_hash
from tests.ingress.builders import (
    cluster,
    controller_configmap,
    httpbin,
    ingress,
    opaque_secret,
    path,
    rule,
    service,
)

from knetsim.ingress import route


def _protected(annotations: dict[str, str], *extra):  # type: ignore[no-untyped-def]
    return cluster(service("a"), *extra, ingress("i", rule("p.example", path("/", "Prefix", "a")),
                                                 annotations=annotations)).state


# --- source ranges ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("annotations", "client", "status"), [
    ({"whitelist-source-range": "10.0.0.0/8"}, "10.1.2.3", None),
    ({"whitelist-source-range": "10.0.0.0/8"}, "203.0.113.10", 403),
    ({"whitelist-source-range": "10.0.0.0/8, 203.0.113.10"}, "203.0.113.10", None),  # entries are trimmed
    ({"allowlist-source-range": "10.0.0.0/8"}, "203.0.113.10", 403),  # the current name
    ({"denylist-source-range": "10.0.0.0/8"}, "10.1.2.3", 403),
    ({"denylist-source-range": "10.0.0.0/8"}, "203.0.113.10", None),
    # deny rules are written first: an address on both lists is denied
    ({"whitelist-source-range": "10.0.0.0/8", "denylist-source-range": "10.1.0.0/16"}, "10.1.2.3", 403),
    ({"whitelist-source-range": "10.1.2.3/8"}, "10.9.9.9", None),  # host bits are cleared, as Go's ParseCIDR does
])
def test_source_ranges(annotations: dict[str, str], client: str, status: int | None) -> None:
    result = route(_protected(annotations), "p.example", "/", client_ip=client)
    assert result.http_status == status, result.summary
    if status == 403:
        assert result.outcome == "denied" and "403 Forbidden" in result.response.body


def test_an_unparsable_source_range_denies_every_location_with_503() -> None:
    # ipallowlist: "the annotation does not contain a valid IP address or network" → LocationDenied → return 503.
    result = route(_protected({"whitelist-source-range": "10.0.0.0/8,not-an-ip"}), "p.example", "/",
                   client_ip="10.1.2.3")
    assert (result.outcome, result.http_status) == ("denied", 503)


def test_x_forwarded_for_counts_only_with_use_forwarded_headers() -> None:
    ann = {"whitelist-source-range": "10.0.0.0/8"}
    forwarded = (("X-Forwarded-For", "10.1.2.3"),)
    without = route(_protected(ann), "p.example", "/", client_ip="198.51.100.7", headers=forwarded)
    assert without.http_status == 403
    state = _protected(ann, controller_configmap(use_forwarded_headers="true"))
    with_it = route(state, "p.example", "/", client_ip="198.51.100.7", headers=forwarded)
    assert with_it.routed and with_it.http_status is None
    assert with_it.upstream_request.headers["x-real-ip"] == "10.1.2.3"
    # realip walks X-Forwarded-For from the right; every proxy is trusted (proxy-real-ip-cidr 0.0.0.0/0).
    chain = route(state, "p.example", "/", client_ip="198.51.100.7",
                  headers=(("X-Forwarded-For", "10.1.2.3, 203.0.113.99"),))
    assert chain.upstream_request.headers["x-real-ip"] == "10.1.2.3"


def test_the_configmap_source_range_applies_unless_the_annotation_replaces_it() -> None:
    cm = controller_configmap(whitelist_source_range="10.0.0.0/8")
    assert route(_protected({}, cm), "p.example", "/", client_ip="203.0.113.10").http_status == 403
    override = _protected({"whitelist-source-range": "203.0.113.0/24"}, cm)
    assert route(override, "p.example", "/", client_ip="203.0.113.10").routed


# --- basic auth ------------------------------------------------------------------------------------


def _basic(credentials: str | None, htpasswd: str, **more: str) -> tuple[int | None, dict[str, str]]:
    state = _protected({"auth-type": "basic", "auth-secret": "basic-auth", "auth-realm": "Staff only", **more},
                       opaque_secret("basic-auth", auth=htpasswd))
    headers = (("Authorization", "Basic " + base64.b64encode(credentials.encode()).decode()),) if credentials else ()
    result = route(state, "p.example", "/", headers=headers)
    return result.http_status, dict(result.response.headers) if result.response else \
        dict(result.upstream_request.headers)


@pytest.mark.parametrize("scheme", ["apr_md5_crypt", "bcrypt", "sha512_crypt", "sha256_crypt", "md5_crypt",
                                    "ldap_sha1", "ldap_salted_sha1", "des_crypt"])
def test_basic_auth_reads_the_htpasswd_formats(scheme: str) -> None:
    hashed = getattr(passlib_hash, scheme).hash("s3cret")
    status, headers = _basic("alice:s3cret", f"alice:{hashed}\n")
    assert status is None and headers["authorization"] == ""  # proxied, without the client's Authorization
    assert _basic("alice:wrong", f"alice:{hashed}\n")[0] == 401


def test_basic_auth_challenge_and_plain_passwords() -> None:
    status, headers = _basic(None, "bob:{PLAIN}pw\n")
    assert status == 401 and headers["WWW-Authenticate"] == 'Basic realm="Staff only"'
    assert _basic("bob:pw", "bob:{PLAIN}pw\n")[0] is None
    assert _basic("bob:pw", "bob:pw\n")[0] == 401  # a bare password is read as a crypt() hash, which it is not


def test_basic_auth_map_secret() -> None:
    state = _protected({"auth-type": "basic", "auth-secret": "users", "auth-secret-type": "auth-map"},
                       opaque_secret("users", carol=passlib_hash.apr_md5_crypt.hash("pw")))
    token = base64.b64encode(b"carol:pw").decode()
    assert route(state, "p.example", "/", headers=(("Authorization", f"Basic {token}"),)).routed


@pytest.mark.parametrize(("annotations", "why"), [
    ({"auth-type": "basic", "auth-secret": "missing"}, "not found"),
    ({"auth-type": "basic"}, "error reading secret name"),
    ({"auth-type": "basic", "auth-secret": "other/basic-auth"}, "cross namespace"),
])
def test_basic_auth_without_a_usable_secret_denies_the_location(annotations: dict[str, str], why: str) -> None:
    result = route(_protected(annotations, opaque_secret("basic-auth", auth="u:{PLAIN}p")), "p.example", "/")
    assert (result.outcome, result.http_status) == ("denied", 503)
    assert any(why in n for n in result.notes)


# --- auth-url ----------------------------------------------------------------------------------------


AUTH = "http://httpbin.default.svc.cluster.local"


@pytest.mark.parametrize(("url", "status", "outcome"), [
    (f"{AUTH}/status/200", None, "routed"),
    (f"{AUTH}/status/204", None, "routed"),
    (f"{AUTH}/status/401", 401, "unauthorized"),
    (f"{AUTH}/status/403", 403, "denied"),
    (f"{AUTH}/status/500", 500, "auth-error"),  # any other answer is an error: 500
    (f"{AUTH}/status/302", 500, "auth-error"),
    ("http://httpbin.default/status/401", 401, "unauthorized"),  # service.namespace resolves too
    ("http://nothing.default.svc.cluster.local/", 500, "auth-error"),  # no such Service: the subrequest fails
])
def test_auth_url_is_a_subrequest_answered_by_the_auth_service(url: str, status: int | None, outcome: str) -> None:
    result = route(_protected({"auth-url": url}, httpbin()), "p.example", "/")
    assert (result.http_status, result.outcome) == (status, outcome), result.summary


def test_auth_url_service_without_endpoints_is_a_500() -> None:
    result = route(_protected({"auth-url": f"{AUTH}/status/200"}, httpbin(ready=False)), "p.example", "/")
    assert result.http_status == 500


def test_auth_signin_turns_401_into_a_redirect_to_the_sign_in_page() -> None:
    state = _protected({"auth-url": f"{AUTH}/status/401", "auth-signin": "https://login.example/start"}, httpbin())
    result = route(state, "p.example", "/orders?id=7")
    assert result.http_status == 302
    assert result.redirect == "https://login.example/start?rd=http://p.example%2Forders%3Fid%3D7"


def test_auth_service_checking_basic_credentials() -> None:
    state = _protected({"auth-url": f"{AUTH}/basic-auth/u/p"}, httpbin())
    assert route(state, "p.example", "/").http_status == 401
    token = base64.b64encode(b"u:p").decode()
    assert route(state, "p.example", "/", headers=(("Authorization", f"Basic {token}"),)).routed


def test_an_invalid_auth_url_refuses_the_ingress() -> None:
    result = route(_protected({"auth-url": "http://auth.example/check#frag"}, httpbin()), "p.example", "/")
    assert result.outcome == "not-found"
    assert any(c.verdict == "rejected" for c in result.candidates)


def test_an_auth_url_without_scheme_denies_the_location() -> None:
    result = route(_protected({"auth-url": "httpbin.default/status/200"}, httpbin()), "p.example", "/")
    assert (result.outcome, result.http_status) == ("denied", 503)


# --- satisfy ---------------------------------------------------------------------------------------


def test_satisfy_any_lets_an_allowed_address_skip_authentication() -> None:
    ann = {"whitelist-source-range": "10.0.0.0/8", "auth-type": "basic", "auth-secret": "basic-auth"}
    secret = opaque_secret("basic-auth", auth="u:{PLAIN}p")
    assert route(_protected(ann, secret), "p.example", "/", client_ip="10.1.2.3").http_status == 401
    anyof = _protected({**ann, "satisfy": "any"}, secret)
    assert route(anyof, "p.example", "/", client_ip="10.1.2.3").routed
    assert route(anyof, "p.example", "/", client_ip="203.0.113.10").http_status == 401


def test_the_source_range_is_checked_before_authentication() -> None:
    ann = {"whitelist-source-range": "10.0.0.0/8", "auth-type": "basic", "auth-secret": "basic-auth"}
    result = route(_protected(ann, opaque_secret("basic-auth", auth="u:{PLAIN}p")), "p.example", "/",
                   client_ip="203.0.113.10")
    assert result.http_status == 403
