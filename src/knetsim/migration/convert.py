"""``knetsim migrate ingress``: the Gateway API equivalent of the Ingresses, ingress-nginx semantics made explicit.

For every Ingress the built-in ingress-nginx controller serves (the same claim rules as
``knetsim.ingress``), in the Ingress's namespace:

* one Gateway per namespace (``<class>-gateway``, class ``--gateway-class``, Envoy Gateway's by
  default): an HTTP listener on 80 for every host, and an HTTPS listener on 443 per TLS host with
  the Ingress's Secret (``https-<host>``);
* one HTTPRoute per Ingress and host (``<ingress>[-<host>]``): each path a rule (Exact → Exact,
  Prefix → PathPrefix, ImplementationSpecific → PathPrefix as ingress-nginx stores it), the backend's named port
  resolved to its number (a backendRef needs one), the Ingress's ``defaultBackend`` as a last
  ``PathPrefix /`` rule of the hosts the Ingress names (ingress-nginx makes it that server's
  default), and an Ingress without rules as a route without hostnames;
* for a TLS host, the HTTP route carries what ingress-nginx does implicitly: a ``308`` redirect to
  https (``ssl-redirect``), while the HTTPS listener gets the routing rules;
* a path another Ingress already defines for the host is dropped, as ingress-nginx keeps the
  first (merge order: oldest, then namespace/name descending).

What HTTPRoute cannot express is reported, not guessed: ``rewrite-target`` with capture groups beyond
the ``/p(/|$)(.*)`` idiom, regex paths (RE2 for PCRE, Envoy Gateway's ranking), wildcard hosts (an
Ingress wildcard covers one DNS label, a Gateway API one any number), rules without host (ingress-nginx
serves them only for hosts no rule names; a route without hostnames also catches the unmatched paths of
named hosts), and the annotations without an equivalent (``features.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..cluster.gatewayimplementations import ENVOY_GATEWAY, Implementation
from ..cluster.state import ClusterState
from ..ingress import resolve_backend, resolve_class, running_controllers
from ..ingress.annotations import IngressAnnotations
from ..ingress.annotations.redirect import www_counterpart
from ..ingress.annotations.values import PREFIX
from ..ingress.config import ControllerConfig, controller_config
from ..ingress.controllers import NGINX_CONTROLLER_CLASS as NGINX_CONTROLLER
from ..ingress.servers import Model, build, nginx_path_type
from ..ingress.webhook import invalid_paths, path_message, strict_path_validation
from ..model.objects import Ingress, IngressBackend
from . import emitters, features

API = "gateway.networking.k8s.io/v1"
NGINX = PREFIX


@dataclass(frozen=True, slots=True)
class Note:
    ingress: str  # namespace/name
    field: str
    severity: str  # "explicit" (an ingress-nginx behaviour now written out) | "inexpressible" | "skipped"
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"ingress": self.ingress, "field": self.field, "severity": self.severity, "message": self.message}


@dataclass(slots=True)
class Conversion:
    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def inexpressible(self) -> list[Note]:
        return [n for n in self.notes if n.severity == "inexpressible"]


def _slug(host: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", host.lower().replace("*", "wildcard")).strip("-")[:40] or "all"


def _port(state: ClusterState, ing: Ingress, backend: IngressBackend) -> int | None:
    if backend.port_number is not None:
        return backend.port_number
    target = resolve_backend(state, ing.namespace, backend)
    return target.port


def _backend_ref(state: ClusterState, ing: Ingress, backend: IngressBackend, where: str,
                 out: Conversion) -> dict[str, Any] | None:
    if backend.resource is not None:
        out.notes.append(Note(ing.key, where, "inexpressible", f"resource backend {backend.describe()}: an HTTPRoute "
                              "backendRef names a Service (ingress-nginx ignores resource backends too)"))
        return None
    port = _port(state, ing, backend)
    ref: dict[str, Any] = {"name": backend.service_name}
    if port is None:
        out.notes.append(Note(ing.key, where, "inexpressible", f"port name {backend.port_name!r} is not a port of "
                              f"Service {ing.namespace}/{backend.service_name}: a backendRef needs the port number"))
        return ref
    if backend.port_name:
        out.notes.append(Note(ing.key, where, "explicit", f"port name {backend.port_name!r} resolved to {port} "
                              "(a backendRef needs the Service port number)"))
    ref["port"] = port
    return ref


def convert(state: ClusterState, gateway_class: str = "eg",
            implementation: Implementation = ENVOY_GATEWAY) -> Conversion:
    """The Gateway API equivalent of the Ingresses ingress-nginx serves, for ``implementation``: its GatewayClass,
    and its own extension objects where Envoy Gateway's policies would be (``emitters.py``; what it has no
    equivalent for is listed as not converted)."""
    out = _convert(state, gateway_class, implementation)
    if implementation is ENVOY_GATEWAY:
        return out
    out.objects, changed = emitters.for_implementation(out.objects, implementation)
    for subject, where, message in changed:
        severity = "explicit" if "not converted" not in message else "inexpressible"
        out.notes.append(Note(subject, where, severity, message))
    return out


def _convert(state: ClusterState, gateway_class: str, implementation: Implementation) -> Conversion:
    out = Conversion()
    controllers = running_controllers(state)
    claimed: list[Ingress] = []
    for key in sorted(state.ingresses):
        ing = state.ingresses[key]
        res = resolve_class(state, ing, controllers)
        if res.claimed and res.controller == NGINX_CONTROLLER:
            claimed.append(ing)
        else:
            out.notes.append(Note(key, "spec.ingressClassName", "skipped",
                                  f"not served by ingress-nginx ({res.reason}): not converted"))
    if not claimed:
        return out
    controller = next(c for c in controllers if c.controller == NGINX_CONTROLLER)
    if strict_path_validation(controller) and controller_config(state, controller).strict_validate_path_type:
        for ing in [i for i in claimed if invalid_paths(i.raw, controller)]:
            claimed.remove(ing)
            out.notes.append(Note(ing.key, "spec.rules", "skipped", "the controller's admission webhook refuses this "
                                  "Ingress (" + "; ".join(path_message(p, t) for _r, _i, p, t in
                                                          invalid_paths(ing.raw, controller))
                                  + "): it does not exist, and is not converted"))
        if not claimed:
            return out
    config = controller_config(state, controller)
    model = build(state, claimed, config)
    for key, reasons in sorted(model.refused.items()):
        out.notes.append(Note(key, "metadata.annotations", "skipped", "the controller refuses this Ingress ("
                              + "; ".join(reasons) + "): it does not exist, and is not converted"))
    if not model.ordered:
        return out
    if gateway_class not in state.gateway_classes:
        out.objects.append({"apiVersion": API, "kind": "GatewayClass", "metadata": {"name": gateway_class},
                            "spec": {"controllerName": implementation.controller_names[0]}})
    seen: set[tuple[str, str, str, str]] = set()  # (namespace, host, path, type): ingress-nginx keeps the first
    by_namespace: dict[str, list[Ingress]] = {}
    for ing in model.ordered:
        by_namespace.setdefault(ing.namespace, []).append(ing)
    passthrough = controller.flag("enable-ssl-passthrough") in ("true", "")
    for ns in sorted(by_namespace):
        ingresses = by_namespace[ns]
        gateway = f"{gateway_class}-gateway"
        tls_hosts = _tls_hosts(ingresses)
        passthrough_hosts = _passthrough_hosts(model, ingresses, passthrough and bool(controller.flag(
            "enable-ssl-passthrough")), out)
        out.objects.append(_gateway(ns, gateway, gateway_class, tls_hosts, passthrough_hosts))
        out.objects.extend(_gateway_policies(ns, gateway, config))
        routes: list[dict[str, Any]] = []
        policies: list[dict[str, Any]] = []
        for ing in ingresses:
            if model.annotations[ing.key].canary.enabled:
                out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}canary]", "explicit",
                                      "canary Ingress: no route of its own; its header, cookie and weight rules are "
                                      "written into the routes of the backend it shadows"))
                continue
            made, made_policies = _routes(state, model, ing, gateway, tls_hosts, passthrough_hosts, seen, out)
            routes.extend(made)
            policies.extend(made_policies)
        _ranking_notes(routes, out)
        out.objects.extend(sorted(routes, key=lambda r: (r["kind"], r["metadata"]["name"])))
        unique = {(p["kind"], p["metadata"]["name"]): p for p in reversed(policies)}  # the first of a name wins
        out.objects.extend(unique[k] for k in sorted(unique))
    return out


def _tls_hosts(ingresses: list[Ingress]) -> dict[str, str]:
    """host → Secret name, the first Ingress (merge order) listing the host under tls with a secretName."""
    out: dict[str, str] = {}
    for ing in ingresses:
        named = {r.host.lower() for r in ing.rules if r.host}
        for t in ing.tls:
            for h in t.hosts:
                if t.secret_name and h.lower() in named:
                    out.setdefault(h.lower(), t.secret_name)
    return out


def _passthrough_hosts(model: Model, ingresses: list[Ingress], enabled: bool, out: Conversion) -> dict[str, Ingress]:
    hosts: dict[str, Ingress] = {}
    for ing in ingresses:
        if not model.annotations[ing.key].backend.ssl_passthrough:
            continue
        if not enabled:
            out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}ssl-passthrough]", "explicit",
                                  "ssl-passthrough has no effect: the controller runs without --enable-ssl-passthrough "
                                  "(kind's does), so TLS terminates at it as for any host"))
            continue
        for rule in ing.rules:
            if rule.host:
                hosts.setdefault(rule.host.lower(), ing)
    return hosts


def _gateway(ns: str, name: str, gateway_class: str, tls_hosts: dict[str, str],
             passthrough: dict[str, Ingress]) -> dict[str, Any]:
    listeners: list[dict[str, Any]] = [{"name": "http", "protocol": "HTTP", "port": 80}]
    for host in sorted(tls_hosts):
        if host in passthrough:
            continue
        tls = {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": tls_hosts[host]}]}
        listeners.append({"name": f"https-{_slug(host)}", "protocol": "HTTPS", "port": 443, "hostname": host,
                          "tls": tls})
    for host in sorted(passthrough):
        listeners.append({"name": f"tls-{_slug(host)}", "protocol": "TLS", "port": 443, "hostname": host,
                          "tls": {"mode": "Passthrough"}})
    return {"apiVersion": API, "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
            "spec": {"gatewayClassName": gateway_class, "listeners": listeners}}


def _gateway_policies(ns: str, gateway: str, config: ControllerConfig) -> list[dict[str, Any]]:
    """What ingress-nginx does for every host that Envoy does not by default: the 1m body limit, and reading
    the client address from X-Forwarded-For where the ConfigMap says so."""
    target = [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway}]
    out: list[dict[str, Any]] = []
    limit = features.gateway_size(config.proxy_body_size)
    if limit is not None:
        out.append({"apiVersion": features.EG_API, "kind": "BackendTrafficPolicy",
                    "metadata": {"name": f"{gateway}-proxy-body-size", "namespace": ns,
                                 "annotations": {"knetsim.io/converted-from": "the ingress-nginx controller's "
                                                 f"proxy-body-size ({config.proxy_body_size})"}},
                    "spec": {"targetRefs": target, "requestBuffer": {"limit": limit}}})
    if config.use_forwarded_headers:
        out.append({"apiVersion": features.EG_API, "kind": "ClientTrafficPolicy",
                    "metadata": {"name": f"{gateway}-client-ip", "namespace": ns,
                                 "annotations": {"knetsim.io/converted-from": "the ingress-nginx controller's "
                                                 "use-forwarded-headers"}},
                    "spec": {"targetRefs": target, "clientIPDetection": {"xForwardedFor": {
                        "trustedCIDRs": list(config.proxy_real_ip_cidr)}}}})
    return out


def _rule_for(state: ClusterState, model: Model, ing: Ingress, anns: IngressAnnotations, r: int | None, i: int | None,
              path: str, path_type: str, backend: IngressBackend, host: str, where: str,
              out: Conversion, tls_policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    server = model.servers.get(host or "_") or model.servers["_"]
    regex_by = server.regex_by
    who = (f"Ingress {regex_by.ingress.key} sets "
           f"{'use-regex' if regex_by.annotations.rewrite.use_regex else 'rewrite-target'}"
           if regex_by is not None and regex_by.ingress is not None else "")
    pieces = features.rule_pieces(path, path_type, anns, server.regex, who)
    for severity, message in pieces.notes:
        out.notes.append(Note(ing.key, where, severity, message))
    rules = list(pieces.before)
    if pieces.redirect_only:
        return [*rules, {"matches": [pieces.match], "filters": pieces.filters}]
    ref = _backend_ref(state, ing, backend, f"{where}.backend", out)
    if ref is None:
        return rules
    if anns.denied is not None:
        out.notes.append(Note(ing.key, where, "inexpressible", f"ingress-nginx denies this location ({anns.denied}); "
                              "a rule without backendRefs makes Envoy answer 500"))
        return [*rules, {"matches": [pieces.match]}]
    backends = [ref]
    upstream = f"{ing.namespace}-{backend.service_name}-" + (str(backend.port_number) if backend.port_number is not None
                                                             else backend.port_name)
    canary = model.canaries.get(upstream)
    if canary is not None:
        canary_ref = _backend_ref(state, canary.ingress, canary.backend, f"canary {canary.ingress.key}", out)
        if canary_ref is not None:
            if canary_ref.get("namespace") is None and canary.ingress.namespace != ing.namespace:
                canary_ref["namespace"] = canary.ingress.namespace
            rules.extend(features.canary_rules(pieces.match, ref, canary_ref, canary.annotations))
            backends = features.canary_backends(ref, canary_ref, canary.annotations)
            weight = f"{canary.annotations.canary.weight}/{canary.annotations.canary.total}"
            out.notes.append(Note(ing.key, where, "explicit", f"canary Ingress {canary.ingress.key} shadows "
                                  f"{backend.describe()}: its header/cookie rules come first, its weight {weight} is "
                                  "a backendRef weight"))
    if anns.backend.protocol in ("HTTPS", "AUTO_HTTP", "FCGI") and "port" in ref:
        if anns.backend.protocol == "HTTPS":
            tls_policies.append(backend_tls_policy(state, ing, backend.service_name, ref["port"]))
            out.notes.append(Note(ing.key, where, "explicit", _BACKEND_TLS))
        else:
            out.notes.append(Note(ing.key, where, "inexpressible", f"backend-protocol {anns.backend.protocol}: no "
                                  "Gateway API equivalent"))
    rule: dict[str, Any] = {"matches": [pieces.match]}
    if pieces.filters:
        rule["filters"] = pieces.filters
    rule["backendRefs"] = backends
    return [*rules, rule]


def _routes(state: ClusterState, model: Model, ing: Ingress, gateway: str, tls_hosts: dict[str, str],
            passthrough: dict[str, Ingress], seen: set[tuple[str, str, str, str]],
            out: Conversion) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    anns = model.annotations[ing.key]
    hosts: dict[str, list[tuple[int, int]]] = {}
    for r, rule in enumerate(ing.rules):
        hosts.setdefault(rule.host.lower(), []).extend((r, i) for i in range(len(rule.paths)))
    routes = []
    names: list[str] = []
    policies_extra: list[dict[str, Any]] = []
    if not ing.rules and ing.default_backend is not None:
        ref = _backend_ref(state, ing, ing.default_backend, "spec.defaultBackend", out)
        if ref is not None:
            out.notes.append(Note(ing.key, "spec.defaultBackend", "explicit", "an Ingress without rules serves every "
                                  "host no rule names: a route without hostnames, PathPrefix /"))
            routes.append(_route(ing, ing.name, gateway, "http", None,
                                 [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [ref]}]))
            names.append(ing.name)
    for host, refs in hosts.items():
        name = ing.name if len(hosts) == 1 else f"{ing.name}-{_slug(host)}"
        if host in passthrough:
            routes.extend(_tls_route(state, ing, name, gateway, host, refs, out))
            routes.extend(_https_redirect(model, ing, anns, name, gateway, host, host in tls_hosts, out))
            continue
        if anns.backend.protocol in ("GRPC", "GRPCS"):
            grpc, grpc_policies = _grpc_route(state, ing, anns, name, gateway, host, tls_hosts, refs, out)
            routes.extend(grpc)
            routes.extend(_https_redirect(model, ing, anns, name, gateway, host, host in tls_hosts, out))
            policies_extra.extend(grpc_policies)
            continue
        rules: list[dict[str, Any]] = []
        root = features.app_root_rule(anns)
        if root is not None:
            rules.append(root)
            out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}app-root]", "explicit",
                                  f"app-root {anns.redirect.app_root}: an Exact / rule redirecting with 302"))
        for r, i in refs:
            p = ing.rules[r].paths[i]
            path = p.path or "/"
            where = f"spec.rules[{r}].http.paths[{i}]"
            key = (ing.namespace, host, path, nginx_path_type(p.path_type))
            if key in seen:
                out.notes.append(Note(ing.key, where, "explicit", f"{path} ({p.path_type}) on host {host or '*'} is "
                                      "already defined by an Ingress ingress-nginx merges first: dropped, as "
                                      "ingress-nginx drops it"))
                continue
            seen.add(key)
            rules.extend(_rule_for(state, model, ing, anns, r, i, path, p.path_type, p.backend, host, where, out,
                                   policies_extra))
        server = model.servers.get(host or "_")
        creates = server is not None and server.creator is ing
        has_root = any((ing.rules[r].paths[i].path or "/") == "/" and ing.rules[r].paths[i].path_type == "Prefix"
                       for r, i in refs)
        if creates and not has_root and ing.default_backend is None and anns.redirect.url:
            # The server's root location (for paths no rule names) carries this Ingress's annotations.
            rules.append({"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "filters": [{
                "type": "RequestRedirect", "requestRedirect": features.request_redirect(anns.redirect.url,
                                                                                        anns.redirect.code)}]})
            out.notes.append(Note(ing.key, "metadata.annotations", "explicit", f"host {host}: ingress-nginx gives "
                                  "the paths no rule names this Ingress's redirect too (the server's root location "
                                  "carries the annotations of the Ingress that created it): a last rule PathPrefix /"))
        if host and ing.default_backend is not None:
            ref = _backend_ref(state, ing, ing.default_backend, "spec.defaultBackend", out)
            if ref is not None:
                rules.append({"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [ref]})
                out.notes.append(Note(ing.key, "spec.defaultBackend", "explicit", f"the defaultBackend is the default "
                                      f"of host {host}'s server in ingress-nginx: a last rule PathPrefix /"))
        if not rules:
            continue
        if not host:
            out.notes.append(Note(ing.key, "spec.rules", "inexpressible", "rules without host: ingress-nginx serves "
                                  "them only for hosts no rule names; a route without hostnames also receives the "
                                  "unmatched paths of the named hosts"))
        elif host.startswith("*."):
            out.notes.append(Note(ing.key, "spec.rules", "inexpressible", f"wildcard {host}: an Ingress wildcard "
                                  "covers exactly one DNS label, a Gateway API wildcard any number"))
        redirect = anns.redirect
        tls = host in tls_hosts
        if (tls and redirect.ssl_redirect) or redirect.force_ssl_redirect:
            if tls:
                routes.append(_route(ing, name, gateway, f"https-{_slug(host)}", host, rules))
            routes.append(_route(ing, f"{name}-redirect", gateway, "http", host or None,
                                 [{"filters": [{"type": "RequestRedirect", "requestRedirect": {
                                     "scheme": "https", "statusCode": model.config.http_redirect_code}}]}]))
            why = "force-ssl-redirect" if redirect.force_ssl_redirect and not tls else "ssl-redirect"
            out.notes.append(Note(ing.key, "spec.tls" if tls else f"metadata.annotations[{NGINX}force-ssl-redirect]",
                                  "explicit", f"host {host or '*'}: ingress-nginx redirects http to https with "
                                  f"{model.config.http_redirect_code} ({why}): an HTTP route with RequestRedirect"
                                  + ("" if model.config.preserve_trailing_slash else "; ingress-nginx also drops the "
                                     "path's trailing slash there (no equivalent)")))
            if not tls:
                out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}force-ssl-redirect]", "inexpressible",
                                      f"host {host or '*'} has no certificate: the https side terminates TLS in front "
                                      "of ingress-nginx; no HTTPS listener is written"))
        elif tls:
            out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}ssl-redirect]", "explicit",
                                  f"ssl-redirect \"false\": host {host} is served on http and https alike"))
            routes.append(_route(ing, name, gateway, f"https-{_slug(host)}", host, rules))
            routes.append(_route(ing, f"{name}-http", gateway, "http", host, rules))
        else:
            routes.append(_route(ing, name, gateway, "http", host or None, rules))
        names.append(name)
        if redirect.from_to_www and host and host in model.servers and \
                www_counterpart(host) in model.redirect_servers:
            other = www_counterpart(host)
            routes.append(_route(ing, f"{name}-from-to-www", gateway, "http", other, [{"filters": [{
                "type": "RequestRedirect", "requestRedirect": {"hostname": host,
                                                               "statusCode": model.config.http_redirect_code}}]}]))
            out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}from-to-www-redirect]", "explicit",
                                  f"from-to-www-redirect: a route for {other} redirecting to {host} "
                                  f"({model.config.http_redirect_code}); ingress-nginx also drops the trailing "
                                  "slash (no equivalent)"))
    _add_aliases(model, ing, routes, out)
    policies = list(policies_extra)
    for name in names:
        security, notes = features.security_policy(ing.namespace, name, anns, {})
        traffic, more = features.traffic_policy(ing.namespace, name, anns, model.config.proxy_body_size,
                                                (ing.raw.get("metadata") or {}).get("annotations") or {})
        policies.extend(p for p in (security, traffic) if p is not None)
        if name == names[0]:
            for severity, message in [*notes, *more, *features.not_converted(anns)]:
                out.notes.append(Note(ing.key, "metadata.annotations", severity, message))
    return routes, policies


def _https_redirect(model: Model, ing: Ingress, anns: IngressAnnotations, name: str, gateway: str, host: str,
                    tls: bool, out: Conversion) -> list[dict[str, Any]]:
    """A host whose https side is a TLSRoute or a GRPCRoute: nginx still serves its plain http on port 80, and
    redirects it to https where the host has a certificate (ssl-redirect) or force-ssl-redirect says so."""
    redirect = anns.redirect
    if not ((tls and redirect.ssl_redirect) or redirect.force_ssl_redirect):
        return []
    why = "ssl-redirect" if tls and redirect.ssl_redirect else "force-ssl-redirect"
    out.notes.append(Note(ing.key, "spec.tls" if why == "ssl-redirect" else f"metadata.annotations[{NGINX}{why}]",
                          "explicit", f"host {host}: ingress-nginx redirects plain http to https with "
                          f"{model.config.http_redirect_code} ({why}): an HTTP route with RequestRedirect"))
    return [_route(ing, f"{name}-redirect", gateway, "http", host, [{"filters": [{
        "type": "RequestRedirect", "requestRedirect": {"scheme": "https",
                                                       "statusCode": model.config.http_redirect_code}}]}])]


def _add_aliases(model: Model, ing: Ingress, routes: list[dict[str, Any]], out: Conversion) -> None:
    """server-alias: nginx answers the aliases with the host's server, so its plain-http routes name them too."""
    added: set[str] = set()
    lost: set[str] = set()
    for route in routes:
        spec = route["spec"]
        hosts = spec.get("hostnames") or []
        if route["kind"] != "HTTPRoute" or len(hosts) != 1 or spec["parentRefs"][0].get("sectionName") != "http":
            continue
        server = model.servers.get(hosts[0])
        names: list[str] = []
        for alias in server.aliases if server is not None else ():
            if alias.startswith("~") or alias.endswith(".*"):
                lost.add(alias)
            elif alias.startswith("."):  # nginx's .name: the name and every name below it
                names.extend((alias[1:], f"*{alias}"))
            else:  # a *.name alias covers any depth, as a Gateway API wildcard does
                names.append(alias)
        if names:
            spec["hostnames"] = [hosts[0], *dict.fromkeys(names)]
            added.update(names)
    where = f"metadata.annotations[{NGINX}server-alias]"
    if added:
        out.notes.append(Note(ing.key, where, "explicit", f"server-alias: {', '.join(sorted(added))} as more "
                              "hostnames of the host's http routes (an https alias needs a listener of its own with "
                              "a certificate for it)"))
    if lost:
        out.notes.append(Note(ing.key, where, "inexpressible", f"server-alias {', '.join(sorted(lost))}: a Gateway "
                              "API hostname has no regex and no wildcard at its end"))


