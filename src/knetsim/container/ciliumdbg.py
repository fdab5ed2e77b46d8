"""``cilium-dbg`` in the Cilium agent's container: the load-balancing state of the agent's own node.

On a kube-proxy-free cluster this is where Services live: ``kubectl exec -n kube-system ds/cilium --
cilium-dbg bpf lb list`` dumps the BPF maps the datapath reads, ``cilium-dbg service list`` the
agent's table of frontends and backends. Both answer from ``dataplane.render(state, "ebpf", node)``
for the node the exec'd pod runs on, so they can never disagree with ``knetsim render ebpf --node``
or with the traces (the listing text is taken from that render's sections verbatim).

Formats are cilium-dbg's (``cilium-dbg/cmd/bpf_lb_list.go``, ``service_list.go``, ``helpers.go``):

* ``bpf lb list`` [``--backends`` | ``--revnat``]: two columns through Go's tabwriter (min width 5,
  padding 3); ``-o json`` is the same map, key to the list of its entries, as Go marshals it
  (keys sorted, two-space indent). Master entries end in a blank: Go's format has a field for the
  L7 proxy port after the flags, empty here.
* ``service list`` / ``service get ID``: ``ID  Frontend  Service Type  Backend``, sorted by ID (the
  reverse-NAT id), one line per backend (``N => ADDR:PORT/PROTO (state)``).
* ``status --brief``: ``OK``.

Not simulated (said so, exit 1): the other subcommands cilium-dbg has (endpoint, policy, monitor,
the other ``bpf`` maps...), ``--frontends`` and ``--source-ranges``, ``-o`` other than json for the
listing. knetsim drops the trailing blanks tabwriter leaves after the last column.
"""

from __future__ import annotations

import json
from typing import Any

from ..dataplane import render
from ..model.programs import image_repository
from .shell import Ctx, register

CILIUM_REPOSITORY = "cilium"  # quay.io/cilium/cilium: the agent's image, where cilium-dbg is installed
LISTINGS = {"": "# cilium bpf lb list", "--backends": "# cilium bpf lb list --backends",
            "--revnat": "# cilium bpf lb list --revnat"}
# cilium-dbg's commands (docs.cilium.io cmdref): a real one knetsim does not imitate says so.
COMMANDS = ("bgp", "bpf", "build-config", "cgroups", "completion", "config", "debuginfo", "encrypt", "endpoint",
            "fqdn", "help", "identity", "ip", "kvstore", "loadinfo", "lrp", "map", "metrics", "monitor", "node",
            "nodeid", "policy", "post-uninstall-cleanup", "prefilter", "preflight", "recorder", "service", "shell",
            "statedb", "status", "troubleshoot", "version")
SERVICE_TYPES = {"ClusterIP": "ClusterIP", "NodePort": "NodePort", "ExternalIPs": "ExternalIPs",
                 "LoadBalancer": "LoadBalancer"}


def go_tabwriter(rows: list[list[str]], minwidth: int = 5, padding: int = 3) -> list[str]:
    """Go's ``tabwriter.NewWriter(w, minwidth, 0, padding, ' ', 0)`` over lines whose every cell ends in a tab
    (one column block), with the trailing blanks dropped."""
    width = max(len(r) for r in rows)
    widths = [max(minwidth, max(len(r[i]) for r in rows if i < len(r)) + padding) for i in range(width)]
    return ["".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]


