"""The package metadata installs without setuptools' deprecation warnings."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    """project.license is an SPDX string (a TOML table warns on every install) and the build needs a
    setuptools that understands it (77 or later)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["license"] == "MIT"
    (req,) = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(re.search(r">=(\d+)", req).group(1)) >= 77
