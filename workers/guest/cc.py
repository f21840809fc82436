"""A guest's program, built on this node: a C file of this package compiled static by a compiler on PATH
(the guests have no libc of their own), or GuestSetupError saying what is missing or what the compiler said."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from .exceptions import GuestSetupError


def static_program(source: str, what: str, cc: str, flags: tuple[str, ...], install: str) -> bytes:
    """`source` (a file of this package) built by `cc` with `flags`; `what` names the program in errors and
    `install` says how to get the compiler or the libraries it lacks."""
    if shutil.which(cc) is None:
        raise GuestSetupError(f"{what} needs a C compiler: {cc!r} is not on PATH ({install})")
    with tempfile.TemporaryDirectory(prefix="memsweep-cc-") as tmp:
        src, out = Path(tmp) / source, Path(tmp) / Path(source).stem
        src.write_text(resources.files(__package__).joinpath(source).read_text())
        done = subprocess.run([cc, *flags, "-o", str(out), str(src)], capture_output=True, text=True)
        if done.returncode != 0:
            raise GuestSetupError(f"building {what} failed ({cc} {' '.join(flags)}; {install}): "
                                  f"{done.stderr.strip()[-400:]}")
        return out.read_bytes()
