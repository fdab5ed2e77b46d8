"""ingress-nginx's admission webhook on ``kubectl apply`` against ``knetsim up`` (apiserver/registry.py), for
the path rules restated in test_upstream_annotations.py: the default v1.13 controller refuses the "." of
``/.well-known/acme/challenge`` in a Prefix path (kubernetes/ingress-nginx#13798 allowed it in v1.14), and
``strict-validate-path-type: "false"`` in the controller's ConfigMap lets it in."""

from __future__ import annotations

import yaml
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live
from tests.ingress.builders import ingress, path, rule

live = apiserver_conftest.live
ACME = ingress("kube-lego", rule("rewrite.bar.com", path("/.well-known/acme/challenge", "Prefix", "echo")))


def test_a_dot_in_a_prefix_path_is_refused_until_the_configmap_says_otherwise(live: Live) -> None:
    refused = live.kubectl("apply", "-f", "-", input=yaml.safe_dump(ACME), check=False)
    assert refused.returncode != 0
    assert "path /.well-known/acme/challenge cannot be used with pathType Prefix" in refused.stderr
    # The ConfigMap the controller reads (its --configmap, ingress-nginx/ingress-nginx-controller as kind installs it).
    live.kubectl("create", "configmap", "ingress-nginx-controller", "-n", "ingress-nginx",
                 "--from-literal=strict-validate-path-type=false")
    accepted = live.kubectl("apply", "-f", "-", input=yaml.safe_dump(ACME), check=False)
    assert accepted.returncode == 0, accepted.stderr
