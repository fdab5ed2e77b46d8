"""The Corefile: CoreDNS's configuration, parsed as CoreDNS reads it, and what it makes CoreDNS do.

Syntax (Caddy's Caddyfile, which CoreDNS uses: coredns/caddy ``caddyfile/lexer.go`` and
``parse.go``): tokens are separated by white space, ``#`` starts a comment, ``"..."`` quotes a
token; a server block is one or more keys (``.:53``, ``example.com``) followed by ``{ ... }``; inside,
each line is a directive (a plugin name and its arguments), optionally with a block of its own.

What a parse or set-up error does: the ``coredns`` process exits at start, the container restarts
(CrashLoopBackOff), the pods are never Ready and the ``kube-dns`` Service has no endpoints, so every
pod's DNS query times out. The messages below follow CoreDNS's (``plugin/forward/setup.go``,
``plugin/loop/README.md``: "Loop (...) detected for zone ..."); the wording is knetsim's.

Modelled plugins: ``kubernetes`` (zones, ``pods``, ``ttl``, ``fallthrough``), ``forward`` (TO
addresses, ``/etc/resolv.conf``), ``loop``, ``rewrite name`` (exact, prefix, suffix, substring,
regex), ``hosts`` (inline entries, ``fallthrough``), ``cache`` (parsed: it changes no answer here).
Other plugins of CoreDNS's ``plugin.cfg`` are accepted and have no effect; an unknown one is an
error, as in CoreDNS.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from functools import lru_cache

# kubeadm's Corefile (cmd/kubeadm/app/phases/addons/dns/manifests.go), as kind installs it.
DEFAULT_COREFILE = """.:53 {{
    errors
    health {{
       lameduck 5s
    }}
    ready
    kubernetes {domain} in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }}
    prometheus :9153
    forward . /etc/resolv.conf {{
       max_concurrent 1000
    }}
    cache 30 {{
       disable success {domain}
       disable denial {domain}
    }}
    loop
    reload
    loadbalance
}}
"""


def default_corefile(cluster_domain: str = "cluster.local") -> str:
    """kubeadm's Corefile for a cluster domain (kubeadm writes its ``networking.dnsDomain`` there)."""
    return DEFAULT_COREFILE.format(domain=cluster_domain.rstrip("."))

# coredns/coredns plugin.cfg: every plugin a stock CoreDNS build knows (order = execution order).
PLUGIN_ORDER = (
    "root", "metadata", "geoip", "cancel", "tls", "timeouts", "multisocket", "reload", "nsid", "bufsize", "bind",
    "debug", "trace", "ready", "health", "pprof", "prometheus", "errors", "log", "dnstap", "local", "dns64",
    "acl", "any", "chaos", "loadbalance", "tsig", "cache", "rewrite", "header", "dnssec", "autopath", "minimal",
    "template", "transfer", "hosts", "route53", "azure", "clouddns", "k8s_external", "kubernetes", "file",
    "auto", "secondary", "etcd", "loop", "forward", "grpc", "erratic", "whoami", "on", "sign", "view",
)
KNOWN_PLUGINS = frozenset(PLUGIN_ORDER)


