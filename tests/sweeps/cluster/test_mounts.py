"""sweeps.cluster.mounts: which file system a path is on, and whether every node of a cluster sees it."""

from __future__ import annotations

import os

import pytest

from sweeps.cluster.mounts import Mount, mount_table, placement

TABLE = [
    Mount(mountpoint="/", fstype="ext4"),
    Mount(mountpoint="/home", fstype="nfs4"),
    Mount(mountpoint="/scratch", fstype="lustre"),
    Mount(mountpoint="/mnt/remote", fstype="fuse.sshfs"),
    Mount(mountpoint="/dev/shm", fstype="tmpfs"),
    Mount(mountpoint="/data", fstype="xfs"),
    Mount(mountpoint="/data", fstype="gpfs"),  # mounted over the first: the last one counts
]


@pytest.mark.parametrize("path, kind, why", [
    ("/home/me/venv/bin", "shared", "nfs4 at /home"),
    ("/scratch/sweeps", "shared", "lustre at /scratch"),
    ("/mnt/remote/x", "shared", "fuse.sshfs at /mnt/remote"),
    ("/data/x", "shared", "gpfs at /data"),
    ("/dev/shm/x", "node-local", "tmpfs at /dev/shm"),
    ("/tmp/memsweep-venv/bin", "node-local", "under /tmp"),
    ("/var/tmp/x", "node-local", "under /var/tmp"),
    ("/opt/memsweep", "host", "ext4 at /"),
    ("/homework", "host", "ext4 at /"),
])
def test_placement_by_file_system_type_and_folder(path, kind, why, monkeypatch):
    """Network and parallel file systems are shared; tmpfs and /tmp-like folders node-local; a local disk is
    this host's; the longest mount point containing the path decides, the last mounted on a point wins."""
    monkeypatch.setattr(os.path, "realpath", lambda p: p)  # the table's paths need not exist here
    monkeypatch.setattr(os.path, "exists", lambda p: True)
    p = placement(path, TABLE)
    assert (p.kind, p.why) == (kind, why)


def test_an_overlay_root_makes_every_path_on_it_node_local(monkeypatch):
    """A container's overlay root file system is node-local, however the folder is named."""
    monkeypatch.setattr(os.path, "realpath", lambda p: p)
    monkeypatch.setattr(os.path, "exists", lambda p: True)
    assert placement("/opt/venv/bin", [Mount(mountpoint="/", fstype="overlay")]).kind == "node-local"


def test_a_path_not_created_yet_is_placed_by_its_nearest_existing_folder(tmp_path):
    """A path below tmp_path that does not exist is on tmp_path's mount (this host's real mount table)."""
    table = mount_table()
    assert placement(str(tmp_path / "a" / "b"), table) == placement(str(tmp_path), table)
    assert placement(str(tmp_path / "a" / "b"), table).path == os.path.realpath(tmp_path)
