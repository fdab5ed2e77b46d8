"""What a container needs from ConfigMaps and Secrets, resolved as the kubelet does (podconfig).

Messages are the kubelet's (kubelet_pods.go makeEnvironmentVariables; pkg/volume/configmap and
secret SetUpAt; the watch-based cache's NotFound with the singular resource name).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from knetsim.kubelet.podconfig import (
    ConfigError,
    config_error,
    container_env,
    expand,
    mount_error,
    mount_message,
    mounted_files,
    references,
    waiting_states,
)

OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("ConfigMap", "default", "cfg"): {"data": {"mode": "fast", "level": "3"}},
    ("Secret", "default", "db"): {"data": {"password": base64.b64encode(b"s3cret").decode()}},
}


def lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    return OBJECTS.get((kind, namespace, name))


def pod(*containers: dict[str, Any], volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u-1", "labels": {"app": "web"}},
            "spec": {"nodeName": "worker", "containers": list(containers), "volumes": volumes or []},
            "status": {"podIP": "10.244.1.5", "hostIP": "172.18.0.3"}}


def env_of(*env: dict[str, Any], env_from: list[dict[str, Any]] | None = None) -> dict[str, str]:
    c = {"name": "app", "image": "busybox", "env": list(env), "envFrom": env_from or []}
    return container_env(pod(c), c, lookup)


def test_env_resolves_literals_references_and_the_downward_api() -> None:
    assert env_of(
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
        {"name": "GREETING", "value": "mode=$(MODE) $$(MODE) $(UNKNOWN)"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    ) == {"MODE": "fast", "PASSWORD": "s3cret", "GREETING": "mode=fast $(MODE) $(UNKNOWN)", "POD": "p",
          "IP": "10.244.1.5", "APP": "web"}


def test_env_from_takes_every_key_with_its_prefix_and_env_overrides_it() -> None:
    assert env_of({"name": "CFG_mode", "value": "slow"},
                  env_from=[{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}, {"secretRef": {"name": "db"}}]) == {
        "CFG_level": "3", "CFG_mode": "slow", "password": "s3cret"}


@pytest.mark.parametrize(("env", "env_from", "message"), [
    ([{"name": "M", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "mode"}}}], [],
     'configmap "nope" not found'),
    ([{"name": "M", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "modee"}}}], [],
     "couldn't find key modee in ConfigMap default/cfg"),
    ([{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "user"}}}], [],
     "couldn't find key user in Secret default/db"),
    ([], [{"secretRef": {"name": "creds"}}], 'secret "creds" not found'),
])
def test_missing_references_fail_in_the_kubelets_words(env: list[dict[str, Any]], env_from: list[dict[str, Any]],
                                                        message: str) -> None:
    c = {"name": "app", "image": "busybox", "env": env, "envFrom": env_from}
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(") + "$"):
        container_env(pod(c), c, lookup)
    assert config_error(pod(c), c, lookup) == message


def test_optional_references_are_skipped() -> None:
    assert env_of({"name": "M", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "m", "optional": True}}},
                  {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k", "optional": True}}},
                  env_from=[{"secretRef": {"name": "creds", "optional": True}}]) == {}


def test_expand_keeps_what_it_cannot_resolve() -> None:
    assert expand("$(A)-$(B)-$$-$(A", {"A": "1"}) == "1-$(B)-$-$(A"


def test_volumes_mount_every_key_or_the_items_and_fail_on_what_is_missing() -> None:
    c = {"name": "app", "image": "busybox", "volumeMounts": [
        {"name": "conf", "mountPath": "/etc/conf"}, {"name": "one", "mountPath": "/etc/one.txt", "subPath": "m"},
        {"name": "sec", "mountPath": "/secrets/"}]}
    volumes = [{"name": "conf", "configMap": {"name": "cfg"}},
               {"name": "one", "configMap": {"name": "cfg", "items": [{"key": "mode", "path": "m"}]}},
               {"name": "sec", "secret": {"secretName": "db"}}]
    assert mounted_files(pod(c, volumes=volumes), c, lookup) == {
        "/etc/conf/level": "3", "/etc/conf/mode": "fast", "/etc/one.txt": "fast", "/secrets/password": "s3cret"}
    assert mount_error(pod(c, volumes=volumes), lookup) is None
    missing = [{"name": "conf", "configMap": {"name": "nope"}}]
    assert mount_error(pod(c, volumes=missing), lookup) == ("conf", 'configmap "nope" not found')
    assert mount_message("conf", 'configmap "nope" not found') == \
        'MountVolume.SetUp failed for volume "conf" : configmap "nope" not found'
    bad_key = [{"name": "conf", "configMap": {"name": "cfg", "items": [{"key": "x", "path": "x"}]}},
               {"name": "sec", "secret": {"secretName": "db", "items": [{"key": "y", "path": "y"}]}}]
    assert mount_error(pod(c, volumes=bad_key), lookup) == ("conf", "configmap references non-existent config key: x")
    assert mount_error(pod(c, volumes=bad_key[1:]), lookup) == ("sec", "references non-existent secret key: y")
    assert mount_error(pod(c, volumes=[{"name": "s", "secret": {"secretName": "x", "optional": True}}]), lookup) is None


def test_waiting_states_put_volumes_before_the_environment() -> None:
    broken_env = {"name": "a", "image": "busybox",
                  "env": [{"name": "M", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "m"}}}]}
    fine = {"name": "b", "image": "busybox"}
    assert waiting_states(pod(broken_env, fine), lookup) == {
        "a": {"reason": "CreateContainerConfigError", "message": 'configmap "nope" not found'}}
    volumes = [{"name": "v", "secret": {"secretName": "gone"}}]
    assert waiting_states(pod(broken_env, fine, volumes=volumes), lookup) == {
        "a": {"reason": "ContainerCreating"}, "b": {"reason": "ContainerCreating"}}
    assert references(pod(broken_env, fine, volumes=volumes)) == {("ConfigMap", "nope"), ("Secret", "gone")}
