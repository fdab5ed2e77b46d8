"""Admission offline: the typed decoder, unknown fields, CRD schemas and CEL, bounded input.

Expected messages are kube-apiserver's (encoding/json's decode errors, the strict decoder's
"unknown field", apimachinery's field errors, kube-openapi's schema messages); the sources are
named beside each group.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from knetsim import Cluster, InputError
from knetsim.cli.main import cli
from knetsim.model import admission, schema
from knetsim.model.admission import AdmissionError, FieldValidation
from knetsim.model.loader import InputTooHostile, check_aliases, load_text
from knetsim.model.schema import loads_json


def refused(body: dict, mode: FieldValidation = FieldValidation.STRICT) -> AdmissionError:
    with pytest.raises(AdmissionError) as info:
        admission.admit(body, field_validation=mode)
    return info.value


def svc(spec: dict, **meta: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", **meta}, "spec": spec}


def deploy(spec: dict) -> dict:
    base = {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {**base, **spec}}


# --- unknown fields (sigs.k8s.io/json strict decoding, fieldValidation) -------------------------


def test_an_unknown_field_refuses_the_object_under_strict_as_kubectl_apply_sends_it() -> None:
    err = refused(svc({"selectr": {"app": "web"}, "ports": [{"port": 80, "nodeport": 30080}]}))
    assert err.code == 400
    # In the order the decoder meets them, as sigs.k8s.io/json reports them.
    assert err.message == ('Service in version "v1" cannot be handled as a Service: strict decoding error: '
                           'unknown field "spec.selectr", unknown field "spec.ports[0].nodeport"')
    assert sorted(err.unknown_fields) == ["spec.ports[0].nodeport", "spec.selectr"]


def test_warn_drops_the_field_and_says_so_ignore_drops_it_silently() -> None:
    body = svc({"selectr": {"app": "web"}, "ports": [{"port": 80}]})
    obj, decoded, _ = admission.admit(body, field_validation=FieldValidation.WARN)
    assert "selectr" not in obj["spec"] and decoded.warnings == ['unknown field "spec.selectr"']
    obj, decoded, _ = admission.admit(body, field_validation=FieldValidation.IGNORE)
    assert "selectr" not in obj["spec"] and decoded.warnings == []


def test_field_names_are_case_sensitive_and_metadata_is_decoded_too() -> None:
    err = refused({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "Labels": {"a": "b"}}})
    assert err.message.endswith('strict decoding error: unknown field "metadata.Labels"')


def test_a_key_given_twice_in_json_is_a_duplicate_field() -> None:
    body = loads_json('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"}}')
    assert refused(body).message.endswith('strict decoding error: duplicate field "metadata.name"')


def test_the_nearest_real_field_is_suggested() -> None:
    body = svc({"selectr": {"app": "web"}, "ports": [{"port": 80, "targetport": 8080}]})
    assert admission.did_you_mean(body, "spec.selectr") == "spec.selector"
    assert admission.did_you_mean(body, "spec.ports[0].targetport") == "spec.ports[0].targetPort"
    assert admission.did_you_mean(body, "spec.frobnicate") is None


# --- wrong types (encoding/json UnmarshalTypeError, as kube-apiserver wraps it) ------------------


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(deploy({"replicas": "3"}), "json: cannot unmarshal string into Go struct field "
                 "DeploymentSpec.spec.replicas of type int32", id="string replicas"),
    pytest.param(deploy({"replicas": 99999999999}), "json: cannot unmarshal number 99999999999 into Go struct "
                 "field DeploymentSpec.spec.replicas of type int32", id="out of int32 range"),
    pytest.param(loads_json('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w"},'
                            '"spec":{"replicas":2.5}}'),
                 "json: cannot unmarshal number 2.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
                 id="fraction"),
    pytest.param(svc({"ports": [{"port": 80, "protocol": 6}]}), "json: cannot unmarshal number into Go struct "
                 "field ServicePort.spec.ports.protocol of type v1.Protocol", id="named string type"),
    pytest.param(svc({"ports": {"port": 80}}), "json: cannot unmarshal object into Go struct field "
                 "ServiceSpec.spec.ports of type []v1.ServicePort", id="object for a list"),
    pytest.param(svc({"ports": [{"port": 80, "targetPort": {"number": 80}}]}),
                 "json: cannot unmarshal object into Go value of type int32", id="IntOrString object"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": 5},
                 "json: cannot unmarshal number into Go struct field ConfigMap.data of type map[string]string",
                 id="ConfigMap data a number"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "ownerReferences": 5}},
                 "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.ownerReferences of type "
                 "[]v1.OwnerReference", id="ownerReferences a number"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"v": 1.0}}},
                 "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
                 id="label value a number"),
    pytest.param({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "not base64!"}},
                 "illegal base64 data at input byte 3", id="Secret data not base64"),
])
def test_values_that_do_not_fit_their_go_type_are_the_decoders_400(body: dict, message: str) -> None:
    err = refused(body)
    kind, version = body["kind"], body["apiVersion"].rpartition("/")[2]
    assert err.code == 400
    assert err.message == f'{kind} in version "{version}" cannot be handled as a {kind}: {message}'


def test_null_decodes_as_go_decodes_it() -> None:
    """A null pointer is unset (then defaulted: replicas 1); null inside lists and maps is the zero value."""
    obj, _, _ = admission.admit(deploy({"replicas": None}))
    assert obj["spec"]["replicas"] == 1
    obj, _, _ = admission.admit(svc({"selector": {"app": None}, "ports": [{"port": 80, "name": None}]}))
    assert obj["spec"]["selector"] == {"app": ""}
    assert obj["spec"]["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}


def test_yaml_floats_that_are_whole_numbers_are_ints_as_kubectl_sends_them() -> None:
    doc = load_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replicas: 3.0}\n",
                    "d.yaml").documents[0]
    obj, _, _ = admission.admit({**doc.body, "spec": {**doc.body["spec"], **deploy({})["spec"]}})
    assert obj["spec"]["replicas"] == 3 and isinstance(obj["spec"]["replicas"], int)


# --- kinds --------------------------------------------------------------------------------------


def test_an_unknown_kind_of_a_known_group_is_no_matches() -> None:
    err = refused({"apiVersion": "networking.k8s.io/v1", "kind": "Ingres", "metadata": {"name": "x"}})
    assert (err.code, err.message) == (404, 'no matches for kind "Ingres" in version "networking.k8s.io/v1"')
    err = refused({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "x"}})
    assert err.message == 'no matches for kind "Ingress" in version "extensions/v1beta1"'


def test_a_foreign_custom_kind_is_kept_with_a_notice() -> None:
    cluster = Cluster.from_yaml(textwrap.dedent("""
        apiVersion: cert-manager.io/v1
        kind: Certificate
        metadata: {name: web-tls, namespace: default}
        spec: {secretName: web-tls}
    """))
    assert [n.code for n in cluster.notices if n.code == "UnknownKind"] == ["UnknownKind"]


def test_objects_from_a_live_cluster_keep_going_when_a_newer_server_added_fields() -> None:
    """A snapshot is decoded with Warn: the field is dropped with a notice, the Service still simulated."""
    cluster = Cluster.from_yaml(textwrap.dedent("""
        apiVersion: v1
        kind: Service
        metadata: {name: web, namespace: default, uid: 0b1e5b7e-0000-4000-8000-000000000001, resourceVersion: "7"}
        spec: {selector: {app: web}, ports: [{port: 80}], trafficDistribution2: PreferSameZone}
    """))
    assert "default/web" in cluster.state.services
    assert any('unknown field "spec.trafficDistribution2"' in n.message for n in cluster.notices)


# --- validation of every kind (ConfigMap, Secret, Event, metadata) -------------------------------


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a b": "x"}},
                 ['data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '
                  "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                  "'[-._a-zA-Z0-9]+')"], id="ConfigMap key"),
    pytest.param({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls"},
                 ["data[tls.crt]: Required value", "data[tls.key]: Required value"], id="TLS Secret keys"),
    pytest.param({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "a/b"},
                  "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}},
                 ["metadata.name: Invalid value: \"a/b\": may not contain '/'"], id="Event name a path"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "c", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r"}]}},
        ['metadata.ownerReferences.uid: Invalid value: "": must not be empty'], id="owner without uid"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "c", "annotations": {"big": "x" * (256 * 1024)}}},
        ["metadata.annotations: Too long: may not be more than 262144 bytes"], id="annotations size"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["cleanup"]}},
                 ['metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor '
                  "is it fully qualified"], id="finalizer"),
])
def test_every_stored_kind_is_validated(body: dict, expected: list[str]) -> None:
    err = refused(body)
    assert err.code == 422
    assert [str(e) for e in err.errors] == expected


def test_string_data_lands_in_data_as_the_v1_conversion_does() -> None:
    obj, _, _ = admission.admit({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                                 "stringData": {"password": "s3cret"}})
    assert obj["data"] == {"password": "czNjcmV0"} and "stringData" not in obj and obj["type"] == "Opaque"


# --- CRDs: a CRD in the input governs its kind ------------------------------------------------------

# A CRD written here in the shape of ClusterNetworkPolicy's (enum, bounds, a CIDR and a range rule).
POLICY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "tierpolicies.test.knetsim.io"},
    "spec": {"group": "test.knetsim.io", "scope": "Cluster",
             "names": {"kind": "TierPolicy", "plural": "tierpolicies", "singular": "tierpolicy"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {
                     "type": "object", "required": ["tier", "priority"],
                     "properties": {
                         "tier": {"type": "string", "enum": ["Admin", "Baseline"]},
                         "priority": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 1000},
                         "networks": {"type": "array", "maxItems": 25, "x-kubernetes-list-type": "set",
                                      "items": {"type": "string", "x-kubernetes-validations": [
                                          {"rule": "isCIDR(self)", "message": "Invalid CIDR format provided"}]}},
                         "range": {"type": "object", "properties": {"start": {"type": "integer"},
                                                                    "end": {"type": "integer"}},
                                   "x-kubernetes-validations": [{"rule": "self.start < self.end",
                                                                 "message": "Start port must be less than End port"}]},
                     }}}}}}]}}


def tier_policy(spec: dict) -> dict:
    return {"apiVersion": "test.knetsim.io/v1", "kind": "TierPolicy", "metadata": {"name": "deny"},
            "spec": {"tier": "Admin", "priority": 10, **spec}}


def custom_errors(body: dict) -> list[str]:
    cluster = Cluster.from_yaml(json.dumps(POLICY_CRD) + "\n---\n" + json.dumps(body), strict=False)
    return [str(e.error) for e in cluster.errors]


def test_a_custom_object_is_pruned_typed_and_checked_by_its_crd_schema() -> None:
    assert custom_errors(tier_policy({"tier": "Admn", "priority": "10"})) == [
        'spec.tier: Unsupported value: "Admn": supported values: "Admin", "Baseline"',
        'spec.priority: Invalid value: "string": spec.priority in body must be of type integer: "string"',
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation",
    ]
    assert custom_errors(tier_policy({"foo": 1})) == [
        'TierPolicy in version "v1" cannot be handled as a TierPolicy: strict decoding error: unknown field '
        '"spec.foo"']


def test_cel_rules_of_the_crd_are_evaluated() -> None:
    # apiextensions' CEL validator reports the schema's type as the bad value (schema/cel/validation.go).
    assert custom_errors(tier_policy({"networks": ["10.0.0.0/33"], "range": {"start": 90, "end": 80}})) == [
        'spec.networks[0]: Invalid value: "string": Invalid CIDR format provided',
        'spec.range: Invalid value: "object": Start port must be less than End port',
    ]


def test_a_crd_in_the_input_governs_its_kind() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "pets.zoo.example.com"},
           "spec": {"group": "zoo.example.com", "scope": "Namespaced",
                    "names": {"kind": "Pet", "plural": "pets", "singular": "pet"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {
                            "type": "object", "required": ["species"],
                            "x-kubernetes-validations": [{"rule": "self.legs <= 4", "message": "too many legs"}],
                            "properties": {"species": {"type": "string", "enum": ["cat", "dog"]},
                                           "legs": {"type": "integer", "default": 4}}}}}}}]}}
    ok = {"apiVersion": "zoo.example.com/v1", "kind": "Pet", "metadata": {"name": "tom", "namespace": "default"},
          "spec": {"species": "cat"}}
    bad = {**ok, "metadata": {"name": "rex", "namespace": "default"}, "spec": {"species": "dog", "legs": 5}}
    text = "\n---\n".join(json.dumps(d) for d in (crd, ok, bad))
    cluster = Cluster.from_yaml(text, strict=False)
    assert [str(e.error) for e in cluster.errors] == ['spec: Invalid value: "object": too many legs']
    kept = cluster.state.others[("Pet", "default/tom")]
    assert kept.raw["spec"] == {"species": "cat", "legs": 4}  # the schema default


# --- bounded input ---------------------------------------------------------------------------------


def billion_laughs() -> str:
    text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: &a ["lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghij":
        text += f"  {name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    return text


def test_yaml_aliases_cannot_expand_a_few_hundred_bytes_into_gigabytes() -> None:
    with pytest.raises(InputTooHostile, match="document contains excessive aliasing"):
        check_aliases(billion_laughs())
    check_aliases("a: &x [1, 2]\nb: *x\n")  # ordinary anchors stay fine
    result = load_text(billion_laughs(), "laughs.yaml")
    assert [str(e) for e in result.errors] == ["laughs.yaml, document 1: error converting YAML to JSON: yaml: "
                                               "document contains excessive aliasing"]


@pytest.mark.parametrize(("content", "message"), [
    pytest.param(b"\x00" * 4096, "binary data (a NUL byte at offset 0), not YAML or JSON", id="zeros"),
    pytest.param(b"apiVersion: v1\n\xff\xfe", "not UTF-8 text (byte 15)", id="not utf-8"),
    pytest.param(b"[" * 50000 + b"]" * 50000, "error parsing", id="deep nesting"),
])
def test_hostile_files_end_in_a_clear_error_with_exit_2(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    result = CliRunner().invoke(cli, ["validate", "-f", str(path)])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_dev_zero_is_refused_at_once() -> None:
    result = CliRunner().invoke(cli, ["get", "pods", "-f", "/dev/zero"])
    assert result.exit_code == 2 and 'cannot read "/dev/zero": binary data' in result.output


# --- analysis sees what `kubectl apply -f` would leave ------------------------------------------


SHOP_WITH_ONE_BAD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec: {selector: {app: api}, ports: [{port: 80}, {port: 81}]}
"""


