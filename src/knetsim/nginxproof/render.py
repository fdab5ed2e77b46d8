"""The nginx configuration ingress-nginx's template writes for a controller's Ingresses, for a stock nginx.

Rendered from the same model ``route`` reads (``ingress.servers``), block for block as
``rootfs/etc/nginx/template/nginx.tmpl`` (v1.13) writes it: one ``server`` per host (the catch-all
``_`` as ``default_server``, wildcard hosts as ``~^(?<subdomain>[\\w-]+)\\.example\\.com$``, aliases),
the ``app-root`` ifs at server level, then each location in the controller's order — exact, prefix
or ``~* "^<path>"`` — with what its annotations write: ``deny``/``allow``, the CORS ifs, external
auth (``auth_request`` to an internal location), basic auth, ``limit_conn``/``limit_req``,
``client_max_body_size``, the ``proxy_set_header`` lines, custom error pages, ``return`` for
redirects and denied locations, ``rewrite ... break`` and ``proxy_pass``.

What ingress-nginx needs modules for that a stock nginx does not have is written with stock
directives and its requests are not compared (``verify.py`` says which): Lua (the redirect to
https, the balancer's canary, affinity and hashing, the ``$best_http_host``/``$pass_port`` fix-ups,
HSTS) and headers-more (``more_set_headers`` is ``add_header ... always``, ``more_clear_headers
Server`` is left out: a stock nginx always sends ``Server: nginx``). The harness's ports stand in
for 80 and 443; the client's address comes from a header the harness sets, through the realip
module, so that one loopback client can be any address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ingress.annotations import IngressAnnotations
from ..ingress.annotations import cors as cors_rules
from ..ingress.servers import CATCH_ALL, DEFAULT_UPSTREAM, Location, Model, Server

PEER_HEADER = "X-Knetsim-Peer"  # the harness's stand-in for the TCP source address


@dataclass(slots=True)
class Plan:
    """Where things live for one run: ports, files, and what each upstream is."""

    scratch: str
    http_port: int
    https_port: int
    default_port: int  # the controller's internal default backend server
    upstreams: dict[str, list[str]]  # upstream name → its servers, host:port (absent: no ready endpoint)
    auth_targets: dict[str, str] = field(default_factory=dict)  # auth URL → URL the harness answers on
    htpasswd: dict[str, str] = field(default_factory=dict)  # Ingress key → file contents
    certificate: str = ""
    key: str = ""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def server_name(name: str) -> str:
    """``buildServerName``: a wildcard host as a regex of one label."""
    if not name.startswith("*"):
        return name
    parts = name.replace("*.", "", 1).split(".")
    return "~^(?<subdomain>[\\w-]+)\\." + "\\.".join(parts) + "$"


def _cors(anns: IngressAnnotations) -> list[str]:
    c = anns.cors
    lines = []
    if c.allow_origin == ("*",):
        lines += ["set $http_origin *;", "set $cors 'true';"]
    else:
        regex = "|".join(cors_rules.origin_regex(o.strip()) for o in c.allow_origin if o.strip())
        lines.append(f"if ($http_origin ~* ({regex})$ ) {{ set $cors 'true'; }}")
    lines.append("if ($request_method = 'OPTIONS') { set $cors ${cors}options; }")
    headers = ["add_header 'Access-Control-Allow-Origin' $http_origin always;"]
    if c.allow_credentials:
        headers.append("add_header 'Access-Control-Allow-Credentials' 'true' always;")
    headers.append(f"add_header 'Access-Control-Allow-Methods' '{c.allow_methods}' always;")
    headers.append(f"add_header 'Access-Control-Allow-Headers' '{c.allow_headers}' always;")
    if c.expose_headers:
        headers.append(f"add_header 'Access-Control-Expose-Headers' '{c.expose_headers}' always;")
    headers.append(f"add_header 'Access-Control-Max-Age' '{c.max_age}' always;")
    lines.append('if ($cors = "true") { ' + " ".join(headers) + " }")
    preflight = [*headers, "add_header 'Content-Type' 'text/plain charset=UTF-8' always;",
                 "add_header 'Content-Length' '0' always;", "return 204;"]
    lines.append('if ($cors = "trueoptions") { ' + " ".join(preflight) + " }")
    return lines


def auth_location_path(loc: Location) -> str:
    """``buildAuthLocation``: ``/_external-auth-<base64url(path)>-<pathType>``."""
    import base64

    encoded = base64.urlsafe_b64encode(loc.path.encode()).decode().replace("=", "")
    return f"/_external-auth-{encoded}-{loc.path_type or 'default'}"


def _auth_location(loc: Location, plan: Plan) -> list[str]:
    ext = loc.annotations.ext_auth
    assert ext is not None
    target = plan.auth_targets.get(ext.url, ext.url)
    lines = [f"location = {auth_location_path(loc)} {{", "internal;",
             "proxy_intercept_errors off;", "proxy_pass_request_body off;",
             'proxy_set_header Content-Length "";', 'proxy_set_header X-Forwarded-Proto "";']
    if ext.method:
        lines += [f"proxy_method {ext.method};", "proxy_set_header X-Original-URI $request_uri;",
                  "proxy_set_header X-Scheme $scheme;"]
    lines += [f"proxy_set_header Host {_quote(ext.host)};",
              "proxy_set_header X-Original-URL $scheme://$http_host$request_uri;",
              "proxy_set_header X-Original-Method $request_method;",
              'proxy_set_header X-Sent-From "nginx-ingress-controller";',
              "proxy_set_header X-Real-IP $remote_addr;", "proxy_set_header X-Forwarded-For $remote_addr;",
              "proxy_set_header X-Auth-Request-Redirect " + (ext.request_redirect or "$request_uri") + ";",
              "proxy_http_version 1.1;", f"set $target {_quote(target)};", "proxy_pass $target;", "}"]
    return lines


def _proxy_headers(loc: Location, model: Model) -> list[str]:
    anns = loc.annotations
    config = model.config
    host = _quote(anns.rewrite.upstream_vhost) if anns.rewrite.upstream_vhost else "$best_http_host"
    forwarded = "$full_x_forwarded_for" if config.use_forwarded_headers and config.compute_full_forwarded_for \
        else "$remote_addr"
    return [f"proxy_set_header Host {host};", "proxy_set_header Upgrade $http_upgrade;",
            "proxy_set_header Connection $connection_upgrade;", "proxy_set_header X-Real-IP $remote_addr;",
            f"proxy_set_header X-Forwarded-For {forwarded};", "proxy_set_header X-Forwarded-Host $best_http_host;",
            "proxy_set_header X-Forwarded-Port $pass_port;", "proxy_set_header X-Forwarded-Proto $pass_access_scheme;",
            "proxy_set_header X-Forwarded-Scheme $pass_access_scheme;",
            "proxy_set_header X-Scheme $pass_access_scheme;",
            f"proxy_set_header X-Original-Forwarded-For $http_{config.forwarded_for_header.lower().replace('-', '_')};",
            'proxy_set_header Proxy "";', "proxy_http_version 1.1;"]


def _location(server: Server, loc: Location, regex: bool, model: Model, plan: Plan) -> list[str]:
    anns = loc.annotations
    # escapeLiteralDollar: a "$" of the path would start a variable.
    literal = loc.ingress_path.replace("$", "${literal_dollar}")
    lines = [f"location {loc.nginx(regex)} {{", f"set $location_path {_quote(literal)};"]
    lines += ["set $pass_access_scheme $scheme;", "set $pass_port $pass_port_by_scheme;",
              "set $best_http_host $http_host;"]
    if anns.denied is not None:
        return [*lines, f"# Location denied. Reason: {anns.denied.splitlines()[0][:100]}", "return 503;", "}"]
    for cidr in anns.access.deny:
        lines.append(f"deny {cidr};")
    if anns.access.allow:
        lines += [f"allow {cidr};" for cidr in anns.access.allow] + ["deny all;"]
    if anns.cors.enabled:
        lines += _cors(anns)
    no_auth = any(loc.path.startswith(p) for p in model.config.no_auth_locations)
    if anns.ext_auth is not None and not no_auth:
        lines += [f"auth_request {auth_location_path(loc)};"]
        for i, header in enumerate(anns.ext_auth.response_headers):
            var = header.lower().replace("-", "_")
            lines += [f"auth_request_set $authHeader{i} $upstream_http_{var};",
                      f"proxy_set_header '{header}' $authHeader{i};"]
    if anns.basic_auth is not None and anns.basic_auth.type == "basic" and not no_auth:
        lines += [f"auth_basic {_quote(anns.basic_auth.realm)};",
                  f"auth_basic_user_file {plan.scratch}/auth-{_file_key(anns.ingress)}.passwd;",
                  'proxy_set_header Authorization "";']
    limits = anns.limits
    if limits.connections:
        lines.append(f"limit_conn {_zone(anns.ingress)}_conn {limits.connections};")
    if limits.rps:
        lines.append(f"limit_req zone={_zone(anns.ingress)}_rps burst={limits.rps * limits.burst_multiplier} nodelay;")
    if limits.rpm:
        lines.append(f"limit_req zone={_zone(anns.ingress)}_rpm burst={limits.rpm * limits.burst_multiplier} nodelay;")
    if re.match(r"^\d+[kKmMgG]?$", limits.body_size.strip()):
        lines.append(f"client_max_body_size {limits.body_size.strip()};")
    lines += _proxy_headers(loc, model)
    if anns.satisfy == "any":
        lines.append("satisfy any;")
    if anns.redirect.relative:
        lines.append("absolute_redirect off;")
    errors = anns.errors
    if errors.codes and errors.intercept_backend_errors:
        lines.append("proxy_intercept_errors on;")
    for code in errors.codes:
        lines.append(f"error_page {code} = @custom_{_error_upstream(anns, plan)}_{code};")
    if anns.redirect.url:
        lines.append(f"return {anns.redirect.code} {anns.redirect.url};")
    upstream = loc.upstream
    target = _upstream_target(loc, plan)
    if loc.needs_rewrite():
        lines.append(f"rewrite {_quote('(?i)' + loc.path)} {anns.rewrite.target} break;")
        if anns.rewrite.x_forwarded_prefix:
            lines.append(f"proxy_set_header X-Forwarded-Prefix {_quote(anns.rewrite.x_forwarded_prefix)};")
    if target is None:
        # No ready endpoint: the Lua balancer answers 503 (stands in for it; such requests are not compared).
        lines.append(f"# {upstream}: no endpoint, the balancer (Lua) answers 503")
        lines.append("return 503;")
    else:
        if target.startswith("custom-default-backend-") and upstream not in plan.upstreams:
            # The controller points a location whose Service has no endpoint at the default-backend Service.
            lines += ["proxy_set_header X-Code 503;", "proxy_set_header X-Format $http_accept;",
                      f"proxy_set_header X-Namespace {_quote(loc.ingress.namespace if loc.ingress else '')};",
                      f"proxy_set_header X-Ingress-Name {_quote(loc.ingress.name if loc.ingress else '')};",
                      f"proxy_set_header X-Service-Name {_quote(loc.backend.service_name if loc.backend else '')};"]
        lines.append(_proxy_pass(anns.backend.protocol if target != DEFAULT_UPSTREAM else "HTTP", target))
    return [*lines, "}"]


def _proxy_pass(protocol: str, target: str) -> str:
    """``buildProxyPass``: the directive and scheme backend-protocol asks for."""
    return {"HTTPS": f"proxy_pass https://{target};", "AUTO_HTTP": f"proxy_pass $scheme://{target};",
            "GRPC": f"grpc_pass grpc://{target};", "GRPCS": f"grpc_pass grpcs://{target};",
            "FCGI": f"fastcgi_pass {target};"}.get(protocol, f"proxy_pass http://{target};")


def _upstream_target(loc: Location, plan: Plan) -> str | None:
    upstream = loc.upstream
    if upstream == DEFAULT_UPSTREAM:
        return DEFAULT_UPSTREAM
    if upstream in plan.upstreams:
        return _safe(upstream)
    custom = loc.annotations.errors.default_backend
    if custom:
        name = "custom-default-backend-" + custom.replace("/", "-")
        if name in plan.upstreams:
            return _safe(name)
    return None


def _error_upstream(anns: IngressAnnotations, plan: Plan) -> str:
    custom = anns.errors.default_backend
    if custom:
        name = "custom-default-backend-" + custom.replace("/", "-")
        if name in plan.upstreams:
            return _safe(name)
    return DEFAULT_UPSTREAM


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _file_key(ingress_key: str) -> str:
    return ingress_key.replace("/", "-")


def _zone(ingress_key: str) -> str:
    return "z_" + re.sub(r"[^A-Za-z0-9]", "_", ingress_key)


def _custom_error_locations(server: Server, plan: Plan) -> list[str]:
    """``buildCustomErrorLocationsPerServer``: one named location per (default backend, code)."""
    wanted: dict[str, set[int]] = {}
    for loc in server.locations:
        if loc.annotations.errors.codes:
            wanted.setdefault(_error_upstream(loc.annotations, plan), set()).update(loc.annotations.errors.codes)
    lines = []
    for upstream in sorted(wanted):
        for code in sorted(wanted[upstream]):
            lines += [f"location @custom_{upstream}_{code} {{", "internal;", "proxy_intercept_errors off;",
                      f"proxy_set_header X-Code {code};", "proxy_set_header X-Format $http_accept;",
                      "proxy_set_header X-Original-URI $request_uri;", "proxy_set_header X-Forwarded-For $remote_addr;",
                      "proxy_set_header Host $http_host;", "rewrite (.*) / break;", f"proxy_pass http://{upstream};",
                      "}"]
    return lines


def _server(server: Server, model: Model, plan: Plan) -> list[str]:
    names = " ".join([_quote(server_name(server.name)), *(_quote(a) for a in server.aliases)])
    default = " default_server" if server.name == CATCH_ALL else ""
    lines = ["server {", f"server_name {names};", f"listen 127.0.0.1:{plan.http_port}{default};",
             f"listen 127.0.0.1:{plan.https_port}{default} ssl;"]
    regex = server.regex
    for loc in server.locations:
        if loc.annotations.redirect.app_root:
            lines.append(f"if ($uri = /) {{ return 302 $scheme://$http_host{loc.annotations.redirect.app_root}; }}")
    lines += _custom_error_locations(server, plan)
    for loc in server.locations:
        if loc.annotations.ext_auth is not None and loc.annotations.denied is None:
            lines += _auth_location(loc, plan)
        lines += _location(server, loc, regex, model, plan)
    return [*lines, "}"]


def _rate_zones(model: Model) -> list[str]:
    out = []
    seen: set[str] = set()
    for server in model.servers.values():
        for loc in server.locations:
            anns = loc.annotations
            if anns.ingress in seen or not anns.limits.rate_limited:
                continue
            seen.add(anns.ingress)
            zone = _zone(anns.ingress)
            if anns.limits.connections:
                out.append(f"limit_conn_zone $binary_remote_addr zone={zone}_conn:5m;")
            if anns.limits.rps:
                out.append(f"limit_req_zone $binary_remote_addr zone={zone}_rps:5m rate={anns.limits.rps}r/s;")
            if anns.limits.rpm:
                out.append(f"limit_req_zone $binary_remote_addr zone={zone}_rpm:5m rate={anns.limits.rpm}r/m;")
    return out


def render(model: Model, plan: Plan) -> str:
    """nginx.conf for this model, listening on the plan's loopback ports."""
    config = model.config
    scratch = plan.scratch
    lines = [f"pid {scratch}/nginx.pid;", f"error_log {scratch}/error.log warn;", "daemon off;",
             "worker_processes 1;", "events { worker_connections 1024; }", "http {",
             f"client_body_temp_path {scratch}/client-body;", f"proxy_temp_path {scratch}/proxy-temp;",
             f"fastcgi_temp_path {scratch}/fastcgi-temp;", f"uwsgi_temp_path {scratch}/uwsgi-temp;",
             f"scgi_temp_path {scratch}/scgi-temp;", "access_log off;", "server_tokens off;",
             "server_name_in_redirect off;", "port_in_redirect off;", "default_type text/html;",
             "server_names_hash_bucket_size 128;", "map_hash_bucket_size 128;",
             f"limit_req_status {config.limit_req_status_code};", f"limit_conn_status {config.limit_conn_status_code};",
             "map $http_upgrade $connection_upgrade { default upgrade; '' close; }",
             "map $scheme $pass_port_by_scheme { https 443; default 80; }",
             "geo $literal_dollar { default \"$\"; }", "uninitialized_variable_warn off;"]
    if config.use_forwarded_headers:
        header = config.forwarded_for_header
        lines += [f"real_ip_header {header};", "real_ip_recursive on;", "set_real_ip_from 127.0.0.1;"]
        lines += [f"set_real_ip_from {cidr};" for cidr in config.proxy_real_ip_cidr]
        if config.compute_full_forwarded_for:
            lines.append("map $http_x_forwarded_for $full_x_forwarded_for { default \"$http_x_forwarded_for, "
                         "$realip_remote_addr\"; '' \"$realip_remote_addr\"; }")
    else:
        lines += [f"real_ip_header {PEER_HEADER};", "set_real_ip_from 127.0.0.1;"]
    lines += [f"ssl_certificate {plan.certificate};", f"ssl_certificate_key {plan.key};"]
    lines += _rate_zones(model)
    for cidr in config.block_cidrs:
        lines.append(f"deny {cidr.strip()};")
    lines.append(f"upstream {DEFAULT_UPSTREAM} {{ server 127.0.0.1:{plan.default_port}; }}")
    for name in sorted(plan.upstreams):
        servers = " ".join(f"server {address};" for address in plan.upstreams[name])
        lines.append(f"upstream {_safe(name)} {{ {servers} }}")
    for frm in sorted(model.redirect_servers):
        # ngx_srv_redirect.lua builds the Location; a stock nginx answers with the same code (not compared).
        lines += ["server {", f"server_name {_quote(frm)};", f"listen 127.0.0.1:{plan.http_port};",
                  f"listen 127.0.0.1:{plan.https_port} ssl;",
                  f"return {config.http_redirect_code} $scheme://{model.redirect_servers[frm]}$request_uri;", "}"]
    for name in sorted(model.servers):
        lines += _server(model.servers[name], model, plan)
    lines += ["server {", f"listen 127.0.0.1:{plan.default_port};", "location / { return 404; }", "}", "}"]
    return _indent(lines)


def _indent(lines: list[str]) -> str:
    out = []
    depth = 0
    for line in lines:
        if line == "}":
            depth -= 1
        out.append("    " * max(depth, 0) + line)
        if line.endswith("{"):
            depth += 1
    return "\n".join(out) + "\n"


def htpasswd_files(model: Model) -> dict[str, str]:
    """File name → contents, for every basic-auth Ingress (as the controller dumps the Secret)."""
    files = {}
    for server in model.servers.values():
        for loc in server.locations:
            auth = loc.annotations.basic_auth
            if auth is not None:
                files[f"auth-{_file_key(loc.annotations.ingress)}.passwd"] = "".join(
                    f"{user}:{stored}\n" for user, stored in auth.users)
    return files
