"""Which cluster config a state directory runs with (`knetsim up --cluster-config`).

Given a state directory, then: the first config it is started with is kept (copied in), later starts
without `--cluster-config` run with that copy, the same config again is fine, and another one is refused
with a message naming the config in force, because a cluster's nodes, ranges and data plane are fixed when
it is created. A state directory from before this (a store, no copy) is a defaults cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli
from knetsim.cluster.config import ClusterConfig, ConfigError, config_from_dict
from knetsim.daemon.clusterconfig import CONFIG_NAME, ConfigMismatch, adopt, check, stored


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_a_new_state_directory_runs_with_the_defaults_or_the_given_config(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    assert check(state, None).config == ClusterConfig() and check(state, None).path is None
    given = write(tmp_path / "ebpf.yaml", "dataplane: ebpf\nnodes: 2\n")
    assert not (state / CONFIG_NAME).exists()  # check writes nothing
    in_force = adopt(state, given)
    assert in_force.path == state / CONFIG_NAME
    assert in_force.config == config_from_dict({"dataplane": "ebpf", "nodes": 2})
    assert in_force.summary() == {"name": "knetsim", "dataplane": "ebpf", "kubernetesVersion": "1.38",
                                  "nodes": ["control-plane", "worker"],
                                  "clusterDomain": "cluster.local", "config": str(state / CONFIG_NAME)}
    # Later starts: no flag, or the same config again, run with the copy.
    assert stored(state).config == in_force.config
    assert adopt(state, None).config == in_force.config
    assert adopt(state, given).config == in_force.config


def test_another_config_over_a_cluster_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    adopt(state, write(tmp_path / "ebpf.yaml", "dataplane: ebpf\n"))
    kept = (state / CONFIG_NAME).read_text()
    with pytest.raises(ConfigMismatch) as info:
        adopt(state, write(tmp_path / "nft.yaml", "dataplane: nftables\n"))
    assert f"holds a cluster built with the cluster config {state / CONFIG_NAME}: dataplane ebpf, 3 nodes" \
        in str(info.value)
    assert (state / CONFIG_NAME).read_text() == kept


def test_a_store_without_a_copy_was_built_with_the_defaults(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "store.db").write_bytes(b"")
    assert check(state, write(tmp_path / "same.yaml", "dataplane: iptables\n")).config == ClusterConfig()
    with pytest.raises(ConfigMismatch, match="the built-in defaults"):
        check(state, write(tmp_path / "ebpf.yaml", "dataplane: ebpf\n"))


def test_up_refuses_a_bad_config_before_starting_anything(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "dataplane: ebpf\nkubeProxy: false\n")
    result = CliRunner().invoke(cli, ["up", "--state", str(tmp_path / "state"), "--cluster-config", bad])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}: unknown field(s) kubeProxy; known:")
    assert not (tmp_path / "state" / "ready.json").exists()
    with pytest.raises(ConfigError):
        check(tmp_path, bad)


def test_up_refuses_kernel_mode_for_an_ebpf_cluster(tmp_path: Path) -> None:
    config = write(tmp_path / "ebpf.yaml", "dataplane: ebpf\n")
    result = CliRunner().invoke(cli, ["up", "--state", str(tmp_path / "state"), "--kernel", "--cluster-config",
                                      config])
    assert result.exit_code == 2
    assert "cannot run an ebpf cluster" in result.stderr
