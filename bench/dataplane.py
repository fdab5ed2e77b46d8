"""Benchmark: packet lookup cost as the cluster grows, and render time, per data plane.

    python bench/dataplane.py [--packets 10000] [--endpoints 2]

Lookup: 10,000 packets to ClusterIPs spread evenly over the Services, traced through the
rendered artefact at 100, 1,000 and 10,000 Services. iptables walks KUBE-SERVICES rule by
rule, so its time per packet grows linearly with the Services; nftables and eBPF do map
lookups and should stay flat. The ratio column is time(10,000) / time(100).
Render: 10,000 Services × 10 endpoints, target under 2 s per backend; then the same 10,000
Services dual-stack (an IPv4 and an IPv6 ClusterIP and an EndpointSlice of each family: twice
the rules, iptables-save plus ip6tables-save, table ip plus table ip6, lb4 plus lb6 maps), also
under 2 s. Each render figure is the best of --repeat runs (CPU seconds of this process), so
other load on the machine inflates it less.

Render and parse time are excluded from the lookup figures (the kernel does not re-read its
rules per packet either). These are knetsim's own timings of its models, not kernel
figures; see docs/dataplane.md for published kernel measurements.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from knetsim.dataplane import BACKENDS, Packet
from knetsim.dataplane.synthetic import synthetic_state

SIZES = (100, 1_000, 10_000)


def lookup_times(packets: int, endpoints: int) -> tuple[dict[str, dict[int, float]], dict[str, dict[int, float]]]:
    out: dict[str, dict[int, float]] = {name: {} for name in BACKENDS}
    costs: dict[str, dict[int, float]] = {name: {} for name in BACKENDS}
    for size in SIZES:
        state = synthetic_state(size, endpoints)
        ips = [state.services[k].cluster_ip for k in sorted(state.services)]
        batch = [Packet("10.244.1.250", ips[(i * 7919) % size], 80) for i in range(packets)]
        for name, backend in BACKENDS.items():
            ruleset = backend.render(state, "worker")
            backend.trace(ruleset, batch[0])  # parse once, outside the timing
            # Move the (large, long-lived) ruleset out of the collector's view: otherwise
            # full collections triggered by the traces' small allocations scan it, and the
            # timing grows with heap size instead of with lookup work.
            gc.collect()
            gc.freeze()
            cost = 0
            start = time.perf_counter()
            for packet in batch:
                cost += backend.trace(ruleset, packet).cost
            out[name][size] = time.perf_counter() - start
            costs[name][size] = cost / packets
            gc.unfreeze()
            del ruleset
    return out, costs


def render_times(services: int, endpoints: int, dual_stack: bool = False, repeat: int = 3) -> dict[str, float]:
    state = synthetic_state(services, endpoints, dual_stack=dual_stack)
    out: dict[str, float] = {}
    for _ in range(repeat):
        for name, backend in BACKENDS.items():
            start = time.process_time()
            ruleset = backend.render(state, "worker")
            out[name] = min(out.get(name, float("inf")), time.process_time() - start)
            del ruleset  # freeing ~10^6 objects is not part of rendering
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=10_000)
    parser.add_argument("--endpoints", type=int, default=2, help="endpoints per Service for the lookup runs")
    parser.add_argument("--repeat", type=int, default=3, help="renders per backend; the best one counts")
    args = parser.parse_args()

    renders = render_times(10_000, 10, repeat=args.repeat)  # first, on a fresh heap
    dual_renders = render_times(10_000, 10, dual_stack=True, repeat=args.repeat)
    lookups, costs = lookup_times(args.packets, args.endpoints)
    print(f"Trace {args.packets:,} packets (seconds), {args.endpoints} endpoints per Service")
    header = f"{'backend':<10}" + "".join(f"{f'{s:,} svc':>12}" for s in SIZES) + f"{'10k/100':>10}"
    print(header)
    print("-" * len(header))
    for name, times in lookups.items():
        ratio = times[SIZES[-1]] / times[SIZES[0]]
        print(f"{name:<10}" + "".join(f"{times[s]:>12.3f}" for s in SIZES) + f"{ratio:>9.1f}x")
    print()
    print("Mean cost per packet (iptables/nftables: rules evaluated; ebpf: map lookups)")
    for name, per_size in costs.items():
        ratio = per_size[SIZES[-1]] / per_size[SIZES[0]]
        print(f"{name:<10}" + "".join(f"{per_size[s]:>12.1f}" for s in SIZES) + f"{ratio:>9.1f}x")

    for title, figures in (("Render 10,000 Services x 10 endpoints (target < 2 s)", renders),
                           ("Render 10,000 dual-stack Services x 10 endpoints per family (target < 2 s)",
                            dual_renders)):
        print()
        print(title)
        for name, seconds in figures.items():
            print(f"{name:<10}{seconds:>8.2f} s   {'ok' if seconds < 2 else 'OVER TARGET'}")


if __name__ == "__main__":
    main()
