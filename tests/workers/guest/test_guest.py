"""The guest runner (workers/guest): kernels checked on load, the initramfs, the label index, the guest's
result lines; and, marked `guest`, real boots of Debian's 6.12 in QEMU whose numbers must equal the
kernel's own arithmetic."""

from __future__ import annotations

import json
import lzma
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from workers.guest import (ConfigResult, GuestConfig, GuestConfigError, GuestKernel, GuestKernelError,
                           cached_kernel, load_kernel, run_guest)
from workers.guest import counter, cpio, debian, initramfs, labels, qemu, runner
from workers.guest.counter import CounterCheck
from workers.guest.kernels import PMEM_DRIVERS, pmem_modules
from workers.guest.records import from_guest, parse_line
from workers.units import GiB, MiB

ROOT = Path(__file__).resolve().parents[3]
PAGE = 4096
STRUCT_PAGE = 64  # sizeof(struct page) on x86_64 without debug options


# ---------------------------------------------------------------- synthetic kernels, no boot

def bzimage(path: Path, *, version: int = 0x020F, xloadflags: int = 1, banner: str = "6.99.0-test (u@h) #1") -> Path:
    """A file with an x86 setup header (arch/x86/boot/header.S) as far as load_kernel reads it."""
    head = bytearray(0x5000)
    head[0x1FE:0x200] = b"\x55\xaa"
    head[0x202:0x206] = b"HdrS"
    head[0x206:0x208] = version.to_bytes(2, "little")
    head[0x236] = xloadflags
    at = 0x44C0  # where Debian's 6.1 and 6.12 images keep it: past the first 16 KiB
    head[0x20E:0x210] = (at - 0x200).to_bytes(2, "little")
    head[at:at + len(banner) + 1] = banner.encode() + b"\0"
    path.write_bytes(bytes(head))
    return path


def modules_dir(root: Path, names=PMEM_DRIVERS, builtin=(), depends=None, release="6.99.0-test") -> Path:
    """lib/modules/<release> with xz-compressed modules whose .modinfo carries depends= and vermagic=."""
    mods = root / "lib" / "modules" / "6.99.0-test"
    (mods / "kernel" / "drivers").mkdir(parents=True)
    deps = {"nd_pmem": "libnvdimm,nd_btt", "nfit": "libnvdimm", "nd_btt": "libnvdimm", "nd_e820": "libnvdimm",
            "dax_pmem": "libnvdimm"} if depends is None else depends
    for name in names:
        body = (b"\x7fELF fake\0license=GPL\0depends=" + deps.get(name, "").encode() + b"\0name=" + name.encode()
                + b"\0vermagic=" + release.encode() + b" SMP preempt mod_unload modversions \0")
        file = name.replace("_", "-") if name == "nd_e820" else name  # a dash in a file name is an underscore
        (mods / "kernel" / "drivers" / f"{file}.ko.xz").write_bytes(lzma.compress(body))
    (mods / "modules.builtin").write_text("".join(f"kernel/drivers/x/{b}.ko\n" for b in builtin))
    return mods


def test_a_missing_image_is_named(tmp_path):
    """A kernel image that does not exist: GuestKernelError naming the path."""
    with pytest.raises(GuestKernelError, match=r"'image' must be an existing kernel image file .*nope.*no such file"):
        load_kernel(tmp_path / "nope")


def test_a_non_x86_elf_is_refused(tmp_path):
    """An aarch64 ELF vmlinux (e_machine 183) is not an x86-64 kernel."""
    elf = bytearray(64)
    elf[:7] = b"\x7fELF\x02\x01\x01"
    elf[18:20] = (183).to_bytes(2, "little")
    (tmp_path / "vmlinux").write_bytes(bytes(elf))
    with pytest.raises(GuestKernelError, match=r"must be an x86-64 kernel .*machine 183"):
        load_kernel(tmp_path / "vmlinux")


