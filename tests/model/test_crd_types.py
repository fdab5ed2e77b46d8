"""A custom object's field of the wrong JSON type is refused in the API server's words.

apiextensions-apiserver reports a structural type mismatch as ``field.TypeInvalid`` whose value is the
JSON type name of what was sent (``Invalid value: "string"``), never the value itself. The cases restate
the type scenarios of apiextensions-apiserver's validation_test.go as our own.
"""

from __future__ import annotations

from typing import Any

import pytest

from knetsim.model import crd as crds


def field_errors(field_schema: dict[str, Any], value: Any) -> list[str]:
    schema = {"type": "object", "properties": {"field": field_schema}}
    return [str(e) for e in crds.validate({"field": value}, schema) if not str(e).startswith("<nil>")]


@pytest.mark.parametrize(("value", "sent"), [
    ("foo", "string"), (42, "integer"), (True, "boolean"), (1.2, "number"), ([], "array"), (None, "null"),
])
def test_an_object_field_of_another_type_names_the_type_sent(value: Any, sent: str) -> None:
    assert field_errors({"type": "object"}, value) == [
        f'field: Invalid value: "{sent}": field in body must be of type object: "{sent}"']


@pytest.mark.parametrize(("value", "sent"), [
    (None, "null"), (True, "boolean"), (1.2, "number"), ({}, "object"), ([], "array"),
])
def test_an_int_or_string_field_names_both_types_it_takes(value: Any, sent: str) -> None:
    assert field_errors({"x-kubernetes-int-or-string": True}, value) == [
        f'field: Invalid value: "{sent}": field in body must be of type integer,string: "{sent}"']


@pytest.mark.parametrize("value", [42, "foo", 2.0])
def test_an_int_or_string_field_takes_integers_whole_numbers_and_strings(value: Any) -> None:
    assert field_errors({"x-kubernetes-int-or-string": True}, value) == []


def test_a_nullable_field_takes_null_but_no_other_type() -> None:
    assert field_errors({"type": "object", "nullable": True}, None) == []
    assert field_errors({"x-kubernetes-int-or-string": True, "nullable": True}, [1]) == [
        'field: Invalid value: "array": field in body must be of type integer,string: "array"']


def test_a_port_sent_as_a_word_is_refused_as_a_string() -> None:
    assert field_errors({"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535}, "eighty") == [
        'field: Invalid value: "string": field in body must be of type integer: "string"']


def test_a_value_of_the_wrong_type_is_also_checked_against_the_enum() -> None:
    """kube-openapi runs the enum validator after the type validator, whatever the type said."""
    schema = {"type": "object", "properties": {"field": {"type": "object", "properties": {
        "nestedint": {"type": "integer", "enum": [1, 2]}, "nestedstring": {"type": "string", "enum": ["a", "b"]}}}}}
    errors = [str(e) for e in crds.validate({"field": {"nestedint": "x", "nestedstring": True}}, schema)]
    assert errors[:4] == [
        'field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string"',
        'field.nestedint: Unsupported value: "x": supported values: "1", "2"',
        'field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean"',
        'field.nestedstring: Unsupported value: true: supported values: "a", "b"',
    ]
