"""Connectivity-matrix benchmark: what a user runs, whole processes, figures next to their targets.

    .venv/bin/python bench/matrix.py                     # targets + NCA side by side
    .venv/bin/python bench/matrix.py --no-nca            # targets only
    .venv/bin/python bench/matrix.py --no-targets --nca-sizes 3,10
    .venv/bin/python bench/matrix.py --cold-only           # the cold start of a small matrix alone

Every figure is one whole `knetsim matrix ... -f DIR` process, started as a user starts it
(the console script of this virtualenv), its wall time and its own peak RSS (wait4), with
Python's bytecode cache in place as after an install (an untimed warm-up run writes it, even
when PYTHONDONTWRITEBYTECODE is set in the caller's environment). The
inputs are manifests from bench/policy_gen.py: N namespaces x 9 Deployments, one policy per
Deployment plus a default-deny per namespace, so 10,000 pods come with 1,000 policies.

Targets (2-core machine), from issue 14:
  * 10,000 pods / 1,000 policies, `-o json`: < 2 s and < 500 MB;
  * 100,000 pods / 10,000 policies, `-o json` (every port of every protocol): < 15 s and < 4 GB;
  * `--pods` streams >= 1,000,000 pairs/s, with memory that does not grow with the answer;
  * time grows with exponent <= 1.2 from 1,000 to 100,000 pods.
From issue 22: a cold `knetsim matrix -o list` of 9 workloads (3 namespaces x 3 Deployments) in
< 0.25 s, the median of 7 whole processes, next to NCA's `nca --connectivity` on the same
directory (7 runs, interleaved), with the CPU time (user + system) of each, which grows much less
than the wall time when the machine is shared; `python -X importtime` of one more run says how
much of it is imports.
From issue 12: with 1,000 ClusterNetworkPolicies added (policy_gen.cluster_policies, both tiers,
all three actions) the 10,000- and 100,000-pod answers take at most 1.5x the time without them,
both measured in the same run (the better of two runs each, interleaved, on a shared machine).

NCA (network-config-analyzer, PyPI) runs from its own virtualenv (default bench/.nca-venv, or
--nca-venv / $NCA_VENV), never a knetsim dependency. At 9, 100, 225 and 400 workloads both
tools get the same directory, both run cold as whole processes, and every line both print is
compared: Deployment pairs exactly, Deployment-to-address-range answers as functions over the
address space outside the pod network (NCA merges adjacent ranges per source; knetsim cuts
them where any ipBlock does).
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

from knetsim.policy.ports import ConnSet  # noqa: E402

KNETSIM = str(Path(sys.executable).with_name("knetsim"))
# Pods need room: 100,000 pods on kind's two schedulable workers do not fit /24s.
# maxPods: the kubelet takes 110 pods by default; the 10k-pod runs need room on two workers.
CLUSTER_CONFIG = "podCIDR: 10.0.0.0/8\nnodeCIDRMask: 12\nmaxPods: 10000\n"
POD_NETWORK = ipaddress.ip_network("10.0.0.0/8")
# As installed: bytecode cached (pip compiles NCA's at install; knetsim's is written by a warm-up run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Run:
    wall: float
    rss_mb: float
    out: Path
    cpu: float = 0.0  # user + system: on a machine shared with other work, what the process itself needed
    code: int = 0  # its exit code (0, or 1: a negative answer; any other stops the bench)


def run(cmd: list[str], out: Path, cwd: Path | None = None, timeout: float = 1800) -> Run:
    """One whole process: wall time and its own peak RSS, stdout to ``out``."""
    with open(out, "w") as stdout:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, env=ENV)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                raise SystemExit(f"{' '.join(cmd)}: no answer within {timeout} s")
            time.sleep(0.005)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err[-2000:]}")
    return Run(wall, usage.ru_maxrss / 1024, out, usage.ru_utime + usage.ru_stime, proc.returncode)


def write_cluster_policies(path: Path, namespaces: int, count: int = 1000) -> None:
    code = ("import sys, yaml, policy_gen\n"
            "d = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)\n"
            "with open(sys.argv[1], 'w') as f:\n"
            "    yaml.dump_all(policy_gen.cluster_policies(int(sys.argv[2]), int(sys.argv[3])), f, Dumper=d, "
            "sort_keys=False)\n")
    subprocess.run([sys.executable, "-c", code, str(path), str(namespaces), str(count)], check=True, cwd=HERE)


def write_input(directory: Path, namespaces: int, pods_per_namespace: int | None) -> None:
    # In a child process: Linux carries a parent's peak RSS into the children it forks (wait4 would report
    # the bench's own 100k-pod manifests as knetsim's), so this process never holds them.
    directory.mkdir(parents=True, exist_ok=True)
    code = ("import sys, yaml, policy_gen\n"
            "d = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)\n"
            "n, pods = int(sys.argv[2]), (int(sys.argv[3]) or None)\n"
            "docs = policy_gen.manifests(n, 9 if pods else n, pods)\n"
            "with open(sys.argv[1], 'w') as f:\n"
            "    yaml.dump_all(docs, f, Dumper=d, sort_keys=False)\n")
    subprocess.run([sys.executable, "-c", code, str(directory / "all.yaml"), str(namespaces),
                    str(pods_per_namespace or 0)], check=True, cwd=HERE)


# --- targets ------------------------------------------------------------------------------


def knetsim_matrix(directory: Path, out: Path, *extra: str, cluster_config: str = CLUSTER_CONFIG) -> Run:
    """One cold `knetsim matrix -f DIRECTORY` with ``cluster_config`` (bench/calico.py and bench/cilium.py pass
    their CNI's), its output in ``out``."""
    config = directory.parent / "cluster.yaml"
    config.write_text(cluster_config)
    return run([KNETSIM, "matrix", "-f", str(directory), "--cluster-config", str(config), *extra], out)


def count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def targets(work: Path) -> bool:
    ok = True
    run([KNETSIM, "matrix", "-f", str(HERE.parent / "examples" / "shop"), "-o", "json"], work / "warm.out")
    print("== targets: `knetsim matrix -f DIR -o json`, whole processes (wall, peak RSS of that process) ==")
    times: dict[int, float] = {}
    for pods, limit_s, limit_mb in ((1_000, None, None), (10_000, 2.0, 500), (100_000, 15.0, 4096)):
        namespaces = pods // 100
        directory = work / f"in-{pods}"
        write_input(directory, namespaces, 100)
        r = knetsim_matrix(directory, work / f"out-{pods}.json", "-o", "json")
        pairs = count_lines(r.out) - namespaces * 9 - 8  # the document's other lines
        times[pods] = r.wall
        verdict = ""
        if limit_s is not None:
            passed = r.wall < limit_s and r.rss_mb < limit_mb
            ok &= passed
            verdict = f" (targets < {limit_s:g} s, < {limit_mb:,} MB) [{'ok' if passed else 'MISSED'}]"
        print(f"{pods:>7,} pods, {namespaces * 10:>6,} policies: {r.wall:6.2f} s, {r.rss_mb:7,.0f} MB, "
              f"{pairs:,} workload pairs (every port of every protocol){verdict}", flush=True)
    whole = math.log(times[100_000] / times[1_000]) / math.log(100)
    upper = math.log(times[100_000] / times[10_000]) / math.log(10)
    passed = whole <= 1.2
    ok &= passed
    print(f"growth exponent 1k -> 100k pods: {whole:.2f} (target <= 1.2) [{'ok' if passed else 'MISSED'}]; "
          f"10k -> 100k alone: {upper:.2f}")

    print("== with 1,000 ClusterNetworkPolicies (issue 12): the same `-o json` runs, plus the policies ==")
    for pods in (10_000, 100_000):
        directory = work / f"in-{pods}"
        extra = work / f"cnp-{pods}.yaml"
        write_cluster_policies(extra, pods // 100)
        without, with_ = [], []
        for _ in range(2):
            without.append(knetsim_matrix(directory, work / "plain.json", "-o", "json"))
            with_.append(knetsim_matrix(directory, work / "tiers.json", "-o", "json", "-f", str(extra)))
        a, b = min(without, key=lambda r: r.wall), min(with_, key=lambda r: r.wall)
        ratio = b.wall / a.wall
        passed = ratio <= 1.5
        ok &= passed
        print(f"{pods:>7,} pods: {a.wall:6.2f} s, {a.rss_mb:7,.0f} MB without; {b.wall:6.2f} s, {b.rss_mb:7,.0f} MB "
              f"with 1,000 ClusterNetworkPolicies = {ratio:.2f}x (target <= 1.5) [{'ok' if passed else 'MISSED'}]",
              flush=True)

    print("== pod-level streaming: `knetsim matrix --pods -o list` against `-o json` on the same input ==")
    for pods in (10_000, 100_000):
        directory = work / f"in-{pods}"
        base = knetsim_matrix(directory, work / "base.json", "-o", "json")
        r = knetsim_matrix(directory, work / "pods.txt", "--pods", "-o", "list")
        pairs = count_lines(r.out)
        rate = pairs / max(r.wall - base.wall, 1e-9)
        passed = rate >= 1e6 and r.rss_mb < base.rss_mb * 1.25 + 50
        ok &= passed
        print(f"{pods:>7,} pods: {pairs:,} pod pairs in {r.wall:.2f} s, {r.wall - base.wall:.2f} s beyond the "
              f"workload answer ({base.wall:.2f} s) = {rate / 1e6:.2f} M pairs/s (target >= 1); peak RSS "
              f"{r.rss_mb:,.0f} MB vs {base.rss_mb:,.0f} MB for the workload answer (flat: within 25 %) "
              f"[{'ok' if passed else 'MISSED'}]", flush=True)
        (work / "pods.txt").unlink()
    return ok


# --- NCA ----------------------------------------------------------------------------------


def nca_binary(venv: Path) -> tuple[Path | None, str]:
    nca = venv / "bin" / "nca"
    if nca.exists():
        return nca, ""
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "network-config-analyzer"], check=True,
                       capture_output=True, text=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return None, f"could not install network-config-analyzer into {venv}: {detail.strip().splitlines()[-1:]}"
    return (nca, "") if nca.exists() else (None, f"{nca} missing after install")


_LINE = re.compile(r"^(\S+) => (\S+) : (.+)$")
_CONN = re.compile(r"\{protocols:([A-Z,]+?)(?:,dst_ports:([0-9,\-]+))?\}")
_WORKLOAD = re.compile(r"^[^/\s]+/[^/\s]+\[[A-Za-z]+\]$")


def parse_nca_connection(text: str) -> ConnSet:
    if text.strip() == "All connections":
        return ConnSet.all()
    if "All but" in text:
        raise ValueError(f"unparsed NCA connection: {text}")
    out: dict[str, list[tuple[int, int]]] = {}
    for protocols, ports in _CONN.findall(text):
        ranges = [(1, 65535)] if not ports else [
            (int(a), int(b or a)) for a, _, b in (p.partition("-") for p in ports.split(","))]
        for proto in protocols.split(","):
            out.setdefault(proto, []).extend(ranges)
    return ConnSet.of(out)


def parse_knetsim_connection(text: str) -> ConnSet:
    if text == "All connections":
        return ConnSet.all()
    out: dict[str, list[tuple[int, int]]] = {}
    for part in text.split("; "):
        proto, _, ports = part.partition(" ")
        if proto == "other":
            raise ValueError(f"unexpected: {text}")
        out[proto] = [(1, 65535)] if ports == "all ports" else [
            (int(a), int(b or a)) for a, _, b in (p.partition("-") for p in ports.split(","))]
    return ConnSet.of(out)


def _ip_span(text: str) -> tuple[int, int]:
    if "/" in text:
        net = ipaddress.ip_network(text)
        return int(net.network_address), int(net.network_address) + net.num_addresses
    lo, _, hi = text.partition("-")
    return int(ipaddress.ip_address(lo)), int(ipaddress.ip_address(hi)) + 1


Answer = tuple[dict[tuple[str, str], ConnSet], dict[tuple[str, str], list[tuple[int, int, ConnSet]]]]


def parse_lines(text: str, connection: object) -> Answer:
    """(workload pairs, (workload, direction) -> [(lo, hi, ConnSet)] over address ranges)."""
    pairs: dict[tuple[str, str], ConnSet] = {}
    ranges: dict[tuple[str, str], list[tuple[int, int, ConnSet]]] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        a, b, conn = m.group(1), m.group(2), connection(m.group(3))  # type: ignore[operator]
        if _WORKLOAD.match(a) and _WORKLOAD.match(b):
            if a != b:  # NCA never prints a workload's pods to each other
                pairs[(a, b)] = conn
        elif _WORKLOAD.match(a):
            ranges.setdefault((a, "to"), []).append((*_ip_span(b), conn))
        elif _WORKLOAD.match(b):
            ranges.setdefault((b, "from"), []).append((*_ip_span(a), conn))
    return pairs, ranges


def _at(pieces: list[tuple[int, int, ConnSet]], point: int) -> ConnSet:
    for lo, hi, conn in pieces:
        if lo <= point < hi:
            return conn
    return ConnSet.none()


def differences(ours: Answer, theirs: Answer) -> list[str]:
    out = []
    for key in sorted(set(ours[0]) | set(theirs[0])):
        a, b = ours[0].get(key, ConnSet.none()), theirs[0].get(key, ConnSet.none())
        if a != b:
            out.append(f"{key[0]} => {key[1]}: knetsim {a} / NCA {b}")
    pod_lo, pod_hi = int(POD_NETWORK.network_address), int(POD_NETWORK.network_address) + POD_NETWORK.num_addresses
    for key in sorted(set(ours[1]) | set(theirs[1])):
        mine, nca = ours[1].get(key, []), theirs[1].get(key, [])
        cuts = sorted({0, 1 << 32, pod_lo, pod_hi} | {x for lo, hi, _ in mine + nca for x in (lo, hi)})
        for lo in cuts[:-1]:
            if pod_lo <= lo < pod_hi:
                continue  # NCA does not know pod IPs
            if _at(mine, lo) != _at(nca, lo):
                out.append(f"{key[0]} {key[1]} {ipaddress.IPv4Address(lo)}: knetsim {_at(mine, lo)} / "
                           f"NCA {_at(nca, lo)}")
    return out


def compare(nca: Path, sizes: list[int], work: Path) -> bool:
    print("== side by side with NCA, the same directory, both cold whole processes ==")
    print("   knetsim: `knetsim matrix -f DIR -o list`; NCA: `nca --connectivity -r DIR -o txt_no_fw_rules`")
    ok = True
    warm = work / "warm-up"
    write_input(warm, 2, None)
    knetsim_matrix(warm, work / "warm.out", "-o", "list")  # untimed: writes knetsim's bytecode cache
    run([str(nca), "--connectivity", "-r", str(warm), "-o", "txt_no_fw_rules"], work / "warm.out", cwd=warm)
    for n in sizes:
        directory = work / f"nca-{n}"
        write_input(directory, n, None)
        ours = knetsim_matrix(directory, work / f"nca-{n}.knetsim", "-o", "list")
        theirs = run([str(nca), "--connectivity", "-r", str(directory), "-o", "txt_no_fw_rules"],
                     work / f"nca-{n}.nca", cwd=directory)
        a = parse_lines(ours.out.read_text(), parse_knetsim_connection)
        b = parse_lines(theirs.out.read_text(), parse_nca_connection)
        differ = differences(a, b)
        faster = ours.wall < theirs.wall
        ok &= not differ and faster and bool(b[0])
        print(f"{n * n:>4} workloads, {n * n + n:>3} policies: knetsim {ours.wall:6.2f} s {ours.rss_mb:5.0f} MB | "
              f"NCA {theirs.wall:7.2f} s {theirs.rss_mb:5.0f} MB | NCA/knetsim {theirs.wall / ours.wall:6.1f}x | "
              f"{len(b[0])} Deployment pairs, {sum(len(v) for v in b[1].values())} NCA range lines: "
              f"{'every pair agrees' if not differ else f'{len(differ)} DIFFER'}"
              f"{'' if faster else ' [MISSED: not faster]'}", flush=True)
        for line in differ[:5]:
            print(f"    {line}")
    return ok


COLD_TARGET_S = 0.25


def _import_share(argv: list[str]) -> tuple[float, list[tuple[float, str]]]:
    """One more run under ``python -X importtime``: seconds spent importing (the sum of every module's own
    time) and the packages that took most."""
    code = f"import sys; sys.argv = {argv!r}; from knetsim.cli.main import main; main()"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=ENV)
    by_package: dict[str, float] = {}
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \| \s*(\S+)", line)
        if m:
            package = m.group(2).split(".")[0]
            by_package[package] = by_package.get(package, 0.0) + int(m.group(1)) / 1e6
    top = sorted(((t, name) for name, t in by_package.items()), reverse=True)[:4]
    return sum(by_package.values()), top


