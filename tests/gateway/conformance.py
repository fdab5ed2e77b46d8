"""The conformance scenarios of the TLS, gRPC, TCP/UDP, ListenerSet and BackendTLSPolicy profiles, as data.

A scenario file (``data/conformance-*.yaml``) lists scenarios, each transcribed from kubernetes-sigs/
gateway-api v1.6.1 ``conformance/tests/<source>.yaml`` (the objects) and ``.go`` (what is expected),
re-typed for knetsim: the objects keep what the scenario needs and default to the namespace
gateway-conformance-infra; the base is conformance-base.yaml plus conformance-base-tls.yaml, and the
certificates and CA bundles the suite makes in code (``conformance/utils/suite/suite.go``) are made
here, with the same names and subject names.

A request row: ``protocol`` (http, https, grpc, tls, tcp, udp; default http), ``host``, ``path``,
``method``, ``headers``, ``port``, ``sni``, ``grpc`` (``Service/Method``), ``tls`` (gRPC over TLS),
``client_cert`` (a certificate made here), ``gateway``; then what is expected: ``backend`` (a Service,
in the infra namespace unless ns/name), ``status`` (the proxy's own HTTP status), ``outcome``,
``grpc_status``, ``certificate`` (the served certificate's CN), ``metadata`` (upstream gRPC metadata),
``backend_verified`` and ``backend_client_certificate`` (the CN the proxy presents to a TLS backend).

A status row: ``gateway`` (+ ``listener``), ``listenerset`` (+ ``listener``), ``route`` with its
``kind``, or ``policy`` with its ``ancestor`` Gateway; conditions as ``Type: [status, reason]``, plus
``attachedRoutes``, ``attachedListenerSets``, ``supportedKinds``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from knetsim import Cluster
from knetsim.gateway import route, status_of
from knetsim.gateway.grpc import call_from, route_grpc
from knetsim.gateway.streams import route_stream
from knetsim.model.http import HTTPRequest

from . import certgen

DATA = Path(__file__).parent / "data"
INFRA = "gateway-conformance-infra"
APP = "gateway-conformance-app-backend"
WEB = "gateway-conformance-web-backend"


@cache
def authorities() -> dict[str, certgen.Issued]:
    """The CAs and client certificates the suite makes (client certificates are issued by their CA)."""
    validity = certgen.ca("tls-validity-checks-ca")
    per_port = certgen.ca("tls-validity-checks-per-port-ca")
    checks = certgen.ca("tls-checks-ca")
    return {
        "validity-ca": validity, "per-port-ca": per_port, "checks-ca": checks,
        "web-backend-ca": certgen.ca("web-backend-ca"), "mismatch-ca": certgen.ca("mismatch-ca"),
        "validity-client": certgen.leaf("validity-client", [], validity, client=True),
        "per-port-client": certgen.leaf("per-port-client", [], per_port, client=True),
        "checks-client": certgen.leaf("checks-client", [], checks, client=True),
        "stranger-client": certgen.leaf("stranger-client", []),
    }


@cache
def programmatic() -> tuple[dict[str, Any], ...]:
    """suite.go's "programmatic resources": serving certificates, CA ConfigMaps and client certificates."""
    a = authorities()
    checks = a["checks-ca"]
    return (
        certgen.tls_secret(WEB, "certificate", certgen.leaf("certificate", ["*"])),
        certgen.tls_secret(INFRA, "tls-validity-checks-certificate",
                           certgen.leaf("tls-validity-checks", ["*", "*.org", "*.wildcard.org"])),
        certgen.ca_configmap(WEB, "web-backend-cm", a["web-backend-ca"]),
        certgen.ca_configmap(INFRA, "tls-validity-checks-ca-certificate", a["validity-ca"]),
        certgen.tls_secret(INFRA, "tls-validity-checks-client-certificate", a["validity-client"]),
        certgen.ca_configmap(INFRA, "tls-validity-checks-per-port-ca-certificate", a["per-port-ca"]),
        certgen.tls_secret(INFRA, "tls-validity-checks-per-port-client-certificate", a["per-port-client"]),
        certgen.ca_configmap(INFRA, "tls-checks-ca-certificate", checks),
        certgen.tls_secret(INFRA, "tls-checks-certificate",
                           certgen.leaf("tls-checks", ["abc.example.com", "other.example.com"], checks,
                                        uris=("spiffe://abc.example.com/test-identity",))),
        certgen.tls_secret(INFRA, "tls-checks-client-certificate", a["checks-client"]),
        certgen.tls_secret(INFRA, "tls-passthrough-checks-certificate",
                           certgen.leaf("tls-passthrough-checks", ["abc.example.com"], checks)),
        certgen.tls_secret(APP, "tls-passthrough-checks-certificate",
                           certgen.leaf("tls-passthrough-checks-app", ["abc.example.com"], checks)),
        certgen.tls_secret(INFRA, "tls-terminate-checks-certificate",
                           certgen.leaf("tls-terminate-checks", ["tls.example.com"], checks)),
        certgen.ca_configmap(INFRA, "mismatch-ca-certificate", a["mismatch-ca"]),
    )


