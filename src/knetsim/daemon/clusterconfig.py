"""Which cluster config a state directory's cluster was built with, kept beside its store.

A cluster's nodes, address ranges and data plane are decided when it is created: kube-proxy or
Cilium is installed, ClusterIPs are allocated from the Service CIDR, pods get addresses from the
nodes' ranges. So the first ``knetsim up --cluster-config FILE`` copies FILE into the state
directory (``cluster-config.yaml``), every later start of that directory runs with the copy, and
asking for another config over it is refused (exit 2) rather than leaving a store whose objects
disagree with the ranges and add-ons in force. A state directory without the copy runs with the
built-in defaults (a fresh kind cluster), as every state directory did before this file existed.
The Kubernetes version is the exception: clusters are upgraded, so a config that differs only in
``kubernetesVersion`` (or ``knetsim up --kubernetes-version``) runs that start as the version it names.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cluster.config import ClusterConfig, ConfigError, load_config
from ..model.versions import parse as parse_kubernetes_version

CONFIG_NAME = "cluster-config.yaml"
STORE_NAME = "store.db"


class ConfigMismatch(ConfigError):
    """The state directory holds a cluster built with another config."""


@dataclass(frozen=True, slots=True)
class InForce:
    """The config a state directory's cluster runs with, and where it was read from (None: the defaults)."""

    config: ClusterConfig
    path: Path | None

    def summary(self) -> dict[str, Any]:
        """What ready.json and `knetsim status` say about it."""
        return {"name": self.config.name, "dataplane": self.config.dataplane,
                "kubernetesVersion": self.config.kubernetes_version,
                "nodes": [n.name for n in self.config.nodes], "clusterDomain": self.config.cluster_domain,
                "config": str(self.path) if self.path else None}


def stored(state: Path) -> InForce:
    """The config ``state``'s cluster was built with. Raises ConfigError when the copy no longer loads."""
    path = state / CONFIG_NAME
    if path.exists():
        return InForce(load_config(str(path)), path)
    return InForce(ClusterConfig(), None)


def _describe(in_force: InForce) -> str:
    where = f"the cluster config {in_force.path}" if in_force.path else "the built-in defaults (a kind cluster)"
    nodes = len(in_force.config.nodes)
    return f"{where}: dataplane {in_force.config.dataplane}, {nodes} node{'s' if nodes != 1 else ''}"


def check(state: Path, given: str | None) -> InForce:
    """The config ``knetsim up [--cluster-config GIVEN]`` would run ``state`` with, without writing anything.
    Raises ConfigError for a config that does not load, ConfigMismatch for one the state's cluster was not
    built with."""
    current = stored(state)
    if given is None:
        return current
    wanted = load_config(given)
    built = current.path is not None or (state / STORE_NAME).exists()
    # The Kubernetes version is not part of the cluster's shape: a config that differs only in it upgrades
    # (or downgrades) the cluster, as kubeadm does, rather than being refused.
    same_shape = dataclasses.replace(wanted, kubernetes_version=current.config.kubernetes_version) == current.config
    if built and not same_shape:
        raise ConfigMismatch(
            f"{given}: the state directory {state} holds a cluster built with {_describe(current)}; a cluster's "
            "nodes, address ranges and data plane are fixed when it is created. Use another --state for this "
            f"config, or `knetsim down --state {state}` and delete {state} to start over")
    return InForce(wanted, current.path or Path(given).resolve())


def with_version(in_force: InForce, version: str | None) -> InForce:
    """``knetsim up --kubernetes-version``: this start runs that minor whatever the config says (a cluster's
    version is not fixed at creation: clusters are upgraded). Raises ConfigError for a version knetsim does not
    simulate."""
    if version is None:
        return in_force
    try:
        chosen = str(parse_kubernetes_version(version))
    except ValueError as exc:
        raise ConfigError(f"--kubernetes-version: {exc}") from None
    return InForce(dataclasses.replace(in_force.config, kubernetes_version=chosen), in_force.path)


def adopt(state: Path, given: str | None) -> InForce:
    """``check``, then keep a copy of GIVEN in the state directory when it is the first config it runs with."""
    in_force = check(state, given)
    if given is None or (state / CONFIG_NAME).exists():
        kept = stored(state) if (state / CONFIG_NAME).exists() else in_force
        # The copy keeps the shape; the version is the one this start was given.
        return with_version(kept, in_force.config.kubernetes_version) if given is not None else kept
    text = Path(given).read_text(encoding="utf-8")
    tmp = state / (CONFIG_NAME + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, state / CONFIG_NAME)
    return stored(state)
