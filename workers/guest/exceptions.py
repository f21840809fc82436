"""Errors raised by the guest runner; each derives from workers.exceptions.MemsweepError and the nearest builtin."""

from workers.exceptions import MemsweepError


class GuestKernelError(MemsweepError, ValueError):
    """A kernel to boot is unusable: a path is missing, the image is not an x86-64 bzImage or ELF, or the
    modules directory lacks a pmem driver. The message names the path and what is wrong."""


class GuestSetupError(MemsweepError, RuntimeError):
    """This node cannot run guests: QEMU or busybox-static is missing and cannot be installed here, or
    Debian's kernel packages cannot be fetched. The message says what to run."""

    exit_status = 1


class GuestConfigError(MemsweepError, ValueError):
    """A configuration for the guest is malformed (an unknown mode or map, a size that is not a whole number
    of pages); the message names the field, the rule and the value."""