def test_one_invalid_object_does_not_void_the_analysis(tmp_path) -> None:
    (tmp_path / "app.yaml").write_text(SHOP_WITH_ONE_BAD)
    result = CliRunner().invoke(cli, ["endpoints", "web", "-f", str(tmp_path)])
    assert result.exit_code == 0
    assert f"error: {tmp_path}/app.yaml, document 3: Service default/api: spec.ports[0].name: Required value" \
        in result.output
    assert "1 object(s) left out as the API server would reject them; the rest is simulated" in result.output
    assert "10.244." in result.output  # web's endpoint: the Deployment and Service were simulated


def test_a_file_that_does_not_parse_stops_the_analysis_as_it_stops_kubectl_apply(tmp_path) -> None:
    (tmp_path / "app.yaml").write_text(SHOP_WITH_ONE_BAD)
    (tmp_path / "broken.yaml").write_text("kind: [\n")
    result = CliRunner().invoke(cli, ["endpoints", "web", "-f", str(tmp_path)])
    assert result.exit_code == 2
    assert f"error: {tmp_path}/broken.yaml, document 1: error parsing YAML" in result.output
    assert result.output.splitlines()[-1] == "3 errors; nothing was simulated"


def test_strict_turns_any_rejection_into_exit_2_with_nothing_simulated(tmp_path) -> None:
    (tmp_path / "app.yaml").write_text(SHOP_WITH_ONE_BAD)
    result = CliRunner().invoke(cli, ["endpoints", "web", "-f", str(tmp_path), "--strict"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "2 errors; nothing was simulated"


def test_validate_reports_every_files_errors_even_when_one_does_not_parse(tmp_path) -> None:
    (tmp_path / "a.yaml").write_text(SHOP_WITH_ONE_BAD)
    (tmp_path / "b.yaml").write_text("kind: [\n")
    (tmp_path / "c.yaml").write_text(textwrap.dedent("""
        apiVersion: networking.k8s.io/v1
        kind: Ingres
        metadata: {name: web}
    """))
    result = CliRunner().invoke(cli, ["validate", "-f", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines == [
        f"error: {tmp_path}/b.yaml, document 1: error parsing YAML (line 2, column 1): did not find expected node "
        "content",
        f'error: {tmp_path}/c.yaml, document 1: Ingres web: no matches for kind "Ingres" in version '
        '"networking.k8s.io/v1"; ensure CRDs are installed first',
        f"error: {tmp_path}/a.yaml, document 3: Service default/api: spec.ports[0].name: Required value",
        f"error: {tmp_path}/a.yaml, document 3: Service default/api: spec.ports[1].name: Required value",
        "4 errors; 2 object(s) valid, 2 rejected, 1 unreadable",
    ]


def test_doctor_names_the_field_that_was_meant_and_what_its_loss_costs(tmp_path) -> None:
    (tmp_path / "svc.yaml").write_text(textwrap.dedent("""
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec:
          selectr: {app: web}
          ports: [{port: 80}]
    """))
    result = CliRunner().invoke(cli, ["doctor", "-f", str(tmp_path), "-o", "json"])
    assert result.exit_code == 1
    finding = next(f for f in json.loads(result.output)["findings"] if f["code"] == "UnknownField")
    assert finding["subject"] == "Service default/web"
    assert 'unknown field "spec.selectr" (did you mean "spec.selector"?)' in finding["message"]
    assert "this Service would select no Pods" in finding["message"]
    assert finding["fix"] == "rename spec.selectr to spec.selector"


def test_a_pod_on_a_node_knetsim_does_not_know_is_analysed(tmp_path) -> None:
    (tmp_path / "snap.yaml").write_text(textwrap.dedent("""
        apiVersion: v1
        kind: Pod
        metadata: {name: agent, namespace: default, uid: 6a1e5b7e-0000-4000-8000-000000000002}
        spec:
          nodeName: gke-pool-1-abcd
          hostNetwork: true
          containers: [{name: c, image: busybox}]
        status: {phase: Running, podIP: 10.128.0.9, hostIP: 10.128.0.9}
    """))
    for args in (["get", "pods", "-o", "wide"], ["matrix"], ["overview"], ["doctor"], ["render", "iptables"]):
        result = CliRunner().invoke(cli, [*args, "-f", str(tmp_path)])
        assert result.exit_code in (0, 1), (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)


def test_python_api_stays_strict_by_default() -> None:
    with pytest.raises(InputError):
        Cluster.from_yaml(SHOP_WITH_ONE_BAD)


# --- the decoder's two paths (model/schema.py: a fast one for bodies that fit, the path-naming one otherwise) ----


def test_a_body_that_fits_decodes_as_go_would_nulls_and_integral_floats_included() -> None:
    body = deploy({"replicas": 3.0, "paused": None, "template": {
        "metadata": {"labels": {"app": "web", "empty": None, 7: "seven"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "args": ["-x", None],
                                 "ports": [{"containerPort": 80}, None],
                                 "resources": {"limits": {"cpu": "500m", "memory": 1.5}}}]}}})
    decoded = schema.decode(body, "io.k8s.api.apps.v1.Deployment")
    assert decoded.strict == ()
    assert decoded.obj["spec"]["replicas"] == 3 and type(decoded.obj["spec"]["replicas"]) is int
    assert "paused" not in decoded.obj["spec"]
    template = decoded.obj["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "web", "empty": "", "7": "seven"}
    # null in a list is the element's zero value: "" for a string, an empty ContainerPort for a port
    assert template["spec"]["containers"][0] == {
        "name": "web", "image": "nginx", "args": ["-x", ""], "ports": [{"containerPort": 80}, {}],
        "resources": {"limits": {"cpu": "500m", "memory": 1.5}}}


def test_a_misfit_deep_in_a_body_is_named_by_its_whole_path() -> None:
    body = deploy({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
        {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": "eighty"}]}]}}})
    assert refused(body).message.endswith(
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports."
        "containerPort of type int32")
    body = deploy({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
        {"name": "web", "image": "nginx", "ports": [{"containerPort": 80, "hostPortt": 81}]}]}}})
    assert refused(body).message.endswith(
        'strict decoding error: unknown field "spec.template.spec.containers[0].ports[0].hostPortt"')
    body = loads_json(json.dumps(deploy({})).replace('"image": "nginx:1.27"', '"image": "a", "image": "b"'))
    assert refused(body).message.endswith(
        'strict decoding error: duplicate field "spec.template.spec.containers[0].image"')