def cold_start(nca: Path | None, work: Path, runs: int = 7) -> bool:
    print(f"== cold start: `knetsim matrix -f DIR -o list` of 9 workloads, median of {runs} whole processes ==")
    directory = work / "cold-9"
    write_input(directory, 3, None)
    config = work / "cluster.yaml"
    config.write_text(CLUSTER_CONFIG)
    argv = ["knetsim", "matrix", "-f", str(directory), "--cluster-config", str(config), "-o", "list"]
    nca_cmd = [str(nca), "--connectivity", "-r", str(directory), "-o", "txt_no_fw_rules"] if nca else None
    knetsim_matrix(directory, work / "cold.out", "-o", "list")  # untimed: writes the bytecode cache
    if nca_cmd:
        run(nca_cmd, work / "cold.nca", cwd=directory)
    ours: list[Run] = []
    theirs: list[Run] = []
    for _ in range(runs):  # interleaved, so both see the same machine
        ours.append(knetsim_matrix(directory, work / "cold.out", "-o", "list"))
        if nca_cmd:
            theirs.append(run(nca_cmd, work / "cold.nca", cwd=directory))

    def median(rs: list[Run], what: str) -> float:
        return sorted(getattr(r, what) for r in rs)[runs // 2]

    wall = median(ours, "wall")
    passed = wall < COLD_TARGET_S
    imports, top = _import_share(argv)
    line = (f"knetsim {wall:.3f} s (CPU {median(ours, 'cpu'):.3f} s; target < {COLD_TARGET_S} s) "
            f"[{'ok' if passed else 'MISSED'}]")
    if theirs:
        line += (f" | NCA {median(theirs, 'wall'):.3f} s (CPU {median(theirs, 'cpu'):.3f} s) | NCA/knetsim "
                 f"{median(theirs, 'wall') / wall:.1f}x (CPU {median(theirs, 'cpu') / median(ours, 'cpu'):.1f}x)")
    print(line)
    print(f"   imports in one more run (python -X importtime, the sum of every module's own time): {imports:.3f} s; "
          + ", ".join(f"{name} {t:.3f}" for t, name in top), flush=True)
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-targets", action="store_true")
    parser.add_argument("--no-nca", action="store_true")
    parser.add_argument("--cold-only", action="store_true", help="only the cold start of 9 workloads")
    parser.add_argument("--nca-sizes", default="3,10,15,20",
                        help="N for N namespaces x N Deployments (default 3,10,15,20: 9, 100, 225, 400 workloads; "
                             "NCA needs about 4 minutes for the largest)")
    parser.add_argument("--nca-venv", default=os.environ.get("NCA_VENV", str(HERE / ".nca-venv")))
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="knetsim-bench-matrix-") as tmp:
        work = Path(tmp)
        if not args.no_targets and not args.cold_only:
            ok &= targets(work)
        nca = None
        if not args.no_nca:
            nca, why = nca_binary(Path(args.nca_venv))
            if nca is None or shutil.which(str(nca)) is None:
                print(f"NCA comparison skipped: {why or 'nca not runnable'}")
                nca = None
        ok &= cold_start(nca, work)
        if nca is not None and not args.cold_only:
            ok &= compare(nca, [int(s) for s in args.nca_sizes.split(",")], work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
