"""What an update may change, judged as kube-apiserver judges it (pkg/apis/*/validation Validate*Update).

Each case starts from an object as admission leaves it (decoded, defaulted) and changes one thing.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from knetsim.model import admission
from knetsim.model.updates import go_label_selector


def admitted(doc: dict[str, Any]) -> tuple[dict[str, Any], admission.Kind]:
    obj, _decoded, kind = admission.admit(doc)
    assert kind is not None
    return obj, kind


def errors_of_update(doc: dict[str, Any], change: Any) -> list[str]:
    old, kind = admitted(doc)
    new = copy.deepcopy(old)
    change(new)
    admission.default(new, kind, "default")
    return [str(e) for e in admission.validation_errors(new, kind, old)]


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "env": [{"name": "MODE", "value": "a"}]}],
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}}
ALLOWED = ("pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
           "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
           "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


def test_a_pods_image_may_change_and_its_env_may_not() -> None:
    assert errors_of_update(POD, lambda p: p["spec"]["containers"][0].update(image="nginx:1.28")) == []
    errors = errors_of_update(POD, lambda p: p["spec"]["containers"][0]["env"][0].update(value="b"))
    assert errors == [f"spec: Forbidden: {ALLOWED}\n"
                      '  - spec.containers[0].env[0].value: "a"\n'
                      '  + spec.containers[0].env[0].value: "b"']


def test_a_pod_keeps_its_containers() -> None:
    errors = errors_of_update(POD, lambda p: p["spec"]["containers"].append({"name": "b", "image": "busybox"}))
    assert errors == ["spec.containers: Forbidden: pod updates may not add or remove containers"]
    errors = errors_of_update(POD, lambda p: p["spec"]["containers"][0].update(image=" nginx"))
    assert errors == ['spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing '
                      "whitespace"]


def test_deadlines_only_shorten_and_tolerations_only_grow() -> None:
    with_deadline = copy.deepcopy(POD)
    with_deadline["spec"]["activeDeadlineSeconds"] = 30
    assert errors_of_update(with_deadline, lambda p: p["spec"].update(activeDeadlineSeconds=10)) == []
    assert errors_of_update(with_deadline, lambda p: p["spec"].update(activeDeadlineSeconds=60)) == [
        "spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"]
    assert errors_of_update(with_deadline, lambda p: p["spec"].pop("activeDeadlineSeconds")) == [
        "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"]

    added = {"key": "other", "operator": "Exists", "effect": "NoSchedule"}
    assert errors_of_update(POD, lambda p: p["spec"]["tolerations"].append(added)) == []
    assert errors_of_update(POD, lambda p: p["spec"]["tolerations"][0].update(tolerationSeconds=30)) == []
    assert errors_of_update(POD, lambda p: p["spec"]["tolerations"][0].update(tolerationSeconds=600)) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"]


def test_ephemeral_containers_come_only_through_their_subresource() -> None:
    with_debugger = copy.deepcopy(POD)
    with_debugger["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox:1.36"}]
    with pytest.raises(admission.AdmissionError, match=r"spec.ephemeralContainers: Forbidden: cannot be set on "
                                                       "create"):
        admission.admit(with_debugger)

    old, kind = admitted(POD)
    new = copy.deepcopy(old)
    new["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox:1.36",
                                           "targetContainerName": "app"}]
    admission.default(new, kind, "default")
    assert admission.validation_errors(new, kind, old, "ephemeralcontainers") == []
    # Through a plain update the same change is a spec change.
    assert str(admission.validation_errors(new, kind, old)[0]).startswith(f"spec: Forbidden: {ALLOWED}")

    again = copy.deepcopy(new)
    again["spec"]["ephemeralContainers"][0]["image"] = "busybox:1.37"
    again["spec"]["ephemeralContainers"].append({"name": "app", "image": "busybox", "ports": [{"containerPort": 1}],
                                                 "targetContainerName": "nope"})
    errors = [str(e) for e in admission.validation_errors(again, kind, new, "ephemeralcontainers")]
    assert errors == [
        'spec.ephemeralContainers[1].name: Duplicate value: "app"',
        "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
        'spec.ephemeralContainers[1].targetContainerName: Not found: "nope"',
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be changed\n'
        '  - ephemeralContainer.image: "busybox:1.36"\n'
        '  + ephemeralContainer.image: "busybox:1.37"',
    ]


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}


def test_a_workloads_selector_is_fixed_and_its_template_is_not() -> None:
    def relabel(d: dict[str, Any]) -> None:
        d["spec"]["selector"]["matchLabels"]["tier"] = "front"
        d["spec"]["template"]["metadata"]["labels"]["tier"] = "front"

    assert errors_of_update(DEPLOYMENT, relabel) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"front"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]
    assert errors_of_update(DEPLOYMENT, lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
        image="nginx:1.28")) == []


def test_go_syntax_of_a_selector_with_expressions() -> None:
    selector = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                     {"key": "x", "operator": "Exists"}]}
    assert go_label_selector(selector) == (
        'v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{'
        'v1.LabelSelectorRequirement{Key:"tier", Operator:"In", Values:[]string{"a", "b"}}, '
        'v1.LabelSelectorRequirement{Key:"x", Operator:"Exists", Values:[]string(nil)}}}')


def test_a_jobs_template_is_fixed() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "default"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "pi", "image": "busybox:1.36"}]}}}}
    errors = errors_of_update(job, lambda j: j["spec"]["template"]["spec"]["containers"][0].update(
        image="busybox:1.37"))
    assert errors == ["spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"]
    assert errors_of_update(job, lambda j: j["metadata"].update(labels={"team": "a"})) == []


def test_an_immutable_config_map_keeps_its_data_and_a_secret_its_type() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
          "data": {"a": "1"}, "immutable": True}
    assert errors_of_update(cm, lambda c: c["data"].update(a="2")) == [
        "data: Forbidden: field is immutable when `immutable` is set"]
    assert errors_of_update(cm, lambda c: c.update(immutable=False)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set"]
    assert errors_of_update(cm, lambda c: c["metadata"].update(labels={"a": "b"})) == []
    mutable = dict(cm, immutable=False)
    assert errors_of_update(mutable, lambda c: c["data"].update(a="2")) == []

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"},
              "type": "Opaque", "data": {"a": "MQ=="}}
    assert errors_of_update(secret, lambda s: s.update(type="example.com/custom")) == [
        'type: Invalid value: "example.com/custom": field is immutable']


def test_a_statefulsets_service_name_is_fixed_and_its_replicas_are_not() -> None:
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"serviceName": "db", "replicas": 2, "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                                 "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}}}
    assert errors_of_update(sts, lambda s: s["spec"].update(replicas=3)) == []
    assert errors_of_update(sts, lambda s: s["spec"].update(serviceName="database")) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
        "are forbidden"]