@cache
def scenarios(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((DATA / f"conformance-{name}.yaml").read_text(encoding="utf-8"))


@cache
def cluster(file: str, name: str) -> Cluster:
    scenario = next(s for s in scenarios(file) if s["name"] == name)
    text = "\n---\n".join([(DATA / "conformance-base.yaml").read_text(encoding="utf-8"),
                           (DATA / "conformance-base-tls.yaml").read_text(encoding="utf-8"),
                           yaml.safe_dump_all(programmatic()), scenario.get("manifests") or ""])
    return Cluster.from_yaml(text, namespace=INFRA, filename=f"{name}.yaml")


def key(name: str) -> str:
    return name if "/" in name else f"{INFRA}/{name}"


def ask(c: Cluster, gateway: str, row: dict[str, Any]) -> Any:
    """Send one request row through ``gateway``; the result of the protocol's router."""
    protocol = row.get("protocol", "http")
    chain = [authorities()[row["client_cert"]].cert] if row.get("client_cert") else None
    headers = tuple((str(k), str(v)) for k, v in (row.get("headers") or {}).items())
    if protocol in ("http", "https"):
        request = HTTPRequest(str(row.get("host", "gw.example")), row.get("path", "/"), row.get("method", "GET"),
                              protocol, row.get("port"), headers)
        return route(c.state, gateway, request, sni=row.get("sni"), client_chain=chain)
    if protocol == "grpc":
        call = call_from(str(row.get("host", "grpc.example")), row["grpc"], metadata=headers, port=row.get("port"),
                         tls=bool(row.get("tls")))
        return route_grpc(c.state, gateway, call, sni=row.get("sni"), client_chain=chain)
    return route_stream(c.state, gateway, protocol, int(row["port"]), sni=row.get("sni"), client_chain=chain,
                        client=str(row.get("client", "")))


def check_request(c: Cluster, gateway: str, row: dict[str, Any]) -> None:
    result = ask(c, gateway, row)
    why = result.summary
    if "backend" in row:
        assert result.outcome == "proxied", why
        assert result.backend is not None and result.backend.service == key(row["backend"]), why
    if "outcome" in row:
        assert result.outcome == row["outcome"], why
    if "status" in row:
        assert result.http_status == row["status"], why
    if "grpc_status" in row:
        assert result.grpc_status == row["grpc_status"], why
    if "certificate" in row:
        assert result.tls is not None and result.tls.certificate is not None, why
        assert result.tls.certificate.subject == f"CN={row['certificate']}", result.tls
    if "covers_sni" in row:
        assert result.tls is not None and result.tls.covers_sni is row["covers_sni"], result.tls
    if "alert" in row:
        assert result.tls is not None and result.tls.alert == row["alert"], result.tls
    for name, value in (row.get("metadata") or {}).items():
        assert result.upstream_metadata.get(name) == value, result.upstream_metadata
    for name in row.get("metadata_absent") or []:
        assert name not in result.upstream_metadata, result.upstream_metadata
    if "backend_verified" in row:
        assert result.backend_tls is not None and result.backend_tls.verdict.ok is row["backend_verified"], why
    if "backend_client_certificate" in row:
        presented = result.backend_tls.client_certificate if result.backend_tls is not None else None
        assert presented is not None and presented.subject == f"CN={row['backend_client_certificate']}", why


def _conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


CONDITION_TYPES = ("Accepted", "Programmed", "ResolvedRefs", "Conflicted", "PartiallyInvalid",
                   "OverlappingTLSConfig", "InsecureFrontendValidationMode")


def _check_conditions(found: dict[str, dict[str, Any]], row: dict[str, Any], generation: int) -> None:
    for ctype in CONDITION_TYPES:
        if ctype not in row:
            continue
        want = row[ctype]
        if want is None:
            assert ctype not in found, (ctype, found)
            continue
        assert ctype in found, (ctype, found)
        assert found[ctype]["status"] == str(want[0]), (ctype, found[ctype])
        if len(want) > 1:
            assert found[ctype]["reason"] == want[1], (ctype, found[ctype])
        # The conformance helpers compare observedGeneration with metadata.generation exactly.
        assert found[ctype]["observedGeneration"] == generation, found[ctype]


def check_status(c: Cluster, row: dict[str, Any]) -> None:
    state = c.state
    if "route" in row:
        kind = row.get("kind", "HTTPRoute")
        obj = next(o for o in state.objects_of(kind) if o.key == key(row["route"]))
        status = status_of(state, obj)
        assert status is not None, f"{kind} {row['route']} has no status"
        gw = key(row["gateway"])
        parents = [p for p in status["parents"] if p["parentRef"]["name"] == gw.split("/")[1]
                   and p["parentRef"]["kind"] == row.get("parent_kind", "Gateway")]
        assert parents, status
        ref = parents[0]["parentRef"]
        assert ref["group"] == "gateway.networking.k8s.io", ref
        _check_conditions(_conditions(parents[0]), row, obj.generation)  # type: ignore[attr-defined]
        return
    if "policy" in row:
        obj = state.backend_tls_policies[key(row["policy"])]
        status = status_of(state, obj)
        assert status is not None, f"BackendTLSPolicy {row['policy']} has no status"
        ancestors = [a for a in status["ancestors"] if a["ancestorRef"]["name"] == key(row["ancestor"]).split("/")[1]]
        assert ancestors, status
        _check_conditions(_conditions(ancestors[0]), row, obj.generation)
        return
    if "listenerset" in row:
        ls = state.listener_sets[key(row["listenerset"])]
        status = status_of(state, ls)
        assert status is not None, f"ListenerSet {row['listenerset']} has no status"
        target, generation = status, ls.generation
    else:
        gw_obj = state.gateways[key(row["gateway"])]
        status = status_of(state, gw_obj)
        assert status is not None
        target, generation = status, gw_obj.generation
        if "attachedListenerSets" in row:
            assert status.get("attachedListenerSets", 0) == row["attachedListenerSets"], status
    if "listener" not in row:
        _check_conditions(_conditions(target), row, generation)
        return
    listener = next((li for li in target["listeners"] if li["name"] == row["listener"]), None)
    assert listener is not None, target["listeners"]
    if "attachedRoutes" in row:
        assert listener["attachedRoutes"] == row["attachedRoutes"], listener
    if "supportedKinds" in row:
        assert [k["kind"] for k in listener["supportedKinds"]] == row["supportedKinds"], listener
    _check_conditions(_conditions(listener), row, generation)