class CorefileError(ValueError):
    """The Corefile does not parse, or a plugin refuses its arguments: CoreDNS exits at start."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"Corefile:{line} - Error during parsing: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True, slots=True)
class Directive:
    name: str
    args: tuple[str, ...]
    line: int
    block: tuple[Directive, ...] = ()

    def sub(self, name: str) -> Directive | None:
        return next((d for d in self.block if d.name == name), None)


@dataclass(frozen=True, slots=True)
class ServerBlock:
    keys: tuple[str, ...]  # as written: ".:53", "example.com"
    directives: tuple[Directive, ...]
    line: int

    @property
    def zones(self) -> tuple[str, ...]:
        """The zones the block serves, normalised (``.``, ``example.com.``)."""
        out = []
        for key in self.keys:
            host = key.split("://", 1)[-1]
            host = host.rsplit(":", 1)[0] if re.search(r":\d+$", host) else host
            out.append(_zone(host or "."))
        return tuple(out)

    @property
    def port(self) -> int:
        for key in self.keys:
            m = re.search(r":(\d+)$", key)
            if m:
                return int(m.group(1))
        return 53

    def plugin(self, name: str) -> Directive | None:
        return next((d for d in self.directives if d.name == name), None)


@dataclass(frozen=True, slots=True)
class Corefile:
    blocks: tuple[ServerBlock, ...]
    text: str = field(default="", repr=False)

    def block_for(self, qname: str, port: int = 53) -> ServerBlock | None:
        """The server block whose zone is the longest suffix of ``qname`` (CoreDNS's zone match)."""
        name = _zone(qname)
        best: tuple[int, ServerBlock] | None = None
        for block in self.blocks:
            if block.port != port:
                continue
            for zone in block.zones:
                if zone == "." or name == zone or name.endswith("." + zone):
                    depth = 0 if zone == "." else zone.count(".")
                    if best is None or depth > best[0]:
                        best = (depth, block)
        return best[1] if best else None


def _zone(name: str) -> str:
    name = name.lower()
    return name if name.endswith(".") else name + "."


# --- lexing and parsing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    line: int
    quoted: bool = False


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    line, i, n = 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c == '"':
            start_line, i, buf = line, i + 1, []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] == '"':
                    i += 1
                if text[i] == "\n":
                    line += 1
                buf.append(text[i])
                i += 1
            if i >= n:
                raise CorefileError(start_line, "Unexpected EOF: unterminated quoted string")
            i += 1
            out.append(_Token("".join(buf), start_line, True))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] != '"':
                if text[i] == "#" and i > start:  # a # inside a word starts a comment only after white space
                    pass
                i += 1
            word = text[start:i]
            # `{` and `}` glued to a word are separate tokens (`example.com{`, `}` at a line's end).
            for part in re.split(r"([{}])", word):
                if part:
                    out.append(_Token(part, line))
    return out


def parse_corefile(text: str) -> Corefile:
    """Parse ``text`` into server blocks, or raise ``CorefileError`` naming the line."""
    return _parse_cached(text)


@lru_cache(maxsize=64)
def _parse_cached(text: str) -> Corefile:
    tokens = _tokens(text)
    blocks: list[ServerBlock] = []
    i = 0
    while i < len(tokens):
        if tokens[i].text == "import" and not tokens[i].quoted:
            # A top-level `import FILES` (k3s, AKS: custom server blocks): files knetsim cannot read; skipped.
            line = tokens[i].line
            i += 1
            while i < len(tokens) and tokens[i].line == line:
                i += 1
            continue
        keys: list[_Token] = []
        while i < len(tokens) and tokens[i].text != "{":
            if tokens[i].text == "}":
                raise CorefileError(tokens[i].line, "Unexpected '}' because no matching opening brace")
            keys.append(tokens[i])
            i += 1
        if i >= len(tokens):
            last = keys[-1].line if keys else 1
            raise CorefileError(last, "Unexpected EOF: a server block needs { ... } after its keys")
        if not keys:
            raise CorefileError(tokens[i].line, "a server block needs at least one key (e.g. .:53) before {")
        snippet = len(keys) == 1 and keys[0].text.startswith("(") and keys[0].text.endswith(")")
        if not snippet:
            for key in keys:
                _check_key(key)
        directives, i = _directives(tokens, i + 1, tokens[i].line)
        if snippet:
            continue  # `(name) { ... }` defines a snippet for `import name`, not a server block
        blocks.append(ServerBlock(tuple(k.text for k in keys), tuple(directives), keys[0].line))
    if not blocks:
        raise CorefileError(1, "no server blocks: CoreDNS has nothing to serve")
    seen: dict[tuple[str, int], int] = {}
    for block in blocks:
        for zone in block.zones:
            if (zone, block.port) in seen:
                raise CorefileError(block.line, f"cannot serve dns://{zone}:{block.port} - it is already defined")
            seen[(zone, block.port)] = block.line
        for d in block.directives:
            _check_plugin(d)
    return Corefile(tuple(blocks), text)


def _check_key(key: _Token) -> None:
    host = key.text.split("://", 1)[-1]
    port = ""
    m = re.fullmatch(r"(.*):(\d*)", host)
    if m:
        host, port = m.group(1), m.group(2)
    if port and not (0 < int(port) < 65536):
        raise CorefileError(key.line, f"invalid port in server block key {key.text!r}")
    if host not in ("", ".") and not re.fullmatch(r"[A-Za-z0-9_*]([A-Za-z0-9_.*-]*)\.?|[0-9./]+", host):
        raise CorefileError(key.line, f"not a valid zone in server block key {key.text!r}")


