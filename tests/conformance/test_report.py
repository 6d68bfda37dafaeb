"""The report renderers: terminal table, JSON (against its schema), Markdown, HTML and its screenshot."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from markdown_it import MarkdownIt
from PIL import Image
from rich.console import Console

from adcore.conformance import report as rep
from adcore.conformance.results import Cell, Report, Subject, Worst

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
FUZZ_SOURCE = "def fuzz_7(x):\n    return np.log(np.sin(x) * x)\n"
LOG_DETAIL = "at (1,): got 0.84, expected -0.84 (reference: symbolic)"
MATMUL_MESSAGE = "ValueError: matmul: shapes (2, 3) and (2, 3) not aligned"
# the matrix every renderer must show for sample_report(), row by row (ops, then cases, then fuzz)
EXPECTED_ROWS = {
    "sin": ["✓", "✓", "✓", "✓"],
    "log": ["✓", "✗ 3.1e-01", "✓", "✓"],
    "matmul": ["✓", "✓", "✓", "error"],
    "mlp_loss": ["✓", "✓", "", "n/a"],
    "fuzz_7": ["✓", "✓", "✗ inf", ""],
}
# the HTML heatmap's rows: the failing subjects first, then each kind under its own header
HTML_GROUPS = {
    "failing (3)": ["log", "matmul", "fuzz_7"],
    "ops (1)": ["sin"],
    "composite cases (1)": ["mlp_loss"],
}
HTML_ROWS = [name for names in HTML_GROUPS.values() for name in names]


def agreeing(subject: str, backend: str, dtype: str) -> Cell:
    worst = Worst("#0 x: float64 (3,)", "jacobian", 1e-16, 2e-16, 2e-9, "at (0,): got 0.5, expected 0.5")
    return Cell(subject, backend, dtype, "agrees", checks=6, worst=worst)


def sample_report() -> Report:
    """Three ops, a case and a fuzz program over four backends and two dtypes; in the subjects
    list the fuzz program comes first, so the renderers must put ops first themselves."""
    subjects = [
        Subject("fuzz_7", "fuzz", "adcore", source=FUZZ_SOURCE),
        Subject("sin", "op", "core"),
        Subject("log", "op", "core"),
        Subject("matmul", "op", "core"),
        Subject("mlp_loss", "case", "examples"),
    ]
    cells = []
    for dtype in ("float64", "float32"):
        cells += [agreeing(s, b, dtype) for s in ("sin", "log", "matmul") for b in BACKENDS]
        cells += [agreeing("mlp_loss", b, dtype) for b in ("reverse", "forward")]
        cells += [agreeing("fuzz_7", b, dtype) for b in ("reverse", "forward")]
    log_worst = Worst("#2 x: float32 (3,)", "jacobian", 0.2, 0.31, 2e-3, LOG_DETAIL)
    fuzz_worst = Worst(
        "#0 x: float64 (4,)", "jvp", math.nan, math.inf, 2e-9, "at (3,): got nan, expected 1.0"
    )
    failing = [
        Cell("log", "forward", "float32", "disagrees", 6, log_worst, "1 of 6 checks out of tolerance"),
        Cell("matmul", "symbolic", "float64", "error", message=MATMUL_MESSAGE),
        Cell("matmul", "symbolic", "float32", "error", message=MATMUL_MESSAGE),
        Cell("mlp_loss", "symbolic", "float64", "unsupported", message="no sympy rule for conv2d"),
        Cell("fuzz_7", "numeric", "float64", "disagrees", 3, fuzz_worst),
    ]
    replaced = {(c.subject, c.backend, c.dtype) for c in failing}
    cells = [c for c in cells if (c.subject, c.backend, c.dtype) not in replaced] + failing
    versions = {"core": "0.1.0", "reverse": "0.1.0"}
    return Report(subjects, BACKENDS, ["float64", "float32"], cells, seconds=1.25, seed=3, versions=versions)


def one_subject_report(name: str) -> Report:
    """A report with a single op that agrees on reverse: for escaping tests."""
    return Report(
        [Subject(name, "op", "core")], ["reverse"], ["float64"], [agreeing(name, "reverse", "float64")]
    )


# ---------------------------------------------------------------- table


def render_text(report: Report, **console_options) -> str:
    console = Console(file=io.StringIO(), width=160, **console_options)
    rep.render_table(report, console)
    return console.file.getvalue()


def table_row(text: str, subject: str) -> str:
    """The line of the rendered table whose first column is `subject`."""
    return next(line for line in text.splitlines() if line.startswith(f"│ {subject} "))


def test_table_names_every_backend_subject_and_the_summary() -> None:
    report = sample_report()
    text = render_text(report)
    header = next(line for line in text.splitlines() if "subject" in line)
    assert all(backend in header for backend in BACKENDS)
    assert all(table_row(text, name) for name in EXPECTED_ROWS)
    assert report.summary() in text
    assert text.rstrip().endswith(report.summary())
    assert "\x1b[" not in text  # a file is not a terminal: no color codes


def test_table_rows_come_in_kind_order_with_the_right_marks() -> None:
    text = render_text(sample_report())
    rows = [line for line in text.splitlines() if line.startswith("│ ")]  # the header row uses ┃
    assert [row.split()[1] for row in rows] == list(EXPECTED_ROWS)
    for subject, marks in EXPECTED_ROWS.items():
        cells = [c.strip() for c in table_row(text, subject).strip("│").split("│")]
        assert cells == [subject, *marks]


def test_table_lists_each_failing_cell_with_its_worst_sample() -> None:
    text = render_text(sample_report())
    assert "log · forward · float32: disagrees" in text
    assert "check: jacobian" in text and "sample: #2 x: float32 (3,)" in text
    assert LOG_DETAIL in text
    assert "matmul · symbolic · float64: error" in text and MATMUL_MESSAGE in text
    assert "fuzz_7 · numeric · float64: disagrees" in text
    assert "return np.log(np.sin(x) * x)" in text  # the fuzz program, ready to paste
    order = [text.index(f"{s} · ") for s in ("log", "matmul", "fuzz_7")]
    assert order == sorted(order)
    assert "mlp_loss · symbolic" not in text  # unsupported is not a failure


def test_table_is_colored_on_a_terminal_and_plain_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    red = "\x1b[1;31m"  # rich's "bold red"
    assert red in render_text(sample_report(), force_terminal=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert red not in render_text(sample_report(), force_terminal=True)


# ---------------------------------------------------------------- JSON


def strict_json(text: str):
    """json.loads that refuses the non-standard Infinity/NaN tokens Python's json accepts."""

    def refuse(token: str):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = rep.load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_json_validates_against_the_schema() -> None:
    document = strict_json(rep.to_json(sample_report()))
    jsonschema.Draft202012Validator(rep.load_schema()).validate(document)
    assert document["ok"] is False and document["summary"] == sample_report().summary()
    assert len(document["cells"]) == len(sample_report().cells)


