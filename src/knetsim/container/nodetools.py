"""The node's own view, from a pod that mounts the node's root: ``kubectl debug node/NAME``.

``kubectl debug node/worker -it --image=busybox`` runs a pod on that node with ``hostNetwork``,
``hostPID``, ``hostIPC`` and the node's ``/`` mounted at ``/host`` (a ``hostPath`` volume). Inside,
``chroot /host`` enters the node's root, where the node's tools are: ``iptables-save`` prints
kube-proxy's rules of that node (``dataplane.render(state, "iptables", node)``: what ``knetsim render
iptables --node`` prints, without its first comment line), ``nft list ruleset`` the nftables mode's
table and kindnetd's masquerade table. On an ebpf cluster neither has anything of kube-proxy's:
``chroot /host iptables-save | grep -c KUBE-`` prints 0, as on seed 000's node, and the Services are
in Cilium's maps (``cilium-dbg`` in the agent's pod); ``iptables-save`` lists Cilium's own chains
there (``dataplane.ciliumhost``: ``CILIUM_*`` in mangle, raw, filter and nat, with their
``cilium-feeder:`` jumps, the proxy marks and the masquerade of the node's pod CIDR), and
``ip6tables-save`` their IPv6 twins where the cluster has IPv6.

The node's files under the mount (``node_root_files``: hostname, hosts, resolv.conf, os-release) are
what the kubelet shows the debug pod at ``/host``; ``chroot`` gives the command those same files at ``/``.

Differences from a real node: the node's root is a handful of files, not the kind image's filesystem;
files written inside the chroot are not seen at ``/host`` (and go with the command); ``chroot DIR``
without a command in an interactive session switches the session itself to the node's root (a real
one starts a nested shell, so ``exit`` returns to busybox's); iptables-save prints no ``# Generated
by``/``# Completed on`` lines (their date would change every run), and iptables-nft's tables are not
translated for ``nft list ruleset`` (``iptables-save`` lists them). A node lists only the rules of
kube-proxy (or Cilium) and kindnetd: none of the other programs of a kind node (Docker's embedded DNS
rules). On an ebpf node, ``cilium_host``'s address (the ``--to-source`` of Cilium's SNAT rules) and the
DNS proxy's port (in its TPROXY rules) are modelled: the pod CIDR's first address and a port hashed
from the node's name, where a real agent takes them from its IPAM and the kernel.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from ..dataplane import render
from ..dataplane.ciliumhost import save_text as cilium_save_text
from ..dataplane.masquerade import egress_masquerade
from .shell import BUSYBOX_BANNER, Ctx, ExitShell, register, run_argv

HOST_ROOT = "/"
# Debian 12, the kind node image's base (and the osImage the Node objects report).
OS_RELEASE = ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
              'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n')
NODE_DIRS = ("/etc", "/etc/kubernetes", "/etc/kubernetes/manifests", "/usr", "/usr/sbin", "/usr/bin", "/var",
             "/var/lib", "/var/lib/kubelet", "/var/log", "/var/log/pods", "/proc", "/sys", "/run", "/tmp", "/root",
             "/bin", "/sbin", "/opt", "/home", "/dev")


def host_root_mounts(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[str]:
    """The mount paths at which ``container`` sees its node's root (a hostPath volume of ``/``)."""
    roots = {str(v.get("name")) for v in (pod.get("spec") or {}).get("volumes") or []
             if isinstance(v, Mapping) and isinstance(v.get("hostPath"), Mapping)
             and posixpath.normpath(str(v["hostPath"].get("path") or "")) == HOST_ROOT}
    return sorted(posixpath.normpath(str(m["mountPath"])) for m in container.get("volumeMounts") or []
                  if isinstance(m, Mapping) and m.get("name") in roots and m.get("mountPath") and not m.get("subPath"))