def _directives(tokens: list[_Token], i: int, open_line: int) -> tuple[list[Directive], int]:
    """Directives up to the matching ``}``; returns them and the index after it."""
    out: list[Directive] = []
    while i < len(tokens):
        tok = tokens[i]
        if tok.text == "}" and not tok.quoted:
            return out, i + 1
        if tok.text == "{" and not tok.quoted:
            raise CorefileError(tok.line, "Unexpected '{': a block must follow a directive on its line")
        line = tok.line
        args: list[str] = []
        i += 1
        while i < len(tokens) and tokens[i].line == line and tokens[i].text not in ("{", "}"):
            args.append(tokens[i].text)
            i += 1
        block: list[Directive] = []
        if i < len(tokens) and tokens[i].text == "{" and tokens[i].line == line:
            block, i = _directives(tokens, i + 1, tokens[i].line)
        out.append(Directive(tok.text, tuple(args), line, tuple(block)))
    raise CorefileError(open_line, "Unexpected EOF: the block opened here is never closed with }")


def _check_plugin(d: Directive) -> None:
    if d.name == "import":
        return  # a snippet or files (`import custom/*.override`): their plugins are not known here
    if d.name not in KNOWN_PLUGINS:
        raise CorefileError(d.line, f"Unknown directive '{d.name}'")
    if d.name == "forward":
        _forward_targets(d)
    elif d.name == "cache" and d.args and not d.args[0].isdigit():
        raise CorefileError(d.line, f"cache: not a number of seconds: {d.args[0]!r}")
    elif d.name == "kubernetes":
        for sub in d.block:
            if sub.name == "pods" and (len(sub.args) != 1 or sub.args[0] not in ("disabled", "insecure", "verified")):
                raise CorefileError(sub.line, f"kubernetes: pods: invalid value {' '.join(sub.args)!r} "
                                              "(disabled, insecure or verified)")
            if sub.name == "ttl" and (len(sub.args) != 1 or not sub.args[0].isdigit()
                                      or not 0 <= int(sub.args[0]) <= 3600):
                raise CorefileError(sub.line, f"kubernetes: ttl must be in range [0, 3600]: {' '.join(sub.args)}")
    elif d.name == "rewrite":
        _rewrite_rule(d)
    elif d.name == "hosts":
        for sub in d.block:
            if sub.name != "fallthrough" and sub.name not in ("ttl", "reload", "no_reverse") and sub.args:
                try:
                    ipaddress.ip_address(sub.name)
                except ValueError:
                    raise CorefileError(sub.line, f"hosts: {sub.name!r} is not an IP address") from None


def forward_targets(d: Directive) -> tuple[str, ...]:
    """The TO list of a ``forward FROM TO...`` (addresses, ``host:port`` or ``/etc/resolv.conf``)."""
    return _forward_targets(d)


def _forward_targets(d: Directive) -> tuple[str, ...]:
    if len(d.args) < 2:
        # plugin/forward/setup.go: c.ArgErr() when FROM or TO is missing.
        raise CorefileError(d.line, f"Wrong argument count or unexpected line ending after "
                                    f"'{d.args[-1] if d.args else 'forward'}'")
    out = []
    for to in d.args[1:]:
        bare = to.split("://", 1)[-1]
        if bare.startswith("/"):
            out.append(bare)
            continue
        host = bare
        m = re.fullmatch(r"\[(.+)\](?::(\d+))?|([^:]+)(?::(\d+))?", bare)
        port = ""
        if m:
            host = m.group(1) or m.group(3) or bare
            port = m.group(2) or m.group(4) or ""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            # parse.HostPortOrFile: neither an address nor a file CoreDNS can read.
            raise CorefileError(d.line, f"not an IP address or file: {to!r}") from None
        if port and not 0 < int(port) < 65536:
            raise CorefileError(d.line, f"not an IP address or file: {to!r}")
        out.append(bare)
    return tuple(out)


# --- rewrite -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NameRewrite:
    kind: str  # exact | prefix | suffix | substring | regex
    match: str
    replacement: str

    def apply(self, qname: str) -> str | None:
        """The rewritten name (fully qualified), or None when the rule does not match."""
        name = _zone(qname)
        match = self.match.lower()
        if self.kind == "exact":
            return _zone(self.replacement) if name == _zone(match) else None
        bare = name.rstrip(".")
        if self.kind == "prefix":
            return _zone(self.replacement + bare[len(match):]) if bare.startswith(match) else None
        if self.kind == "suffix":
            m = match.rstrip(".")
            return _zone(bare[: -len(m)] + self.replacement.rstrip(".")) if bare.endswith(m) else None
        if self.kind == "substring":
            return _zone(bare.replace(match, self.replacement, 1)) if match in bare else None
        found = re.fullmatch(self.match, name) or re.fullmatch(self.match, bare)
        if found is None:
            return None
        return _zone(re.sub(r"\{(\d+)\}", lambda m: found.group(int(m.group(1))) or "", self.replacement))


