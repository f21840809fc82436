"""The model registry: models found through `memsweep.models` entry points, lazily, each held to the
contract; a broken plugin is one PluginError naming it and the rule it breaks."""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint

import polars as pl
import pytest

import workers.registry as registry
from tests.support import bad_models
from workers.exceptions import PluginError
from workers.registry import GROUP, MODELS, Plugin, Registry, column_dtypes, shipped_models

MODULE = "tests.support.bad_models"


def ep(attr: str, name: str = "good") -> EntryPoint:
    """A fake entry point naming an object of tests/support/bad_models.py."""
    return EntryPoint(name=name, value=f"{MODULE}:{attr}", group=GROUP)


@pytest.fixture
def discovering(monkeypatch):
    """A fresh registry whose discovery finds exactly the entry points given."""

    def make(*eps: EntryPoint) -> Registry:
        monkeypatch.setattr(registry, "entry_points", lambda: eps)
        return Registry()

    return make


def test_shipped_models_are_entry_points_of_memsweep_and_keep_the_contract():
    """The four shipped models come from memsweep's own entry points and load without a PluginError."""
    shipped = shipped_models()
    assert sorted(shipped) == ["copy", "memmap", "pfnmap", "young"]
    for name, model in shipped.items():
        assert MODELS[name] is model
        plugin = MODELS.plugin(name)
        assert plugin.value == f"workers.models.{name}:MODEL" and plugin.dist == "memsweep"


def test_no_two_shipped_models_write_one_column_with_two_dtypes():
    """Every param_* and metric_* column has one dtype across the shipped models (the README's
    pl.scan_parquet of a whole sweep folder failed on memmap's Int64 and copy's Float64 metric_lines_partial)."""
    seen: dict[str, tuple[object, str]] = {}
    for name, model in sorted(shipped_models().items()):
        for column, dtype in column_dtypes(model).items():
            first = seen.setdefault(column, (dtype, name))
            assert first[0] == dtype, f"{column}: {first[1]} writes {first[0]}, {name} writes {dtype}"
    assert seen["metric_lines_partial"] == (pl.Int64, "memmap")


def test_a_model_writing_a_shipped_column_with_another_dtype_is_refused_naming_both():
    """The rule holds by construction: a model that writes a column another model writes with another dtype
    does not register, and the error names the column, both models and both dtypes."""
    reg = Registry().load()  # the installed entry points: the shipped models
    with pytest.raises(PluginError, match=re.escape(
            "plugin module 'tests.support.other': column 'metric_lines_partial' must have one dtype in every model: "
            "model 'memmap' writes it as Int64 (got Float64 in model 'other'); give one of them another name.")):
        reg.register(bad_models.LINES_PARTIAL_AS_FLOAT, Plugin(name="tests.support.other"))
    assert "other" not in reg and "memmap" in reg


def test_discovery_waits_for_the_first_lookup(monkeypatch):
    """Creating the registry discovers nothing; the first lookup does, and finds a good plugin."""
    calls = []
    monkeypatch.setattr(registry, "entry_points", lambda: calls.append(1) or (ep("GOOD"),))
    reg = Registry()
    assert calls == []
    assert reg["good"] is bad_models.GOOD and list(reg) == ["good"] and calls == [1]
    assert reg.plugin("good") == Plugin(name="good", value=f"{MODULE}:GOOD")