def first_cell(document: dict) -> dict:
    return document["cells"][0]


@pytest.mark.parametrize(
    "breakage",
    [
        lambda d: first_cell(d).update(status="maybe"),
        lambda d: first_cell(d).pop("checks"),
        lambda d: first_cell(d)["worst"].update(rel_error="inf"),  # only "Infinity" and "NaN" are allowed
        lambda d: first_cell(d)["worst"].update(abs_error=-1.0),
        lambda d: d["subjects"][0].update(kind="test"),
        lambda d: d.pop("seed"),
        lambda d: d.update(seconds="fast"),
        lambda d: d.update(colour="red"),
        lambda d: d["cells"][-1]["worst"].pop("detail"),
    ],
    ids=[
        "status",
        "missing-checks",
        "inf-spelling",
        "negative-error",
        "kind",
        "no-seed",
        "seconds",
        "extra",
        "worst",
    ],
)
def test_schema_rejects_a_broken_document(breakage) -> None:
    document = strict_json(rep.to_json(sample_report()))
    breakage(document)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, rep.load_schema(), cls=jsonschema.Draft202012Validator)


def test_non_finite_errors_round_trip_through_their_string_names() -> None:
    document = strict_json(rep.to_json(sample_report()))
    fuzz = next(c for c in document["cells"] if c["subject"] == "fuzz_7" and c["status"] == "disagrees")
    assert fuzz["worst"]["rel_error"] == "Infinity" and fuzz["worst"]["abs_error"] == "NaN"
    # as docs/conformance.md says: float() reads them back
    assert float(fuzz["worst"]["rel_error"]) == math.inf
    assert math.isnan(float(fuzz["worst"]["abs_error"]))
    assert first_cell(document)["worst"]["rel_error"] == 2e-16  # finite numbers stay numbers


