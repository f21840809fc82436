"""The compare page in a real headless Chromium (Debian's `chromium`): no console messages, every image loads.

Console messages come from Chromium's own log (`--enable-logging=stderr`: one
`CONSOLE` line per message); the page has no script, so any such line is an
error (a resource that failed, a blocked load). Images are checked as for
report.html (tests/analysis/report/test_page_browser.py).
"""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl
import pytest

from analysis.compare.compare import compare
from analysis.compare.page import write
from tests.analysis.conftest import write_sweep
from tests.analysis.compare.test_compare import grid, memmap_rows
from tests.analysis.report.test_page_browser import image_check, run_chromium
from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory) -> Path:
    """A page with two blocks: a 60-point pfnmap grid (aggregated) and memmap measured vs modeled (noise marks)."""
    root = tmp_path_factory.mktemp("compare")
    memmap = pl.concat([memmap_rows("model", [1.0, 2.0, 3.0]),
                        memmap_rows("measured", [1.2, 3.0, 3.1], [0.9, 2.5, 2.9])])
    a = write_sweep(root, "base <i>line</i>", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0}), "memmap": memmap})
    b = write_sweep(root, "patched", {"pfnmap": grid({0: 1.0, 9: 1.4, 18: 0.6}), "memmap": memmap})
    return Path(write(compare(a, b)))


def console_lines(tmp_path: Path, page: Path) -> list[str]:
    r = run_chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom",
                     page.resolve().as_uri())
    assert "</html>" in r.stdout, r.stderr[-2000:]
    return [line for line in r.stderr.splitlines() if ":CONSOLE" in line]


def test_compare_page_has_no_console_errors_and_every_image_loads(compare_page, tmp_path):
    """No console line; the one declared figure is the one <img>, and it decodes."""
    assert console_lines(tmp_path, compare_page) == []
    seen = image_check(tmp_path, compare_page)
    assert seen["images"] == seen["declared"] == seen["loaded"] == 1
    assert html.unescape(seen["title"]) == "memsweep compare: patched vs base <i>line</i>"  # text, not markup


def test_a_console_error_is_detected(compare_page, tmp_path):
    """The check can fail: the same page with a script that logs an error shows one console line."""
    broken = tmp_path / "broken.html"
    broken.write_text(compare_page.read_text().replace("</body>", '<script>console.error("boom")</script></body>'))
    lines = console_lines(tmp_path, broken)
    assert len(lines) == 1 and '"boom"' in lines[0]


def test_compare_screenshot_is_saved_as_a_test_artifact(compare_page, tmp_path):
    """A screenshot of the comparison lands in test-artifacts/compare.png and is not blank."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "compare.png"
    shot.unlink(missing_ok=True)
    r = run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,3000", "--hide-scrollbars",
                     compare_page.resolve().as_uri())
    assert shot.is_file(), r.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1400, 3000)
        assert len(im.convert("L").getcolors(1 << 16) or []) > 50
