"""A Corefile CoreDNS cannot start with makes the coredns pods crash-loop where ``kubectl get pods`` looks,
offline (``knetsim get pods -n kube-system -f``), and the doctor names the Corefile once."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import knetsim as run

from knetsim.model.corefile import default_corefile, startup_error

BROKEN = {
    "loop": "forward . 127.0.0.1",
    "resolv.conf-loop": "forward . /etc/resolv.conf",  # with the node's resolv.conf naming 127.0.0.53
    "bad-forward": "forward . bogus.example",
    "unknown-plugin": "forwrad . 8.8.8.8",
}


def _corefile(forward: str) -> str:
    # `ready` answers the readiness probe kubeadm's coredns Deployment asks (:8181/ready): without it the pods run 0/1.
    return f""".:53 {{
    errors
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
       fallthrough in-addr.arpa ip6.arpa
    }}
    {forward}
    loop
}}
"""


def _write(tmp_path: Path, forward: str, upstream: str = "172.18.0.1") -> tuple[str, str]:
    lines = "\n".join("    " + line for line in _corefile(forward).splitlines())
    manifest = tmp_path / "coredns.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: coredns, namespace: kube-system}\n"
                        f"data:\n  Corefile: |\n{lines}\n")
    config = tmp_path / "cluster.yaml"
    config.write_text(f"upstreamNameservers: [{upstream}]\n")
    return str(manifest), str(config)


def _coredns_rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.startswith("coredns-")]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_corefile_crash_loops_offline(tmp_path: Path, case: str) -> None:
    upstream = "127.0.0.53" if case == "resolv.conf-loop" else "172.18.0.1"
    manifest, config = _write(tmp_path, BROKEN[case], upstream)
    result = run("get", "pods", "-n", "kube-system", "-f", manifest, "--cluster-config", config)
    assert result.exit_code == 0, result.output
    rows = _coredns_rows(result.output)
    assert len(rows) == 2
    for row in rows:
        assert row[1:4] == ["0/1", "CrashLoopBackOff", "1"], result.output
    doctor = run("doctor", "-f", manifest, "--cluster-config", config)
    dns_errors = [line for line in doctor.output.splitlines() if line.startswith("✗ ERROR   [dns]")]
    # One finding naming the Corefile, not a second one blaming readiness.
    assert len(dns_errors) == 1 and "ConfigMap kube-system/coredns" in dns_errors[0], doctor.output


def test_repaired_corefile_runs(tmp_path: Path) -> None:
    manifest, config = _write(tmp_path, "forward . /etc/resolv.conf")
    result = run("get", "pods", "-n", "kube-system", "-f", manifest, "--cluster-config", config)
    rows = _coredns_rows(result.output)
    assert [row[1:4] for row in rows] == [["1/1", "Running", "0"]] * 2, result.output
    doctor = run("doctor", "-f", manifest, "--cluster-config", config)
    assert "[dns]" not in doctor.output, doctor.output


def test_startup_error_is_coredns_own_line() -> None:
    assert startup_error(default_corefile()) is None
    loop = startup_error(_corefile("forward . 127.0.0.1"))
    assert loop is not None and loop.startswith(
        '[FATAL] plugin/loop: Loop (127.0.0.1:53 -> :53) detected for zone ".", see '
        "https://coredns.io/plugins/loop#troubleshooting")
    assert startup_error(_corefile("forward . 10.96.0.10"), frozenset({"10.96.0.10"})) is not None
    # Without `loop`, CoreDNS starts (and forwarded names fail later): not a crash.
    assert startup_error(_corefile("forward . 127.0.0.1").replace("    loop\n", "")) is None
    bad = startup_error(_corefile("forward . bogus.example"))
    assert bad == "/etc/coredns/Corefile:7 - Error during parsing: not an IP address or file: 'bogus.example'"
