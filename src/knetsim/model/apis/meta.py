"""The apimachinery types both API groups embed (meta/v1): Condition, LabelSelector, and the root's fields.

Their markers are Kubernetes' own (``k8s.io/apimachinery/pkg/apis/meta/v1/types.go``), so a
condition or a selector written into a Gateway is held to the same limits as in a Deployment.
"""

from __future__ import annotations

from .markers import Field, Int64, ListOf, MapOf, String, Struct

# A qualified name (an optional DNS-subdomain prefix and a name part), metav1.Condition's type.
CONDITION_TYPE = String(max_length=316, pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                                                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
CONDITION_REASON = String(min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


class Condition(Struct):
    """One aspect of the object's observed state (Accepted, Programmed, ResolvedRefs...), as controllers report it."""

    last_transition_time = Field(String(format="date-time"), "When the status last changed (RFC 3339).",
                                 required=True)
    message = Field(String(max_length=32768), "A human-readable explanation of the status; may be empty.",
                    required=True)
    observed_generation = Field(Int64(minimum=0), "The metadata.generation of the object this condition was "
                                                  "computed from; older than the current one means stale.")
    reason = Field(CONDITION_REASON, "A CamelCase word saying why the condition has this status.", required=True)
    status = Field(String(enum=("True", "False", "Unknown")), "True, False or Unknown.", required=True)
    type = Field(CONDITION_TYPE, "The aspect this condition reports on, in CamelCase (Accepted, Programmed...).",
                 required=True)


def conditions(doc: str, *, max_items: int | None = None, min_items: int | None = None) -> ListOf:
    """A conditions list: at most one condition per type (list-type map keyed by type)."""
    return ListOf(Condition, doc, min_items=min_items, max_items=max_items, list_type="map", map_keys=("type",))


class LabelSelectorRequirement(Struct):
    """One test on a label: the key, an operator and, for In and NotIn, the values."""

    key = Field(String(), "The label key the requirement applies to.", required=True)
    operator = Field(String(), "In, NotIn, Exists or DoesNotExist.", required=True)
    values = Field(ListOf(String(), list_type="atomic"),
                   "The values for In and NotIn (not empty); empty for Exists and DoesNotExist.")


class LabelSelector(Struct, map_type="atomic"):
    """Selects objects by their labels: every matchLabels pair and every matchExpressions requirement must
    hold (an empty selector selects everything)."""

    match_expressions = Field(ListOf(LabelSelectorRequirement, list_type="atomic"),
                              "Requirements on labels, all of which must hold.")
    match_labels = Field(MapOf(String()), "Labels that must be present with exactly these values.")


API_VERSION_DOC = ("The versioned schema of this object (group/version). The API server converts the versions "
                   "it serves, and refuses unknown ones.")
KIND_DOC = "The REST resource this object represents, in CamelCase; the server infers it from the endpoint."


class ObjectMeta(Struct):
    # No properties and no description: the API server validates metadata itself, and a CRD says only
    # that it is an object.
    pass


class Object(Struct):
    """The root of a kind: apiVersion, kind and metadata."""

    api_version = Field(String(), API_VERSION_DOC)
    kind = Field(String(), KIND_DOC)
    metadata = Field(ObjectMeta)
