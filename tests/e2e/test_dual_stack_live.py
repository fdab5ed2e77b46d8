"""A dual-stack cluster from `knetsim up --cluster-config`, driven by the real kubectl and dig.

Given kind's dual-stack shape (`ipFamily: dual`: pods 10.244.0.0/16 + fd00:10:244::/56, Services
10.96.0.0/16 + fd00:10:96::/112), then a PreferDualStack Service gets a ClusterIP of each family and
the live DNS answers both (`dig A` and `dig AAAA`), the outside's names answer AAAA too, and a node's
`ip6tables-save` holds kube-proxy's IPv6 rules for it (what `knetsim render iptables --node` prints for
that family).

Skipped, saying so, where this knetsim's cluster config has no `ipFamily` (no dual-stack clusters).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator

import pytest

from knetsim.cluster.config import ConfigError, config_from_dict

from .conftest import Cluster, dig, running, wait_for

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker}
      containers: [{name: nginx, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ipFamilyPolicy: PreferDualStack
  selector: {app: web}
  ports: [{port: 80}]
"""


def dual_stack_supported() -> bool:
    try:
        config_from_dict({"ipFamily": "dual"})
    except ConfigError:
        return False
    return True


pytestmark = [pytest.mark.live,
              pytest.mark.skipif(not dual_stack_supported(),
                                 reason="this knetsim's cluster config has no ipFamily: no dual-stack clusters")]


@pytest.fixture(scope="module")
def dual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("dual"), "ipFamily: dual\n") as c:
        yield c


def test_a_prefer_dual_stack_service_answers_a_and_aaaa_on_the_live_dns(dual: Cluster) -> None:
    dual.kubectl("apply", "-f", "-", input=APP)
    ips = json.loads(dual.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIPs}").stdout)
    assert [ipaddress.ip_address(ip).version for ip in ips] == [4, 6]
    name = "web.default.svc.cluster.local"
    assert dig(dual, "+short", "A", name).split() == [ips[0]]
    assert dig(dual, "+short", "AAAA", name).split() == [ips[1]]
    assert dig(dual, "+short", "AAAA", "example.com").split() == ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]


def test_the_nodes_ip6tables_hold_the_services_ipv6_rules(dual: Cluster) -> None:
    dual.kubectl("apply", "-f", "-", input=APP)
    assert wait_for(lambda: len(json.loads(dual.kubectl("get", "pods", "-l", "app=web", "-o",
                                                        "jsonpath={.items[0].status.podIPs}").stdout or "[]")) == 2)
    v6 = json.loads(dual.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIPs}").stdout)[1]
    proc = dual.kubectl("debug", "node/worker", "-i", "--image=busybox", "--", "chroot", "/host",
                        "ip6tables-save", "-t", "nat", check=False)
    assert v6 in proc.stdout and "KUBE-SVC-" in proc.stdout
    v4 = dual.kubectl("debug", "node/worker", "-i", "--image=busybox", "--", "chroot", "/host", "iptables-save",
                      check=False).stdout
    assert v6 not in v4
