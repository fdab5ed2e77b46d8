"""``auth-url``, restated from kubernetes/ingress-nginx ``test/e2e/annotations/auth.go`` (``Describe("[Annotations]
auth-*")``, context "when external authentication with caching is configured" / "when external authentication
is configured"): the auth service is httpbun/httpbin, whose ``/basic-auth/user/password`` answers 200 to the
right credentials and 401 otherwise.

Given an Ingress with ``auth-url`` (and ``auth-signin``), then a signed-in request reaches the backend and
one without credentials is redirected to the sign-in URL. Given an auth service knetsim cannot run (an image it
does not know, or a host outside the cluster), then the answer says that the auth verdict is unknown — a caveat
on the answer — instead of presenting a 200 the service never gave.
"""

from __future__ import annotations

import base64

from tests.ingress.builders import cluster, httpbin, ingress, path, rule, service

from knetsim.ingress import route

HOST = "auth.example.com"
SIGNIN = "http://auth.example.com/auth/start"
USER = ("Authorization", "Basic " + base64.b64encode(b"user:password").decode())


def _state(auth_url: str, *extra):  # type: ignore[no-untyped-def]
    annotations = {"auth-url": auth_url, "auth-signin": SIGNIN}
    return cluster(service("app"), *extra, ingress("auth", rule(HOST, path("/", "Prefix", "app")),
                                                    annotations=annotations)).state


def test_should_return_status_code_200_when_signed_in() -> None:
    state = _state("http://httpbin.default.svc.cluster.local/basic-auth/user/password", httpbin())
    result = route(state, HOST, "/", headers=(USER,))
    assert result.routed and result.backend is not None and result.backend.service == "default/app", result.summary
    assert not any(n.startswith("unverified") for n in result.notes)


def test_should_redirect_to_signin_url_when_not_signed_in() -> None:
    state = _state("http://httpbin.default.svc.cluster.local/basic-auth/user/password", httpbin())
    result = route(state, HOST, "/")
    assert result.http_status == 302, result.summary
    assert result.redirect is not None and result.redirect.startswith(SIGNIN + "?rd=")


def _unknown_auth_pod() -> list[dict]:
    """An auth Service whose pods run an image knetsim has no program for (a company's own auth service)."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "authz", "namespace": "default"},
           "spec": {"selector": {"app": "authz"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "authz-0", "namespace": "default",
                                                          "labels": {"app": "authz"}},
           "spec": {"containers": [{"name": "authz", "image": "registry.example.com/acme/authz:3.1",
                                    "ports": [{"containerPort": 8080}]}]}}
    return [svc, pod]


def test_an_auth_service_knetsim_cannot_run_is_said_to_be_unknown_on_the_answer() -> None:
    state = _state("http://authz.default.svc.cluster.local/check", *_unknown_auth_pod())
    result = route(state, HOST, "/")
    # The request is followed as if allowed (the only way to show the rest), and the answer says it is assumed.
    assert result.routed, result.summary
    assert "unverified" in result.summary and "unverified" in result.answer().explanation
    [caveat] = [n for n in result.notes if n.startswith("unverified")]
    assert "authz" in caveat and "does not know" in caveat and "401 or 403" in caveat
    assert any(s.what == "auth-url" and "unknown" in s.effect for s in result.steps)


def test_an_auth_url_outside_the_cluster_is_said_to_be_unknown() -> None:
    state = _state("https://auth.partner.example/verify")
    result = route(state, HOST, "/")
    assert result.routed and "unverified" in result.summary
    assert any("auth.partner.example" in n and "cannot ask" in n for n in result.notes)


def test_an_auth_service_without_endpoints_is_still_a_500_not_a_caveat() -> None:
    """A known failure stays an answer: nothing accepts the subrequest, auth_request answers 500."""
    state = _state("http://authz.default.svc.cluster.local/check", _unknown_auth_pod()[0])
    result = route(state, HOST, "/")
    assert result.http_status == 500 and "unverified" not in result.summary
