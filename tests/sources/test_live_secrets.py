"""A cluster's Secrets and ConfigMaps are read as far as the analysis needs them, never further (issue 34, 2).

`examples/gateway/tls` applied to a cluster is healthy: every listener Programmed, curl gets 200. Read back,
the Gateway analysis needs each certificate Secret's type and ``tls.crt``, and the ConfigMaps its
``caCertificateRefs`` name (``partner-ca``, ``shop-ca``); read as names only it reported 6 false ERRORs and
``route --protocol https`` said no-listener. A private key (``tls.key``) never reaches the analysis, an
output or a JSON answer. The cluster is tests/fakeapi.py, read through ``--kubeconfig``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import EXAMPLES
from tests.fakeapi import GROUPS, FakeAPI, fake_api, kubeconfig_for, snapshot_of
from tests.helpers import knetsim_raising as knetsim

from knetsim import Cluster
from knetsim.model.loader import load_paths
from knetsim.model.withheld import WITHHELD_ANNOTATION

TLS = EXAMPLES / "gateway" / "tls"


def _cluster_objects() -> list[dict[str, Any]]:
    """What an API server holds after `kubectl apply -f examples/gateway/tls`: the controllers' objects (pods,
    slices, the Envoy proxy) and every applied object, each with a uid."""
    objects = snapshot_of([str(TLS)])
    have = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}
    for doc in load_paths([str(TLS)]).documents:
        body = json.loads(json.dumps(doc.body))
        key = (body["kind"], body["metadata"].get("namespace", ""), body["metadata"]["name"])
        if key not in have:
            body["metadata"]["uid"] = f"uid-{body['kind']}-{body['metadata']['name']}"
            body["metadata"]["resourceVersion"] = "7"
            if body["kind"] == "Secret" and "stringData" in body:  # the server stores stringData as data
                body["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in body.pop("stringData").items()}
            objects.append(body)
    return objects


def _private_keys(objects: list[dict[str, Any]]) -> list[str]:
    """The private keys of the cluster's Secrets, as PEM text and as the base64 the API carries."""
    out = []
    for o in objects:
        if o["kind"] == "Secret" and "tls.key" in (o.get("data") or {}):
            out.append(o["data"]["tls.key"])
            out.append(base64.b64decode(o["data"]["tls.key"]).decode().splitlines()[1])  # a line of the PEM body
    return out


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return _cluster_objects()


@pytest.fixture
def kind(tmp_path: Path, objects: list[dict[str, Any]]) -> Iterator[tuple[FakeAPI, str]]:
    groups = {**GROUPS, "gateway.networking.k8s.io": ["v1"]}
    with fake_api(objects, token="", groups=groups) as api:
        path = tmp_path / "config"
        path.write_text(yaml.safe_dump(kubeconfig_for(api.url, {})))
        yield api, str(path)



def test_a_healthy_https_gateway_read_live_has_no_error_and_routes_https(kind: tuple[FakeAPI, str]) -> None:
    _, kubeconfig = kind
    doctor = knetsim("doctor", "--kubeconfig", kubeconfig)
    offline = knetsim("doctor", "-f", str(TLS))
    assert doctor.exit_code == 0, doctor.output
    assert "must be of type kubernetes.io/tls" not in doctor.output
    assert "not found" not in doctor.output
    assert doctor.output.splitlines()[-1] == offline.output.splitlines()[-1]  # 0 error(s), as offline
    route = knetsim("route", "--gateway", "edge/edge", "--protocol", "https", "--host", "www.shop.example",
                    "--kubeconfig", kubeconfig)
    assert route.exit_code == 0, route.output
    assert "Certificate: CN=shop.example" in route.output and "from Secret edge/shop-cert, covers the SNI" \
        in route.output


def test_only_the_config_maps_the_analysis_names_are_read(kind: tuple[FakeAPI, str]) -> None:
    api, kubeconfig = kind
    Cluster.from_kubeconfig(kubeconfig)
    config_maps = sorted(r.path for r in api.requests if "/configmaps" in r.path)
    assert config_maps == ["/api/v1/namespaces/edge/configmaps/partner-ca",
                           "/api/v1/namespaces/edge/configmaps/shop-ca",
                           "/api/v1/namespaces/kube-system/configmaps/coredns",
                           "/api/v1/namespaces/kube-system/configmaps/kube-proxy"]


def test_no_private_key_reaches_the_analysis_or_any_output(kind: tuple[FakeAPI, str],
                                                            objects: list[dict[str, Any]]) -> None:
    _, kubeconfig = kind
    keys = _private_keys(objects)
    assert len(keys) >= 8
    cluster = Cluster.from_kubeconfig(kubeconfig)
    secrets = [o.raw for (k, _), o in cluster.state.others.items() if k == "Secret"]
    assert secrets and all(s["data"]["tls.key"] == "" for s in secrets if "tls.key" in s.get("data", {}))
    assert all(s["metadata"]["annotations"][WITHHELD_ANNOTATION] == "tls.key" for s in secrets
               if s.get("type") == "kubernetes.io/tls")
    assert all(s["data"]["tls.crt"] for s in secrets if s.get("type") == "kubernetes.io/tls")
    outputs = [knetsim("get", "secrets", "-A", "-o", "json", "--kubeconfig", kubeconfig).output,
               knetsim("get", "secrets", "-A", "-o", "yaml", "--kubeconfig", kubeconfig).output,
               knetsim("doctor", "-o", "json", "--kubeconfig", kubeconfig).output,
               knetsim("route", "--gateway", "edge/edge", "--protocol", "https", "--host", "www.shop.example",
                       "-o", "json", "--kubeconfig", kubeconfig).output,
               repr(cluster.state.others), json.dumps([d.body for d in cluster.documents])]
    for text in outputs:
        assert not [k for k in keys if k in text]


def test_a_secret_read_whole_from_a_manifest_still_has_its_pair_checked(tmp_path: Path) -> None:
    """Withholding is the cluster reader's: a manifest's tls.key that does not match its tls.crt is still found."""
    secrets = yaml.safe_load_all((TLS / "secrets.yaml").read_text())
    docs = [d for d in secrets if d]
    tls = [d for d in docs if d.get("type") == "kubernetes.io/tls"]
    tls[0]["data"]["tls.key"], tls[1]["data"]["tls.key"] = tls[1]["data"]["tls.key"], tls[0]["data"]["tls.key"]
    swapped = tmp_path / "tls"
    swapped.mkdir()
    for name in ("edge.yaml", "workloads.yaml"):
        (swapped / name).write_text((TLS / name).read_text())
    (swapped / "secrets.yaml").write_text(yaml.safe_dump_all(docs))
    doctor = knetsim("doctor", "-f", str(swapped))
    assert "private key does not match public key" in doctor.output
