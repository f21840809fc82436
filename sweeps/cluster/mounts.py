"""Can every node of a cluster see a path? Judged from this host's mount table (psutil.disk_partitions).

A path is on the file system of the longest mount point that contains it (the last one mounted, when
several are mounted on the same point). It is "shared" when that file system is a network or parallel
one (nfs, lustre, gpfs, ...: every node that mounts it sees the same files), "node-local" when it lies
under a folder every node has its own of (/tmp, /var/tmp, /dev/shm) or on a memory or container file
system (tmpfs, overlay, ...), and "host" otherwise: a disk of this host (ext4, xfs, ...), which another
node sees only if it has the same files at the same path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SHARED_TYPES = frozenset({"nfs", "nfs4", "lustre", "gpfs", "beegfs", "cephfs", "ceph", "cifs", "smb3", "smbfs",
                          "glusterfs", "wekafs", "panfs", "afs"})
SHARED_TYPE_PREFIXES = ("fuse.",)  # sshfs, s3fs, gcsfuse, ...: FUSE file systems that reach a server
NODE_LOCAL_TYPES = frozenset({"tmpfs", "ramfs", "devtmpfs", "overlay", "aufs"})
NODE_LOCAL_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True, kw_only=True, slots=True)
class Mount:
    mountpoint: str
    fstype: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Placement:
    """Where a path lives: its mount, and whether every node sees it ("shared", "node-local", "host")."""

    path: str  # the path, its symbolic links resolved (an ancestor's, for a path not created yet)
    mount: Mount
    kind: str
    why: str  # what decided the kind: "under /tmp", "tmpfs at /dev/shm", "nfs4 at /home"


def mount_table() -> list[Mount]:
    """This host's mounts in mount order (all of them: network file systems are not "physical" devices)."""
    import psutil

    return [Mount(mountpoint=p.mountpoint, fstype=p.fstype) for p in psutil.disk_partitions(all=True)]


def placement(path: str, table: list[Mount]) -> Placement:
    """Where `path` (or, while it does not exist, its nearest existing ancestor) lives, and its kind."""
    real = os.path.realpath(_existing(os.path.abspath(path)))
    mount = Mount(mountpoint="/", fstype="unknown")
    for m in table:
        if _within(real, m.mountpoint) and len(m.mountpoint) >= len(mount.mountpoint):
            mount = m
    fs = f"{mount.fstype} at {mount.mountpoint}"
    if mount.fstype in SHARED_TYPES or mount.fstype.startswith(SHARED_TYPE_PREFIXES):
        return Placement(path=real, mount=mount, kind="shared", why=fs)
    if mount.fstype in NODE_LOCAL_TYPES:
        return Placement(path=real, mount=mount, kind="node-local", why=fs)
    for d in NODE_LOCAL_DIRS:
        if _within(real, d):
            return Placement(path=real, mount=mount, kind="node-local", why=f"under {d}")
    return Placement(path=real, mount=mount, kind="host", why=fs)


def _existing(path: str) -> str:
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