RULES = [
    (ep("NO_SUCH_MODEL"), "it does not load \\(AttributeError: .*NO_SUCH_MODEL"),
    (EntryPoint(name="good", value="tests.support.no_such_module:MODEL", group=GROUP),
     "it does not load \\(ModuleNotFoundError: No module named 'tests.support.no_such_module'\\)"),
    (EntryPoint(name="good", value="tests.support.exits_at_import:MODEL", group=GROUP),
     "it does not load \\(SystemExit: 0\\)"),
    (ep("NOT_A_MODEL"), "the object must be a workers.model.Model instance \\(got builtins.dict\\)"),
    (ep("BAD_NAME"),
     "'name' must be a lower-case identifier matching \\[a-z\\]\\[a-z0-9_\\]\\* \\(got 'Good-Model'\\)"),
    (ep("EMPTY_NAME"), "'name' must be a lower-case identifier .* \\(got ''\\)"),
    (ep("GOOD", name="better"), "the entry point's name must be the model's name 'good' \\(got 'better'\\)"),
    (ep("NO_AXES"), "'axes' must be a non-empty tuple of workers.axes.Axis \\(got \\(\\)\\)"),
    (ep("DUPLICATE_AXES"), "'axes' must not repeat an axis name \\(got 'x' twice\\)"),
    (ep("METRICS_AS_MAPPING"), "'metrics' must be a tuple of workers.model.Metric \\(got \\{"),
    (ep("UNPREFIXED_METRIC"), "'metrics' columns must start with 'metric_' .*\\(got 'y'\\)"),
    (ep("BAD_DTYPE"), "'metrics\\['metric_y'\\].dtype' must be a polars DataType .*\\(got 'Int64'\\)"),
    (ep("UNDOCUMENTED_METRIC"), "'metrics\\['metric_y'\\].doc' must be a one-line doc of that metric \\(got ' '\\)"),
    (ep("BAD_BETTER"), "'metrics\\['metric_y'\\].better' must be one of \\['lower', 'higher'\\] or None "
                       "\\(got 'smaller'\\)"),
    (ep("UNKNOWN_HEADLINE"), "'headline' must be one of the model's metric columns \\(got 'metric_z'\\)"),
    (ep("COMPARISON_OF_UNKNOWN_AXIS"),
     "'report.comparison.axis' must be an axis of the model \\['x'\\] \\(got 'strategy'\\)"),
    (ep("COMPARISON_OF_UNKNOWN_METRIC"),
     "'report.comparison.metric' must be one of the model's metric columns \\(got 'metric_z'\\)"),
    (ep("BEST_KEY_NOT_AN_AXIS"), "'report.best_keys' must name axes of the model \\['x'\\] \\(got 'y'\\)"),
    (ep("LABELS_OF_UNKNOWN_AXIS"), "'report.value_labels' must name axes of the model \\['x'\\] \\(got 'param_x'\\)"),
    (ep("FIGURE_OF_ANOTHER_MODEL"),
     "'calibration.figures\\['good/one'\\].model' must be 'good', the model declaring it \\(got 'young'\\)"),
    (ep("FIGURE_WITH_UNKNOWN_AXIS"),
     "'calibration.figures\\['good/one'\\].params' must name axes of the model \\['x'\\] \\(got 'namespace_size'\\)"),
    (ep("MEASUREMENT_OF_UNKNOWN_METRIC"),
     "'measurement.metric' must name the model's metric columns \\(got 'metric_z'\\)"),
    (ep("MEASUREMENT_NAMED_BY_UNKNOWN_AXIS"),
     "'measurement.id_axes' must name axes of the model \\['x'\\] \\(got 'namespace_size'\\)"),
    (ep("MEASUREMENT_WITHOUT_PLANNER_OR_REASON"),
     "'measurement.reason' must say why the model cannot be measured when it has no planner \\(got ''\\)"),
    (ep("MEASUREMENT_OF_UNKNOWN_CACHE"),
     "'measurement.host_caches' must be a mapping of a tuple \\(a string, a string\\) to one of "
     "\\['l1d_bytes', 'l2_bytes', 'last_level'\\] \\(got \\{\\('good', 'llc_bytes'\\): 'l3'\\}\\)"),
    (ep("FINDING_OF_UNKNOWN_COLUMN"),
     "'report.findings\\['y_by_x'\\]' must name the model's param_/metric_ columns \\(got 'metric_z'\\)"),
    (ep("FINDING_WITH_UNKNOWN_PLACEHOLDER"),
     "'report.findings\\['y_by_x'\\].text' may use only the placeholders \\[.*'low_at'.*\\] \\(got 'high'\\)"),
    (ep("FINDING_WITHOUT_FIGURE_ID"),
     "'report.findings\\['best_x'\\].figure' must be a string \\(got 3\\)"),
    (ep("TABLE_OF_A_BAD_CALL"),
     "'report.tables\\['y_by_z'\\].call' must name a function as 'package.module:function' \\(got 'tables.y by z'\\)"),
    (ep("PLOT_OF_UNKNOWN_COLUMN"),
     "'report.plots\\['good_y'\\]' must name the model's param_/metric_ columns \\(got 'metric_z'\\)"),
    (ep("PLOT_NAMED_PARITY"),
     "'report.plots' ids must be .*, unique and not 'parity' or 'measured_vs_model' \\(got 'parity'\\)"),
    (ep("PLOT_WITH_UNKNOWN_SCALE"),
     "'report.plots\\['good_y'\\].x\\['param_x'\\].scale' must be one of \\['size', 'log', .*\\] \\(got 'log3'\\)"),
    (ep("PLOT_WITH_UNKNOWN_OP"),
     "'report.plots\\['good_y'\\].where\\['param_x'\\].op' must be one of \\['==', .*\\] \\(got '=~'\\)"),
    (ep("PLOT_WITH_A_NUMBER_FOR_X"),
     "'report.plots\\['good_y'\\].x' must be a string or workers.plots.X or a tuple whose items are each a string or workers.plots.X \\(got 3\\)"),
    (ep("PLOT_WITH_A_METRIC_PER_PANEL_WITHOUT_SPLIT"),
     "'report.plots\\['good_y'\\].y.metric' maps split values to metrics: the panels need a 'split' column "
     "\\(got split None\\)"),
    (ep("FIGURE_OF_A_BAD_CALL"),
     "'report.plots\\['good_best'\\].call' must name a function as 'package.module:function' \\(got 'good:best x'\\)"),
    (ep("ORDER_OF_ONE_COST"),
     "'calibration.cost_orders' must name two different cost keys, each .* \\(got 'llc_gbs', 'llc_gbs'\\)"),
    (ep("ASSUMPTION_WITHOUT_TEXT"),
     "'calibration.assumptions\\[0\\]' must have a name and a text saying what is assumed \\(got 'warm', ' '\\)"),
    (ep("PLOTS_ON_THE_MODEL"),
     "'plots' must be declared in the model's 'report' \\(workers.model.Report\\(plots=...\\)\\), not on the model "
     "itself \\(got a 'plots' attribute of Variant\\)"),
    (ep("FIGURES_AS_A_METHOD"),
     "'figures' must be declared in the model's 'calibration' \\(workers.model.Calibration\\(figures=...\\)\\), "
     "not on the model itself \\(got a 'figures' attribute of Variant\\)"),
]


