"""The real kubectl against the live cluster: ServiceCIDRs and IPAddresses as kubectl lists them, and a
ServiceCIDR's deletion waiting for the addresses it alone holds."""

from __future__ import annotations

import pytest

from .conftest import KUBECTL, Live, wait_for

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def test_get_servicecidrs_and_ipaddresses(live: Live) -> None:
    out = live.kubectl("get", "servicecidrs").stdout.splitlines()
    assert out[0].split() == ["NAME", "CIDRS", "AGE"]
    assert out[1].split()[:2] == ["kubernetes", "10.96.0.0/12"]
    live.kubectl("create", "service", "clusterip", "sticky", "--tcp=80:80", "--clusterip=10.96.0.77")
    rows = wait_for(lambda: [line.split() for line in live.kubectl("get", "ipaddresses").stdout.splitlines()
                             if "10.96.0.77" in line])
    assert rows == [["10.96.0.77", "services/default/sticky"]]
    assert live.kubectl("get", "ip", "10.96.0.1", "-o", "jsonpath={.spec.parentRef.name}").stdout == "kubernetes"


def test_a_service_cidr_grows_the_range_and_its_deletion_waits(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input="apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\n"
                                          "metadata: {name: extra}\nspec: {cidrs: [10.200.0.0/24]}\n")
    wait_for(lambda: live.kubectl("get", "servicecidr", "extra", "-o", "jsonpath={.status.conditions[0].status}")
             .stdout == "True")
    live.kubectl("create", "service", "clusterip", "in-extra", "--tcp=80:80", "--clusterip=10.200.0.9")
    live.kubectl("delete", "servicecidr", "extra", "--wait=false")
    reason = wait_for(lambda: live.kubectl("get", "servicecidr", "extra", "-o",
                                           "jsonpath={.status.conditions[0].reason}").stdout == "Terminating")
    assert reason
    refused = live.kubectl("create", "service", "clusterip", "late", "--tcp=80:80", "--clusterip=10.200.0.10",
                           check=False)
    assert refused.returncode == 1
    assert "failed to allocate IP 10.200.0.10: the provided network does not match the current range" in refused.stderr
    live.kubectl("delete", "service", "in-extra")
    gone = wait_for(lambda: live.kubectl("get", "servicecidr", "extra", check=False).returncode == 1)
    assert gone