# ---------------------------------------------------------------- Markdown


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Every table markdown-it finds in text, as rows (header first) of cell texts."""
    tables: list[list[list[str]]] = []
    in_cell = False
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            tables[-1].append([])
        elif token.type in ("th_open", "td_open"):
            in_cell = True
        elif token.type == "inline" and in_cell:
            tables[-1][-1].append(token.content)
        elif token.type in ("th_close", "td_close"):
            in_cell = False
    return tables


def test_markdown_is_one_table_with_a_row_per_subject() -> None:
    [table] = markdown_tables(rep.to_markdown(sample_report()))
    assert table[0] == ["subject", *BACKENDS]
    assert table[1:] == [[subject, *marks] for subject, marks in EXPECTED_ROWS.items()]


def test_markdown_lists_the_failures_then_the_summary() -> None:
    report = sample_report()
    text = rep.to_markdown(report)
    assert "### Failures" in text and LOG_DETAIL in text and MATMUL_MESSAGE in text
    assert text.rstrip().endswith(f"**{report.summary()}**")
    fences = [t for t in MarkdownIt("commonmark").parse(text) if t.type == "fence"]
    assert [(f.info, f.content) for f in fences] == [("python", FUZZ_SOURCE)]


def test_markdown_escapes_pipes_in_cell_text() -> None:
    [table] = markdown_tables(rep.to_markdown(one_subject_report("where|select")))
    assert table == [["subject", "reverse"], ["where|select", "✓"]]


def test_markdown_code_spans_survive_backticks() -> None:
    assert rep.code_span("a ``b`` c") == "```a ``b`` c```"
    assert rep.code_span("`x`") == "`` `x` ``"


# ---------------------------------------------------------------- HTML


class PageParser(HTMLParser):
    """Collects the heatmap's body rows and group headers, the text of <pre> blocks and every tag
    with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.rows: list[dict] = []  # {"subject": str, "group": tbody class, "classes": [...], "texts": [...]}
        self.groups: list[str] = []  # the group header rows' texts, in order
        self.pre_text = ""
        self.text = ""
        self._in = {"heatmap": False, "tbody": False, "th": False, "td": False, "pre": False, "group": False}
        self._tbody = ""

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "table" and attributes.get("id") == "heatmap":
            self._in["heatmap"] = True
        if tag in ("tbody", "th", "td", "pre"):
            self._in[tag] = True
        if tag == "tbody":
            self._tbody = attributes.get("class", "")
        if self._in["heatmap"] and self._in["tbody"]:
            if tag == "tr" and attributes.get("class") == "group":
                self._in["group"] = True
                self.groups.append("")
            elif tag == "tr":
                self.rows.append({"subject": "", "group": self._tbody, "classes": [], "texts": []})
            elif tag == "td":
                self.rows[-1]["classes"].append(attributes.get("class"))
                self.rows[-1]["texts"].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._in["group"] = False
        if tag == "table":
            self._in["heatmap"] = False
        if tag in ("tbody", "th", "td", "pre"):
            self._in[tag] = False

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in["pre"]:
            self.pre_text += data
        if self._in["heatmap"] and self._in["tbody"] and self._in["group"]:
            self.groups[-1] += data
        elif self._in["heatmap"] and self._in["tbody"] and self.rows:
            if self._in["th"]:
                self.rows[-1]["subject"] += data
            elif self._in["td"]:
                self.rows[-1]["texts"][-1] += data