class _Failed(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@register("cilium-dbg")
async def cilium_dbg(ctx: Ctx, argv: list[str]) -> int:
    if not any(image_repository(c.image) == CILIUM_REPOSITORY for c in ctx.pod.containers
               if c.name == ctx.container):
        await ctx.err(f"sh: {argv[0]}: not found\n")
        return 127
    args = argv[1:]
    output = ""
    words: list[str] = []
    flags: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-o", "--output"):
            if i + 1 >= len(args):
                # pflag's words for a shorthand and for a long flag.
                await ctx.err("Error: flag needs an argument: 'o' in -o\n" if arg == "-o"
                              else "Error: flag needs an argument: --output\n")
                return 1
            output, i = args[i + 1], i + 2
            continue
        if arg.startswith(("--output=", "-o=")):
            output = arg.split("=", 1)[1]
        elif arg.startswith("-"):
            flags.append(arg)
        else:
            words.append(arg)
        i += 1
    try:
        text = _run(ctx, words, flags, output)
    except _Failed as exc:
        await ctx.err(f"{exc}\n")
        return exc.code
    await ctx.out(text)
    return 0


def _run(ctx: Ctx, words: list[str], flags: list[str], output: str) -> str:
    if not words:
        raise _Failed("Error: knetsim simulates `cilium-dbg bpf lb list`, `cilium-dbg service list|get` and "
                      "`cilium-dbg status --brief`")
    if words[0] not in COMMANDS:
        raise _Failed(f"Error: unknown command \"{words[0]}\" for \"cilium-dbg\"\nRun 'cilium-dbg --help' for usage.")
    command = " ".join(words[:3]) if words[0] == "bpf" else " ".join(words[:2])
    if words[:3] in (["bpf", "lb", "list"], ["bpf", "lb", "ls"]):
        return _bpf_lb_list(ctx, flags, output)
    if words[:2] in (["service", "list"], ["service", "ls"]):
        _no_flags(flags, output)
        return _service_table(_services(ctx))
    if words[:2] == ["service", "get"]:
        _no_flags(flags, output)
        if len(words) < 3:
            raise _Failed("Error: Missing service id argument")
        if not words[2].isdigit():
            raise _Failed(f"Error: Unable to parse service ID: {words[2]}")
        found = [s for s in _services(ctx) if s[0] == int(words[2])]
        if not found:
            raise _Failed(f"Error: Cannot get service '{int(words[2])}': [GET /service/{{id}}][404] "
                          "getServiceIdNotFound")
        return _service_table(found)
    if words == ["status"] and flags == ["--brief"]:
        _agent(ctx, "status", "healthz")
        return "OK\n"
    raise _Failed(f"cilium-dbg: `{command}{' ' + ' '.join(flags) if flags else ''}` is not simulated by knetsim "
                  "(bpf lb list [--backends|--revnat], service list, service get ID and status --brief are)")


def _no_flags(flags: list[str], output: str) -> None:
    if flags or output:
        raise _Failed(f"cilium-dbg: option {(flags or ['-o ' + output])[0]} is not simulated by knetsim")


def _agent(ctx: Ctx, what: str = "services list", path: str = "service") -> Any:
    """The render of the agent's node; the error cilium-dbg prints where no agent runs (not an ebpf cluster)."""
    if ctx.state.config.dataplane != "ebpf":
        raise _Failed(f"Error: Cannot get {what}: Get \"http://localhost/v1/{path}\": dial unix "
                      "/var/run/cilium/cilium.sock: connect: no such file or directory\nIs the agent running?")
    return render(ctx.state, "ebpf", ctx.pod.node_name)


def _bpf_lb_list(ctx: Ctx, flags: list[str], output: str) -> str:
    unknown = [f for f in flags if f not in LISTINGS]
    if unknown:
        if unknown[0] in ("--frontends", "--source-ranges"):
            raise _Failed(f"cilium-dbg: bpf lb list {unknown[0]} is not simulated by knetsim")
        raise _Failed(f"Error: unknown flag: {unknown[0]}")
    if len(flags) > 1:
        raise _Failed("cilium-dbg: one of --backends, --revnat at a time (cilium-dbg lists the first it is given)")
    if output not in ("", "json"):
        raise _Failed(f"cilium-dbg: -o {output} is not simulated by knetsim (json is)")
    if ctx.state.config.dataplane != "ebpf":
        raise _Failed("Error: Unable to dump IPv4 services table: no BPF map is pinned on this node: Cilium is not "
                      f"its data plane (dataplane {ctx.state.config.dataplane})")
    lines = _section(_agent(ctx).text, LISTINGS[flags[0] if flags else ""])
    if output == "json":
        entries: dict[str, list[str]] = {}
        for line in lines[1:]:
            key, _, value = line.partition("   ")
            value = value.strip()
            if value.startswith(("0.0.0.0:0 ", "[::]:0 ")):
                value += " "  # the empty L7 proxy field after the flags
            entries.setdefault(key.strip(), []).append(value)
        return json.dumps(dict(sorted(entries.items())), indent=2) + "\n"
    return "".join(line + "\n" for line in lines)


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return lines[start:end]


def _services(ctx: Ctx) -> list[tuple[int, str, str, list[str]]]:
    """(ID, frontend, service type, backend lines) of every frontend of the node, from the maps."""
    maps = _agent(ctx).to_dict()["ebpf"]
    backends = {b["id"]: b for b in maps["backends"]}
    masters: dict[int, tuple[str, str]] = {}
    rev_of: dict[tuple[str, str], int] = {}  # (frontend, scope) -> its master's reverse-NAT id
    slots: dict[tuple[int, str], list[int]] = {}
    for row in maps["services"]:
        scope = (row["frontend"], row["scope"])
        if row["slot"] == 0:
            masters.setdefault(row["revNAT"], (row["frontend"], row["flags"][0]))
            rev_of[scope] = row["revNAT"]
            slots.setdefault((row["revNAT"], row["scope"]), [])
        elif scope in rev_of:
            slots[(rev_of[scope], row["scope"])].append(row["backendID"])
    out = []
    for rev in sorted(masters):
        frontend, kind = masters[rev]
        # A frontend with two scopes (externalTrafficPolicy Local) lists every backend: the internal scope's.
        ids = slots.get((rev, "internal")) or slots.get((rev, "external")) or []
        lines = [f"{n} => {backends[bid]['address']} ({backends[bid]['state']})" for n, bid in enumerate(ids, 1)]
        out.append((rev, frontend, SERVICE_TYPES.get(kind, kind), lines))
    return out


def _service_table(services: list[tuple[int, str, str, list[str]]]) -> str:
    rows = [["ID", "Frontend", "Service Type", "Backend"]]
    for rev, frontend, kind, lines in services:
        rows.append([str(rev), frontend, kind, lines[0] if lines else ""])
        rows += [["", "", "", line] for line in lines[1:]]
    return "".join(line + "\n" for line in go_tabwriter(rows))