def test_a_file_that_is_no_kernel_is_refused(tmp_path):
    """Neither a bzImage setup header nor ELF magic: the message says which bytes were looked at."""
    (tmp_path / "Image").write_bytes(b"MZ" + bytes(0x300))
    with pytest.raises(GuestKernelError, match=r"x86-64 bzImage or ELF vmlinux .*no 'HdrS' setup header at 0x202"):
        load_kernel(tmp_path / "Image")


def test_a_32_bit_bzimage_is_refused(tmp_path):
    """A bzImage without XLF_KERNEL_64 is not a 64-bit kernel."""
    with pytest.raises(GuestKernelError, match=r"64-bit x86 bzImage .*without XLF_KERNEL_64"):
        load_kernel(bzimage(tmp_path / "bzImage", xloadflags=0))


def test_a_bzimage_gives_its_release_and_modules_in_load_order(tmp_path):
    """The release comes from the header's kernel_version string; modules load after what they depend on."""
    k = load_kernel(bzimage(tmp_path / "bzImage"), modules_dir(tmp_path))
    assert k.release == "6.99.0-test"
    order = [m.name for m in pmem_modules(k.modules)]
    assert sorted(order) == sorted(PMEM_DRIVERS)
    for m in pmem_modules(k.modules):
        assert all(order.index(d) < order.index(m.name) for d in m.depends)
    assert order.index("nd_btt") < order.index("nd_pmem")


def test_a_modules_folder_without_the_pmem_drivers_is_named(tmp_path):
    """Missing drivers are listed; a driver in modules.builtin needs no module."""
    mods = modules_dir(tmp_path, names=("libnvdimm", "nfit"), builtin=("device_dax",))
    with pytest.raises(GuestKernelError, match=r"'modules' must hold the pmem drivers .*missing nd_btt, nd_pmem, "
                                               r"nd_e820, dax_pmem\)"):
        load_kernel(bzimage(tmp_path / "bzImage"), mods)
    with pytest.raises(GuestKernelError, match=r"no such folder"):
        load_kernel(bzimage(tmp_path / "bzImage"), tmp_path / "no-modules")


def test_modules_of_another_release_are_refused(tmp_path):
    """Modules whose vermagic names another release than the image's (insmod would refuse them in the guest)."""
    with pytest.raises(GuestKernelError, match=r"must be built for the image's release 6.99.0-test .*libnvdimm"
                                               r".*built for 6.1.0-57-amd64\)"):
        load_kernel(bzimage(tmp_path / "bzImage"), modules_dir(tmp_path, release="6.1.0-57-amd64"))


def test_drivers_built_in_need_no_modules(tmp_path):
    """With every pmem driver in modules.builtin the guest loads nothing."""
    mods = modules_dir(tmp_path, names=(), builtin=PMEM_DRIVERS)
    assert pmem_modules(load_kernel(bzimage(tmp_path / "bzImage"), mods).modules) == []


def test_a_missing_dependency_is_named(tmp_path):
    """A module whose depends= names a module that is not there."""
    mods = modules_dir(tmp_path, depends={"nd_pmem": "libnvdimm,nd_btt,gone"})
    with pytest.raises(GuestKernelError, match=r"must hold gone, which nd_pmem depends on"):
        load_kernel(bzimage(tmp_path / "bzImage"), mods)


def test_a_full_cache_answers_without_apt(tmp_path):
    """The newest cached release of a series (Debian version order), and no apt call when it is there."""
    for release, version in (("6.12.115+deb12-amd64", "6.12.115-2~deb12u1"),
                             ("6.12.117+deb12-amd64", "6.12.117-1~deb12u1"), ("6.12.9+deb12-amd64", "6.12.9-1~deb12u1")):
        (tmp_path / release).mkdir()
        (tmp_path / release / debian.MARKER).write_text(json.dumps(
            {"series": "6.12", "release": release, "package": f"linux-image-{release}-unsigned", "version": version}))
    (tmp_path / "6.12.200+deb12-amd64").mkdir()  # an unpack that never finished: no marker, never used

    class NoApt:
        def __getattr__(self, name):
            raise AssertionError(f"apt was asked ({name}) though the cache is full")

    got = debian.fetch_series("6.12", tmp_path, apt=NoApt())
    assert got.release == "6.12.117+deb12-amd64" and got.root == tmp_path / got.release
    assert debian.cached("6.1", tmp_path) is None
    with pytest.raises(GuestKernelError, match=r"no Debian 6.1 kernel in .*: run `make guest`"):
        cached_kernel("6.1", tmp_path)