def parse_page(text: str) -> PageParser:
    parser = PageParser()
    parser.feed(text)
    parser.close()
    return parser


def test_html_heatmap_has_a_colored_cell_per_subject_and_backend() -> None:
    page = parse_page(rep.to_html(sample_report()))
    assert [row["subject"] for row in page.rows] == HTML_ROWS
    status_of = {"✓": "agrees", "error": "error", "n/a": "unsupported", "": "notrun"}
    for row in page.rows:
        marks = EXPECTED_ROWS[row["subject"]]
        assert row["texts"] == marks
        assert row["classes"] == [status_of.get(m, "disagrees") for m in marks]


def test_html_puts_failing_rows_first_and_each_kind_under_its_own_header() -> None:
    page = parse_page(rep.to_html(sample_report()))
    assert page.groups == list(HTML_GROUPS)
    assert [row["group"] for row in page.rows] == ["failing"] * 3 + ["op", "case"]
    # a failing row says its kind (shown by CSS after the name), so cases stay told apart from ops
    kinds = [a["data-kind"] for tag, a in page.tags if tag == "th" and "data-kind" in a]
    assert kinds == ["op", "op", "fuzz"]


def test_html_has_the_summary_and_the_legend_above_the_heatmap() -> None:
    report = sample_report()
    text = rep.to_html(report)
    grid = text.index('<table id="heatmap">')
    assert text.index(report.summary()) < grid and text.index('class="legend"') < grid
    assert text.index("<h2>Failures</h2>") > grid


def test_html_shows_the_legend_summary_and_each_failure() -> None:
    report = sample_report()
    page = parse_page(rep.to_html(report))
    assert report.summary() in page.text
    assert all(status in page.text for status in ("agrees", "disagrees", "error", "unsupported", "not run"))
    assert LOG_DETAIL in page.text and "#2 x: float32 (3,)" in page.text and MATMUL_MESSAGE in page.text
    assert page.pre_text == FUZZ_SOURCE
    assert sum(tag == "details" for tag, _ in page.tags) == len(report.failures())


def test_html_references_nothing_outside_the_page() -> None:
    text = rep.to_html(sample_report())
    page = parse_page(text)
    assert not [tag for tag, _ in page.tags if tag in ("link", "script", "img", "iframe")]
    assert not [a for _, a in page.tags if "src" in a]
    assert all(a["href"].startswith("#failure-") for _, a in page.tags if "href" in a)
    assert "url(" not in text and "@import" not in text


def test_html_escapes_names() -> None:
    page = parse_page(rep.to_html(one_subject_report("<b>x&y</b>")))
    assert page.rows[0]["subject"] == "<b>x&y</b>"
    assert "b" not in [tag for tag, _ in page.tags]


def test_html_colors_are_the_documented_ones() -> None:
    docs = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    for status, color in rep.COLORS.items():
        assert f"`{color}`" in docs, f"docs/conformance.md does not give {status}'s color {color}"


# ---------------------------------------------------------------- HTML in headless Chromium

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--force-color-profile=srgb",  # so a CSS color is that exact RGB in the screenshot
]


