"""Pure figure builders and forms: escaping for Plotly, units on axes, step from width."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboard import charts
from dashboard.forms import step_for

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_label_uses_numeric_entities_plotly_decodes() -> None:
    assert charts.label('<img src=x onerror="a">') == "&#60;img src=x onerror=&#34;a&#34;&#62;"


def test_node_figures_escape_device_names_and_label_every_axis() -> None:
    columns = {"times": [T0], "util": [90.0], "tensor": [50.0], "power": [300.0], "nvlink_bw": [1.0],
               "nvlink_errors": [0.0]}  # fmt: skip
    figure = charts.node_gpus({"<b>0</b>": columns}, [(T0, 0, 79, "<script>fell off</script>")], T0)
    names = {trace["name"] for trace in figure["data"]}
    assert "GPU &#60;b&#62;0&#60;/b&#62;" in names and not any("<b>" in n for n in names)
    xid = next(trace for trace in figure["data"] if trace["name"] == "XID")
    assert "<script>" not in xid["text"][0]
    titles = [axis["title"]["text"] for key, axis in figure["layout"].items() if key.startswith(("xaxis", "yaxis"))
              and "title" in axis]  # fmt: skip
    assert {"util (%)", "tensor active (%)", "power (W)", "time (UTC)"} <= set(titles)


def test_utilization_has_reported_and_real_per_series() -> None:
    figure = charts.utilization([T0], {"cluster": ([90.0], [40.0]), "training": ([95.0], [45.0])})
    assert [t["name"] for t in figure["data"]] == [
        "cluster util (reported)", "cluster tensor active (real)",
        "training util (reported)", "training tensor active (real)",
    ]  # fmt: skip
    assert figure["layout"]["yaxis"]["title"]["text"] == "utilization (%)"


def test_step_follows_plot_width() -> None:
    assert step_for(timedelta(hours=1), 1200) == 30
    assert step_for(timedelta(hours=24), 1200) == 300
    assert step_for(timedelta(days=7), 1200) == 1800
    assert step_for(timedelta(days=7), 300) == 7200
