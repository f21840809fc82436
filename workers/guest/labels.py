"""An initialized, empty namespace label area for a QEMU NVDIMM, written from the host.

Without valid label index blocks the kernel gives an NVDIMM region a single label-less namespace
covering all of it (nd_region_to_nstype() is ND_DEVICE_NAMESPACE_IO unless NDD_LABELING, which
nvdimm_probe() sets only when nd_label_validate() finds an index). ndctl create-namespace then
"autolabels" from user space (ndctl/namespace.c enable_labels() -> ndctl_dimm_init_labels()); the guest's
busybox cannot send those ioctls, so the host writes the same two index blocks into the label area before
boot. QEMU keeps that area in the last `label-size` bytes of the NVDIMM's backing file (hw/mem/nvdimm.c
nvdimm_prepare_memory_region(): label_data = ram + size - label_size).
With the index in place the region is ND_DEVICE_NAMESPACE_PMEM, and /init creates namespaces of any size
through sysfs, as ndctl does.
"""

from __future__ import annotations

import struct

NSINDEX_SIGNATURE = b"NAMESPACE_INDEX\0"
NSINDEX_ALIGN = 256  # drivers/nvdimm/label.h
INDEX_HEADER = struct.Struct("<16s3sBIQQQQIHHQ")  # struct nd_namespace_index up to free[]: 72 bytes
LABEL_SIZE = 256  # v1.2 labels, which ndctl tries first (enable_labels(): NDCTL_NS_VERSION_1_2)


def fletcher64(data: bytes) -> int:
    """nd_fletcher64(addr, len, le=true) (drivers/nvdimm/core.c): a 32-bit running sum and a 64-bit sum
    of sums over little-endian 32-bit words."""
    lo, hi = 0, 0
    for (word,) in struct.iter_unpack("<I", data):
        lo = (lo + word) & 0xFFFFFFFF
        hi += lo
    return ((hi << 32) | lo) & 0xFFFFFFFFFFFFFFFF


def num_label_slots(config_size: int, label_size: int = LABEL_SIZE) -> int:
    """nvdimm_num_label_slots() (drivers/nvdimm/label.c): a slot costs its label and, rounded up, a byte of
    index."""
    return config_size // (label_size + 1)


def sizeof_namespace_index(config_size: int, label_size: int = LABEL_SIZE) -> int:
    """sizeof_namespace_index() (drivers/nvdimm/label.c): the header and the free bitmap, rounded up to
    NSINDEX_ALIGN; ValueError when the area cannot hold it."""
    nslot = num_label_slots(config_size, label_size)
    space = config_size - nslot * label_size
    size = -(-(INDEX_HEADER.size + -(-nslot // 8)) // NSINDEX_ALIGN) * NSINDEX_ALIGN
    if 2 * size > space:
        raise ValueError(f"a label area of {config_size} bytes is too small for {label_size}-byte labels")
    return size


def label_area(config_size: int, label_size: int = LABEL_SIZE) -> bytes:
    """A label area of `config_size` bytes: index blocks 0 and 1 (every slot free) and zeroed labels.

    Follows ndctl's write_label_index() (ndctl/lib/dimm.c): index 0 with seq 3, index 1 with seq 2, so
    nd_label_validate() takes index 0 as current (best_seq(3, 2) is 3); the free bitmap has a set bit per
    slot and clear bits past nslot, as the kernel's own nd_label_write_index(ND_NSINDEX_INIT) writes it.
    """
    isize = sizeof_namespace_index(config_size, label_size)
    nslot = num_label_slots(config_size, label_size)
    free = bytearray(isize - INDEX_HEADER.size)
    for slot in range(nslot):
        free[slot // 8] |= 1 << (slot % 8)  # set_bit_le
    area = bytearray(config_size)
    for index, seq in ((0, 3), (1, 2)):
        def block(checksum: int) -> bytes:
            header = INDEX_HEADER.pack(NSINDEX_SIGNATURE, b"\0\0\0", label_size >> 8, seq, index * isize, isize,
                                       (1 - index) * isize, 2 * isize, nslot, 1, 2 if label_size >= 256 else 1,
                                       checksum)
            return header + bytes(free)

        area[index * isize:(index + 1) * isize] = block(fletcher64(block(0)))
    return bytes(area)
