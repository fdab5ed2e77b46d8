"""The labels Cilium gives an endpoint, which its selectors are matched against.

A Cilium agent does not match a pod's own labels: it matches the endpoint's, which it builds from the pod
(cilium/cilium pkg/k8s/utils/utils.go ``SanitizePodLabels``; names in pkg/k8s/apis/cilium.io/const.go):

* the pod's own labels, without those under ``io.cilium.k8s`` (``filterPodLabels``: a pod cannot claim them);
* ``io.kubernetes.pod.namespace`` (its namespace) and ``io.cilium.k8s.namespace.labels.<key>`` (its namespace's
  labels): ``read.py`` turns selectors on these into namespace requirements;
* ``io.cilium.k8s.policy.serviceaccount``: the pod's ``spec.serviceAccountName`` (the API server defaults it to
  ``default``), the label Documentation/security/policy/kubernetes.rst "ServiceAccounts" selects by;
* ``io.cilium.k8s.policy.cluster``: the agent's ``cluster-name`` (the ``cilium-config`` ConfigMap;
  ``default`` unless set).

Every other ``io.cilium.``/``io.kubernetes.`` key (the Istio sidecar label, a policy's own rule labels) is not
modelled: here no endpoint carries an ``io.cilium.k8s`` one, an ``io.kubernetes`` one is the pod's own, and each
answer says the result may differ from Cilium's (``unmodelled``).

Nor is the agent's identity-relevant label filter (pkg/labelsfilter/filter.go; Documentation/operations/
performance/scalability/identity-relevant-labels.rst): by default it leaves labels such as ``pod-template-hash``
or ``statefulset.kubernetes.io/pod-name`` out of the identity policies select by, but ``--labels`` changes that,
and knetsim cannot see the agent's flags. A selector on one is matched against the pod's own labels and each answer
says that on Cilium's defaults it matches no pod (``filtered_by_default``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from ...model.labels import Selector
from ..rules import service_account_of

SERVICE_ACCOUNT_LABEL = "io.cilium.k8s.policy.serviceaccount"
CLUSTER_LABEL = "io.cilium.k8s.policy.cluster"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
NAMESPACE_LABEL_PREFIX = "io.cilium.k8s.namespace.labels."
# const.go LabelPrefix: the pod's own labels under it are dropped (utils.go filterPodLabels).
CILIUM_OWNED_PREFIX = "io.cilium.k8s"
DEFAULT_CLUSTER = "default"  # the agent's --cluster-name default (pkg/defaults ClusterName)
DERIVED = frozenset({SERVICE_ACCOUNT_LABEL, CLUSTER_LABEL})


def cluster_name(state: Any) -> str:
    """The Cilium cluster name: ``cluster-name`` of kube-system's ``cilium-config`` ConfigMap when the input has
    it, else Cilium's default."""
    return str(_agent_config(state).get("cluster-name") or DEFAULT_CLUSTER)


# The agent's policy enforcement modes (cilium-config ``enable-policy``; pkg/option: PolicyEnforcement{Default,
# Always,Never}; Documentation/security/policy/intro.rst "Policy Enforcement Modes").
ENFORCE_DEFAULT, ENFORCE_ALWAYS, ENFORCE_NEVER = "default", "always", "never"
ENFORCEMENT_MODES = (ENFORCE_DEFAULT, ENFORCE_ALWAYS, ENFORCE_NEVER)


def enforcement(state: Any) -> tuple[str, str | None]:
    """The agent's policy enforcement mode, and what is wrong with its setting (or None): ``enable-policy`` of
    kube-system's ``cilium-config`` when the input has it, lower-cased only, as the agent's option parser reads it;
    else ``default``. A value that is no mode (the agent does not start with it) stands as ``default``, named."""
    raw = _agent_config(state).get("enable-policy")
    if raw is None:
        return ENFORCE_DEFAULT, None
    mode = str(raw).lower()
    if mode in ENFORCEMENT_MODES:
        return mode, None
    return ENFORCE_DEFAULT, (f"ConfigMap kube-system/cilium-config: enable-policy: {raw!s} is not a policy "
                             f"enforcement mode ({', '.join(ENFORCEMENT_MODES)}): the agent would not start; "
                             "answered as default")


def _agent_config(state: Any) -> dict[str, Any]:
    config = state.others.get(("ConfigMap", "kube-system/cilium-config"))
    data = ((config.raw if config is not None else {}) or {}).get("data")
    return data if isinstance(data, dict) else {}


def endpoint_labels(pod: Any, cluster: str) -> dict[str, str]:
    """The pod part of the endpoint's labels (the namespace part is matched as namespace requirements)."""
    out = {k: v for k, v in pod.labels.items() if not k.startswith(CILIUM_OWNED_PREFIX)}
    out[SERVICE_ACCOUNT_LABEL] = service_account_of(pod)
    out[CLUSTER_LABEL] = cluster
    return out


@lru_cache(maxsize=4096)
def reads_endpoint_labels(selector: Selector) -> bool:
    """Does matching ``selector`` need the endpoint's labels rather than the pod's own? (any ``io.cilium.k8s``
    key: the derived ones are added there, and a pod's own ones are dropped there)."""
    return any(r.key.startswith(CILIUM_OWNED_PREFIX) for r in selector.requirements)


def matches(selector: Selector, pod: Any, cluster: str) -> bool:
    """``selector`` against the endpoint Cilium makes of ``pod`` (its own labels when the selector reads no label
    Cilium owns: the common case, with no copy)."""
    if reads_endpoint_labels(selector):
        return selector.matches(endpoint_labels(pod, cluster))
    return selector.matches(pod.labels)


# The default exclusive patterns of pkg/labelsfilter (each a regular expression a key must start with), as the
# identity-relevant-labels page lists them; the io.kubernetes ones are ``unmodelled``'s.
_FILTERED_BY_DEFAULT = re.compile(
    r"kubernetes\.io|statefulset\.kubernetes\.io/pod-name|apps\.kubernetes\.io/pod-index"
    r"|batch\.kubernetes\.io/job-completion-index|batch\.kubernetes\.io/controller-uid|.*beta\.kubernetes\.io"
    r"|k8s\.io|pod-template-generation|pod-template-hash|controller-revision-hash|annotation|controller-uid"
    r"|etcd_node")


def filtered_by_default(keys: Iterable[str]) -> list[str]:
    """Of a selector's ``keys``, those Cilium's default label filter leaves out of an endpoint's identity."""
    return sorted({k for k in keys if not k.startswith("io.") and _FILTERED_BY_DEFAULT.match(k)})


def unmodelled(keys: Iterable[str]) -> list[str]:
    """Of a selector's ``keys``, those naming a label Cilium may give an endpoint but knetsim does not derive."""
    return sorted({k for k in keys if k.startswith(("io.cilium.", "io.kubernetes."))
                   and k not in DERIVED and k != POD_NAMESPACE_LABEL and not k.startswith(NAMESPACE_LABEL_PREFIX)})


__all__ = [
    "CLUSTER_LABEL",
    "DEFAULT_CLUSTER",
    "DERIVED",
    "ENFORCE_ALWAYS",
    "ENFORCE_DEFAULT",
    "ENFORCE_NEVER",
    "SERVICE_ACCOUNT_LABEL",
    "cluster_name",
    "endpoint_labels",
    "enforcement",
    "filtered_by_default",
    "matches",
    "reads_endpoint_labels",
    "unmodelled",
]