def _rewrite_rule(d: Directive) -> NameRewrite | None:
    args = list(d.args)
    if args and args[0] in ("stop", "continue"):
        args = args[1:]
    if not args:
        raise CorefileError(d.line, "rewrite: Wrong argument count")
    if args[0] != "name":
        return None  # type, class, edns0, ttl... rules change no name: accepted, not modelled
    args = args[1:]
    kind = "exact"
    if args and args[0] in ("exact", "prefix", "suffix", "substring", "regex"):
        kind, args = args[0], args[1:]
    if len(args) < 2:
        raise CorefileError(d.line, "rewrite name: needs FROM and TO")
    if kind == "regex":
        try:
            re.compile(args[0])
        except re.error as exc:
            raise CorefileError(d.line, f"rewrite name regex: invalid regex {args[0]!r}: {exc}") from None
    return NameRewrite(kind, args[0], args[1])


def name_rewrites(block: ServerBlock) -> tuple[NameRewrite, ...]:
    out = []
    for d in block.directives:
        if d.name == "rewrite":
            rule = _rewrite_rule(d)
            if rule is not None:
                out.append(rule)
    return tuple(out)


def inline_hosts(d: Directive) -> dict[str, tuple[str, ...]]:
    """``hosts { IP NAME... }`` entries: fully qualified name → addresses, in file order."""
    out: dict[str, list[str]] = {}
    for sub in d.block:
        if sub.name in ("fallthrough", "ttl", "reload", "no_reverse"):
            continue
        for name in sub.args:
            out.setdefault(_zone(name), []).append(sub.name)
    return {k: tuple(v) for k, v in out.items()}


__all__ = [
    "DEFAULT_COREFILE",
    "KNOWN_PLUGINS",
    "Corefile",
    "CorefileError",
    "Directive",
    "NameRewrite",
    "ServerBlock",
    "default_corefile",
    "forward_targets",
    "inline_hosts",
    "name_rewrites",
    "parse_corefile",
]


# --- start-up --------------------------------------------------------------------------------------------

LOOP_URL = "https://coredns.io/plugins/loop#troubleshooting"


def _target_host(target: str) -> str:
    if target.startswith("["):
        return target[1:].split("]", 1)[0]
    return target.rsplit(":", 1)[0] if target.count(":") == 1 else target


def _loops(host: str, own: frozenset[str]) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback or host in own
    except ValueError:
        return False


def startup_error(text: str, own: frozenset[str] = frozenset(), resolv_conf: tuple[str, ...] = ()) -> str | None:
    """The line a ``coredns -conf`` process prints before it exits at start, or None when it starts.

    Two ways out: the Corefile does not parse (or a plugin refuses its arguments), and the ``loop``
    plugin sees its own probe query come back because a ``forward`` sends it to CoreDNS itself (a
    loopback address, ``/etc/resolv.conf`` naming one, or one of ``own``: the kube-dns Service and pod
    addresses). The wording follows CoreDNS's (``plugin/loop/README.md``: ``[FATAL] plugin/loop: Loop
    (127.0.0.1:53 -> :53) detected for zone "."``); the numbers of its HINFO query are random there and
    derived from the zone here, so output stays deterministic.
    """
    try:
        corefile = parse_corefile(text)
        for block in corefile.blocks:
            fwd = block.plugin("forward")
            if fwd is None or block.plugin("loop") is None:
                continue
            for target in forward_targets(fwd):
                hosts = resolv_conf if target.startswith("/") else (_target_host(target),)
                if any(_loops(host, own) for host in hosts):
                    zone = block.zones[0]
                    seed = sum(map(ord, zone)) * 7919
                    return (f'[FATAL] plugin/loop: Loop (127.0.0.1:{block.port} -> :{block.port}) detected for zone '
                            f'"{zone}", see {LOOP_URL}. Query: "HINFO {seed}1234567890.{seed}987654321."')
    except CorefileError as exc:
        return f"/etc/coredns/{exc}"
    return None
