"""ingress-nginx's webhook answers by each problem's cause (set where the problem is made), not by the words
of its message: snippets while disabled, annotations over the risk level, values their validator refuses."""

from __future__ import annotations

from typing import Any

from knetsim.cluster.config import ClusterConfig
from knetsim.cluster.state import ClusterState
from knetsim.ingress import webhook
from knetsim.ingress.annotations import parse
from knetsim.ingress.annotations.base import Cause, Effect
from knetsim.ingress.config import DEFAULT, read
from knetsim.model.objects import Ingress

NGINX = "nginx.ingress.kubernetes.io/"


def _ingress(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "default", "annotations": annotations},
            "spec": {"rules": [{"host": "a.example", "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


def _causes(annotations: dict[str, str], configmap: dict[str, str] | None = None) -> list[tuple[Effect, Cause]]:
    config = read(configmap) if configmap is not None else DEFAULT
    parsed = parse(Ingress.parse(_ingress(annotations)), config, ClusterState(ClusterConfig()))
    return [(p.effect, p.cause) for p in parsed.problems]


def test_a_snippet_while_snippets_are_disabled() -> None:
    annotations = {f"{NGINX}configuration-snippet": "return 418;"}
    assert _causes(annotations) == [(Effect.REJECTED, Cause.SNIPPETS_DISABLED)]
    assert webhook.annotation_errors(_ingress(annotations), None) == [
        f"{NGINX}configuration-snippet annotation cannot be used. Snippet directives are disabled by the Ingress "
        "administrator"]


def test_a_snippet_allowed_but_over_the_risk_level() -> None:
    annotations = {f"{NGINX}configuration-snippet": "return 418;"}
    configmap = {"allow-snippet-annotations": "true"}
    assert _causes(annotations, configmap) == [(Effect.REJECTED, Cause.RISKY)]
    assert webhook.annotation_errors(_ingress(annotations), configmap) == [
        "annotation group ConfigurationSnippet contains risky annotation based on ingress configuration"]


def test_a_value_the_validator_refuses() -> None:
    annotations = {f"{NGINX}server-alias": "bad alias!"}
    assert _causes(annotations) == [(Effect.REJECTED, Cause.INVALID_VALUE)]
    assert webhook.annotation_errors(_ingress(annotations), None) == [
        f"annotation {NGINX}server-alias contains invalid value"]


def test_a_denied_location_is_not_the_webhooks() -> None:
    annotations = {f"{NGINX}whitelist-source-range": "10.0.0.0/8,nope"}
    assert _causes(annotations) == [(Effect.DENIED, Cause.LOCATION_DENIED)]
    assert webhook.annotation_errors(_ingress(annotations), None) == []


def test_only_ingresses_with_nginx_annotations_are_checked() -> None:
    assert not webhook.annotated(_ingress({"example.com/owner": "me"}))
    assert webhook.annotated(_ingress({f"{NGINX}rewrite-target": "/"}))
    assert webhook.annotated(_ingress({"custom.prefix/server-snippet": "x"}))  # a snippet under another prefix
    assert not webhook.annotated({"metadata": {"annotations": "not a map"}})
