"""A newc ("070701") cpio writer: the initramfs format the kernel unpacks (init/initramfs.c).

Written by hand rather than with Debian's `cpio -o -H newc`: that needs a staging tree on disk, an extra
package on every node and root-owned files (or fakeroot); the format is a 110-byte ASCII header per
entry, the name and the data, each padded to 4 bytes (Documentation/driver-api/early-userspace/
buffer-format.rst), and no Python library on PyPI keeps it.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass

TRAILER = "TRAILER!!!"


@dataclass(frozen=True, kw_only=True, slots=True)
class Entry:
    """One file, folder, symlink or device node of the archive; `data` is a symlink's target for a link,
    `rdev` a device node's (major, minor)."""

    path: str
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def directory(path: str) -> Entry:
    return Entry(path=path, mode=stat.S_IFDIR | 0o755)


def regular(path: str, data: bytes, executable: bool = False) -> Entry:
    return Entry(path=path, mode=stat.S_IFREG | (0o755 if executable else 0o644), data=data)


def symlink(path: str, target: str) -> Entry:
    return Entry(path=path, mode=stat.S_IFLNK | 0o777, data=target.encode())


def chardev(path: str, major: int, minor: int) -> Entry:
    return Entry(path=path, mode=stat.S_IFCHR | 0o600, rdev=(major, minor))


def archive(entries: list[Entry]) -> bytes:
    """The newc archive of `entries` (owned by root, mtime 0) and its trailer."""
    out = bytearray()
    for ino, e in enumerate([*entries, Entry(path=TRAILER, mode=0)], start=1):
        name = e.path.lstrip("/").encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(e.mode) else 1
        # magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor,
        # namesize, check: 13 fields of 8 hex digits after the 6-byte magic.
        fields = (ino if e.path != TRAILER else 0, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, *e.rdev, len(name), 0)
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + name
        out += b"\0" * (-len(out) % 4) + e.data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)
