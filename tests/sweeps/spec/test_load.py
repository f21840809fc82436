"""Spec loading: valid specs expand as written; every bad spec gets its own message, exit 2, no writes."""

from __future__ import annotations

import pytest

from sweeps.cli import main
from sweeps.exceptions import SpecError
from sweeps.spec.load import load_spec, parse_spec, shipped_specs
from tests.conftest import tree_state
from workers.dataset import SPEC_FILE, part_path
from workers.measure.settings import MeasureSettings

HEAD = 'name = "t"\nmodels = ["probe"]\nplugins = ["tests.support.probe"]\n'
GOOD = HEAD + "[axes.probe]\ni = [1, 2]\n"

BAD_SPECS = [
    ('name = "t\n', "valid TOML"),
    ('nmae = "x"\n' + GOOD, "'nmae' is not a spec key"),
    ('models = ["probe"]\nplugins = ["tests.support.probe"]\n', "'name' must be given"),
    (GOOD.replace('name = "t"', 'name = "a b"'), "'name' must be 1-64 characters"),
    (GOOD.replace('models = ["probe"]', "models = []"), "'models' must be a non-empty list"),
    (GOOD.replace('models = ["probe"]', 'models = ["mmemap"]'), "'models' must name models from .* \\(got 'mmemap'\\)"),
    (GOOD.replace('models = ["probe"]', 'models = ["probe", "probe"]'), "'models' must not repeat a model"),
    ('profile = "nosuch"\n' + GOOD, "'profile' must be one of .* \\(got 'nosuch'\\)"),
    (GOOD.replace('plugins = ["tests.support.probe"]', 'plugins = "tests.support.probe"'), "'plugins' must be a list"),
    (GOOD.replace('plugins = ["tests.support.probe"]', 'plugins = ["tests.support.probe", "no.such.module"]'),
     "'plugins' must name importable modules \\(got 'no.such.module'"),
    (GOOD.replace('plugins = ["tests.support.probe"]', 'plugins = ["tests.support.misdeclared"]'),
     "'plugins' module 'tests.support.misdeclared' does not import \\(TypeError: .*'comparsion'\\)"),
    (GOOD.replace('plugins = ["tests.support.probe"]', 'plugins = ["tests.support.exits_at_import"]'),
     "'plugins' module 'tests.support.exits_at_import' does not import \\(SystemExit: 0\\)"),
    (HEAD + "chunk_points = 0\n", "'chunk_points' must be a positive integer \\(got 0\\)"),
    (HEAD + "[axes]\nfoo = [1]\n", "'axes.foo' is not a shared axis"),
    (HEAD + "[axes.memmap]\nmode = [\"fsdax\"]\n", "'axes.memmap' must be a model listed in 'models'"),
    (HEAD + "[axes.probe]\nj = [1]\n", "'axes.probe.j' is not an axis of model 'probe'"),
    (HEAD + '[axes]\nnamespace_size = ["4KB"]\n', "'axes.namespace_size' must be a size .* \\(got '4KB'\\)"),
    (HEAD + "[axes]\nnamespace_size = []\n", "'axes.namespace_size' must not be empty"),
    (HEAD + "[axes]\nnamespace_size = [-4096]\n", "'axes.namespace_size' must be a positive size \\(got -4096\\)"),
    (HEAD + "[axes]\nnamespace_size = [0]\n", "'axes.namespace_size' must be a positive size \\(got 0\\)"),
    (HEAD + '[axes]\nnamespace_size = ["6000B"]\n', "'axes.namespace_size' .*a multiple of 4KiB"),
    (HEAD + '[axes]\nalign = ["3MiB"]\n', "'axes.align' .*a power of two of at least 4KiB \\(got '3MiB'\\)"),
    (HEAD + '[axes]\nalign = ["2KiB"]\n', "'axes.align' .*a power of two of at least 4KiB \\(got '2KiB'\\)"),
    (HEAD + "[axes]\ncompound_order = [19]\n", "'axes.compound_order' must be an integer order 0..18 or 'auto'"),
    (HEAD + '[axes]\ncompound_order = ["big"]\n', "'axes.compound_order' must be .* \\(got 'big'\\)"),
    (HEAD + "[axes]\nstruct_page_size = [60]\n", "'axes.struct_page_size' .*a multiple of 8 \\(got 60\\)"),
    (HEAD + "[axes]\nstruct_page_size = [256]\n", "'axes.struct_page_size' .*from 56 to 128"),
    (HEAD + '[axes]\nnamespace_size = { from = "1GiB" }\n', "must give both 'from' and 'to'"),
    (HEAD + '[axes]\nnamespace_size = { from = "1GiB", to = "8GiB", scale = "log10" }\n',
     "'axes.namespace_size.scale' must be 'log2' or 'linear'"),
    (HEAD + '[axes]\nnamespace_size = { from = "1GiB", to = "8GiB" }\n', "'axes.namespace_size.step' must be given"),
    (HEAD + '[axes]\nnamespace_size = { from = "8GiB", to = "1GiB", scale = "log2" }\n',
     "'axes.namespace_size.from' must not exceed 'to'"),
    (HEAD + '[axes]\nnamespace_size = { from = "1GiB", to = "8GiB", scale = "log2", step = 2 }\n',
     "'axes.namespace_size.step' goes with scale = 'linear'"),
    (HEAD + '[axes]\nnamespace_size = { from = "1GiB", to = "8GiB", every = 2 }\n',
     "'axes.namespace_size.every' is not a range key"),
    (HEAD + "[axes.probe]\nexplode = { from = 0, to = 1 }\n", "'axes.probe.explode' must be a list of values, not a range"),
    (HEAD + "[axes.probe]\ni = [1, 1]\n", "'axes.probe.i' must not repeat a value"),
    (HEAD + '[axes.probe]\ni = ["x"]\n', "'axes.probe.i' must be an integer \\(got 'x'\\)"),
    (HEAD + '[axes.probe]\nexplode = ["yes"]\n', "'axes.probe.explode' must be true or false \\(got 'yes'\\)"),
    (HEAD + "[axes.probe]\ndelay_ms = [nan]\n", "'axes.probe.delay_ms' must be a number"),
    (HEAD + "[axes.probe]\ni = { from = 0, to = 10, step = 0 }\n", "'axes.probe.i.step' must be positive"),
    ('source = "measure"\n' + GOOD, "'source' must be one of \\['both', 'kernel', 'measured', 'model'\\] or a list of "
                                   "\\['model', 'measured', 'kernel'\\] \\(got 'measure'\\)"),
    ('source = []\n' + GOOD, r"'source' must be one of .* or a list of .* \(got \[\]\)"),
    (HEAD + "[measure]\nrepeats = 0\n", "'measure.repeats' must be an integer >= 1 \\(got 0\\)"),
    (HEAD + "[measure]\ncpus = 1\n", "'measure.cpus' is not a measure key"),
    (HEAD + "[measure]\nspan_ms = 1.5\n", "'measure.span_ms' must be an integer >= 0 \\(got 1.5\\)"),
    (HEAD + "measure = 3\n", "'measure' must be a table with keys \\['cpu', 'repeats', 'span_ms', 'warmup'\\]"),
    ('name = "t"\nmodels = ["memmap"]\n[axes.memmap]\nstrategy = ["fast"]\n',
     "'axes.memmap.strategy' must be one of 'slow'.* \\(got 'fast'\\)"),
]


