"""The registry model: which images a kind node could pull, and what the kubelet says when it cannot.

Given the official library's tags (knetsim/data/registry) and a cluster config, an image is
parsed as containerd parses it and checked; the offline pod status and `knetsim doctor` agree
with the live kubelet (tests/e2e/test_live_tools.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from knetsim.cluster.config import ClusterConfig, ConfigError, config_from_dict
from knetsim.cluster.images import InvalidReference, official_images, parse_reference, pull_error


@pytest.mark.parametrize(("image", "name"), [
    ("nginx", "docker.io/library/nginx:latest"),
    ("nginx:1.27", "docker.io/library/nginx:1.27"),
    ("curlimages/curl:8.5.0", "docker.io/curlimages/curl:8.5.0"),
    ("registry.k8s.io/coredns/coredns:v1.11.3", "registry.k8s.io/coredns/coredns:v1.11.3"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
    ("busybox@sha256:" + "a" * 64, "docker.io/library/busybox@sha256:" + "a" * 64),
])
def test_references_are_normalized_as_containerd_does(image: str, name: str) -> None:
    assert parse_reference(image).name == name


@pytest.mark.parametrize(("image", "message"), [
    ("Nginx:1.27", "invalid reference format: repository name (library/Nginx) must be lowercase"),
    ("nginx:", "invalid reference format"),
    ("web app", "invalid reference format"),
])
def test_malformed_references(image: str, message: str) -> None:
    with pytest.raises(InvalidReference, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_reference(image)


def test_the_official_library_data_knows_the_classics() -> None:
    lib = official_images()
    assert {"1.7.9", "1.27", "latest", "alpine"} <= lib["nginx"]
    assert {"1.36", "latest"} <= lib["busybox"]
    assert "ngnix" not in lib and len(lib) > 150


@pytest.mark.parametrize(("image", "reason", "message"), [
    ("nginx:doesnotexist-xyz", "ErrImagePull",
     'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:doesnotexist-xyz": '
     'failed to resolve reference "docker.io/library/nginx:doesnotexist-xyz": '
     "docker.io/library/nginx:doesnotexist-xyz: not found"),
    ("ngnix:1.27", "ErrImagePull",
     'rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/ngnix:1.27": failed to '
     'resolve reference "docker.io/library/ngnix:1.27": pull access denied, repository does not exist or may '
     "require authorization: server message: insufficient_scope: authorization failed"),
    ("Nginx:1.27", "InvalidImageName",
     'Failed to apply default image tag "Nginx:1.27": couldn\'t parse image name "Nginx:1.27": invalid reference '
     "format: repository name (library/Nginx) must be lowercase"),
])
def test_images_that_cannot_be_pulled(image: str, reason: str, message: str) -> None:
    err = pull_error(image, ClusterConfig())
    assert err is not None and (err.reason, err.message) == (reason, message)


def test_other_registries_are_assumed_present_unless_the_config_says_otherwise() -> None:
    plain = ClusterConfig()
    for image in ("nginx:1.27", "busybox", "ghcr.io/acme/app:7", "acme/app:1", "registry.internal/app:1"):
        assert pull_error(image, plain) is None
    config = config_from_dict({"images": {"unreachableRegistries": ["registry.internal"],
                                          "preloaded": ["acme-local:dev"]}})
    err = pull_error("registry.internal/app:1", config)
    assert err is not None and err.message.endswith(
        'Head "https://registry.internal/v2/app/manifests/1": dial tcp: lookup registry.internal on 172.18.0.1:53: '
        "no such host")
    # `kind load docker-image acme-local:dev`: no pull needed, unless the policy insists.
    assert pull_error("acme-local:dev", config) is None
    assert pull_error("acme-local:dev", config, "Always") is not None
    never = pull_error("nginx:1.27", plain, "Never")
    assert never is not None and never.reason == "ErrImageNeverPull"
    with pytest.raises(ConfigError, match="images: unknown field"):
        config_from_dict({"images": {"preload": []}})


MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.277"}]
"""


def test_offline_get_and_doctor_report_the_pull_failure(tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(MANIFEST)
    knetsim = [sys.executable, "-m", "knetsim.cli.main"]
    got = subprocess.run([*knetsim, "get", "pods", "-f", str(path)], capture_output=True, text=True)
    row = got.stdout.splitlines()[1].split()
    assert row[1:3] == ["0/1", "ErrImagePull"]
    doctor = subprocess.run([*knetsim, "doctor", "-f", str(path)], capture_output=True, text=True)
    assert doctor.returncode == 1
    assert "ImagePullError" in doctor.stdout
    assert "nginx has no tag '1.277' (did you mean '1.27'?)" in doctor.stdout
    assert "fix: kubectl set image deployment/web -n default nginx=nginx:1.27" in doctor.stdout