# ---------------------------------------------------------------- initramfs, labels, result lines

def read_newc(data: bytes) -> dict[str, tuple[int, bytes, tuple[int, int]]]:
    """path -> (mode, data, rdev) of a newc archive (Documentation/driver-api/early-userspace/buffer-format.rst)."""
    out, at = {}, 0
    while True:
        assert data[at:at + 6] == b"070701"
        f = [int(data[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rdev, namesize = f[1], f[6], (f[9], f[10]), f[11]
        name = data[at + 110:at + 110 + namesize - 1].decode()
        at = (at + 110 + namesize + 3) & ~3
        if name == cpio.TRAILER:
            return out
        out[name] = (mode, data[at:at + size], rdev)
        at = (at + size + 3) & ~3


@pytest.fixture
def small_kernel(tmp_path):
    return load_kernel(bzimage(tmp_path / "bzImage"), modules_dir(tmp_path))


def test_the_initramfs_holds_init_the_modules_and_the_config_list(tmp_path, small_kernel):
    """/init (executable), /memsweep/configs one line per configuration, decompressed modules in load order,
    and /dev/console for the kernel."""
    (tmp_path / "busybox").write_bytes(b"not really busybox")
    configs = [(0, GuestConfig(mode="fsdax", map="dev", align_bytes=2 * MiB, namespace_size_bytes=2 * GiB)),
               (7, GuestConfig(mode="devdax", map="mem", align_bytes=GiB, namespace_size_bytes=GiB, binds=3,
                               strategy="template"))]
    files = read_newc(initramfs.build(small_kernel, configs, warm_up_bytes=35 * MiB, busybox=tmp_path / "busybox"))
    mode, init, _ = files["init"]
    assert stat.S_ISREG(mode) and mode & 0o111 and init.startswith(b"#!/bin/sh") and b"MEMSWEEP-RESULT" in init
    assert files["memsweep/configs"][1] == (b"0 fsdax dev 2097152 2147483648 1 -\n"
                                              b"7 devdax mem 1073741824 1073741824 3 template\n")
    assert files["memsweep/warmup"][1] == b"2147483648 35\n"
    modules = files["memsweep/modules"][1].decode().split()
    assert modules == [m.name for m in pmem_modules(small_kernel.modules)]
    assert files["lib/modules/nd_pmem.ko"][1].startswith(b"\x7fELF fake\0")
    assert stat.S_ISCHR(files["dev/console"][0]) and files["dev/console"][2] == (5, 1)
    assert files["bin/sh"][1] == b"busybox" and stat.S_ISLNK(files["bin/sh"][0])


@pytest.mark.guest  # busybox-static comes with the guest's packages (make guest)
def test_busybox_cpio_unpacks_the_initramfs(tmp_path, small_kernel):
    """An independent newc reader (busybox cpio, which make guest installs) extracts the same files."""
    busybox = Path("/bin/busybox")
    data = initramfs.build(small_kernel, [(0, GuestConfig(mode="fsdax", map="mem", align_bytes=2 * MiB,
                                                           namespace_size_bytes=GiB))], busybox=busybox)
    out = tmp_path / "root"
    out.mkdir()
    subprocess.run([str(busybox), "cpio", "-i", "-d"], input=data, cwd=out, check=True, capture_output=True)
    assert (out / "memsweep" / "configs").read_text() == "0 fsdax mem 2097152 1073741824 1 -\n"
    assert (out / "init").read_bytes() == initramfs.init_script()


def test_the_label_index_is_what_the_kernel_validates():
    """128 KiB label area, v1.2 labels (drivers/nvdimm/label.c): 131072 // 257 = 510 slots, a 256-byte index
    (72-byte header + 64 bytes of bitmap, rounded to NSINDEX_ALIGN), labels from offset 512, each block's
    fletcher64 over itself with the checksum zeroed, seq 3 and 2 so index 0 is current."""
    area = labels.label_area(128 * 1024)
    assert len(area) == 128 * 1024
    assert labels.num_label_slots(128 * 1024) == 510 and labels.sizeof_namespace_index(128 * 1024) == 256
    for i, seq in ((0, 3), (1, 2)):
        block = area[i * 256:(i + 1) * 256]
        f = labels.INDEX_HEADER.unpack_from(block)
        assert f[0] == b"NAMESPACE_INDEX\0" and f[2] == 1 and f[3] == seq
        assert (f[4], f[5], f[6], f[7], f[8], f[9], f[10]) == (i * 256, 256, (1 - i) * 256, 512, 510, 1, 2)
        zeroed = block[:64] + bytes(8) + block[72:]
        assert labels.fletcher64(zeroed) == f[11]
        free = int.from_bytes(block[72:], "little")
        assert free == (1 << 510) - 1  # every slot free, no bit past nslot
    assert area[512:] == bytes(len(area) - 512)


def test_a_result_line_gives_the_numbers():
    """nr_memmap_pages delta, the summed function_graph durations and the data offset from sysfs."""
    cfg = GuestConfig(mode="devdax", map="dev", align_bytes=2 * MiB, namespace_size_bytes=2 * GiB)
    kind, payload = parse_line('MEMSWEEP-RESULT {"id": 0, "status": "ok", "memmap_before": "10", '
                               '"memmap_after": "8202", "trace": [" 0) $ 1590123 us  |  memmap_init_zone_device();",'
                               ' " 0) + 12.5 us   |  memmap_init_zone_device();"], "ns_resource": "0x100000000", '
                               '"dev_resource": "0x102200000", "dev_size": "2111832064", "dmesg": []}\r')
    r = from_guest(cfg, payload)
    assert kind == "RESULT" and r.status == "ok"
    assert (r.memmap_pages_delta, r.init_us, r.init_calls) == (8192, 1590135.5, 2)
    assert (r.data_offset_bytes, r.data_size_bytes) == (34 * MiB, 2111832064)


def test_rebinds_give_one_sample_per_bind_and_their_median():
    """A result with two rebinds: three per-bind sums of memmap_init_zone_device(), init_us their median; the
    first bind alone gives the memmap and offset numbers; `counted` says the guest ran under icount."""
    cfg = GuestConfig(mode="fsdax", map="dev", align_bytes=2 * MiB, namespace_size_bytes=GiB, binds=3)
    line = lambda us: f" 0) $ {us} us  |  memmap_init_zone_device();"
    r = from_guest(cfg, {"status": "ok", "memmap_before": "0", "memmap_after": "4096", "trace": [line(11067.9)],
                         "rebinds": [[line(11066.7)], [line(11066.6), line(0.5)]]}, counted=True)
    assert r.bind_us == (11067.9, 11066.7, 11067.1) and r.init_us == 11067.1
    assert r.counted and r.memmap_pages_delta == 4096 and r.init_calls == 1
    assert not from_guest(cfg, {"status": "ok", "trace": [line(1.0)]}).counted


def test_a_counter_line_and_its_check():
    """MEMSWEEP-COUNTER carries (iterations, guest ns) per run; the quietest run gives ns per instruction."""
    kind, runs = parse_line("MEMSWEEP-COUNTER [[10000000, 20014800], [40000000, 80059000]]")
    check = CounterCheck(runs=tuple(map(tuple, runs)), accel="tcg")
    assert kind == "COUNTER" and check.ns_per_instruction == 1.0007375
    assert check.text().startswith("1.00074 guest ns per instruction in the quietest run")


def test_a_refused_bind_is_infeasible_with_the_kernels_lines():
    """status 'refused' becomes infeasible; the reason quotes the failed write and the kernel's log."""
    cfg = GuestConfig(mode="devdax", map="mem", align_bytes=GiB, namespace_size_bytes=GiB)
    r = from_guest(cfg, {"status": "refused", "step": "bind", "device": "dax0.1", "memmap_before": "",
                         "why": "drivers/dax_pmem/bind=dax0.1: No such device or address",
                         "dmesg": ["[    7.5] dax_pmem dax0.1: namespace0.0 unable to satisfy requested alignment"]})
    assert r.status == "infeasible" and r.memmap_pages_delta is None
    assert r.reason == ("the kernel refused binding dax0.1: drivers/dax_pmem/bind=dax0.1: No such device or "
                        "address; kernel: dax_pmem dax0.1: namespace0.0 unable to satisfy requested alignment")


def test_other_lines_and_bad_json_are_not_results():
    """Console noise is ignored; an unreadable result line is fatal, not a crash."""
    assert parse_line("[    1.0] random: crng init done") is None
    assert parse_line("MEMSWEEP-RESULT {oops")[0] == "FATAL"
    assert parse_line("MEMSWEEP-DONE") == ("DONE", "")


@pytest.mark.parametrize("fields, match", [
    ({"mode": "sector"}, r"'mode' must be one of \['fsdax', 'devdax'\] \(got 'sector'\)"),
    ({"map": "ram"}, r"'map' must be one of \['dev', 'mem'\] \(got 'ram'\)"),
    ({"align_bytes": 3 * MiB}, r"'align_bytes' must be a power of two of at least 4096 \(got 3145728\)"),
    ({"namespace_size_bytes": GiB + 1}, r"'namespace_size_bytes' must be a positive multiple of 4096"),
    ({"binds": 0}, r"'binds' must be a positive integer \(got 0\)"),
    ({"strategy": "a b"}, r"'strategy' must be a strategy name or None \(got 'a b'\)"),
])
def test_a_malformed_config_is_refused_on_construction(fields, match):
    """GuestConfig names the field, the rule and the value."""
    base = dict(mode="fsdax", map="dev", align_bytes=2 * MiB, namespace_size_bytes=2 * GiB)
    with pytest.raises(GuestConfigError, match=match):
        GuestConfig(**{**base, **fields})


def test_a_memmap_too_big_for_the_guest_is_an_error_without_a_boot(small_kernel):
    """map=mem of 512 GiB needs 8 GiB of guest RAM for its memmap: an error row, no QEMU started."""
    big = GuestConfig(mode="fsdax", map="mem", align_bytes=2 * MiB, namespace_size_bytes=512 * GiB)
    run = run_guest(small_kernel, [big])
    assert run.accel == "none" and run.release is None
    assert run.results[0].status == "error" and "need 8192 MiB of guest RAM" in run.results[0].reason
    with pytest.raises(ValueError, match=r"'accel' must be one of \['auto', 'tcg', 'kvm'\]"):
        run_guest(small_kernel, [big], accel="hvf")


# ---------------------------------------------------------------- real boots (QEMU, Debian's 6.12)

TWO_GIB = 2 * GiB
# /proc/vmstat nr_memmap_pages across a bind, 2 GiB namespace at a 1 GiB-aligned start (end_trunc 0). The
# pgmap covers the whole namespace (__nvdimm_setup_pfn(): range = the namespace less start_pad/end_trunc), and
# populate_section_memmap() counts, per section, section_nr_vmemmap_pages() (mm/sparse-vmemmap.c; in 6.12.y
# since 6.12.101, "mm/sparse-vmemmap: fix DAX vmemmap accounting with optimization"):
# - without vmemmap_can_optimize() (fsdax, whose vmemmap_shift is 0; and any map=dev, since an altmap rules
#   it out): DIV_ROUND_UP(nr_pages * sizeof(struct page), PAGE_SIZE), the memmap the device holds included;
FULL = TWO_GIB // PAGE * STRUCT_PAGE // PAGE  # 524,288 struct pages x 64 B / 4096 = 8192
# - devdax map=mem, 2 MiB compounds (order 9 < PFN_SECTION_SHIFT 15): VMEMMAP_RESERVE_NR = 2 vmemmap pages per
#   compound (vmemmap_populate_compound_pages() maps the other 6 of a compound's 8 onto the second one):
DEVDAX_2M_MEM = TWO_GIB // (2 * MiB) * 2  # 1024 compounds x 2 = 2048
# - devdax map=mem, 1 GiB compounds (order 18 >= PFN_SECTION_SHIFT): 2 for the section that starts a
#   compound, 0 for the 31 sections after it:
DEVDAX_1G_MEM = TWO_GIB // GiB * 2  # 2 compounds x 2 = 4
NPFNS = (TWO_GIB - 8192) // PAGE  # nd_pfn_init(): npfns = PHYS_PFN(size - SZ_8K) = 524,286
# nd_pfn_init(): offset = ALIGN(start + SZ_8K + 64 * npfns, align) - start (map=dev),
#                         ALIGN(start + SZ_8K, align) - start (map=mem); align = max(align, 2 MiB)
DEV_OFFSET_2M = -(-(8192 + STRUCT_PAGE * NPFNS) // (2 * MiB)) * 2 * MiB  # 33,562,496 B -> 17 x 2 MiB = 34 MiB
EXPECTED = {  # (mode, map, align): (nr_memmap_pages delta, data offset)
    ("fsdax", "dev", 2 * MiB): (FULL, DEV_OFFSET_2M), ("fsdax", "mem", 2 * MiB): (FULL, 2 * MiB),
    ("fsdax", "dev", GiB): (FULL, GiB), ("fsdax", "mem", GiB): (FULL, GiB),
    ("devdax", "dev", 2 * MiB): (FULL, DEV_OFFSET_2M), ("devdax", "mem", 2 * MiB): (DEVDAX_2M_MEM, 2 * MiB),
    ("devdax", "dev", GiB): (FULL, GiB), ("devdax", "mem", GiB): (DEVDAX_1G_MEM, GiB),
}
# nd_pfn_init() refuses an offset that leaves no data: devdax at 1 GiB align, map=mem, on a 1 GiB namespace
# has offset = ALIGN(start + 8 KiB, 1 GiB) - start = 1 GiB >= size - end_trunc.
REFUSED_BIND = GuestConfig(mode="devdax", map="mem", align_bytes=GiB, namespace_size_bytes=GiB)
# nd_pfn align_store() takes only supported_alignments (4 KiB, 2 MiB and, with PUD THP, 1 GiB).
REFUSED_ALIGN = GuestConfig(mode="fsdax", map="mem", align_bytes=4 * MiB, namespace_size_bytes=TWO_GIB)
CONFIGS = [GuestConfig(mode=m, map=p, align_bytes=a, namespace_size_bytes=TWO_GIB) for m, p, a in EXPECTED]
# Bound three times (two unbind/bind cycles): three samples, equal to within what timer ticks add under icount.
REBOUND = GuestConfig(mode="devdax", map="dev", align_bytes=2 * MiB, namespace_size_bytes=GiB, binds=3)


@pytest.fixture(scope="module")
def kernel612() -> GuestKernel:
    return cached_kernel("6.12")  # GuestKernelError says to run `make guest` when it is not there


@pytest.fixture(scope="module")
def run612(kernel612):
    """One TCG (or KVM, where it works) boot of 6.12 running the eight configurations and two refused ones.

    Its first try is made to panic before /init (rdinit= names no file: the kernel cannot mount a root), so
    the runner boots it again: the same run shows the retry and the kernel's arithmetic, for a boot less."""
    def command(*, append, **kw):
        tries.append(append)
        return real(append=append + " rdinit=/missing" if len(tries) == 1 else append, **kw)

    tries: list[str] = []
    real = qemu.command
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(qemu, "command", command)
        run = run_guest(kernel612, [*CONFIGS, REFUSED_BIND, REFUSED_ALIGN, REBOUND])
    assert len(tries) == 2, tries
    return run


def qemu_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.name().startswith("qemu")]


@pytest.mark.guest
def test_the_guest_reports_its_kernel_and_accelerator(run612, kernel612):
    """uname -r in the guest is the kernel's release, the command line has panic=-1, the accelerator is KVM
    only where the probe boots the kernel under it."""
    assert run612.release == kernel612.release
    assert "panic=-1" in run612.cmdline.split()
    assert run612.accel == ("kvm" if qemu.kvm_works(str(kernel612.image))[0] else "tcg")
    assert 0 < run612.boot_s < run612.wall_s
    assert not qemu_children()


@pytest.mark.guest
@pytest.mark.parametrize("key", list(EXPECTED), ids=lambda k: f"{k[0]}-{k[1]}-{k[2] // MiB}M")
def test_memmap_pages_and_data_offset_are_the_kernels_arithmetic(run612, key):
    """nr_memmap_pages moves by the vmemmap pages section_nr_vmemmap_pages() counts; the data starts where
    nd_pfn_init() put it; memmap_init_zone_device() ran once, for a positive time."""
    r: ConfigResult = run612.results[list(EXPECTED).index(key)]
    assert r.status == "ok", r.reason
    delta, offset = EXPECTED[key]
    assert r.memmap_pages_delta == delta
    assert r.data_offset_bytes == offset and r.data_size_bytes == TWO_GIB - offset
    assert r.init_calls == 1 and r.init_us > 0


@pytest.mark.guest
def test_a_namespace_bound_three_times_gives_three_samples_that_agree(run612):
    """Under TCG's instruction counter the three binds' memmap_init_zone_device() times agree within 0.1%
    (they are instruction counts); every bind of the run is counted."""
    r = run612.results[-1]
    assert r.config == REBOUND and r.status == "ok", r.reason
    if run612.accel == "tcg":
        assert r.counted and all(x.counted for x in run612.results if x.status == "ok")
    assert len(r.bind_us) == 3 and (max(r.bind_us) - min(r.bind_us)) / min(r.bind_us) < 1e-3, r.bind_us


@pytest.mark.guest
def test_the_counter_counts_guest_instructions(kernel612):
    """A loop of 2 x N instructions in the guest reads 2 x N guest ns: QEMU's icount clock is an instruction
    counter (timer ticks inside the run may add a little, never take away)."""
    check = counter.check(kernel612)
    assert check.accel == "tcg" and len(check.runs) == 4
    assert 1.0 <= check.ns_per_instruction < 1.005, check.text()


@pytest.mark.guest
def test_a_bind_the_kernel_refuses_is_infeasible_with_its_message(run612):
    """nd_pfn_init()'s dev_err reaches the reason; the configuration after it still runs."""
    bind, align = run612.results[len(CONFIGS)], run612.results[len(CONFIGS) + 1]
    assert bind.status == "infeasible" and bind.memmap_pages_delta is None
    assert "unable to satisfy requested alignment" in bind.reason and "dax_pmem/bind" in bind.reason
    assert align.status == "infeasible"
    assert "align=4194304: Invalid argument" in align.reason and "supported_alignments: 4096 2097152" in align.reason


@pytest.mark.guest
def test_a_boot_timeout_gives_error_rows_with_console_lines_and_no_qemu(kernel612):
    """A boot that cannot reach /init in time: every configuration an error quoting the console; QEMU gone."""
    run = run_guest(kernel612, CONFIGS[:2], accel="tcg", boot_timeout_s=3)
    assert run.release is None and run.wall_s < 20
    for r in run.results:
        assert r.status == "error" and r.reason.startswith("boot timeout: /init did not start within 3 s")
        console = r.reason.split("console's last lines:\n", 1)[1].splitlines()
        assert 0 < len(console) <= runner.CONSOLE_TAIL + 2 + 3  # an oops's first line and "...", QEMU's 3
    assert not qemu_children()


@pytest.mark.guest
def test_a_kernel_that_panics_before_init_is_booted_again(run612, kernel612):
    """The first boot panicked before /init (run612); the second boot's results stand (the tests above), and
    the run says what the first one printed."""
    assert run612.boots == 2 and run612.release == kernel612.release
    [failed] = run612.failed_boots
    assert "Kernel panic - not syncing: VFS: Unable to mount root fs" in failed
    assert not qemu_children()


PANIC_CONSOLE = ["[    1.5] Oops: general protection fault, probably for non-canonical address", "[    1.5] RIP: x",
                 "[    1.5] Kernel panic - not syncing: Fatal exception in interrupt"]


@pytest.mark.parametrize("panicked, why", [
    (2, "QEMU exited (status 0) before the guest finished (in each of 2 boots); console's last lines:"),
    (1, "boot timeout: /init did not start within 60 s (on boot 2; boot 1 panicked before /init: "
        "[    1.5] Oops: general protection fault, probably for non-canonical address / "
        "[    1.5] Kernel panic - not syncing: Fatal exception in interrupt); console's last lines:"),
])
def test_an_error_after_a_panicked_boot_says_which_boots_failed(panicked, why):
    """Both boots panicked, or the first did and the second failed otherwise: the reason says which."""
    session = runner._Session(failure=("QEMU exited (status 0) before the guest finished" if panicked == 2 else
                                       "boot timeout: /init did not start within 60 s"))
    assert runner._panicked_before_init(session, PANIC_CONSOLE)
    failed = [runner._oops(PANIC_CONSOLE)] * panicked
    r = runner._result(0, CONFIGS[0], session, PANIC_CONSOLE, 2, failed, counted=True)
    assert r.status == "error" and r.reason.startswith(why)


def test_the_console_tail_starts_with_the_oopss_first_line(tmp_path):
    """An oops 40 lines up (its call trace fills the tail): its first line, then "...", then the last 20."""
    lines = [f"[    1.{i:03d}] line {i}" for i in range(60)]
    lines[10] = "[    1.010] BUG: unable to handle page fault for address: ff13690048001000"
    (tmp_path / "console").write_text("\r\n".join(lines) + "\r\n")
    tail = runner._tail(tmp_path / "console", runner.CONSOLE_TAIL)
    assert tail == [lines[10], "...", *lines[-runner.CONSOLE_TAIL:]]
    (tmp_path / "console").write_text("\n".join(lines[:15]))  # the oops within the tail: the tail as it is
    assert runner._tail(tmp_path / "console", runner.CONSOLE_TAIL) == lines[:15]


@pytest.mark.guest
def test_qemu_dies_with_a_parent_killed_by_sigkill(kernel612, tmp_path):
    """PR_SET_PDEATHSIG: SIGKILL the Python process running a guest, and its QEMU goes too; the folder it
    could not remove is removed by the next guest's runner."""
    script = ("from workers.guest import cached_kernel, run_guest, GuestConfig\n"
              "run_guest(cached_kernel('6.12'), [GuestConfig(mode='fsdax', map='mem', align_bytes=2 << 20,"
              " namespace_size_bytes=1 << 30)], accel='tcg', boot_timeout_s=120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script],
                              env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    guest = None
    try:
        deadline = time.monotonic() + 60
        while guest is None and time.monotonic() < deadline and parent.poll() is None:
            guest = next((p for p in psutil.Process(parent.pid).children() if p.name().startswith("qemu")), None)
            time.sleep(0.1)
        assert guest is not None, "the child never started QEMU"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        gone, alive = psutil.wait_procs([guest], timeout=10)
        assert gone and not alive
        left = list(tmp_path.glob(f"memsweep-guest-{parent.pid}-*"))
        assert left and runner._remove_stale(tmp_path) == left and not any(tmp_path.iterdir())
    finally:
        if guest is not None and guest.is_running():
            guest.kill()
        if parent.poll() is None:
            parent.kill()


@pytest.mark.guest
def test_forced_kvm_where_it_fails_gives_errors_fast(kernel612):
    """Where the probe finds KVM unusable (nested KVM here), accel='kvm' still ends quickly, in error rows
    that quote QEMU."""
    works, why = qemu.kvm_works(str(kernel612.image))
    if works:
        pytest.skip(f"KVM works on this node ({why})")
    run = run_guest(kernel612, CONFIGS[:1], accel="kvm", boot_timeout_s=60)
    assert run.accel == "kvm" and run.wall_s < 30
    assert run.results[0].status == "error" and "[qemu]" in run.results[0].reason
    assert not qemu_children()