@pytest.mark.parametrize("entry_point,rule", RULES, ids=[e.value.split(":")[-1] + "-" + e.name for e, _ in RULES])
def test_a_broken_plugin_is_one_error_naming_it_and_the_rule(discovering, entry_point, rule):
    """Each contract rule: the error names the entry point (name = 'module:attr'), the rule, what to do."""
    reg = discovering(entry_point)
    named = re.escape(f"{GROUP} entry point '{entry_point.name}' = '{entry_point.value}': ")
    with pytest.raises(PluginError, match=f"^{named}{rule}.* To go on: fix the plugin or uninstall its package"):
        reg.load()
    with pytest.raises(PluginError):  # nothing half-loaded is kept: every lookup reports it again
        reg["good"]


def test_two_plugins_with_one_name_are_refused_naming_both(discovering):
    """Two entry points whose models share a name: refused, both named."""
    reg = discovering(ep("GOOD"), ep("TWIN"))
    with pytest.raises(PluginError, match=f"two plugins declare a model named 'good': .*'{MODULE}:GOOD' and "
                                          f".*'{MODULE}:TWIN'"):
        reg.load()


def test_a_registered_model_clashing_with_an_entry_point_is_refused(discovering):
    """A `plugins` module's model of an entry point model's name: refused at discovery, both named."""
    reg = discovering(ep("GOOD"))
    reg.register(bad_models.TWIN, Plugin(name="tests.support.twin"))
    with pytest.raises(PluginError, match="entry point 'good' = .* and plugin module 'tests.support.twin'"):
        reg.load()


def test_register_checks_the_contract_and_names_the_module(discovering):
    """register() (a spec's `plugins` modules) holds the model to the same contract."""
    reg = discovering(ep("GOOD"))
    with pytest.raises(PluginError, match="^plugin module 'tests.support.x': 'metrics\\['metric_y'\\].doc' must be "
                                          ".* To go on: fix the module or take it out of the spec's 'plugins'"):
        reg.register(bad_models.UNDOCUMENTED_METRIC, Plugin(name="tests.support.x"))
    reg.register(bad_models.GOOD, Plugin(name=MODULE))  # the entry point's own model again: a no-op
    assert dict(reg) == {"good": bad_models.GOOD}


def test_reload_rediscovers_and_keeps_registered_models(discovering, monkeypatch):
    """reload() forgets the entry points (a plugin installed meanwhile is found); registered models stay."""
    reg = discovering(ep("GOOD"))
    reg.register(bad_models.variant(name="other"), Plugin(name="tests.support.other"))
    assert sorted(reg) == ["good", "other"]
    monkeypatch.setattr(registry, "entry_points", lambda: ())
    reg.reload()
    assert sorted(reg) == ["other"]


def test_missing_shipped_entry_points_say_to_reinstall(monkeypatch):
    """No entry point of memsweep's own distribution: PluginError saying to reinstall memsweep."""
    monkeypatch.setattr(registry.importlib.metadata, "entry_points", lambda group: ())
    with pytest.raises(PluginError, match="no memsweep.models entry points of memsweep itself .* reinstall it"):
        registry.entry_points()
