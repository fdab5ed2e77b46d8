"""A client's CRD of a kind knetsim does not know, with the real kubectl: once applied, its kind is served as a
real API server serves any CRD (discovery, apply, get with its additionalPrinterColumns, schema validation in the
API server's words), and deleting the CRD takes the kind and its objects away (`no matches for kind` again).
"""

from __future__ import annotations

from tests.live import Live

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
"""
WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3}
"""


def test_a_clients_crd_serves_its_kind_until_it_is_deleted(live: Live) -> None:
    before = live.kubectl("apply", "-f", "-", input=WIDGET, check=False)
    assert 'no matches for kind "Widget" in version "example.com/v1"' in before.stderr
    live.kubectl("apply", "-f", "-", input=CRD)
    try:
        assert live.kubectl("apply", "-f", "-", input=WIDGET).stdout.strip() == "widget.example.com/w1 created"
        table = live.kubectl("get", "wd").stdout.splitlines()
        assert table[0].split() == ["NAME", "SIZE", "AGE"] and table[1].split()[:2] == ["w1", "3"]
        bad = live.kubectl("apply", "-f", "-", input=WIDGET.replace("w1", "w0").replace("size: 3", "size: 0"),
                           check=False)
        assert 'The Widget "w0" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than ' \
               "or equal to 1" in bad.stderr, bad.stderr
    finally:
        live.kubectl("delete", "-f", "-", input=CRD)
    after = live.kubectl("get", "widgets.example.com", check=False)
    assert after.returncode != 0