_GRPC_PATH = re.compile(r"^/([A-Za-z_][\w.]*)(?:/([A-Za-z_]\w*))?/?$")


def _grpc_route(state: ClusterState, ing: Ingress, anns: IngressAnnotations, name: str, gateway: str, host: str,
                tls_hosts: dict[str, str], refs: list[tuple[int, int]],
                out: Conversion) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """backend-protocol GRPC/GRPCS: ingress-nginx grpc_passes the paths; a GRPCRoute matches gRPC services and
    methods (a path /pkg.Service[/Method] becomes a method match, / every call), on the host's HTTPS listener."""
    rules: list[dict[str, Any]] = []
    services: set[tuple[str, int]] = set()
    for r, i in refs:
        p = ing.rules[r].paths[i]
        path = p.path or "/"
        where = f"spec.rules[{r}].http.paths[{i}]"
        ref = _backend_ref(state, ing, p.backend, f"{where}.backend", out)
        if ref is None:
            continue
        if "port" in ref:
            services.add((ref["name"], ref["port"]))
        rule: dict[str, Any] = {"backendRefs": [ref]}
        found = _GRPC_PATH.match(path)
        if path != "/" and found is not None:
            method = {"service": found.group(1)}
            if found.group(2):
                method["method"] = found.group(2)
            rule["matches"] = [{"method": method}]
        elif path != "/":
            out.notes.append(Note(ing.key, where, "inexpressible", f"gRPC path {path}: a GRPCRoute matches "
                                  "package.Service and Method, not an arbitrary path prefix"))
            continue
        rules.append(rule)
    section = f"https-{_slug(host)}" if host in tls_hosts else "http"
    out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}backend-protocol]", "explicit",
                          f"backend-protocol {anns.backend.protocol}: ingress-nginx grpc_passes this host's paths: a "
                          f"GRPCRoute on listener {section}"
                          + ("" if host in tls_hosts else " (gRPC without TLS needs h2c from the clients)")))
    route = {"apiVersion": API, "kind": "GRPCRoute",
             "metadata": {"name": name, "namespace": ing.namespace,
                          "annotations": {"knetsim.io/converted-from": f"Ingress {ing.key}"}},
             "spec": {"parentRefs": [{"name": gateway, "sectionName": section}], "hostnames": [host] if host else [],
                      "rules": rules}}
    if not host:
        del route["spec"]["hostnames"]
    policies = []
    if anns.backend.protocol == "GRPCS":
        policies = [backend_tls_policy(state, ing, service, port) for service, port in sorted(services)]
        out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}backend-protocol]", "explicit", _BACKEND_TLS))
    return [route], policies


