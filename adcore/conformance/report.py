"""Render a conformance Report as a terminal table, JSON, Markdown or a self-contained HTML page.

Every format shows the same matrix: one row per subject (ops, then cases, then fuzz
programs; the HTML page puts the failing rows first), one column per backend and the vmap
column (Report.columns: vmap against a loop over the batch, adcore.conformance.batching), each
cell the worst verdict over the dtypes run; then the worst sample of each failing (subject, backend,
dtype); then `Report.summary()`. A failing cell's number is its relative error, Worst.figure(),
the same in every format and in the pytest plugin's message.
"""

from __future__ import annotations

import html
import json
import math
import re
import sys
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from adcore.conformance.results import Cell, Report, Subject, is_complex_dtype

FORMATS = ("table", "json", "markdown", "html")
KIND_ORDER = {"op": 0, "case": 1, "fuzz": 2}
# JSON has no inf or nan: to_json writes these strings instead, and float() reads them back
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
NAN = "NaN"
# the HTML heatmap's cell colors (documented in docs/conformance.md; the screenshot test looks for them)
COLORS = {"agrees": "#2ca02c", "disagrees": "#d62728", "error": "#e6550d", "unsupported": "#bdbdbd"}
TABLE_STYLES = {
    "agrees": "green",
    "disagrees": "bold red",
    "error": "bold red",
    "unsupported": "bright_black",
}


# ---------------------------------------------------------------- shared helpers


def ordered_subjects(report: Report) -> list[Subject]:
    """The report's subjects as rows: ops, then cases, then fuzz programs, each in report order."""
    return sorted(report.subjects, key=lambda s: KIND_ORDER[s.kind])


def ordered_failures(report: Report) -> list[Cell]:
    """Every failing (subject, backend, dtype) cell, in row, column and dtype order."""
    rows = {s.name: i for i, s in enumerate(ordered_subjects(report))}
    columns = {b: i for i, b in enumerate(report.columns)}
    dtypes = {d: i for i, d in enumerate(report.dtypes)}
    return sorted(
        report.failures(),
        key=lambda c: (rows.get(c.subject, len(rows)), columns.get(c.backend, 0), dtypes.get(c.dtype, 0)),
    )


COMPLEX_MARK = "ℂ"  # after the name of a subject also checked in complex dtypes


def subject_label(subject: Subject, complex_subjects: set[str]) -> str:
    """The subject's name as its row shows it: `exp ℂ` where it was also checked in complex dtypes
    (Report.complex_subjects)."""
    return f"{subject.name} {COMPLEX_MARK}" if subject.name in complex_subjects else subject.name


def complex_note(report: Report) -> str:
    """What the mark means, where some row has it; else ""."""
    if not report.complex_subjects():
        return ""
    complex_ = "/".join(d for d in report.dtypes if is_complex_dtype(d))
    return f"{COMPLEX_MARK}: also checked in {complex_}, on its real and imaginary parts"


def cell_text(cell: Cell | None) -> str:
    """What a matrix cell says: ✓, ✗ 3.1e-01 (the cell's relative error), error, n/a, or nothing
    when not run."""
    if cell is None:
        return ""
    if cell.status == "disagrees":
        return f"✗ {cell.worst.figure()}" if cell.worst is not None else "✗"
    return {"agrees": "✓", "error": "error", "unsupported": "n/a"}[cell.status]


def failure_fields(cell: Cell) -> list[tuple[str, str]]:
    """The facts about one failing cell worth printing, as (label, text) pairs."""
    fields = []
    if cell.status == "disagrees" and cell.worst is not None:
        worst = cell.worst
        fields += [("check", worst.check), ("sample", worst.sample)]
        fields += [("error", worst.error_text())] if worst.error_text() else []
        fields += [("detail", worst.detail)] if worst.detail else []
    if cell.message:
        fields.append(("message", cell.message))
    return fields


def failure_title(cell: Cell) -> str:
    """subject · backend · dtype: status"""
    return f"{cell.subject} · {cell.backend} · {cell.dtype}: {cell.status}"


