"""What the API server lets a client change, seen through the real kubectl.

Given objects made with kubectl, when a user edits what Kubernetes fixes at creation (a Pod's env,
a Deployment's selector, a Job's template, an immutable ConfigMap's data), then kubectl prints the API
server's refusal and exits 1, and the stored object is unchanged; what may change (a Pod's image,
labels, a Deployment's template) still does.
"""

from __future__ import annotations

import json

import pytest

from .conftest import KUBECTL, Cluster

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

ALLOWED = ("pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
           "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
           "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


def test_a_pods_env_is_fixed_and_its_image_and_labels_are_not(k: Cluster) -> None:
    k.kubectl("run", "p", "--image=nginx:1.27", "--env=MODE=a")
    out = k.kubectl("set", "env", "pod/p", "MODE=b", check=False)
    assert out.returncode == 1
    assert out.stderr == (f'error: failed to patch env update to pod template: Pod "p" is invalid: spec: Forbidden: '
                          f'{ALLOWED}\n  - spec.containers[0].env[0].value: "a"\n'
                          '  + spec.containers[0].env[0].value: "b"\n')
    assert k.get_json("pod", "p")["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "a"}]

    out = k.kubectl("patch", "pod", "p", "-p", '{"spec":{"containers":[{"name":"p","ports":[{"containerPort":80}]}]}}',
                    check=False)
    assert out.returncode == 1 and out.stderr.startswith(f'The Pod "p" is invalid: spec: Forbidden: {ALLOWED}\n')

    k.kubectl("set", "image", "pod/p", "p=nginx:1.28")
    k.kubectl("label", "pod", "p", "tier=web")
    pod = k.get_json("pod", "p")
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.28" and pod["metadata"]["labels"]["tier"] == "web"


def test_a_deployments_selector_is_fixed(k: Cluster) -> None:
    k.kubectl("create", "deployment", "web", "--image=nginx:1.27")
    patch = {"spec": {"selector": {"matchLabels": {"app": "web", "tier": "front"}},
                      "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}}}
    out = k.kubectl("patch", "deployment", "web", "-p", json.dumps(patch), check=False)
    assert out.returncode == 1
    assert out.stderr == ('The Deployment "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{'
                          'MatchLabels:map[string]string{"app":"web", "tier":"front"}, '
                          "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable\n")
    k.kubectl("set", "image", "deployment/web", "nginx=nginx:1.28")
    assert k.get_json("deployment", "web")["spec"]["selector"] == {"matchLabels": {"app": "web"}}


def test_a_jobs_template_and_an_immutable_config_maps_data_are_fixed(k: Cluster) -> None:
    k.kubectl("create", "job", "pi", "--image=busybox:1.36", "--", "echo", "done")
    out = k.kubectl("set", "image", "job/pi", "pi=busybox:1.37", check=False)
    assert out.returncode == 1
    assert 'Job.batch "pi" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable' \
        in out.stderr

    k.kubectl("create", "configmap", "cfg", "--from-literal=mode=a")
    k.kubectl("patch", "configmap", "cfg", "-p", '{"immutable":true}')
    out = k.kubectl("patch", "configmap", "cfg", "-p", '{"data":{"mode":"b"}}', check=False)
    assert (out.returncode, out.stderr) == (
        1, 'The ConfigMap "cfg" is invalid: data: Forbidden: field is immutable when `immutable` is set\n')
    assert k.get_json("configmap", "cfg")["data"] == {"mode": "a"}
