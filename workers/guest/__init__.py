"""The guest runner: real kernels bind real namespaces in a QEMU guest, for the `kernel` row source
(rows.py, which its backend, source.py, calls per kernel chunk).

`run_guest(kernel, configs)` (runner.py) boots a kernel once and, for each
`GuestConfig` (records.py), creates a namespace of the asked size on an emulated NVDIMM, binds it as
fsdax or devdax with its memmap on the device or in RAM, and measures each bind (nr_memmap_pages, the
duration of memmap_init_zone_device() in guest time, the data offset). Under TCG the guest runs with
QEMU's instruction counter, so that duration is a count of instructions; counter.py checks that with a
loop of known length (`python -m workers.guest check-counter`); the /init that does it is init.sh, packed by
initramfs.py. Kernels (kernels.py): Debian's 6.12 and 6.1, fetched once per node into a cache
(`python -m workers.guest fetch`, debian.py), or a user's own (`load_kernel`). qemu.py owns the
QEMU processes and the KVM probe; labels.py the NVDIMM's label index; cpio.py the initramfs format.
"""

from .exceptions import GuestConfigError, GuestKernelError, GuestSetupError
from .kernels import GuestKernel, cached_kernel, fetch, load_kernel
from .records import ConfigResult, GuestConfig, GuestRun
from .runner import run_guest

__all__ = ["ConfigResult", "GuestConfig", "GuestConfigError", "GuestKernel", "GuestKernelError", "GuestRun",
           "GuestSetupError", "cached_kernel", "fetch", "load_kernel", "run_guest"]
