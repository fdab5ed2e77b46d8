"""Validation with the API server's field paths and messages.

Runs on a *defaulted* manifest, as the API server does (defaulting first, then
``pkg/apis/core/validation``, ``pkg/apis/networking/validation``, ``pkg/apis/apps/validation``).
Every function returns all errors it finds; callers collect across documents.
Checks that need cluster state (a ClusterIP already allocated, a NodePort in use, two
default IngressClasses) live in the allocators of ``cluster/``, like upstream's registry.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

from . import shapes
from .cron import ScheduleError, load_zone, schedule_error
from .fielderr import FieldError, GoValue, Path, go_map, go_slice
from .labels import Selector, validate_label_selector, validate_labels
from .names import (
    is_canonical_cidr,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_ip,
    is_valid_port_name,
    is_valid_port_num,
    is_wildcard_dns1123_subdomain,
    regex_error,
)
from .objects import INGRESS_CLASS_ANNOTATION
from .versions import WARNING, in_force

PROTOCOLS = ["SCTP", "TCP", "UDP"]  # sets.List order, as Service and container port validation prints them
# ValidateNetworkPolicyPort and ValidateNetworkPolicySpec list their values in this order.
NETWORK_POLICY_PROTOCOLS = ["TCP", "UDP", "SCTP"]
POLICY_TYPES = ["Ingress", "Egress"]
SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
MAX_CLIENT_IP_AFFINITY_SECONDS = 86400

Errors = list[FieldError]


# --- metadata -------------------------------------------------------------------------

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}


def is_path_segment_name(name: str) -> list[str]:
    """path.IsValidPathSegmentName: what every name must be, since it becomes part of a URL."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


NameRule = Callable[[str], list[str]]


def _generate_name_problems(rule: NameRule, prefix: str) -> list[str]:
    # A generateName prefix may end in '-': the generated suffix completes it.
    return rule(prefix[:-1] + "a" if prefix.endswith("-") and rule is not is_path_segment_name else prefix)


# Names and namespaces found valid by a rule that reads nothing but the name (not a Service's, which depends on the
# version in force): generated manifests repeat them (bench/calico.py: 20,000 objects, 1,000 namespaces and a dozen
# names). Only valid ones are kept; bounded.
_VALID_NAMES: set[tuple[NameRule, str]] = set()
_VALID_NAMES_MAX = 8192
_PURE_NAME_RULES = frozenset({is_dns1123_subdomain, is_dns1123_label, is_path_segment_name})


def _name_problems(rule: NameRule, name: Any) -> list[str]:
    """``rule(name)``, at once for a name the same rule found valid before."""
    if type(name) is not str or rule not in _PURE_NAME_RULES:
        return rule(name)
    key = (rule, name)
    if key in _VALID_NAMES:
        return []
    problems = rule(name)
    if not problems and len(_VALID_NAMES) < _VALID_NAMES_MAX:
        _VALID_NAMES.add(key)
    return problems


def validate_object_meta(meta: Mapping[str, Any] | None, namespaced: bool | None,
                         name_rule: NameRule = is_dns1123_subdomain) -> Errors:
    """ValidateObjectMeta (apimachinery objectmeta.go) with the kind's name rule (its strategy's: a
    Service's is DNS-1035, a Namespace's a DNS-1123 label, RBAC's and core/v1 Events' a path segment),
    then the generic registry's path-segment check, which the API server runs after the kind's own
    validation."""
    if type(meta) is dict and len(meta) <= 2 and _plain_meta_valid(meta, namespaced, name_rule):
        return []
    path = Path("metadata")
    meta = meta or {}
    errs: Errors = []
    generate = meta.get("generateName")
    if generate:
        errs.extend(path.child("generateName").invalid(generate, p)
                    for p in _generate_name_problems(name_rule, generate))
    name = meta.get("name")
    if not name:
        errs.append(path.child("name").required("name or generateName is required"))
    else:
        errs.extend(path.child("name").invalid(name, p) for p in _name_problems(name_rule, name))
    namespace = meta.get("namespace")
    if namespaced and not namespace:
        errs.append(path.child("namespace").required())
    elif namespace:
        errs.extend(path.child("namespace").invalid(namespace, p)
                    for p in _name_problems(is_dns1123_label, str(namespace)))
    generation = meta.get("generation") or 0
    if generation < 0:
        errs.append(path.child("generation").invalid(generation, "must be greater than or equal to 0"))
    # Each part's path is made only when the part is there: most objects have no owners, finalizers or
    # annotations, and four unused paths were a fifth of this function's cost on 20,000 objects.
    labels = meta.get("labels")
    if labels is not None:
        errs.extend(validate_labels(labels, path.child("labels")))
    annotations = meta.get("annotations") or {}
    size = 0
    for key, value in annotations.items():
        errs.extend(path.child("annotations").invalid(key, p) for p in is_qualified_name(key.lower()))
        size += len(key) + len(value)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(path.child("annotations").too_long(TOTAL_ANNOTATION_SIZE_LIMIT))
    refs = meta.get("ownerReferences")
    if refs:
        errs.extend(_owner_references(refs, path.child("ownerReferences")))
    finalizers = meta.get("finalizers")
    if finalizers:
        errs.extend(_finalizers(finalizers, path.child("finalizers")))
    if annotations:
        errs.extend(validate_knetsim_annotations(annotations, path.child("annotations")))
    return errs


def _plain_meta_valid(meta: dict[str, Any], namespaced: bool | None, name_rule: NameRule) -> bool:
    """Whether a metadata of a name and a namespace alone (what most written manifests hold: 20,000 of
    bench/calico.py's objects) is valid, by the name rules only: the other checks of ``validate_object_meta``
    have nothing to read. False sends it through them all (for its errors, with their paths)."""
    name, namespace = meta.get("name"), meta.get("namespace")
    if len(meta) != (name is not None) + (namespace is not None) or type(name) is not str or not name or \
            _name_problems(name_rule, name):
        return False
    if not namespace:
        return not namespaced
    return type(namespace) is str and not _name_problems(is_dns1123_label, namespace)