def chromium_screenshot(
    page: Path, png: Path, profile: Path, size: tuple[int, int] = (1280, 800)
) -> Image.Image:
    """Render the file `page` in headless Chromium and return the screenshot."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(
            "headless Chromium not found (apt-get install chromium); the HTML screenshot test runs in CI"
        )
    command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
    command += [f"--screenshot={png}", page.as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert png.exists(), f"chromium wrote no screenshot (exit {result.returncode}):\n{result.stderr[-2000:]}"
    return Image.open(png).convert("RGB")


def pixels_of(image: np.ndarray, css_color: str) -> np.ndarray:
    """A boolean mask of the pixels exactly this #rrggbb color."""
    rgb = [int(css_color[i : i + 2], 16) for i in (1, 3, 5)]
    return np.all(image == rgb, axis=-1)


def horizontal_bands(mask: np.ndarray, min_width: int, min_height: int) -> list[range]:
    """The runs of screen rows in which at least min_width pixels are set, at least min_height tall."""
    wide = np.flatnonzero(mask.sum(axis=1) >= min_width)
    runs = np.split(wide, np.flatnonzero(np.diff(wide) > 1) + 1) if wide.size else []
    return [range(run[0], run[-1] + 1) for run in runs if len(run) >= min_height]


def test_html_heatmap_renders_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(rep.to_html(sample_report()), encoding="utf-8")
    # the first screen of a 1280 x 800 window
    image = np.asarray(chromium_screenshot(page, tmp_path / "shot.png", tmp_path / "profile"))
    masks = {status: pixels_of(image, color) for status, color in rep.COLORS.items()}
    # a heatmap cell is >= 7em wide and 2.2em tall; legend swatches (1em) are too small to count
    rows = horizontal_bands(np.logical_or.reduce(list(masks.values())), min_width=80, min_height=20)
    assert len(rows) == len(HTML_ROWS), f"expected one band of colored cells per subject, found {len(rows)}"

    # the legend: a swatch of every status's color above the heatmap, in the first screen
    above = {status: int(mask[: rows[0].start].sum()) for status, mask in masks.items()}
    assert all(n >= 100 for n in above.values()), f"legend swatch pixels above the heatmap: {above}"

    def rows_with(status: str) -> list[int]:
        return [i for i, band in enumerate(rows) if masks[status][band.start : band.stop].sum() > 80 * 20]

    # HTML_ROWS: log, matmul, fuzz_7 (the failing rows first), sin, mlp_loss
    assert rows_with("agrees") == [0, 1, 2, 3, 4]
    assert rows_with("disagrees") == [0, 2]  # log and fuzz_7
    assert rows_with("error") == [1]  # matmul
    assert rows_with("unsupported") == [4]  # mlp_loss
    # the group header rows set the groups apart: a wider gap before sin (ops) and mlp_loss (cases)
    gaps = [rows[i + 1].start - rows[i].stop for i in range(len(rows) - 1)]
    assert gaps[2] > gaps[0] + 10 and gaps[3] > gaps[0] + 10, f"gaps between the rows: {gaps}"

    def red_column_center(row: int) -> float:
        return np.flatnonzero(masks["disagrees"][rows[row].start : rows[row].stop].any(axis=0)).mean()

    assert red_column_center(0) < red_column_center(2)  # forward's column is left of numeric's


# ---------------------------------------------------------------- write


@pytest.mark.parametrize("format", rep.FORMATS)
def test_write_to_a_file_gives_the_format(format: str, tmp_path: Path) -> None:
    report = sample_report()
    output = tmp_path / f"report.{format}"
    rep.write(report, format, output)
    text = output.read_text(encoding="utf-8")
    assert report.summary() in text and "\x1b[" not in text
    assert text.endswith("\n")
    if format == "json":
        assert strict_json(text)["summary"] == report.summary()


def test_write_without_output_goes_to_the_console_file() -> None:
    console = Console(file=io.StringIO(), width=160)
    rep.write(sample_report(), "markdown", console=console)
    assert console.file.getvalue() == rep.to_markdown(sample_report())


def test_write_names_the_formats_when_given_an_unknown_one() -> None:
    with pytest.raises(ValueError, match="table, json, markdown, html"):
        rep.write(sample_report(), "pdf")