def fuzz_source(report: Report, cell: Cell) -> str:
    """The Python source of the fuzz program a failing cell belongs to, or ""."""
    return next((s.source for s in report.subjects if s.name == cell.subject and s.kind == "fuzz"), "")


# ---------------------------------------------------------------- terminal table


def render_table(report: Report, console: Console | None = None) -> None:
    """Print the matrix, the failing cells' worst samples and the summary line to a rich console."""
    console = console or Console()
    console.print(matrix_table(report))
    if note := complex_note(report):
        console.print(Text(note))
    for cell in ordered_failures(report):
        console.print(Text(f"✗ {failure_title(cell)}", style=TABLE_STYLES[cell.status]))
        for label, text in failure_fields(cell):
            console.print(Text(f"    {label}: {text}"))
        if source := fuzz_source(report, cell):
            console.print(Text("    source:\n" + textwrap.indent(source.rstrip("\n"), " " * 8)))
    console.print(Text(report.summary(), style="bold green" if report.ok else "bold red"))


def matrix_table(report: Report) -> Table:
    """The subjects × backends matrix as a rich Table, one section per subject kind."""
    table = Table(title="conformance", title_justify="left", header_style="bold")
    table.add_column("subject", no_wrap=True)
    for backend in report.columns:
        table.add_column(backend, justify="center", no_wrap=True)
    subjects, marked = ordered_subjects(report), report.complex_subjects()
    for i, subject in enumerate(subjects):
        cells = [report.cell(subject.name, backend) for backend in report.columns]
        marks = [Text(cell_text(c), style=TABLE_STYLES[c.status]) if c else Text("") for c in cells]
        last_of_kind = i + 1 == len(subjects) or subjects[i + 1].kind != subject.kind
        table.add_row(Text(subject_label(subject, marked)), *marks, end_section=last_of_kind)
    return table


# ---------------------------------------------------------------- JSON


def to_json(report: Report) -> str:
    """The report as strict JSON: report.to_dict() with inf/-inf/nan written as "Infinity"/"-Infinity"/"NaN"."""
    return json.dumps(encode_non_finite(report.to_dict()), indent=2, allow_nan=False, ensure_ascii=False)


def encode_non_finite(value: Any) -> Any:
    """A copy of JSON-ready data with every non-finite float replaced by its string name."""
    if isinstance(value, float) and not math.isfinite(value):
        return NAN if math.isnan(value) else NON_FINITE[value]
    if isinstance(value, dict):
        return {k: encode_non_finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_non_finite(v) for v in value]
    return value


