"""A pod's emptyDir is one directory for every container that mounts it: what an init container writes there,
the next container reads (tests/doctor/corpus/init-containers-wait-for-each-other runs it live)."""

from __future__ import annotations

import pytest

from knetsim.container.podfs import FsError, PodFS, Volume


def test_two_containers_mounting_one_volume_at_different_paths_see_each_others_files() -> None:
    work = Volume()
    writer, reader = PodFS(volumes={"/work": work}), PodFS(volumes={"/data/shared": work})
    writer.mkdir("/work/conf")
    writer.write("/work/conf/ready", "yes\n")
    assert reader.read("/data/shared/conf/ready") == "yes\n"
    assert reader.listdir("/data/shared") == ["conf"]
    assert "work" in writer.listdir("/")
    reader.remove("/data/shared/conf/ready")
    assert not writer.exists("/work/conf/ready")


def test_outside_the_volume_each_container_keeps_its_own_files() -> None:
    work = Volume()
    one, other = PodFS(volumes={"/work": work}), PodFS(volumes={"/work": work})
    one.write("/tmp/mine", "x")
    assert one.read("/tmp/mine") == "x"
    with pytest.raises(FsError):
        other.read("/tmp/mine")
