"""Admission once per distinct shape (model/shapes.py): a spec or rule equal to one found valid is valid without
being checked again; nothing else changes. These pin what a user could otherwise see change: an invalid object
after a valid one of the same shape is still refused with its own paths, the version in force is part of the
verdict, and ratcheting still decides on an update."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from knetsim.model import admission, versions
from knetsim.model.admission import AdmissionError, resolve, validation_errors


def policy(name: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress}}


def deployment(name: str, replicas: int, image: str = "nginx:1.27") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": image}]}}}}


GOOD = {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 80}]}
BAD = {"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}], "ports": [{"port": 80}]}


def refusal(body: dict[str, Any]) -> str:
    with pytest.raises(AdmissionError) as info:
        admission.admit(copy.deepcopy(body))
    return info.value.message


def test_a_rule_equal_to_a_valid_one_is_admitted_wherever_it_sits() -> None:
    admission.admit(policy("a", [GOOD]))
    admission.admit(policy("b", [GOOD | {"ports": [{"port": 81}]}, GOOD]))
    admission.admit(policy("c", [{"from": [{"podSelector": {}}]}, GOOD]))


def test_an_invalid_rule_is_refused_every_time_at_its_own_path() -> None:
    first = refusal(policy("a", [BAD]))
    again = refusal(policy("b", [GOOD, BAD]))
    assert 'NetworkPolicy.networking.k8s.io "a" is invalid: spec.ingress[0].from[0].ipBlock.cidr' in first
    assert 'NetworkPolicy.networking.k8s.io "b" is invalid: spec.ingress[1].from[0].ipBlock.cidr' in again


def test_a_list_of_rules_equal_to_a_valid_one_is_admitted_and_one_rule_changed_is_checked_at_its_path() -> None:
    # A list of several rules found valid is remembered whole: an equal list is admitted, while a list that differs
    # in one rule is a different list, each of its rules checked, the bad one named at its own index.
    second = GOOD | {"ports": [{"port": 81}]}
    admission.admit(policy("a", [GOOD, second]))
    admission.admit(policy("b", [GOOD, second]))
    message = refusal(policy("c", [GOOD, second, BAD]))
    assert 'NetworkPolicy.networking.k8s.io "c" is invalid: spec.ingress[2].from[0].ipBlock.cidr' in message
    assert "spec.ingress[0]" not in message and "spec.ingress[1]" not in message


def test_the_version_in_force_is_part_of_the_verdict() -> None:
    # 10.0.0.5/8 has bits beyond its prefix: valid before StrictIPCIDRValidation (1.35), refused with it (1.38).
    loose = policy("a", [{"from": [{"ipBlock": {"cidr": "10.0.0.5/8"}}]}])
    with versions.using(versions.parse("1.35")):
        admission.admit(copy.deepcopy(loose))
    with versions.using(versions.parse("1.38")):
        assert "must not have bits set beyond the prefix length" in refusal(loose)


def test_an_update_still_ratchets_and_a_create_of_the_same_rule_is_still_refused() -> None:
    held = policy("a", [{"from": [{"ipBlock": {"cidr": "192.168.0.5/24"}}]}])
    kind = resolve(held["apiVersion"], held["kind"])
    with versions.using(versions.parse("1.38")):
        assert validation_errors(copy.deepcopy(held), kind, copy.deepcopy(held)) == []
        created = [str(e) for e in validation_errors(copy.deepcopy(held), kind)]
    assert len(created) == 1 and "must not have bits set beyond the prefix length" in created[0]


def test_deployments_of_one_spec_are_admitted_and_an_invalid_one_is_still_refused() -> None:
    for name in ("a", "b", "c"):
        admission.admit(deployment(name, 2))
    assert 'Deployment.apps "d" is invalid: spec.replicas: Invalid value: -1' in refusal(deployment("d", -1))
    assert 'Deployment.apps "e" is invalid: spec.replicas: Invalid value: -1' in refusal(deployment("e", -1))
    # Equal but for one value (an image left empty): a different key, checked on its own.
    typed = deployment("f", 2)
    typed["spec"]["template"]["spec"]["containers"][0]["image"] = ""
    assert "spec.template.spec.containers[0].image: Required value" in refusal(typed)


def calico_policy(name: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy", "metadata": {"name": name},
            "spec": {"selector": "app == 'web'", "types": ["Ingress"], "ingress": ingress}}


ALLOW = {"action": "Allow", "protocol": "TCP", "destination": {"ports": [80]}}


def test_a_calico_rule_equal_to_a_valid_one_is_admitted_and_a_mistyped_one_is_refused_at_its_path() -> None:
    admission.admit(calico_policy("a", [ALLOW]))
    admission.admit(calico_policy("b", [ALLOW, ALLOW]))
    mistyped = ALLOW | {"action": ["Allow"]}
    for name, rules, at in (("c", [mistyped], 0), ("d", [ALLOW, mistyped], 1), ("e", [mistyped, ALLOW], 0)):
        assert refusal(calico_policy(name, rules)) == (
            f'GlobalNetworkPolicy.projectcalico.org "{name}" is invalid: spec.ingress[{at}].action: Invalid value: '
            f'"array": spec.ingress[{at}].action in body must be of type string: "array"')


def test_a_crd_item_rule_is_still_checked_for_every_item_equal_or_not() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {"parts": {
                            "type": "array", "items": {
                                "type": "object", "properties": {"size": {"type": "integer"}},
                                "x-kubernetes-validations": [{"rule": "self.size < 10",
                                                              "message": "too big"}]}}}}}}}}]}}
    from knetsim.model.crd import source_of, versions_of

    extra = {(v.group, v.version, v.kind): v for v in versions_of(crd, source_of(crd, "test"))}

    def widget(name: str, sizes: list[int]) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
                "spec": {"parts": [{"size": s} for s in sizes]}}

    admission.admit(widget("a", [1, 1]), extra_crds=extra)
    with pytest.raises(AdmissionError) as info:
        admission.admit(widget("b", [1, 12, 12]), extra_crds=extra)
    assert [str(e) for e in info.value.errors] == [
        'spec.parts[1]: Invalid value: "object": too big', 'spec.parts[2]: Invalid value: "object": too big']


def test_keys_tell_apart_every_value_that_reads_differently_and_equal_values_share_one() -> None:
    from knetsim.model.schema import DuplicateKeys, GoNumber
    from knetsim.model.shapes import content_key

    values = [1, 1.0, True, "1", GoNumber("1.0"), [1], {"a": 1}, DuplicateKeys(a=1), None, ""]
    keys = [content_key("rules", v) for v in values]
    assert len(set(keys)) == len(values)
    shared = "x" * 40
    assert content_key("rules", {"a": shared, "b": shared}) == content_key("rules", {"a": "x" * 40, "b": "x" * 40})
    assert content_key("rules", {"a": 1}) != content_key("other rules", {"a": 1})


# --- admitted specs: a Deployment's spec decoded, defaulted and checked once per spec as written -------------------


def test_deployments_of_one_written_spec_are_stored_alike_each_with_its_own_copy(monkeypatch: pytest.MonkeyPatch,
                                                                                   ) -> None:
    import json

    from knetsim.model import shapes

    written = deployment("first", 3, image="nginx:1.29")
    first, _, _ = admission.admit(copy.deepcopy(written), namespace="team-a")
    second, _, _ = admission.admit(copy.deepcopy(written) | {"metadata": {"name": "second"}}, namespace="team-b")
    assert second["metadata"] == {"name": "second", "namespace": "team-b"}
    assert second["spec"] == first["spec"] and second["spec"] is not first["spec"]
    assert second["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
    second["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    third, _, _ = admission.admit(copy.deepcopy(written), namespace="team-a")
    assert third["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.29"
    # The same object, stored from scratch: equal, key order included.
    monkeypatch.setattr(shapes, "_ADMITTED", {})
    fresh, _, _ = admission.admit(copy.deepcopy(written), namespace="team-a")
    assert json.dumps(fresh) == json.dumps(third)


def test_a_remembered_spec_does_not_excuse_the_rest_of_the_object() -> None:
    written = deployment("ok", 2, image="nginx:1.30")
    admission.admit(copy.deepcopy(written))
    bad_name = copy.deepcopy(written) | {"metadata": {"name": "Not_A_Name"}}
    assert 'Deployment.apps "Not_A_Name" is invalid: metadata.name: Invalid value: "Not_A_Name"' in refusal(bad_name)
    typo = copy.deepcopy(written) | {"metadata": {"name": "ok", "Labels": {"a": "b"}}}
    assert refusal(typo).endswith('strict decoding error: unknown field "metadata.Labels"')


def test_a_spec_admitted_under_ignore_with_an_unknown_field_is_still_refused_under_strict() -> None:
    written = deployment("typo", 2, image="nginx:1.31")
    written["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    admission.admit(copy.deepcopy(written), field_validation=admission.FieldValidation.IGNORE)
    admission.admit(copy.deepcopy(written), field_validation=admission.FieldValidation.IGNORE)
    assert refusal(written).endswith(
        'strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolicyy"')


# --- one input's objects share what they repeat (shapes.sharing: cluster.build.admit) ------------------------------

def _admitted_one_by_one(bodies: list[dict[str, Any]]) -> list[str]:
    """Each body admitted alone, outside any sharing scope: what the input's admission must store, byte for byte
    (or the refusal's words)."""
    import json

    out = []
    for body in bodies:
        try:
            obj, decoded, _ = admission.admit(copy.deepcopy(body))
            out.append(json.dumps(obj) + " warnings: " + "; ".join(decoded.api_warnings))
        except AdmissionError as exc:
            out.append("; ".join(str(e) for e in exc.errors) if exc.errors else exc.message)
    return out


def _admitted_as_one_input(bodies: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    import json

    from knetsim.cluster.build import API_WARNING, admit
    from knetsim.model.loader import Document, Source

    result = admit([Document(Source("in.yaml", i), copy.deepcopy(b)) for i, b in enumerate(bodies)])
    stored = iter(result.documents)
    errors: dict[str, list[str]] = {}
    for error in result.errors:
        errors.setdefault(error.subject.split()[-1].rpartition("/")[2], []).append(str(error.error))
    warnings: dict[str, list[str]] = {}
    for notice in result.notices:
        if notice.code == API_WARNING:
            warnings.setdefault(notice.subject.split()[-1].rpartition("/")[2], []).append(notice.message)
    out = []
    for body in bodies:
        name = body["metadata"]["name"]
        if name in errors:
            out.append("; ".join(errors[name]))
            continue
        out.append(json.dumps(next(stored).body) + " warnings: " + "; ".join(warnings.get(name, [])))
    return out, [d.body for d in result.documents]


def test_one_inputs_policies_that_repeat_a_rule_share_it_and_each_is_stored_as_admitted_alone() -> None:
    import yaml

    # Before StrictIPCIDRValidation (1.35) a legacy CIDR is admitted, warned of and spelled 10.0.0.0/8, every time.
    legacy = {"from": [{"ipBlock": {"cidr": "010.0.0.0/8"}}]}
    typo = {"from": [{"podSelector": {}}], "portz": [{"port": 80}]}
    later = GOOD | {"ports": [{"port": 8443}]}
    bodies = [policy("a", [GOOD, later]), policy("b", [later, GOOD]), policy("c", [GOOD, GOOD]),
              policy("d", [legacy]), policy("e", [GOOD, legacy]), policy("f", [later, BAD]),
              policy("g", [GOOD, later]), policy("h", [GOOD, typo]), policy("i", [later])]
    bodies[6]["spec"]["egress"] = [{"to": [{"podSelector": {}}]}]
    del bodies[6]["spec"]["policyTypes"]  # defaulted from its rules: Ingress, Egress
    with versions.using(versions.parse("1.35")):
        stored, objects = _admitted_as_one_input(bodies)
        assert stored == _admitted_one_by_one(bodies)
    assert '"cidr": "10.0.0.0/8"' in stored[3] and '"cidr": "10.0.0.0/8"' in stored[4]
    assert "spec.ingress[0].from[0].ipBlock.cidr: non-standard" in stored[3]
    assert "spec.ingress[1].from[0].ipBlock.cidr: non-standard" in stored[4]
    assert stored[5].startswith('spec.ingress[1].from[0].ipBlock.cidr: Invalid value: "10.0.0.0/33"')
    assert stored[7].endswith('strict decoding error: unknown field "spec.ingress[1].portz"')
    by_name = {o["metadata"]["name"]: o["spec"] for o in objects}
    # What the later policies repeat is the earlier policy's admitted rule, not a copy ...
    assert by_name["b"]["ingress"][1] is by_name["a"]["ingress"][0]
    assert by_name["i"]["ingress"][0] is by_name["a"]["ingress"][1]
    # ... but one policy never holds one object twice: a YAML dumper would write an anchor and an alias.
    assert by_name["c"]["ingress"][0] == by_name["c"]["ingress"][1]
    assert by_name["c"]["ingress"][0] is not by_name["c"]["ingress"][1]
    assert all("&id" not in yaml.safe_dump(o) for o in objects)


def test_one_inputs_deployments_of_one_spec_share_it_and_admissions_outside_an_input_get_copies() -> None:
    bodies = [deployment("a", 2, image="nginx:1.32"), deployment("b", 2, image="nginx:1.32")]
    stored, objects = _admitted_as_one_input(bodies)
    assert stored == _admitted_one_by_one(bodies)
    assert objects[0]["spec"] is objects[1]["spec"]
    alone, _, _ = admission.admit(copy.deepcopy(bodies[0]))
    assert alone["spec"] == objects[0]["spec"] and alone["spec"] is not objects[0]["spec"]


def test_one_inputs_calico_policies_share_their_pruned_rules_and_a_dropped_field_is_named_where_it_sits() -> None:
    import yaml

    deny = {"action": "Deny", "destination": {"nets": ["169.254.169.254/32"]}}
    typo = ALLOW | {"protocl": "UDP"}
    bodies = [calico_policy("a", [ALLOW, deny]), calico_policy("b", [deny, ALLOW]), calico_policy("c", [ALLOW, ALLOW]),
              calico_policy("d", [ALLOW, typo]), calico_policy("e", [ALLOW])]
    bodies[4]["spec"]["egress"] = [ALLOW]  # the same rule both ways: two objects in one policy
    bodies[4]["spec"]["types"] = ["Ingress", "Egress"]
    stored, objects = _admitted_as_one_input(bodies)
    assert stored == _admitted_one_by_one(bodies)
    assert stored[3].endswith('strict decoding error: unknown field "spec.ingress[1].protocl"')
    by_name = {o["metadata"]["name"]: o["spec"] for o in objects}
    assert by_name["b"]["ingress"][0] is by_name["a"]["ingress"][1]
    assert by_name["e"]["ingress"][0] is by_name["a"]["ingress"][0]
    assert by_name["c"]["ingress"][0] == by_name["c"]["ingress"][1] and \
        by_name["c"]["ingress"][0] is not by_name["c"]["ingress"][1]
    assert by_name["e"]["ingress"][0] is not by_name["e"]["egress"][0]
    assert all("&id" not in yaml.safe_dump(o) for o in objects)
