"""Connectivity-matrix benchmark: the issue-7 targets, and a side-by-side with NCA.

    .venv/bin/python bench/matrix.py                 # targets + NCA at the default sizes
    .venv/bin/python bench/matrix.py --no-nca        # targets only
    .venv/bin/python bench/matrix.py --nca-sizes 4,10,20 --no-targets

Targets (2-core machine): 10,000 pods in 100 namespaces with 1,000 policies, full matrix for
one port, under 2 s and 1 GB; 100,000 pods in 1,000 namespaces under 15 s. Each target runs
in its own process so its peak RSS is its own.

NCA (network-config-analyzer, PyPI) is installed into its own virtualenv (default
bench/.nca-venv, or --nca-venv / $NCA_VENV); it is never a knetsim dependency. The same
manifests go to both tools; every Deployment pair must agree; both times and the ratio are
printed. If NCA cannot be installed the comparison is skipped, saying why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import policy_gen  # noqa: E402
from knetsim import Cluster  # noqa: E402
from knetsim.cluster.config import ClusterConfig  # noqa: E402
from knetsim.policy.matrix import matrix, port_matrix  # noqa: E402
from knetsim.policy.ports import ConnSet  # noqa: E402

TARGETS = {
    "10k": {"namespaces": 100, "apps": 9, "pods": 100, "limit_s": 2.0, "limit_mb": 1024},
    "100k": {"namespaces": 1000, "apps": 9, "pods": 100, "limit_s": 15.0, "limit_mb": None},
}


def run_target(name: str) -> dict[str, object]:
    spec = TARGETS[name]
    t0 = time.perf_counter()
    state = policy_gen.cluster_state(spec["namespaces"], spec["apps"], spec["pods"])  # type: ignore[arg-type]
    t1 = time.perf_counter()
    _, _, stats = port_matrix(state, "TCP", 8001)
    t2 = time.perf_counter()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"target": name, "pods": stats.pods, "namespaces": spec["namespaces"],
            "policies": len(state.network_policies), "build_state_s": round(t1 - t0, 3),
            "matrix_s": round(t2 - t1, 3), "peak_rss_mb": round(rss_mb), **stats.to_dict(),
            "limit_s": spec["limit_s"], "limit_mb": spec["limit_mb"]}


def targets() -> bool:
    ok = True
    print("== targets: full pod x pod matrix for TCP/8001 ==")
    for name in TARGETS:
        out = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        passed = r["matrix_s"] <= r["limit_s"] and (r["limit_mb"] is None or r["peak_rss_mb"] <= r["limit_mb"])
        ok &= passed
        mem = f" (limit {r['limit_mb']} MB)" if r["limit_mb"] else ""
        print(f"{name:>5}: {r['pods']:,} pods, {r['namespaces']} namespaces, {r['policies']:,} policies -> "
              f"{r['podClasses']:,} equivalence classes; matrix {r['matrix_s']:.2f} s (limit {r['limit_s']} s), "
              f"peak RSS {r['peak_rss_mb']} MB{mem}; building the state {r['build_state_s']:.2f} s; "
              f"{r['allowedPodPairs']:,} allowed ordered pod pairs of {r['pods'] * (r['pods'] - 1):,} "
              f"[{'ok' if passed else 'MISSED'}]")
    return ok


# --- NCA ------------------------------------------------------------------------------


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


_LINE = re.compile(r"^(\S+)\[Deployment\] => (\S+)\[Deployment\] : (.+)$")
_CONN = re.compile(r"\{protocols:([A-Z,]+?)(?:,dst_ports:([0-9,\-]+))?\}")


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


def knetsim_pairs(directory: Path) -> tuple[dict[tuple[str, str], ConnSet], float, float]:
    t0 = time.perf_counter()
    # /20 per node: the default /24s hold about 500 pods on kind's two schedulable workers.
    cluster = Cluster.from_paths([str(directory)], config=ClusterConfig(node_cidr_mask=20))
    t1 = time.perf_counter()
    pending = [k for k, p in cluster.state.pods.items() if not p.pod_ip]
    if pending:
        raise SystemExit(f"{len(pending)} pods got no IP (e.g. {pending[0]}): the comparison needs them all running")
    m = matrix(cluster.state, external=False)
    connections = m.connections()
    elapsed = time.perf_counter() - t0
    deployment = {}
    for e in m.endpoints:
        if e.pod is not None and e.pod.namespace.startswith("ns-"):
            deployment[e.name] = f"{e.pod.namespace}/{e.pod.labels['app']}"
    pairs = {}
    for a, b, s in connections:
        if a in deployment and b in deployment and deployment[a] != deployment[b]:
            pairs[(deployment[a], deployment[b])] = s
    return pairs, elapsed, elapsed - (t1 - t0)


def nca_pairs(nca: Path, directory: Path) -> tuple[dict[tuple[str, str], ConnSet], float, str]:
    t0 = time.perf_counter()
    out = subprocess.run([str(nca), "--connectivity", "-r", str(directory), "-o", "txt_no_fw_rules"],
                         capture_output=True, text=True, timeout=900, cwd=directory)
    elapsed = time.perf_counter() - t0
    pairs = {}
    reported = ""
    for line in out.stdout.splitlines():
        m = _LINE.match(line.strip())
        if m:
            pairs[(m.group(1), m.group(2))] = parse_nca_connection(m.group(3))
        elif line.startswith("Total run time"):
            reported = line.split(":", 1)[1].strip()
    return pairs, elapsed, reported


def compare(nca: Path, sizes: list[int]) -> bool:
    print("== side by side with NCA (network-config-analyzer) on the same manifests ==")
    ok = True
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"knetsim-nca-{n}-") as tmp:
            directory = Path(tmp)
            (directory / "all.yaml").write_text(yaml.safe_dump_all(policy_gen.manifests(n, n), sort_keys=False))
            ours, ours_s, matrix_s = knetsim_pairs(directory)
            theirs, theirs_s, reported = nca_pairs(nca, directory)
        keys = set(ours) | set(theirs)
        differ = sorted(k for k in keys if ours.get(k, ConnSet.none()) != theirs.get(k, ConnSet.none()))
        ok &= not differ
        print(f"{n * n:>4} workloads, {n * n + n} policies: knetsim {ours_s:.2f} s (load + full matrix; "
              f"matrix alone {matrix_s:.2f} s), "
              f"NCA {theirs_s:.2f} s (its 'Total run time' {reported}), ratio {theirs_s / ours_s:.0f}x; "
              f"{len(keys)} connected Deployment pairs, "
              f"{'all agree' if not differ else f'{len(differ)} DIFFER, e.g. {differ[:3]}'}")
        for k in differ[:3]:
            print(f"    {k[0]} => {k[1]}: knetsim {ours.get(k, ConnSet.none())} / NCA {theirs.get(k, ConnSet.none())}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", choices=sorted(TARGETS), help=argparse.SUPPRESS)
    parser.add_argument("--no-targets", action="store_true")
    parser.add_argument("--no-nca", action="store_true")
    parser.add_argument("--nca-sizes", default="5,15,25",
                        help="N for N namespaces x N Deployments (default 5,15,25: 25, 225, 625 workloads; "
                             "NCA needs about 2 minutes for the largest)")
    parser.add_argument("--nca-venv", default=os.environ.get("NCA_VENV", str(HERE / ".nca-venv")))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_target(args.one)))
        return 0
    ok = True
    if not args.no_targets:
        ok &= targets()
    if not args.no_nca:
        nca, why = nca_binary(Path(args.nca_venv))
        if nca is None or shutil.which(str(nca)) is None:
            print(f"NCA comparison skipped: {why or 'nca not runnable'}")
        else:
            ok &= compare(nca, [int(s) for s in args.nca_sizes.split(",")])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