def load_schema() -> dict:
    """The JSON Schema (draft 2020-12) that to_json's output satisfies."""
    text = resources.files("adcore.conformance").joinpath("report.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


# ---------------------------------------------------------------- Markdown


def to_markdown(report: Report) -> str:
    """A GitHub-flavoured Markdown table of the matrix, a list of failures and the summary line."""
    header = ["subject", *report.columns]
    lines = [markdown_row(header), markdown_row(["---"] * len(header))]
    marked = report.complex_subjects()
    for subject in ordered_subjects(report):
        cells = [cell_text(report.cell(subject.name, b)) for b in report.columns]
        lines.append(markdown_row([subject_label(subject, marked), *cells]))
    if note := complex_note(report):
        lines += ["", note]
    failures = ordered_failures(report)
    if failures:
        lines += ["", "### Failures", ""]
        lines += [markdown_failure(report, cell) for cell in failures]
    lines += ["", f"**{report.summary()}**", ""]
    return "\n".join(lines)


def markdown_row(texts: list[str]) -> str:
    """One table row, with | escaped and line breaks flattened so each cell stays one cell."""
    cells = [" ".join(t.replace("|", "\\|").split()) for t in texts]
    return "| " + " | ".join(cells) + " |"


def markdown_failure(report: Report, cell: Cell) -> str:
    """One list item per failing cell; free text goes in code spans so it is shown as written."""
    lines = [f"- **{code_span(cell.subject)}** · {cell.backend} · {cell.dtype}: {cell.status}"]
    lines += [f"  - {label}: {code_span(text)}" for label, text in failure_fields(cell)]
    if source := fuzz_source(report, cell):
        fence = "`" * max(3, longest_backtick_run(source) + 1)
        lines += [
            "",
            f"  {fence}python",
            *(f"  {line}" for line in source.rstrip("\n").split("\n")),
            f"  {fence}",
        ]
    return "\n".join(lines)


def code_span(text: str) -> str:
    """`text` as a Markdown code span, whatever backticks it contains."""
    text = " ".join(text.split())
    ticks = "`" * (longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def longest_backtick_run(text: str) -> int:
    """The length of the longest run of backticks in text."""
    return max((len(run) for run in re.findall("`+", text)), default=0)


# ---------------------------------------------------------------- HTML

HTML_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; background: #fff; }
h1 { margin: 0 0 0.3em; font-size: 1.5em; }
#heatmap { border-collapse: separate; border-spacing: 3px; }
#heatmap th { padding: 0 0.8em; text-align: left; font-weight: 600; }
#heatmap thead th { text-align: center; }
#heatmap td { min-width: 7em; height: 2.2em; text-align: center; font-family: monospace; }
#heatmap td a { color: inherit; text-decoration: none; display: block; }
#heatmap tr.group th { padding: 0.9em 0 0.2em; border-bottom: 2px solid #888; color: #555; font-size: 0.85em; letter-spacing: 0.05em; text-transform: uppercase; }
#heatmap th[data-kind]::after { content: " · " attr(data-kind); color: #888; font-weight: 400; }
td.agrees, td.disagrees, td.error { color: #fff; }
td.notrun, .legend span.notrun { border: 1px dashed #bbb; }
.legend { margin: 0.4em 0; }
.legend span { display: inline-block; width: 1em; height: 1em; vertical-align: middle; margin: 0 0.3em 0 1em; }
.legend span:first-child { margin-left: 0; }
.legend small { display: block; margin-top: 0.3em; color: #555; }
#summary { font-weight: 600; margin: 0.3em 0; }
#summary.failed { color: #d62728; }
details { margin: 0.6em 0; padding-left: 0.6em; border-left: 4px solid #ddd; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
dt { font-weight: 600; }
dd { margin: 0; font-family: monospace; white-space: pre-wrap; }
pre { background: #f5f5f5; padding: 0.6em; overflow-x: auto; }
"""
# the heatmap's row groups after the failing one, each under its own header row
GROUPS = {"op": "ops", "case": "composite cases", "fuzz": "random programs"}


def to_html(report: Report) -> str:
    """One self-contained HTML page: the summary and the legend, then the matrix as a colored
    heatmap (failing rows first, then ops, cases and fuzz programs, each group under its own
    header), then the failures."""
    failures = ordered_failures(report)
    summary_class = "" if report.ok else ' class="failed"'
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">',
        f"<title>adcore conformance: {'passed' if report.ok else 'failed'}</title>",
        f"<style>{HTML_STYLE}{html_status_colors()}</style>\n</head>\n<body>",
        "<h1>adcore conformance</h1>",
        f'<p id="summary"{summary_class}>{html.escape(report.summary())}</p>',
        html_legend(complex_note(report)),
        html_heatmap(report, failures),
        f"<p>seed {report.seed}; plugins: {html.escape(html_versions(report))}</p>",
    ]
    if failures:
        parts.append("<h2>Failures</h2>")
        parts += [html_failure(report, cell, i) for i, cell in enumerate(failures)]
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)


def html_status_colors() -> str:
    """One CSS rule per status giving heatmap cells and legend swatches their fixed color."""
    return "".join(f"td.{s}, .legend span.{s} {{ background: {c}; }}\n" for s, c in COLORS.items())


def html_heatmap(report: Report, failures: list[Cell]) -> str:
    """The <table id="heatmap">: a <tbody> per group of rows (failing, ops, cases, fuzz), a row
    per subject, a colored cell per backend linking to its failure."""
    anchors: dict[tuple[str, str], int] = {}
    for i, cell in enumerate(failures):
        anchors.setdefault((cell.subject, cell.backend), i)
    failing = {cell.subject for cell in failures}
    subjects, marked = ordered_subjects(report), report.complex_subjects()
    groups = [("failing", "failing", [s for s in subjects if s.name in failing])]
    groups += [
        (kind, title, [s for s in subjects if s.kind == kind and s.name not in failing])
        for kind, title in GROUPS.items()
    ]
    head = "".join(f"<th>{html.escape(b)}</th>" for b in report.columns)
    bodies = []
    for group, title, members in groups:
        if not members:
            continue
        rows = [
            f'<tr class="group"><th colspan="{len(report.columns) + 1}">{title} ({len(members)})</th></tr>'
        ]
        for subject in members:
            tds = "".join(
                html_cell(report.cell(subject.name, b), anchors.get((subject.name, b)))
                for b in report.columns
            )
            kind = f' data-kind="{html.escape(subject.kind)}"' if group == "failing" else ""
            mark = f' <small class="complex">{COMPLEX_MARK}</small>' if subject.name in marked else ""
            rows.append(
                f'<tr><th title="{html.escape(subject.kind)}"{kind}>{html.escape(subject.name)}{mark}</th>{tds}</tr>'
            )
        bodies.append(f'<tbody class="{group}">\n' + "\n".join(rows) + "\n</tbody>")
    body = "\n".join(bodies)
    return f'<table id="heatmap">\n<thead><tr><th>subject</th>{head}</tr></thead>\n{body}\n</table>'


def html_cell(cell: Cell | None, anchor: int | None) -> str:
    """One heatmap <td>: colored by status, its tooltip the dtypes, checks and worst comparison."""
    if cell is None:
        return '<td class="notrun" title="not run"></td>'
    tooltip = f"{cell.status} ({cell.dtype}): {cell.checks} checks"
    if cell.worst is not None and cell.worst.error_text():
        tooltip += f"; worst: {cell.worst.check}, {cell.worst.error_text()}"
    text = html.escape(cell_text(cell))
    if anchor is not None:
        text = f'<a href="#failure-{anchor}">{text}</a>'
    return f'<td class="{cell.status}" title="{html.escape(tooltip)}">{text}</td>'


def html_legend(note: str = "") -> str:
    """A line of colored swatches naming each status, what a red cell's number is, and `note`
    (complex_note) where given."""
    items = "".join(f'<span class="{s}"></span>{s}' for s in COLORS)
    number = (
        "✗ 1.4e-02: the cell's relative error, |got − expected| / the reference's largest |entry|, "
        "at the entry furthest out of tolerance (docs/conformance.md)"
    )
    notes = "".join(f"<small>{html.escape(text)}</small>" for text in (number, note) if text)
    return f'<p class="legend">{items}<span class="notrun"></span>not run{notes}</p>'


def html_versions(report: Report) -> str:
    """The plugin versions as one line of text."""
    return ", ".join(f"{name} {version}" for name, version in report.versions.items()) or "none recorded"


def html_failure(report: Report, cell: Cell, index: int) -> str:
    """A <details> block with the worst sample of one failing cell (and the fuzz program's source)."""
    rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in failure_fields(cell))
    source = fuzz_source(report, cell)
    pre = f"<pre><code>{html.escape(source)}</code></pre>" if source else ""
    title = html.escape(failure_title(cell))
    return f'<details id="failure-{index}" open><summary>{title}</summary><dl>{rows}</dl>{pre}</details>'


# ---------------------------------------------------------------- writing


def write(
    report: Report, format: str, output: str | Path | None = None, console: Console | None = None
) -> None:
    """Write the report in one of FORMATS to the file `output`, or to the console (stdout) when None."""
    if format not in FORMATS:
        raise ValueError(f"unknown report format {format!r}; choose one of {', '.join(FORMATS)}")
    if format == "table":
        if output is None:
            render_table(report, console)
        else:
            with open(output, "w", encoding="utf-8") as file:
                render_table(report, Console(file=file, width=160, no_color=True))
        return
    text = {"json": to_json, "markdown": to_markdown, "html": to_html}[format](report)
    text = text if text.endswith("\n") else text + "\n"
    if output is None:
        (console.file if console is not None else sys.stdout).write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