def node_root_files(state: Any, node_name: str) -> dict[str, str]:
    """The files of node ``node_name``'s root that knetsim models, by absolute path."""
    config = state.config if state is not None else None
    node = next((n for n in config.nodes if n.name == node_name), None) if config is not None else None
    hosts = ("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
             "ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n")
    if node is not None:
        hosts += f"{node.ip}\t{node.name}\n"
    resolv = ""
    if config is not None:
        if config.host_search:
            resolv += "search " + " ".join(config.host_search) + "\n"
        resolv += "".join(f"nameserver {ns}\n" for ns in config.upstream_nameservers)
    return {"/etc/hostname": node_name + "\n", "/etc/hosts": hosts, "/etc/resolv.conf": resolv,
            "/etc/os-release": OS_RELEASE}


def _node_fs(ctx: Ctx) -> Any:
    from .podfs import PodFS

    state, node = ctx.state, ctx.pod.node_name
    fs = PodFS(static=lambda: node_root_files(state, node))
    for d in NODE_DIRS:
        fs.mkdir(d, parents=True)
    return fs


@register("chroot")
async def chroot(ctx: Ctx, argv: list[str]) -> int:
    if len(argv) < 2:
        await ctx.err(f"{BUSYBOX_BANNER}\n\nUsage: chroot NEWROOT [PROG ARGS]\n\n"
                      "Run PROG with root directory set to NEWROOT\n")
        return 1
    new_root = ctx.path(argv[1])
    command = argv[2:]
    assert ctx.fs is not None
    if not ctx.fs.is_dir(new_root):
        await ctx.err(f"chroot: can't change root directory to '{argv[1]}': No such file or directory\n")
        return 125
    container = next((c for c in (ctx.pod.raw.get("spec") or {}).get("containers") or []
                      if c.get("name") == ctx.container), {})
    if new_root == HOST_ROOT:
        return await run_argv(ctx, command or ["sh"])
    if new_root not in host_root_mounts(ctx.pod.raw, container):
        # Any other directory has no programs in it.
        await ctx.err(f"chroot: can't execute '{(command or ['/bin/sh'])[0]}': No such file or directory\n")
        return 127
    tools = {**ctx.tools, **NODE_TOOLS}
    if not command:
        if ctx.stdin is None:
            return 0  # an interactive shell with nothing to read exits at once
        # The session goes on in the node's root (see the module docstring).
        ctx.fs, ctx.tools, ctx.cwd = _node_fs(ctx), tools, "/"
        return 0
    child = ctx.fork(fs=_node_fs(ctx), tools=tools, cwd="/")
    try:
        return await run_argv(child, command)
    except ExitShell as exc:
        return exc.code


# --- the node's tools -------------------------------------------------------------------------


