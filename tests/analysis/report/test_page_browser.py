"""report.html in a real headless Chromium (Debian's `chromium`): every figure loads, none has an empty
panel; a screenshot is saved.

Chromium is driven by its own command line: `--dump-dom` of a small wrapper page
that loads the report from file:// in an iframe and writes, after load, how many
<img> it has and how many decoded (naturalWidth > 0), and each <figure>'s data-panels and
data-empty-panels; `--screenshot` of the
report itself into test-artifacts/report.png.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WRAPPER = """<!DOCTYPE html><html><body><pre id="result">pending</pre>
<iframe id="report" src="{url}" width="1400" height="900"></iframe>
<script>
document.getElementById("report").addEventListener("load", function () {{
  var out = document.getElementById("result");
  try {{
    var doc = this.contentDocument;
    var imgs = Array.prototype.slice.call(doc.images);
    var figs = Array.prototype.slice.call(doc.querySelectorAll("figure"));
    out.textContent = JSON.stringify({{
      declared: Number(doc.body.getAttribute("data-figure-count")),
      images: imgs.length,
      loaded: imgs.filter(function (i) {{ return i.complete && i.naturalWidth > 0; }}).length,
      title: doc.title,
      figures: figs.map(function (f) {{
        return {{id: f.id, panels: f.getAttribute("data-panels"), empty: f.getAttribute("data-empty-panels")}};
      }})
    }});
  }} catch (e) {{ out.textContent = "error: " + e; }}
}});
</script></body></html>
"""


def chromium() -> str:
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail("this test needs Debian's chromium: run `make browser` (apt-get install chromium)")
    return path


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def image_check(tmp_path: Path, report: Path) -> dict:
    """What the browser saw in `report`: declared figure count, <img> count, images decoded."""
    wrapper = tmp_path / "wrapper.html"
    wrapper.write_text(WRAPPER.format(url=report.resolve().as_uri()))
    r = run_chromium(tmp_path, "--allow-file-access-from-files", "--virtual-time-budget=20000", "--dump-dom",
                     wrapper.as_uri())
    m = re.search(r'<pre id="result">([^<]*)</pre>', r.stdout)
    assert m, f"no result in the DOM dump (exit {r.returncode}): {r.stderr[-2000:]}"
    assert not m.group(1).startswith(("pending", "error")), m.group(1)
    return json.loads(m.group(1))


def empty_panels(seen: dict) -> list[str]:
    """The figures the browser saw without panel counts, or with an empty panel (what fails the report)."""
    return [f"{f['id']}: panels={f['panels']}, empty={f['empty']}" for f in seen["figures"]
            if f["panels"] is None or f["empty"] is None or int(f["panels"]) < 1 or int(f["empty"]) != 0]


def test_every_figure_loads_in_chromium(small_report, tmp_path):
    """All <img> decode, and their number is the report's own figure count (8)."""
    seen = image_check(tmp_path, small_report)
    assert seen["images"] == seen["declared"] == 8
    assert seen["loaded"] == seen["images"]
    assert seen["title"] == "memsweep report: small"


def test_no_figure_has_an_empty_panel(small_report, tmp_path):
    """Every <figure> the browser sees says how many panels it has (at least one) and that none is empty."""
    seen = image_check(tmp_path, small_report)
    assert len(seen["figures"]) == 8
    assert empty_panels(seen) == []


def test_a_figure_with_an_empty_panel_fails_the_check(small_report, tmp_path):
    """The check can fail: a report whose first figure declares one empty panel is caught."""
    copy = tmp_path / "empty.html"
    copy.write_text(re.sub(r'data-empty-panels="0"', 'data-empty-panels="1"', small_report.read_text(), count=1))
    seen = image_check(tmp_path, copy)
    assert len(empty_panels(seen)) == 1 and empty_panels(seen)[0].startswith("fig-memmap_init")


def test_a_broken_image_is_detected(small_report, tmp_path):
    """The check can fail: a report with one corrupted figure shows one image not loaded."""
    page = small_report.read_text()
    broken = re.sub(r'src="data:image/png;base64,[A-Za-z0-9+/=]{40}', 'src="data:image/png;base64,AAAA', page,
                    count=1)
    copy = tmp_path / "broken.html"
    copy.write_text(broken)
    seen = image_check(tmp_path, copy)
    assert seen["images"] == 8 and seen["loaded"] == 7


def test_screenshot_is_saved_as_a_test_artifact(small_report, tmp_path):
    """A full-width screenshot of the report lands in test-artifacts/report.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    r = run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,4000", "--hide-scrollbars",
                     small_report.resolve().as_uri())
    assert shot.is_file(), r.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1400, 4000)
        assert len(im.convert("L").getcolors(1 << 16) or []) > 50  # not a blank page