@pytest.fixture
def out_with_sweep(tmp_path):
    """An output folder that already holds a sweep named 't' (which a bad spec must not touch)."""
    out = tmp_path / "out"
    part = out / "t" / part_path("probe", "0000000000000000")
    part.parent.mkdir(parents=True)
    (out / "t" / SPEC_FILE).write_text(GOOD)
    part.write_bytes(b"not really parquet")
    return out


@pytest.mark.parametrize("text,match", BAD_SPECS, ids=[f"bad{i:02d}" for i in range(len(BAD_SPECS))])
def test_bad_spec_is_rejected_with_its_own_message(text, match, spec_file, out_with_sweep, capsys):
    """A bad spec: exit 2, one message naming the field and rule, nothing written under --out."""
    before = tree_state(out_with_sweep)
    path = spec_file(text)
    with pytest.raises(SpecError, match=match):
        load_spec(str(path))
    assert main(["run", str(path), "--out", str(out_with_sweep), "--no-report", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memsweep run: error: ") and err.count("\n") == 1
    assert tree_state(out_with_sweep) == before


def test_bad_specs_have_distinct_messages():
    """Each bad spec in the list exercises a different message."""
    messages = set()
    for text, _ in BAD_SPECS:
        with pytest.raises(SpecError) as e:
            parse_spec(text)
        messages.add(str(e.value))
    assert len(messages) == len(BAD_SPECS) >= 20


def test_missing_spec_file_names_the_shipped_specs(tmp_path, capsys):
    """A SPEC that is neither a file nor a shipped name lists the shipped specs; exit 2."""
    assert main(["run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "'SPEC' must be a spec file or one of the shipped specs" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_plugin_that_exits_at_import_is_refused_not_taken_for_a_finished_command(spec_file, tmp_path, capsys,
                                                                                   command):
    """A spec's plugin that calls sys.exit(0) when imported: run and plan exit 2 naming it, not 0 having done
    nothing, and write nothing."""
    path = spec_file(GOOD.replace('plugins = ["tests.support.probe"]', 'plugins = ["tests.support.exits_at_import"]'))
    before = tree_state(tmp_path)
    assert main([command, str(path), *(["--out", str(tmp_path / "o"), "--quiet"] if command == "run" else [])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'plugins' module 'tests.support.exits_at_import' does not import (SystemExit: 0)" in err[0]
    assert tree_state(tmp_path) == before


def test_bad_out_uri_is_a_usage_error(spec_file, capsys):
    """An --out URI no filesystem understands: exit 2 naming --out."""
    assert main(["run", str(spec_file(GOOD)), "--out", "nosuchfs://bucket/x", "--quiet"]) == 2
    assert "'--out' must be a local path or a filesystem URI" in capsys.readouterr().err


def test_unknown_flag_exits_2():
    """argparse's own usage errors also exit with status 2."""
    with pytest.raises(SystemExit) as e:
        main(["run", "--frsh"])
    assert e.value.code == 2


def test_ranges_expand_as_written():
    """log2 and linear ranges expand to the listed values; sizes accept binary units."""
    spec = parse_spec(
        HEAD + '[axes]\nnamespace_size = { from = "1GiB", to = "9GiB", scale = "log2" }\n'
        "[axes.probe]\ni = { from = 0, to = 10, step = 5 }\ndelay_ms = { from = 0.0, to = 0.3, step = 0.1 }\n"
    )
    axes = dict(spec.blocks("probe")[0])
    assert axes["i"] == (0, 5, 10)
    assert axes["delay_ms"] == (0.0, 0.1, 0.2, 0.3)
    assert axes["explode"] == (False,)  # the axis default
    assert spec.points("probe") == 12


def test_model_table_overrides_a_shared_axis():
    """[axes.<model>] values replace the shared [axes] values for that model only."""
    spec = parse_spec(
        'name = "t"\nmodels = ["memmap"]\n[axes]\ncompound_order = ["auto"]\n'
        '[axes.memmap]\ncompound_order = [0, 9]\nnamespace_size = ["1GiB"]\n'
    )
    axes = dict(spec.blocks("memmap")[0])
    assert axes["compound_order"] == (0, 9)
    assert axes["namespace_size"] == (1 << 30,)


def test_measure_table_becomes_frozen_settings():
    """[measure] loads as a MeasureSettings (keys left out keep their defaults); no table gives the defaults."""
    spec = parse_spec(HEAD + "[measure]\nrepeats = 3\nspan_ms = 200\n")
    assert spec.settings["measured"] == MeasureSettings(repeats=3, span_ms=200)
    assert parse_spec(GOOD).settings["measured"] == MeasureSettings()
    with pytest.raises(SpecError, match=r"'measure.warmup' must be an integer >= 0 \(got -1\)"):
        parse_spec(HEAD + "[measure]\nwarmup = -1\n")


@pytest.mark.parametrize("name", ["default", "seed", "large"])
def test_shipped_specs_load(name):
    """The shipped specs are valid and of the sizes their purpose needs."""
    assert name in shipped_specs()
    spec = load_spec(name)
    if name == "default":
        assert set(spec.models) == {"memmap", "copy", "pfnmap", "young"} and spec.total_points >= 10_000
    if name == "large":
        assert spec.total_points >= 10_000_000


def test_a_portable_spec_carries_the_profile_file_it_names(tmp_path):
    """portable_spec gives the spec with its profile line naming a file beside it, and that file, so a
    staged copy elsewhere (a Ray job's working directory) loads the same profile."""
    from sweeps.spec.load import load_spec, portable_spec
    from workers.profiles import PROFILE_DIR

    (tmp_path / "profiles").mkdir()
    (tmp_path / "specs").mkdir()
    (tmp_path / "profiles" / "host.toml").write_text((PROFILE_DIR / "seed.toml").read_text())
    spec = tmp_path / "specs" / "s.toml"
    spec.write_text('name = "p"\nmodels = ["copy"]\nprofile = "../profiles/host.toml"\n[axes.copy]\ndst_offset = [0]\n')
    text, files = portable_spec(str(spec))
    assert 'profile = "host.toml"' in text and "[axes.copy]\ndst_offset = [0]" in text
    (tmp_path / "staged").mkdir()
    (tmp_path / "staged" / "spec.toml").write_text(text)
    for name, data in files.items():
        (tmp_path / "staged" / name).write_bytes(data)
    assert load_spec(str(tmp_path / "staged" / "spec.toml")).profile.digest() == load_spec(str(spec)).profile.digest()
    assert portable_spec("default") == ((load_spec("default").text), {})


COSTED = 'name = "c"\nmodels = ["costed"]\nplugins = ["tests.support.costed"]\n[axes.costed]\ni = [0, 3]\n'


def test_a_plugins_default_costs_join_the_specs_profile_and_a_profile_file_overrides_them(tmp_path):
    """The spec's profile holds the model's declared default cost; a profile file's own [costed] entry wins."""
    assert parse_spec(COSTED).profile.value("costed", "step_ns") == 2.0
    (tmp_path / "p.toml").write_text('name = "p"\nbase = "seed"\n[costed]\n'
                                     'step_ns = { value = 5.0, unit = "ns", source = "assumed" }\n')
    assert parse_spec('profile = "p.toml"\n' + COSTED, base_dir=tmp_path).profile.value("costed", "step_ns") == 5.0


def test_a_plugins_changed_default_cost_changes_its_chunk_ids_digest_and_rows(monkeypatch):
    """Another default cost gives new chunk ids and computation digest, and evaluation prices with it."""
    from sweeps.run.computation import record
    from sweeps.run.chunks import plan
    from sweeps.spec.grid import decode, grid_for
    from workers import evaluate, get_model
    from workers.profiles import Quantity

    def computed(spec):
        points = decode(grid_for(spec, "costed"), 0, 2).drop("point_id")
        rows = evaluate(get_model("costed"), points, spec.profile)
        return [c.chunk_id for c in plan(spec)], record(spec)["digest"], rows["metric_time_ns"].to_list()

    ids, digest, times = computed(parse_spec(COSTED))
    assert times == [0.0, 6.0]
    monkeypatch.setattr(get_model("costed"), "costs", {"step_ns": Quantity(value=4.0, unit="ns", source="assumed")})
    new_ids, new_digest, new_times = computed(parse_spec(COSTED))
    assert not set(new_ids) & set(ids) and new_digest != digest and new_times == [0.0, 12.0]