_BACKEND_TLS = ("TLS to the backend: a BackendTLSPolicy per Service; ingress-nginx does not verify the backend's "
                "certificate (proxy-ssl-verify off), Envoy does: give it the CA (caCertificateRefs)")


def backend_tls_policy(state: ClusterState, ing: Ingress, service: str, port: int) -> dict[str, Any]:
    """backend-protocol HTTPS/GRPCS: Envoy speaks TLS to a Service when a BackendTLSPolicy targets it."""
    svc = state.services.get(f"{ing.namespace}/{service}")
    sp = next((p for p in svc.ports if p.port == port), None) if svc is not None else None
    target: dict[str, Any] = {"group": "", "kind": "Service", "name": service}
    if sp is not None and sp.name:
        target["sectionName"] = sp.name
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
            "metadata": {"name": f"{service}-tls", "namespace": ing.namespace,
                         "annotations": {"knetsim.io/converted-from": f"Ingress {ing.key}"}},
            "spec": {"targetRefs": [target], "validation": {"wellKnownCACertificates": "System",
                                                            "hostname": f"{service}.{ing.namespace}.svc"}}}


def _tls_route(state: ClusterState, ing: Ingress, name: str, gateway: str, host: str, refs: list[tuple[int, int]],
               out: Conversion) -> list[dict[str, Any]]:
    """ssl-passthrough: ingress-nginx forwards TLS for the host, by SNI, to the backend of its path ``/``."""
    backend = next((ing.rules[r].paths[i].backend for r, i in refs if (ing.rules[r].paths[i].path or "/") == "/"),
                   None)
    out.notes.append(Note(ing.key, f"metadata.annotations[{NGINX}ssl-passthrough]", "explicit",
                          f"ssl-passthrough: TLS for {host} is forwarded by SNI to the backend of path / (every other "
                          "annotation and path of the Ingress is ignored): a TLSRoute on a Passthrough listener"))
    if backend is None:
        out.notes.append(Note(ing.key, "spec.rules", "inexpressible", "ssl-passthrough needs a path / backend: "
                              "ingress-nginx ignores the annotation here"))
        return []
    ref = _backend_ref(state, ing, backend, "spec.rules", out)
    if ref is None:
        return []
    return [{"apiVersion": API, "kind": "TLSRoute",
             "metadata": {"name": name, "namespace": ing.namespace,
                          "annotations": {"knetsim.io/converted-from": f"Ingress {ing.key}"}},
             "spec": {"parentRefs": [{"name": gateway, "sectionName": f"tls-{_slug(host)}"}], "hostnames": [host],
                      "rules": [{"backendRefs": [ref]}]}}]