def _owner_references(refs: Any, path: Path) -> Errors:
    errs: Errors = []
    controller = ""
    for ref in refs or []:
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            errs.append(path.child("apiVersion").invalid(api_version, "version must not be empty"))
        for name in ("kind", "name", "uid"):
            if not ref.get(name):
                errs.append(path.child(name).invalid(str(ref.get(name) or ""), "must not be empty"))
        if api_version == "v1" and ref.get("kind") == "Event":
            errs.append(path.invalid(dict(ref), "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if controller:
                errs.append(path.invalid(list(refs), 'Only one reference can have Controller set to true. Found '
                                                     f'"true" in references for {controller} and {current}'))
            else:
                controller = current
    return errs


def _finalizers(finalizers: Any, path: Path) -> Errors:
    errs: Errors = []
    for i, finalizer in enumerate(finalizers or []):
        text = str(finalizer)
        errs.extend(path.invalid(text, p) for p in is_qualified_name(text))
        if "/" not in text and text not in _STANDARD_FINALIZERS:
            errs.append(path.index(i).invalid(text, "name is neither a standard finalizer name nor is it fully "
                                                    "qualified"))
    if "orphan" in (finalizers or []) and "foregroundDeletion" in (finalizers or []):
        errs.append(path.invalid(list(finalizers), "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


_LISTEN_ITEM = r"\s*\d{1,5}(/(TCP|UDP|SCTP))?\s*"
_LISTEN = re.compile(rf"^({_LISTEN_ITEM}(,{_LISTEN_ITEM})*)?$", re.IGNORECASE)


def validate_knetsim_annotations(annotations: Mapping[str, str] | None, path: Path) -> Errors:
    """knetsim's own annotations: a real API server accepts any string, knetsim must be able to read them."""
    if not annotations:
        return []
    errs: Errors = []
    listen = annotations.get("knetsim.io/listen")
    if listen is not None and (not _LISTEN.match(listen) or any(
            not 1 <= int(item.split("/")[0]) <= 65535 for item in listen.replace(" ", "").split(",") if item)):
        errs.append(path.key("knetsim.io/listen").invalid(
            listen, 'knetsim expects "PORT[/PROTOCOL],..." with ports 1-65535, e.g. "8080,9090/UDP"'))
    ready = annotations.get("knetsim.io/ready")
    if ready is not None and ready not in ("true", "false"):
        errs.append(path.key("knetsim.io/ready").not_supported(ready, ["false", "true"]))
    return errs


# --- Service --------------------------------------------------------------------------


def validate_port_num_or_name(value: int | str, path: Path) -> Errors:
    if isinstance(value, int):
        return [path.invalid(value, p) for p in is_valid_port_num(value)]
    if not value:
        return [path.required()]
    # An IntOrString given as "8080" is a string: upstream validates it as a name (and rejects it).
    return [path.invalid(value, p) for p in is_valid_port_name(value)]


def externally_accessible(spec: Mapping[str, Any]) -> bool:
    """pkg/api/v1/service.ExternallyAccessible: node ports, a load balancer, or a ClusterIP with external IPs;
    such a Service has an externalTrafficPolicy (defaulted, required, and dropped when it stops being one)."""
    svc_type = spec.get("type") or "ClusterIP"
    return svc_type in ("NodePort", "LoadBalancer") or (svc_type == "ClusterIP" and bool(spec.get("externalIPs")))


def validate_service(body: Mapping[str, Any]) -> Errors:
    spec = body.get("spec") or {}
    path = Path("spec")
    errs: Errors = []
    svc_type = spec.get("type", "ClusterIP")
    if svc_type not in SERVICE_TYPES:
        errs.append(path.child("type").not_supported(svc_type, SERVICE_TYPES))
    cluster_ip = spec.get("clusterIP")
    cluster_ips = spec.get("clusterIPs") or []
    headless = cluster_ip == "None" or (cluster_ips[:1] == ["None"])
    ports = spec.get("ports") or []

    if svc_type == "ExternalName":
        for field in ("clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if spec.get(field):
                errs.append(path.child(field).forbidden("may not be set for ExternalName services"))
        if cluster_ip:
            errs.append(path.child("clusterIPs").forbidden("may not be set for ExternalName services"))
        external_name = spec.get("externalName")
        if not external_name:
            errs.append(path.child("externalName").required())
        else:
            name = str(external_name).rstrip(".") if str(external_name).endswith(".") else str(external_name)
            errs.extend(path.child("externalName").invalid(external_name, p) for p in is_dns1123_subdomain(name))
    elif not ports and not headless:
        errs.append(path.child("ports").required())

    if headless and svc_type in ("LoadBalancer", "NodePort"):
        errs.append(
            path.child("clusterIPs").index(0).invalid("None", f"may not be set to 'None' for {svc_type} services")
        )

    errs.extend(_service_cluster_ips(spec, path))

    names_seen: set[str] = set()
    port_protocols: set[tuple[Any, Any]] = set()
    node_port_protocols: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        p = path.child("ports").index(i)
        name = port.get("name")
        if len(ports) > 1 and not name:
            errs.append(p.child("name").required())
        elif name:
            errs.extend(p.child("name").invalid(name, e) for e in is_dns1123_label(str(name)))
            if name in names_seen:
                errs.append(p.child("name").duplicate(name))
            names_seen.add(name)
        # A missing port decodes as 0, which IsValidPortNum rejects.
        number = port.get("port", 0)
        errs.extend(p.child("port").invalid(number, e) for e in is_valid_port_num(number))
        protocol = port.get("protocol")
        if not protocol:
            errs.append(p.child("protocol").required())
        elif protocol not in PROTOCOLS:
            errs.append(p.child("protocol").not_supported(protocol, PROTOCOLS))
        if svc_type != "ExternalName" and "targetPort" in port:
            errs.extend(validate_port_num_or_name(port["targetPort"], p.child("targetPort")))
        node_port = port.get("nodePort")
        if node_port not in (None, 0):
            if svc_type == "ClusterIP":
                errs.append(p.child("nodePort").forbidden("may not be used when `type` is 'ClusterIP'"))
            else:
                errs.extend(p.child("nodePort").invalid(node_port, e) for e in is_valid_port_num(node_port))
                key = (protocol, node_port)
                if key in node_port_protocols:
                    errs.append(p.child("nodePort").duplicate(node_port))
                node_port_protocols.add(key)
        key = (protocol, number)
        if number is not None and key in port_protocols:
            errs.append(p.duplicate({"port": number, "protocol": protocol}))
        port_protocols.add(key)
        app_protocol = port.get("appProtocol")
        if app_protocol:
            errs.extend(p.child("appProtocol").invalid(app_protocol, e) for e in is_qualified_name(str(app_protocol)))

    selector = spec.get("selector")
    if selector is not None:
        errs.extend(validate_labels(selector, path.child("selector")))

    affinity = spec.get("sessionAffinity")
    if affinity not in ("None", "ClientIP"):
        if not affinity:
            errs.append(path.child("sessionAffinity").required())
        else:
            errs.append(path.child("sessionAffinity").not_supported(affinity, ["ClientIP", "None"]))
    config = spec.get("sessionAffinityConfig")
    if affinity == "None" and config:
        errs.append(path.child("sessionAffinityConfig").forbidden("must not be set when session affinity is None"))
    if affinity == "ClientIP" and config:
        timeout = (config.get("clientIP") or {}).get("timeoutSeconds")
        if timeout is not None and not 0 < timeout <= MAX_CLIENT_IP_AFFINITY_SECONDS:
            errs.append(
                path.child("sessionAffinityConfig", "clientIP", "timeoutSeconds").invalid(
                    timeout, f"must be greater than 0 and less than {MAX_CLIENT_IP_AFFINITY_SECONDS}"
                )
            )

    for i, ip in enumerate(spec.get("externalIPs") or []):
        errs.extend(path.child("externalIPs").index(i).invalid(ip, e) for e in legacy_ip_problems(str(ip)))

    if spec.get("loadBalancerSourceRanges"):
        if svc_type != "LoadBalancer":
            errs.append(path.child("loadBalancerSourceRanges").forbidden(
                "may only be used when `type` is 'LoadBalancer'"))
        for i, cidr in enumerate(spec["loadBalancerSourceRanges"]):
            errs.extend(
                path.child("loadBalancerSourceRanges").index(i).invalid(cidr, e)
                for e in legacy_cidr_problems(str(cidr).strip())
            )

    external_policy = spec.get("externalTrafficPolicy")
    external = externally_accessible(spec)
    if external_policy is not None and external_policy != "":
        if not external:
            errs.append(path.child("externalTrafficPolicy").invalid(
                external_policy, "may only be set for externally-accessible services"))
        elif external_policy not in ("Cluster", "Local"):
            errs.append(path.child("externalTrafficPolicy").not_supported(external_policy, ["Cluster", "Local"]))
    elif external:
        errs.append(path.child("externalTrafficPolicy").required())
    internal_policy = spec.get("internalTrafficPolicy")
    if svc_type != "ExternalName" and internal_policy not in (None, "Cluster", "Local"):
        errs.append(path.child("internalTrafficPolicy").not_supported(internal_policy, ["Cluster", "Local"]))
    hc = spec.get("healthCheckNodePort")
    if hc and not (svc_type == "LoadBalancer" and external_policy == "Local"):
        errs.append(path.child("healthCheckNodePort").invalid(
            hc, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
    if spec.get("allocateLoadBalancerNodePorts") is not None and svc_type != "LoadBalancer":
        errs.append(path.child("allocateLoadBalancerNodePorts").forbidden(
            "may only be used when `type` is 'LoadBalancer'"))
    distribution = spec.get("trafficDistribution")
    # validateServiceTrafficDistribution: PreferSameZone (an alias of PreferClose) and PreferSameNode only where
    # PreferSameTrafficDistribution is on (model/versions.py).
    allowed = TRAFFIC_DISTRIBUTIONS if in_force().enabled("PreferSameTrafficDistribution") else ["PreferClose"]
    if distribution is not None and distribution not in allowed:
        errs.append(path.child("trafficDistribution").not_supported(distribution, allowed))
    return errs


IP_FAMILIES = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]  # sets.List order
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameZone", "PreferSameNode"]


def _service_cluster_ips(spec: Mapping[str, Any], path: Path) -> Errors:
    # ClusterIP and ClusterIPs are synced before validation (NormalizeClusterIPs): a clusterIP alone is
    # the one-element clusterIPs.
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec = {**spec, "clusterIPs": [spec["clusterIP"]]}
    return service_cluster_ips_related_fields(spec, path)


def service_cluster_ips_related_fields(spec: Mapping[str, Any], path: Path | None = None) -> Errors:
    """``ValidateServiceClusterIPsRelatedFields``: clusterIP(s), ipFamilies and ipFamilyPolicy, also run by the
    allocator before it defaults the families."""
    path = path or Path("spec")
    if spec.get("type") == "ExternalName":
        return []
    errs: Errors = []
    cluster_ip = spec.get("clusterIP")
    cluster_ips = [str(v) for v in spec.get("clusterIPs") or []]
    ips_path = path.child("clusterIPs")
    if cluster_ip:
        if not cluster_ips:
            errs.append(ips_path.required())
        elif cluster_ips[0] != cluster_ip:
            errs.append(ips_path.invalid(go_slice(cluster_ips), "first value must match `clusterIP`"))
    elif cluster_ips:
        errs.append(ips_path.invalid(go_slice(cluster_ips), "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family not in IP_FAMILIES:
            errs.append(path.child("ipFamilies").index(i).not_supported(family, IP_FAMILIES))
        if family in seen:
            errs.append(path.child("ipFamilies").index(i).duplicate(family))
        seen.add(str(family))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(path.child("ipFamilyPolicy").not_supported(policy, IP_FAMILY_POLICIES))
    invalid_ips = False
    parsed: list[Any] = []
    for i, value in enumerate(cluster_ips):
        if i == 0 and value == "None":
            if len(cluster_ips) > 1:
                invalid_ips = True
                errs.append(ips_path.invalid(go_slice(cluster_ips), "'None' must be the first and only value"))
            continue
        try:
            parsed.append(ipaddress.ip_address(value))
        except ValueError:
            invalid_ips = True
            errs.append(ips_path.index(i).invalid(value, is_valid_ip(value)[0]))
    if len(cluster_ips) > 2:
        errs.append(ips_path.invalid(go_slice(cluster_ips), "may only hold up to 2 values"))
    if invalid_ips:
        return errs
    if len(cluster_ips) > 1 and len({ip.version for ip in parsed}) != len(cluster_ips):
        errs.append(ips_path.invalid(go_slice(cluster_ips), "may specify no more than one IP for each IP family"))
    families = [str(f) for f in spec.get("ipFamilies") or []]
    headless = cluster_ips == ["None"]
    if not headless and cluster_ips and families:
        for i, ip in enumerate(parsed[:len(families)]):
            if families[i] in IP_FAMILIES and ip.version != (4 if families[i] == "IPv4" else 6):
                errs.append(ips_path.index(i).invalid(
                    cluster_ips[i], f"expected an {families[i]} value as indicated by `ipFamilies[{i}]`"))
    return errs


# --- Pods and workloads ---------------------------------------------------------------


def validate_pod_spec(spec: Mapping[str, Any] | None, path: Path) -> Errors:
    # A missing spec is the zero PodSpec to upstream: it fails on what the zero value lacks.
    spec = spec or {}
    errs: Errors = []
    containers = spec.get("containers")
    if not containers:
        errs.append(path.child("containers").required())
        containers = []
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            p = path.child(group).index(i)
            name = container.get("name")
            if not name:
                errs.append(p.child("name").required())
            else:
                errs.extend(p.child("name").invalid(name, e) for e in is_dns1123_label(str(name)))
                if name in names:
                    errs.append(p.child("name").duplicate(name))
                names.add(name)
            if not container.get("image") and group == "containers":
                errs.append(p.child("image").required())
            port_names: set[str] = set()
            for j, port in enumerate(container.get("ports") or []):
                q = p.child("ports").index(j)
                pname = port.get("name")
                if pname:
                    errs.extend(q.child("name").invalid(pname, e) for e in is_valid_port_name(str(pname)))
                    if pname in port_names:
                        errs.append(q.child("name").duplicate(pname))
                    port_names.add(pname)
                number = port.get("containerPort")
                if number is None:
                    errs.append(q.child("containerPort").required())
                else:
                    errs.extend(q.child("containerPort").invalid(number, e) for e in is_valid_port_num(number))
                protocol = port.get("protocol")
                if protocol not in PROTOCOLS:
                    errs.append(q.child("protocol").not_supported(protocol, PROTOCOLS))
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                handler = container.get(probe) or {}
                for action in ("httpGet", "tcpSocket", "grpc"):
                    target = handler.get(action) or {}
                    if "port" in target:
                        errs.extend(validate_port_num_or_name(target["port"], p.child(probe, action, "port")))
    for field in ("hostname", "subdomain"):
        value = spec.get(field)
        if value:
            errs.extend(path.child(field).invalid(value, e) for e in is_dns1123_label(str(value)))
    dns_policy = spec.get("dnsPolicy")
    policies = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
    if dns_policy is not None and dns_policy not in policies:
        errs.append(path.child("dnsPolicy").not_supported(dns_policy, policies))
    dns_config = spec.get("dnsConfig")
    if dns_policy == "None":
        if dns_config is None:
            errs.append(path.child("dnsConfig").required("must provide `dnsConfig` when `dnsPolicy` is None"))
        elif not dns_config.get("nameservers"):
            errs.append(path.child("dnsConfig", "nameservers").required(
                "must provide at least one DNS nameserver when `dnsPolicy` is None"))
    if dns_config:
        servers = dns_config.get("nameservers") or []
        if len(servers) > 3:
            errs.append(path.child("dnsConfig", "nameservers").invalid(
                servers, "must not have more than 3 nameservers"))
        for i, server in enumerate(servers):
            errs.extend(path.child("dnsConfig", "nameservers").index(i).invalid(server, e)
                        for e in is_valid_ip(str(server)))
        searches = dns_config.get("searches") or []
        if len(searches) > 32:
            errs.append(path.child("dnsConfig", "searches").invalid(
                searches, "must not have more than 32 search paths"))
        for i, search in enumerate(searches):
            errs.extend(path.child("dnsConfig", "searches").index(i).invalid(search, e)
                        for e in is_dns1123_subdomain(str(search).rstrip(".")))
    return errs


def validate_pod(body: Mapping[str, Any]) -> Errors:
    return validate_pod_spec(body.get("spec"), Path("spec"))


def validate_workload(body: Mapping[str, Any], *, selector_required: bool = True, path: Path | None = None) -> Errors:
    spec = body.get("spec") or {}
    path = path or Path("spec")
    errs: Errors = []
    replicas = spec.get("replicas")
    if replicas is not None and replicas < 0:
        errs.append(path.child("replicas").invalid(replicas, "must be greater than or equal to 0"))
    selector = spec.get("selector")
    template = spec.get("template")
    template_labels = ((template or {}).get("metadata") or {}).get("labels")
    if selector is None:
        if selector_required:
            errs.append(path.child("selector").required())
    else:
        errs.extend(validate_label_selector(selector, path.child("selector")))
        if not errs:
            parsed = Selector.from_label_selector(selector)
            if parsed.empty:
                errs.append(path.child("selector").invalid(selector, "empty selector is invalid for deployment"))
            elif not parsed.matches(template_labels or {}):
                errs.append(path.child("template", "metadata", "labels").invalid(
                    go_map({str(k): str(v) for k, v in (template_labels or {}).items()}),
                    "`selector` does not match template `labels`"))
    if template is None:
        errs.append(path.child("template").required())
        return errs
    errs.extend(validate_labels(template_labels, path.child("template", "metadata", "labels")))
    errs.extend(validate_knetsim_annotations((template.get("metadata") or {}).get("annotations"),
                                             path.child("template", "metadata", "annotations")))
    errs.extend(validate_pod_spec(template.get("spec"), path.child("template", "spec")))
    return errs


def validate_replication_controller(body: Mapping[str, Any]) -> Errors:
    """ValidateReplicationControllerSpec (pkg/apis/core/validation): a non-empty selector map that the template's
    labels match, a template, non-negative replicas; the pod template's own rules."""
    spec = body.get("spec") or {}
    path = Path("spec")
    errs: Errors = []
    replicas = spec.get("replicas")
    if replicas is not None and replicas < 0:
        errs.append(path.child("replicas").invalid(replicas, "must be greater than or equal to 0"))
    selector = spec.get("selector") or {}
    errs.extend(validate_labels(selector, path.child("selector")))
    if not selector:
        errs.append(path.child("selector").required())
    template = spec.get("template")
    if template is None:
        errs.append(path.child("template").required())
        return errs
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and not Selector.from_map(selector).matches(template_labels):
        errs.append(path.child("template", "metadata", "labels").invalid(
            go_map({str(k): str(v) for k, v in template_labels.items()}),
            "`selector` does not match template `labels`"))
    errs.extend(validate_labels(template_labels, path.child("template", "metadata", "labels")))
    errs.extend(validate_pod_spec(template.get("spec"), path.child("template", "spec")))
    return errs


def validate_job(body: Mapping[str, Any]) -> Errors:
    return validate_workload(body, selector_required=False) + _job_restart_policy(body.get("spec"), Path("spec"))


def _job_restart_policy(spec: Mapping[str, Any] | None, path: Path) -> Errors:
    """validateJobSpec: a Job's pods end, so they cannot restart Always (the Pod default)."""
    pod_spec = ((spec or {}).get("template") or {}).get("spec")
    if pod_spec is None:
        return []
    policy = pod_spec.get("restartPolicy") or ""
    where = path.child("template", "spec", "restartPolicy")
    if policy in ("Always", ""):
        return [where.required('valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [where.not_supported(policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [where.invalid(policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
# https://data.iana.org/time-zones/theory.html#naming, with digits and '+' for the legacy names.
_TIME_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
# The cronjob controller names a Job "<cronjob>-<minutes since the epoch>" (11 characters more), and a
# Job's name is at most 63 characters.
MAX_CRONJOB_NAME = 63 - 11


def validate_cronjob(body: Mapping[str, Any]) -> Errors:
    """validateCronJobSpec and ValidateCronJobCreate's name limit (pkg/apis/batch/validation)."""
    spec = body.get("spec") or {}
    path = Path("spec")
    errs: Errors = []
    schedule = spec.get("schedule")
    if not schedule:
        errs.append(path.child("schedule").required())
    else:
        message = schedule_error(str(schedule))
        if message is not None:
            errs.append(path.child("schedule").invalid(schedule, message))
        if "TZ" in str(schedule):
            errs.append(path.child("schedule").invalid(
                schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None and deadline < 0:
        errs.append(path.child("startingDeadlineSeconds").invalid(deadline, "must be greater than or equal to 0"))
    zone = spec.get("timeZone")
    if zone is not None:
        zone_path = path.child("timeZone")
        if zone == "":
            errs.append(zone_path.invalid(zone, "timeZone must be nil or non-empty string"))
        elif any(part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part)
                 for part in str(zone).split("/")):
            errs.append(zone_path.invalid(zone, f"unknown time zone {zone}"))
        else:
            if str(zone).lower() == "local":
                errs.append(zone_path.invalid(
                    zone, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
            try:
                load_zone(str(zone))
            except ScheduleError as exc:
                errs.append(zone_path.invalid(zone, str(exc)))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(path.child("concurrencyPolicy").required())
    elif policy not in CONCURRENCY_POLICIES:
        errs.append(path.child("concurrencyPolicy").not_supported(policy, CONCURRENCY_POLICIES))
    template = spec.get("jobTemplate")
    template_path = path.child("jobTemplate", "spec")
    errs.extend(validate_workload(template or {}, selector_required=False, path=template_path))
    job_spec = (template or {}).get("spec")
    errs.extend(_job_restart_policy(job_spec, template_path))
    if job_spec:
        if job_spec.get("selector") is not None:
            errs.append(template_path.child("selector").invalid(job_spec["selector"],
                                                                "`selector` will be auto-generated"))
        if job_spec.get("manualSelector"):
            errs.append(template_path.child("manualSelector").not_supported(True, ["nil", "false"]))
    for limit in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(limit)
        if value is not None and value < 0:
            errs.append(path.child(limit).invalid(value, "must be greater than or equal to 0"))
    name = str((body.get("metadata") or {}).get("name") or "")
    if len(name) > MAX_CRONJOB_NAME:
        errs.append(Path("metadata").child("name").invalid(name, f"must be no more than {MAX_CRONJOB_NAME} characters"))
    return errs


def validate_statefulset(body: Mapping[str, Any]) -> Errors:
    errs = validate_workload(body)
    service_name = (body.get("spec") or {}).get("serviceName")
    if service_name:
        errs.extend(Path("spec", ).child("serviceName").invalid(service_name, e)
                    for e in is_dns1035_label(str(service_name)))
    return errs


# --- EndpointSlice --------------------------------------------------------------------


def validate_endpoint_slice(body: Mapping[str, Any]) -> Errors:
    errs: Errors = []
    address_type = body.get("addressType")
    types = ["FQDN", "IPv4", "IPv6"]
    if not address_type:
        errs.append(Path("addressType").required())
    elif address_type not in types:
        errs.append(Path("addressType").not_supported(address_type, types))
    endpoints = body.get("endpoints") or []
    if len(endpoints) > 1000:
        errs.append(Path("endpoints").too_many(len(endpoints), 1000))
    for i, endpoint in enumerate(endpoints):
        p = Path("endpoints").index(i)
        addresses = endpoint.get("addresses") or []
        if not addresses:
            errs.append(p.child("addresses").required("must contain at least 1 address"))
        elif len(addresses) > 100:
            errs.append(p.child("addresses").too_many(len(addresses), 100))
        for j, address in enumerate(addresses):
            q = p.child("addresses").index(j)
            if address_type in ("IPv4", "IPv6"):
                try:
                    ip = ipaddress.ip_address(str(address))
                except ValueError:
                    errs.append(q.invalid(address, "must be a valid IP address"))
                    continue
                if ip.version != (4 if address_type == "IPv4" else 6):
                    errs.append(q.invalid(address, f"must be an {address_type} address"))
    for i, port in enumerate(body.get("ports") or []):
        p = Path("ports").index(i)
        number = port.get("port")
        if number is not None:
            errs.extend(p.child("port").invalid(number, e) for e in is_valid_port_num(number))
        protocol = port.get("protocol")
        if protocol not in PROTOCOLS:
            errs.append(p.child("protocol").not_supported(protocol, PROTOCOLS))
    return errs


# --- Ingress and IngressClass ---------------------------------------------------------

_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
_INVALID_PATH_SEQUENCES = ["//", "/./", "/../", "%2f", "%2F"]
_INVALID_PATH_SUFFIXES = ["/..", "/."]


def _ingress_backend(backend: Mapping[str, Any], path: Path) -> Errors:
    # validateIngressBackend reports the shape problems on the backend itself, with an empty value.
    errs: Errors = []
    service = backend.get("service")
    resource = backend.get("resource")
    if service and resource:
        return [path.invalid("", "cannot set both resource and service backends")]
    if resource:
        for field in ("kind", "name"):
            if not resource.get(field):
                errs.append(path.child("resource", field).required(f"{field} is required"))
        return errs
    if not service:
        return [path.invalid("", "resource or service backend is required")]
    name = service.get("name")
    if not name:
        errs.append(path.child("service", "name").required())
    else:
        # An Ingress may name a Service by the rule its name was admitted under (KEP-5311, kubernetes #132339).
        errs.extend(path.child("service", "name").invalid(name, e) for e in service_name_problems(str(name)))
    port = service.get("port") or {}
    number = port.get("number")
    has_name, has_number = bool(port.get("name")), number not in (None, 0)
    if has_name and has_number:
        errs.append(path.invalid("", "cannot set both port name & port number"))
    elif has_name:
        errs.extend(path.child("service", "port", "name").invalid(port["name"], e)
                    for e in is_valid_port_name(str(port["name"])))
    elif has_number:
        errs.extend(path.child("service", "port", "number").invalid(number, e) for e in is_valid_port_num(number))
    else:
        errs.append(path.required("port name or number is required"))
    return errs


def _ingress_path(path_spec: Mapping[str, Any], p: Path) -> Errors:
    errs: Errors = []
    path_type = path_spec.get("pathType")
    value = path_spec.get("path", "")
    if not path_type:
        # validateHTTPIngressPath returns here: the backend of such a path is not looked at.
        return [p.child("pathType").required("pathType must be specified")]
    if path_type in ("Exact", "Prefix"):
        if not str(value).startswith("/"):
            errs.append(p.child("path").invalid(value, "must be an absolute path"))
        for seq in _INVALID_PATH_SEQUENCES:
            if seq in str(value):
                errs.append(p.child("path").invalid(value, f"must not contain '{seq}'"))
        for suffix in _INVALID_PATH_SUFFIXES:
            if str(value).endswith(suffix):
                errs.append(p.child("path").invalid(value, f"cannot end with '{suffix}'"))
    elif path_type == "ImplementationSpecific":
        if value and not str(value).startswith("/"):
            errs.append(p.child("path").invalid(value, "must be an absolute path"))
    else:
        errs.append(p.child("pathType").not_supported(path_type, _PATH_TYPES))
    errs.extend(_ingress_backend(path_spec.get("backend") or {}, p.child("backend")))
    return errs


def validate_ingress(body: Mapping[str, Any]) -> Errors:
    spec = body.get("spec") or {}
    path = Path("spec")
    errs: Errors = []
    rules = spec.get("rules") or []
    default_backend = spec.get("defaultBackend")
    if not rules and not default_backend:
        errs.append(path.invalid(spec, "either `defaultBackend` or `rules` must be specified"))
    if default_backend:
        errs.extend(_ingress_backend(default_backend, path.child("defaultBackend")))
    for i, rule in enumerate(rules):
        p = path.child("rules").index(i)
        host = rule.get("host")
        if host:
            host = str(host)
            try:
                ipaddress.ip_address(host)
                errs.append(p.child("host").invalid(host, "must be a DNS name, not an IP address"))
            except ValueError:
                checker = is_wildcard_dns1123_subdomain if host.startswith("*") else is_dns1123_subdomain
                errs.extend(p.child("host").invalid(host, e) for e in checker(host))
        http = rule.get("http")
        if http is None:
            continue
        paths = http.get("paths")
        if not paths:
            errs.append(p.child("http", "paths").required())
            continue
        for j, path_spec in enumerate(paths):
            errs.extend(_ingress_path(path_spec, p.child("http", "paths").index(j)))
    for i, tls in enumerate(spec.get("tls") or []):
        for j, host in enumerate(tls.get("hosts") or []):
            checker = is_wildcard_dns1123_subdomain if str(host).startswith("*") else is_dns1123_subdomain
            errs.extend(path.child("tls").index(i).child("hosts").index(j).invalid(host, e) for e in checker(str(host)))
        secret = tls.get("secretName")
        if secret:
            errs.extend(path.child("tls").index(i).child("secretName").invalid(secret, e)
                        for e in is_dns1123_subdomain(str(secret)))
    class_name = spec.get("ingressClassName")
    if class_name:
        errs.extend(path.child("ingressClassName").invalid(class_name, e)
                    for e in is_dns1123_subdomain(str(class_name)))
    annotation = ((body.get("metadata") or {}).get("annotations") or {}).get(INGRESS_CLASS_ANNOTATION)
    if annotation and class_name and annotation != class_name:
        # Upstream's path here is `annotations.kubernetes.io/ingress.class` (no "metadata.").
        errs.append(Path("annotations").child(INGRESS_CLASS_ANNOTATION).invalid(
            annotation, "must match `ingressClassName` when both are specified"))
    return errs


def validate_ingress_class(body: Mapping[str, Any]) -> Errors:
    spec = body.get("spec") or {}
    controller = spec.get("controller")
    path = Path("spec", ).child("controller")
    if not controller:
        return [path.required()]
    errs: Errors = []
    if len(str(controller)) > 250:
        errs.append(path.too_long(250))
    if "/" not in str(controller):
        errs.append(path.invalid(controller, "must be a domain-prefixed path (such as \"acme.io/foo\")"))
    return errs


# --- NetworkPolicy --------------------------------------------------------------------


def _np_ports(ports: Any, path: Path) -> Errors:
    errs: Errors = []
    for i, port in enumerate(ports or []):
        p = path.index(i)
        protocol = port.get("protocol")
        if protocol is not None and protocol not in NETWORK_POLICY_PROTOCOLS:
            errs.append(p.child("protocol").not_supported(protocol, NETWORK_POLICY_PROTOCOLS))
        number = port.get("port")
        end_port = port.get("endPort")
        if number is not None:
            # An IntOrString: a number is a port, a string a port name.
            if isinstance(number, int):
                errs.extend(p.child("port").invalid(number, e) for e in is_valid_port_num(number))
                if end_port is not None:
                    if end_port < number:
                        errs.append(p.child("endPort").invalid(end_port, "must be greater than or equal to `port`"))
                    else:
                        errs.extend(p.child("endPort").invalid(end_port, e) for e in is_valid_port_num(end_port))
            else:
                errs.extend(p.child("port").invalid(number, e) for e in is_valid_port_name(str(number)))
                if end_port is not None:
                    errs.append(p.child("endPort").invalid(end_port, "may not be specified when `port` is non-numeric"))
        elif end_port is not None:
            errs.append(p.child("endPort").invalid(end_port, "may not be specified when `port` is not specified"))
    return errs


# The label-only selectors (matchLabels and nothing else) found valid: 10,000 policies repeat a few of them tens
# of thousands of times, and whether one is valid depends on its labels alone. Only valid ones are kept (an
# invalid one is checked again, for its errors at its own path); bounded.
_VALID_LABEL_SELECTORS: set[tuple[tuple[Any, Any], ...]] = set()
_VALID_LABEL_SELECTORS_MAX = 4096


def _policy_selector_errors(selector: Any, parent: Path, field_name: str) -> Errors:
    """``validate_label_selector`` of a policy's selector at ``parent.field_name``, once per valid label set."""
    labels = selector.get("matchLabels") if type(selector) is dict and len(selector) == 1 else None
    if selector == {} or type(labels) is dict:
        try:
            key = tuple(labels.items()) if labels else ()
            if key in _VALID_LABEL_SELECTORS:
                return []
        except TypeError:  # an unhashable value: never valid, checked below
            key = None
        errs = validate_label_selector(selector, parent.child(field_name))
        if not errs and key is not None and len(_VALID_LABEL_SELECTORS) < _VALID_LABEL_SELECTORS_MAX:
            _VALID_LABEL_SELECTORS.add(key)
        return errs
    return validate_label_selector(selector, parent.child(field_name))


def _np_peers(peers: Any, path: Path) -> Errors:
    errs: Errors = []
    for i, peer in enumerate(peers or []):
        p = path.index(i)
        count = sum(1 for key in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(key) is not None)
        if count == 0:
            errs.append(p.required("must specify a peer"))
        elif peer.get("ipBlock") is not None and count > 1:
            errs.append(p.forbidden("may not specify both ipBlock and another peer"))
        for key in ("podSelector", "namespaceSelector"):
            if peer.get(key) is not None:
                errs.extend(_policy_selector_errors(peer[key], p, key))
        block = peer.get("ipBlock")
        if block is not None:
            errs.extend(_ip_block(block, p.child("ipBlock")))
    return errs


def _ip_block(block: Mapping[str, Any], path: Path) -> Errors:
    """ValidateIPBlock: cidr and each except as legacy CIDR fields (strict or not by the version in force), each
    except a strict subset of cidr as the sloppy parser reads both."""
    if not block.get("cidr"):
        return [path.child("cidr").required()]
    cidr = str(block["cidr"])
    errs: Errors = [path.child("cidr").invalid(cidr, e) for e in legacy_cidr_problems(cidr)]
    parsed = parse_cidr_sloppy(cidr)
    if parsed is None:
        return errs
    network = parsed[1]
    for i, exc in enumerate(block.get("except") or []):
        p = path.child("except").index(i)
        errs.extend(p.invalid(exc, e) for e in legacy_cidr_problems(str(exc)))
        inner = parse_cidr_sloppy(str(exc))
        if inner is None:
            continue
        if (
            inner[1].version != network.version
            or inner[1].network_address not in network
            or inner[1].prefixlen <= network.prefixlen
        ):
            errs.append(p.invalid(exc, "must be a strict subset of `cidr`"))
    return errs


# --- legacy IP and CIDR fields (KEP-4858) ------------------------------------------------------------
# Fields older than strict IP validation (NetworkPolicy ipBlock, Service externalIPs and loadBalancerSourceRanges)
# are parsed as k8s.io/utils/net's ParseIPSloppy / ParseCIDRSloppy parse them: IPv4 octets and prefix lengths may
# carry leading 0s, read as decimal. StrictIPCIDRValidation (model/versions.py) refuses those forms, IPv4-mapped
# IPv6 addresses and CIDRs with bits beyond the prefix; without it they pass with the API server's warning
# (apimachinery pkg/util/validation/ip.go: IsValidIPForLegacyField, IsValidCIDRForLegacyField, GetWarningsForIP,
# GetWarningsForCIDR; the messages are theirs).

IPAddr = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network
_INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_INVALID_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
# The parsers below are pure functions of the text and return immutable addresses: a 10,000-policy input
# repeats a handful of CIDRs tens of thousands of times (validation, warnings, the read-back), and parsing
# each again was a tenth of admitting it. Bounded, so a hostile input's distinct values cannot grow the cache.
_PARSED_CACHE = 8192


@functools.lru_cache(maxsize=_PARSED_CACHE)
def parse_ip_sloppy(value: str) -> IPAddr | None:
    """The address ParseIPSloppy reads: an IPv4 octet's leading 0s are decimal (``010`` is 10)."""
    if "%" in value:  # a zone: Go's parsers refuse it
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    octets = value.split(".")
    if len(octets) == 4 and all(o.isascii() and o.isdigit() and int(o) <= 255 for o in octets):
        return ipaddress.IPv4Address(".".join(str(int(o)) for o in octets))
    return None


@functools.lru_cache(maxsize=_PARSED_CACHE)
def parse_cidr_sloppy(value: str) -> tuple[IPAddr, IPNet] | None:
    """(the address as written, its network) as ParseCIDRSloppy reads them; leading 0s in the prefix are decimal."""
    address, slash, length = value.partition("/")
    ip = parse_ip_sloppy(address)
    if ip is None or not slash or not (length.isascii() and length.isdigit()) or int(length) > ip.max_prefixlen:
        return None
    return ip, ipaddress.ip_network(f"{ip}/{int(length)}", strict=False)


@functools.lru_cache(maxsize=_PARSED_CACHE)
def _strict_ip(value: str) -> IPAddr | None:
    try:
        return ipaddress.ip_address(value) if "%" not in value else None
    except ValueError:
        return None


def _mapped(ip: IPAddr) -> bool:
    return isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None


# Validation ratcheting (KEP-4008) of the legacy fields: on an update, a value the stored object already holds is
# checked as before StrictIPCIDRValidation, so an object stored by an older minor keeps its unchanged addresses
# (apimachinery validation/ip.go: IsValidIPForLegacyField's validOldIPs, IsValidCIDRForLegacyField's
# validOldCIDRs; the Service and NetworkPolicy strategies pass the old object's externalIPs,
# loadBalancerSourceRanges and ipBlock CIDRs). Upstream compares the strings; knetsim stores a leading-0 address
# as it reads it (``read_legacy_addresses``: 010.0.0.5 is kept as 10.0.0.5), so a value also ratchets when it
# reads as one the stored object holds.
_RATCHETED: ContextVar[frozenset[str]] = ContextVar("ratcheted_legacy_addresses", default=frozenset())
_LEGACY_LISTS = ("externalIPs", "loadBalancerSourceRanges", "except")
RATCHETED_KINDS = frozenset({"Service", "NetworkPolicy"})  # the kinds with legacy IP and CIDR fields


def ratcheting(old: Mapping[str, Any] | None) -> AbstractContextManager[None]:
    """Validate an update of ``old``: its legacy IPs and CIDRs stand as they are (KEP-4008)."""
    if old is None and not _RATCHETED.get():
        return nullcontext()  # a create outside any update: nothing ratchets already (each create asks this)
    return _ratcheting(old)


@contextmanager
def _ratcheting(old: Mapping[str, Any] | None) -> Iterator[None]:
    token = _RATCHETED.set(frozenset(_legacy_values(old)) if old is not None else frozenset())
    try:
        yield
    finally:
        _RATCHETED.reset(token)


def _legacy_values(node: Any) -> Iterator[str]:
    """Every legacy IP and CIDR of an object, as written and as read: Service externalIPs and
    loadBalancerSourceRanges, NetworkPolicy ipBlock cidr and except."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in _LEGACY_LISTS and isinstance(value, list):
                for item in value:
                    yield from _forms(str(item).strip())
            elif key == "ipBlock" and isinstance(value, Mapping) and value.get("cidr") is not None:
                yield from _forms(str(value["cidr"]))
                yield from _legacy_values(value)
            else:
                yield from _legacy_values(value)
    elif isinstance(node, list):
        for item in node:
            yield from _legacy_values(item)


def _forms(value: str) -> tuple[str, ...]:
    """``value`` and the address (or CIDR) the sloppy parsers read it as."""
    address, slash, length = value.partition("/")
    ip = parse_ip_sloppy(address)
    if ip is None or (slash and not (length.isascii() and length.isdigit())):
        return (value,)
    return value, f"{ip}/{int(length)}" if slash else str(ip)


def _ratcheted(value: str) -> bool:
    held = _RATCHETED.get()
    return bool(held) and any(form in held for form in _forms(value))


def legacy_ip_problems(value: str) -> list[str]:
    """IsValidIPForLegacyField at the version in force (a value the stored object holds: as before it)."""
    if parse_ip_sloppy(value) is None:
        return [_INVALID_IP]
    if not in_force().enabled("StrictIPCIDRValidation") or _ratcheted(value):
        return []
    strict = _strict_ip(value)
    problems = [] if strict is not None else ["must not have leading 0s"]
    if strict is not None and _mapped(strict):
        problems.append("must not be an IPv4-mapped IPv6 address")
    return problems


def legacy_cidr_problems(value: str) -> list[str]:
    """IsValidCIDRForLegacyField at the version in force (a value the stored object holds: as before it)."""
    parsed = parse_cidr_sloppy(value)
    if parsed is None:
        return [_INVALID_CIDR]
    if not in_force().enabled("StrictIPCIDRValidation") or _ratcheted(value):
        return []
    address, _, length = value.partition("/")
    strict = _strict_ip(address)
    if strict is None or (len(length) > 1 and length.startswith("0")):
        return ["must not have leading 0s in IP or prefix length"]
    if _mapped(strict):
        return ["must not have an IPv4-mapped IPv6 address"]
    if strict != parsed[1].network_address:
        return ["must not have bits set beyond the prefix length"]
    return []


def _go_ip(ip: IPAddr) -> str:
    """How Go's net.IP prints an address: an IPv4-mapped IPv6 address as the IPv4 one."""
    return str(ip.ipv4_mapped) if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else str(ip)


def ip_warnings(path: str, value: str) -> list[str]:
    """GetWarningsForIP: what the API server warns of an accepted legacy IP in a non-standard form."""
    ip = parse_ip_sloppy(value)
    if ip is None:
        return []
    strict = _strict_ip(value)
    if strict is None or _mapped(strict):
        return [f'{path}: non-standard IP address "{value}" will be considered invalid in a future Kubernetes '
                f'release: use "{_go_ip(ip)}"']
    if strict.version == 6 and str(strict) != value:
        return [f'{path}: IPv6 address "{value}" should be in RFC 5952 canonical format ("{strict}")']
    return []


def cidr_warnings(path: str, value: str) -> list[str]:
    """GetWarningsForCIDR: an accepted legacy CIDR that is ambiguous or in a non-standard form."""
    return [f"{path}: {text}" for text in _cidr_warning_texts(value)]


# Remembered per value, as the parsers above are: 10,000 NetworkPolicies warn about the same few CIDRs (none).
@functools.lru_cache(maxsize=_PARSED_CACHE)
def _cidr_warning_texts(value: str) -> tuple[str, ...]:
    """cidr_warnings' texts, each after its ``path: ``."""
    parsed = parse_cidr_sloppy(value)
    if parsed is None:
        return ()
    ip, network = parsed
    warnings = []
    if ip != network.network_address:
        warnings.append(f'CIDR value "{value}" is ambiguous in this context (should be "{network}" or '
                        f'"{_go_ip(ip)}/{network.max_prefixlen}"?)')
    address, _, length = value.partition("/")
    strict = _strict_ip(address)
    if strict is None or (len(length) > 1 and length.startswith("0")) or _mapped(strict):
        warnings.append(f'non-standard CIDR value "{value}" will be considered invalid in a future '
                        f'Kubernetes release: use "{network}"')
    elif not warnings and strict.version == 6 and f"{strict}/{int(length)}" != value:
        warnings.append(f'IPv6 CIDR value "{value}" should be in RFC 5952 canonical format '
                        f'("{strict}/{int(length)}")')
    return tuple(warnings)


def service_name_problems(name: str) -> list[str]:
    """ValidateServiceName: an RFC 1035 label, or an RFC 1123 label (a leading digit allowed) where
    RelaxedServiceNameValidation is on (model/versions.py, KEP-5311)."""
    if in_force().enabled("RelaxedServiceNameValidation"):
        return is_dns1123_label(name)
    return is_dns1035_label(name)


def warnings_on_create(kind: str, body: Mapping[str, Any]) -> list[str]:
    """The warnings the API server sends with a created object it admits (the strategies' WarningsOnCreate) that
    depend on the version in force: non-standard legacy IPs and CIDRs, and deprecations (model/versions.py)."""
    spec = body.get("spec")
    if type(spec) is not dict and not isinstance(spec, Mapping):  # the ABC's check is slow: dicts skip it
        spec = {}
    version = in_force()
    out: list[str] = []
    if kind == "Service":
        # pkg/api/service/warnings.go GetWarningsForService, in its order.
        for i, ip in enumerate(spec.get("externalIPs") or []):
            out.extend(ip_warnings(f"spec.externalIPs[{i}]", str(ip)))
        for i, cidr in enumerate(spec.get("loadBalancerSourceRanges") or []):
            out.extend(cidr_warnings(f"spec.loadBalancerSourceRanges[{i}]", str(cidr)))
        if spec.get("trafficDistribution") == "PreferClose" and version.warns("PreferCloseDeprecated"):
            out.append(_warning_text("PreferCloseDeprecated"))
        if spec.get("externalIPs") and version.warns("ExternalIPsDeprecated"):
            out.append(_warning_text("ExternalIPsDeprecated"))
    elif kind == "NetworkPolicy":
        for where, block in _ip_blocks(spec):
            out.extend(_ip_block_warnings(where, block))
    return out


def _ip_blocks(spec: Mapping[str, Any]) -> Iterator[tuple[tuple[str, int, str, int], Mapping[str, Any]]]:
    """Each peer's ipBlock of a NetworkPolicy spec with where it is (direction, rule, peers key, peer), ingress
    then egress: pkg/registry/networking/networkpolicy/strategy.go networkPolicyWarnings' order."""
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            for j, peer in enumerate((rule or {}).get(peers_key) or []):
                block = (peer or {}).get("ipBlock")
                if block is not None and isinstance(block, Mapping):  # most peers have none
                    yield (direction, i, peers_key, j), block


def _ip_block_warnings(where: tuple[str, int, str, int], block: Mapping[str, Any]) -> list[str]:
    """An ipBlock's CIDR warnings from what was written; its path is spelled only for a warning (seldom)."""
    out: list[str] = []
    direction, i, peers_key, j = where
    cidr = str(block.get("cidr") or "")
    if _cidr_warning_texts(cidr):
        out.extend(cidr_warnings(f"spec.{direction}[{i}].{peers_key}[{j}].ipBlock.cidr", cidr))
    for k, exc in enumerate(block.get("except") or []):
        if _cidr_warning_texts(str(exc)):
            out.extend(cidr_warnings(f"spec.{direction}[{i}].{peers_key}[{j}].ipBlock.except[{k}]", str(exc)))
    return out


def _read_ip_block(block: Mapping[str, Any]) -> None:
    """An ipBlock's CIDRs spelled as read (read_legacy_addresses), in place."""
    if isinstance(block, dict):
        block["cidr"] = _legacy_cidr(block.get("cidr"))
        if isinstance(block.get("except"), list):
            block["except"] = [_legacy_cidr(v) for v in block["except"]]


def read_legacy_addresses(kind: str, body: dict[str, Any]) -> None:
    """An admitted object's legacy IPs and CIDRs with leading 0s (accepted before StrictIPCIDRValidation) spelled
    as every reader of them reads them, decimal (``010.0.0.0/8`` is 10.0.0.0/8, as ParseCIDRSloppy, kube-proxy
    and the CNI plugins read it), so the layers above parse one form. In place; the warning keeps what was
    written."""
    spec = body.get("spec")
    if kind == "Service" and isinstance(spec, dict):
        if isinstance(spec.get("externalIPs"), list):
            spec["externalIPs"] = [_legacy_ip(v) for v in spec["externalIPs"]]
        if isinstance(spec.get("loadBalancerSourceRanges"), list):
            spec["loadBalancerSourceRanges"] = [_legacy_cidr(v) for v in spec["loadBalancerSourceRanges"]]
    elif kind == "NetworkPolicy" and isinstance(spec, dict):
        for _, block in _ip_blocks(spec):
            _read_ip_block(block)


def network_policy_addresses(body: dict[str, Any]) -> list[str]:
    """``warnings_on_create`` then ``read_legacy_addresses`` of an admitted NetworkPolicy, in one walk of its
    peers: each ipBlock's warnings from what was written, then its CIDRs spelled as read. Why: the two walks were
    ~7 us of each of bench/calico.py's 10,000 policies (~0.04 + ~0.03 s); one walk does both for ~0.045 s."""
    spec = body.get("spec")
    if type(spec) is not dict:  # what the two walks make of an odd spec, as they make it
        warnings = warnings_on_create("NetworkPolicy", body)
        read_legacy_addresses("NetworkPolicy", body)
        return warnings
    out: list[str] = []
    for where, block in _ip_blocks(spec):
        out.extend(_ip_block_warnings(where, block))  # from what was written, then rewritten
        _read_ip_block(block)
    return out


def _legacy_ip(value: Any) -> Any:
    parsed = parse_ip_sloppy(str(value)) if isinstance(value, str) and _strict_ip(value) is None else None
    return str(parsed) if parsed is not None else value


def _legacy_cidr(value: Any) -> Any:
    return _cidr_as_read(value) if isinstance(value, str) else value


@functools.lru_cache(maxsize=_PARSED_CACHE)
def _cidr_as_read(value: str) -> str:
    """A legacy CIDR spelled as ParseCIDRSloppy reads it (``010.0.0.0/08`` → ``10.0.0.0/8``); remembered per value,
    as the parsers are (read_legacy_addresses meets the same few CIDRs in 10,000 NetworkPolicies)."""
    address, slash, length = value.partition("/")
    parsed = parse_cidr_sloppy(value)
    if parsed is None or (_strict_ip(address) is not None and not length.startswith("0")):
        return value
    return f"{parsed[0]}/{int(length)}" if slash else value


def _warning_text(name: str) -> str:
    return WARNING[name].text


# Set while the rules of a NetworkPolicy are ones admitted before, unchanged (model/admission.py shares them among
# the policies of one input that write them alike): validate_network_policy checks all but them.
_RULES_ADMITTED: ContextVar[bool] = ContextVar("network_policy_rules_admitted", default=False)


class rules_admitted:  # lower case: used as contextlib's context managers are
    """``with rules_admitted():`` around a NetworkPolicy's validation whose rules were admitted before. A class, not a
    generator: 9,000 policies of bench/calico.py enter it (~0.4 against ~1.5 us)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _RULES_ADMITTED.set(True)

    def __exit__(self, *exc: object) -> None:
        _RULES_ADMITTED.reset(self._token)


def validate_network_policy(body: Mapping[str, Any]) -> Errors:
    spec = body.get("spec") or {}
    path = Path("spec")
    errs = _policy_selector_errors(spec.get("podSelector") or {}, path, "podSelector")
    # 10,000 policies hold a thousand distinct rules (model/shapes.py): a rule equal to one found valid is valid,
    # wherever it sits; ratcheting (an update's stored CIDRs) is not in the key, so an update checks every rule.
    remember = not _RATCHETED.get()
    for direction, peers_key in (() if _RULES_ADMITTED.get() else (("ingress", "from"), ("egress", "to"))):
        rules = spec.get(direction) or []
        # A list of several rules is keyed whole first: bench/calico.py's 9,000 egress lists of three rules are 800
        # distinct lists of 109 distinct rules, so one key (~1.5 us) stands for three (~1 us each) nine times in ten.
        # A list of one rule is its rule's key already.
        list_key = shapes.content_key(("NetworkPolicy rules", peers_key), rules) \
            if remember and len(rules) > 1 and type(rules) is list else None
        if list_key is not None and shapes.known_valid(list_key):
            continue
        before = len(errs)
        for i, rule in enumerate(rules):
            key = shapes.content_key(("NetworkPolicy rule", peers_key), rule) if remember else None
            if key is not None and shapes.known_valid(key):
                continue
            p = path.child(direction).index(i)
            rule_errs = _np_ports(rule.get("ports"), p.child("ports")) + _np_peers(rule.get(peers_key),
                                                                                   p.child(peers_key))
            if key is not None and not rule_errs:
                shapes.remember_valid(key)
            errs.extend(rule_errs)
        if list_key is not None and len(errs) == before:
            shapes.remember_valid(list_key)
    types = spec.get("policyTypes") or []
    if len(types) > 2:
        errs.append(path.child("policyTypes").invalid(go_slice([str(t) for t in types], "networking.PolicyType"),
                                                      "may not specify more than two policyTypes"))
    for i, t in enumerate(types):
        if t not in POLICY_TYPES:
            errs.append(path.child("policyTypes").index(i).not_supported(t, POLICY_TYPES))
    return errs


# --- ConfigMap, Secret, ServiceAccount, Event ------------------------------------------------

MAX_CONFIG_SIZE = 1024 * 1024  # core.MaxSecretSize, also the ConfigMap limit
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def is_config_map_key(key: str) -> list[str]:
    errs = []
    if len(key) > 253:
        errs.append("must be no more than 253 characters")
    if not _CONFIG_KEY.match(key):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                "[-._a-zA-Z0-9]+", "key.name", "KEY_NAME", "key-name"))
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _data_keys(data: Any, path: Path) -> tuple[Errors, int]:
    errs: Errors = []
    size = 0
    for key, value in (data or {}).items():
        errs.extend(path.key(str(key)).invalid(key, p) for p in is_config_map_key(str(key)))
        size += len(str(value))
    return errs, size


def validate_config_map(body: Mapping[str, Any]) -> Errors:
    errs, size = _data_keys(body.get("data"), Path("data"))
    binary_errs, binary_size = _data_keys(body.get("binaryData"), Path("binaryData"))
    errs.extend(binary_errs)
    for key in body.get("binaryData") or {}:
        if key in (body.get("data") or {}):
            errs.append(Path("binaryData").key(key).invalid(key, "duplicate key in both data and binaryData"))
    if size + binary_size * 3 // 4 > MAX_CONFIG_SIZE:
        errs.append(Path("").too_long(MAX_CONFIG_SIZE))
    return errs


def validate_secret(body: Mapping[str, Any]) -> Errors:
    data = body.get("data") or {}
    errs, size = _data_keys(data, Path("data"))
    if size * 3 // 4 > MAX_CONFIG_SIZE:
        errs.append(Path("data").too_long(MAX_CONFIG_SIZE))
    secret_type = body.get("type") or "Opaque"
    for key in _SECRET_REQUIRED_KEYS.get(str(secret_type), ()):
        if key not in data:
            errs.append(Path("data").key(key).required())
    if secret_type == "kubernetes.io/service-account-token" and not (
            (body.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/service-account.name"):
        errs.append(Path("metadata").child("annotations").key("kubernetes.io/service-account.name").required())
    if secret_type == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        errs.append(Path("data[%s]").key("username").required())
        errs.append(Path("data[%s]").key("password").required())
    if secret_type == "kubernetes.io/ssh-auth" and not data.get("ssh-privatekey"):
        errs.append(Path("data[%s]").key("ssh-privatekey").required())
    return errs


_NAMESPACE_MISMATCH = "does not match event.namespace"


def validate_event(body: Mapping[str, Any]) -> Errors:
    """legacyValidateEvent: what a core/v1 Event must satisfy (the events.k8s.io rules are stricter)."""
    errs: Errors = []
    namespace = str((body.get("metadata") or {}).get("namespace") or "")
    involved = body.get("involvedObject") or {}
    involved_ns = str(involved.get("namespace") or "")
    if not body.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (involved_ns and namespace != involved_ns):
            errs.append(Path("involvedObject").child("namespace").invalid(involved_ns, _NAMESPACE_MISMATCH))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(Path("involvedObject").child("namespace").invalid(involved_ns, _NAMESPACE_MISMATCH))
        # core/v1 names the field reportingComponent; the internal type (and the error path) reportingController.
        for field, key, limit in (("reportingController", "reportingComponent", 0),
                                  ("reportingInstance", "reportingInstance", 128), ("action", "action", 128),
                                  ("reason", "reason", 128)):
            value = str(body.get(key) or "")
            if not value:
                errs.append(Path(field).required())
            elif limit and len(value) > limit:
                errs.append(Path(field).invalid("", f"can have at most {limit} characters"))
        controller = str(body.get("reportingComponent") or "")
        if controller:
            errs.extend(Path("reportingController").invalid(controller, p) for p in is_qualified_name(controller))
        if len(str(body.get("message") or "")) > 1024:
            errs.append(Path("message").invalid("", "can have at most 1024 characters"))
    errs.extend(Path("namespace").invalid(namespace, p) for p in is_dns1123_subdomain(namespace))
    return errs


def validate_service_cidr(body: Mapping[str, Any]) -> Errors:
    """ValidateServiceCIDR (pkg/apis/networking/validation): one or two CIDRs, one per family."""
    spec = body.get("spec") or {}
    path = Path("spec").child("cidrs")
    cidrs = spec.get("cidrs") or []
    if not cidrs:
        return [path.required("at least one CIDR required")]
    spec_text = GoValue(f"networking.ServiceCIDRSpec{{CIDRs:{go_slice([str(c) for c in cidrs])}}}")
    if len(cidrs) > 2:
        return [path.invalid(spec_text, "may only hold up to 2 values")]
    if len(cidrs) == 2:
        versions = set()
        for c in cidrs:
            try:
                versions.add(ipaddress.ip_network(str(c), strict=False).version)
            except ValueError:
                versions.add(0)
        if versions != {4, 6}:
            return [path.invalid(spec_text, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 "
                                            "and 2001:db8::/64")]
    errs: Errors = []
    # A ServiceCIDR is a field born after strict IP validation: apimachinery's strict IsValidCIDR.
    for i, cidr in enumerate(cidrs):
        errs.extend(path.index(i).invalid(cidr, e) for e in is_canonical_cidr(str(cidr)))
    return errs


def validate_ip_address(body: Mapping[str, Any]) -> Errors:
    """ValidateIPAddress: a parentRef with resource and name is required (the name, the address, is checked with
    the metadata)."""
    errs: Errors = []
    ref = (body.get("spec") or {}).get("parentRef")
    path = Path("spec").child("parentRef")
    if ref is None:
        return [path.required()]
    if ref.get("group"):
        errs.extend(path.child("group").invalid(ref["group"], e) for e in is_dns1123_subdomain(str(ref["group"])))
    for field in ("resource", "name"):
        if not ref.get(field):
            errs.append(path.child(field).required())
        else:
            errs.extend(path.child(field).invalid(ref[field], e) for e in is_path_segment_name(str(ref[field])))
    if ref.get("namespace"):
        errs.extend(path.child("namespace").invalid(ref["namespace"], e)
                    for e in is_path_segment_name(str(ref["namespace"])))
    return errs