def _render_sections(ctx: Ctx, mode: str) -> list[tuple[int, str]]:
    """(IP family, text) of the rules kube-proxy in ``mode`` programs on this node, as the node's tools print
    them: the render's sections, each opened by a ``# knetsim:`` line naming the node's address of its family."""
    text = render(ctx.state, mode, ctx.pod.node_name).text
    sections: list[tuple[int, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# knetsim:"):
            sections.append((6 if "ip6tables" in line or line.rstrip(")").rsplit("(", 1)[-1].count(":") > 1 else 4,
                             []))
        elif sections:
            sections[-1][1].append(line)
        else:
            sections.append((4, [line]))
    return [(family, "".join(line + "\n" for line in lines)) for family, lines in sections]


def _render_text(ctx: Ctx, mode: str, family: int | None = None) -> str:
    return "".join(text for f, text in _render_sections(ctx, mode) if family is None or f == family)


async def iptables_save(ctx: Ctx, argv: list[str]) -> int:
    table = None
    args = argv[1:]
    i = 0
    while i < len(args):
        if args[i] in ("-t", "--table"):
            if i + 1 >= len(args):
                await ctx.err(f"{argv[0]}: option requires an argument -- 't'\n")
                return 1
            table, i = args[i + 1], i + 2
            continue
        if args[i].startswith("--table="):
            table = args[i].split("=", 1)[1]
        elif args[i] in ("-c", "--counters"):
            pass  # every counter is [0:0] here
        else:
            await ctx.err(f"{argv[0]}: option {args[i]} is not simulated by knetsim\n")
            return 1
        i += 1
    family = 6 if argv[0].startswith("ip6") else 4
    if ctx.state.config.dataplane == "iptables":
        text = _render_text(ctx, "iptables", family)
    elif ctx.state.config.dataplane == "ebpf":
        # Cilium's agent keeps its own CILIUM_* chains (and nothing of kube-proxy's).
        text = cilium_save_text(ctx.state, ctx.pod.node_name, "IPv6" if family == 6 else "IPv4")
    else:
        # kube-proxy in nftables mode writes no xtables rules: there is no table to save.
        return 0
    if table is not None:
        # kube-proxy's tables are filter and nat (even where one is empty); Cilium's, the ones it has rules in.
        tables = ("filter", "nat") if ctx.state.config.dataplane == "iptables" else \
            tuple(line[1:] for line in text.splitlines() if line.startswith("*"))
        if table not in tables:
            await ctx.err(f"{argv[0]}: Cannot initialize: Table does not exist (do you need to insmod?)\n")
            return 1
        out, keep = [], False
        for line in text.splitlines():
            if line.startswith("*"):
                keep = line == f"*{table}"
            if keep:
                out.append(line)
            if keep and line == "COMMIT":
                keep = False
        text = "".join(line + "\n" for line in out)
    await ctx.out(text)
    return 0


def _nft_tables(ctx: Ctx) -> list[tuple[str, str, str]]:
    """(family, name, text) of every nftables table on this node."""
    tables: list[tuple[str, str, str]] = []
    if ctx.state.config.dataplane == "nftables":
        for _, text in _render_sections(ctx, "nftables"):
            header = next((line for line in text.splitlines() if line.startswith("table ")), "table ip kube-proxy {")
            family, name = header.split()[1:3]
            tables.append((family, name, text))
    for family in ctx.state.config.ip_families:  # kindnetd's table of each family (ip, ip6 on a dual-stack node)
        masq = egress_masquerade(ctx.state, ctx.pod.node_name, family)
        if masq.nft_table:
            tables.append(("ip6" if family == "IPv6" else "ip", masq.nft_table_name, masq.nft_table))
    return tables


async def nft(ctx: Ctx, argv: list[str]) -> int:
    args = [a for a in argv[1:] if a not in ("-a", "--handle", "-n", "--numeric")]
    tables = _nft_tables(ctx)
    if args == ["list", "ruleset"]:
        await ctx.out("".join(text for _, _, text in tables))
        if ctx.state.config.dataplane == "iptables":
            await ctx.err("nft: the tables iptables-nft made (kube-proxy's iptables rules) are not translated by "
                          "knetsim: iptables-save lists them\n")
        return 0
    if args == ["list", "tables"]:
        await ctx.out("".join(f"table {family} {name}\n" for family, name, _ in tables))
        return 0
    if len(args) in (3, 4) and args[:2] == ["list", "table"]:
        family, name = (args[2], args[3]) if len(args) == 4 else ("ip", args[2])
        found = next((text for f, n, text in tables if (f, n) == (family, name)), None)
        if found is None:
            command = " ".join(args)
            await ctx.err(f"Error: No such file or directory\n{command}\n"
                          f"{' ' * (len(command) - len(name))}{'^' * len(name)}\n")
            return 1
        await ctx.out(found)
        return 0
    await ctx.err(f"nft: `nft {' '.join(argv[1:])}` is not simulated by knetsim (list ruleset, list tables and "
                  "list table [FAMILY] NAME are)\n")
    return 1


# Only in the node's root (after `chroot /host`): a busybox container has none of them.
NODE_TOOLS = {"iptables-save": iptables_save, "iptables-nft-save": iptables_save, "ip6tables-save": iptables_save,
              "ip6tables-nft-save": iptables_save, "nft": nft}