def _route(ing: Ingress, name: str, gateway: str, section: str, host: str | None,
           rules: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentRefs": [{"name": gateway, "sectionName": section}]}
    if host:
        spec["hostnames"] = [host]
    spec["rules"] = rules
    return {"apiVersion": API, "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": ing.namespace,
                         "annotations": {"knetsim.io/converted-from": f"Ingress {ing.key}"}},
            "spec": spec}


def _ranking_notes(routes: list[dict[str, Any]], out: Conversion) -> None:
    """nginx gives a path to the longest regex location first; Envoy Gateway ranks every RegularExpression above
    every PathPrefix. The one PathPrefix a regex host gets — the ``/p(/|$)(.*)`` → ``/$2`` idiom, which needs it for
    ReplacePrefixMatch — loses the paths a shorter regex path of the host also matches: named."""
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]] = {}
    for route in routes:
        if route.get("kind") != "HTTPRoute":
            continue
        spec = route["spec"]
        section = spec["parentRefs"][0].get("sectionName", "")
        for host in spec.get("hostnames") or [""]:
            for rule in spec["rules"]:
                for match in rule.get("matches", []):
                    if "path" in match:
                        groups.setdefault((section, host), []).append((route, rule, match))
    noted: set[tuple[str, str]] = set()
    for (_section, host), entries in sorted(groups.items()):
        regexes = []
        for _route, rule, match in entries:
            if match["path"]["type"] == "RegularExpression":
                source = features.regex_source(match["path"]["value"])
                if source is not None:
                    regexes.append((rule, match["path"]["value"], len(source)))
        for route, rule, match in entries:
            path = match["path"]
            if path["type"] != "PathPrefix" or path["value"] == "/":
                continue
            prefix = path["value"].rstrip("/")
            over = [value for other, value, length in regexes if other is not rule and length < len(prefix)
                    and _full_match(value, f"{prefix}/x")]
            who = route["metadata"]["annotations"]["knetsim.io/converted-from"].removeprefix("Ingress ")
            if not over or (who, path["value"]) in noted:
                continue
            noted.add((who, path["value"]))
            out.notes.append(Note(who, "spec.rules", "inexpressible", f"PathPrefix {path['value']} on host "
                                  f"{host or '*'}: Envoy Gateway ranks RegularExpression {over[0]} (a shorter nginx "
                                  "path) above any PathPrefix, so it takes the paths below, which nginx gives to the "
                                  "longer location"))


def _full_match(pattern: str, path: str) -> bool:
    try:
        return re.fullmatch(pattern, path) is not None
    except re.error:
        return False

