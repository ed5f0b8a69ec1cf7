"""Leaderboards from ``vagen eval`` run directories: Markdown, CSV, PNG plots and a static HTML page.

Each run directory (``run.json`` + ``results.jsonl``) is one policy (shown by its ``label``)
at one step budget (``max_steps``). :func:`build` turns a set of runs into tables, all rates
coming from :func:`vagen.eval.stats.aggregate` with the run's *manifest* as denominator, so
a killed or flaky run cannot look better than it was:

* overall, one table per suite, one row per (label, max_steps), plus ``success@B`` columns
  giving the label's success at each step budget B when a label was run at several budgets;
* per domain (OSWorld's ``chrome``, ``os``, ...; seeded suites have a single domain);
* the VAGEN-style average: per (label, max_steps), the mean of per-suite success rates over
  the embodied suites in :data:`EMBODIED` (mean score for the graded suites in :data:`GRADED`). OSWorld and web suites are deliberately left out
  of that average: it is the number the VAGEN paper reports for its embodied/visual tasks,
  and mixing in GUI suites with very different difficulty would make it incomparable.

:func:`write` renders them as ``leaderboard.md``, ``leaderboard.csv``, ``plots/*.png`` and a
self-contained ``index.html`` (inline CSS and a small inline table sorter, no network).
"""

from __future__ import annotations

import csv
import html
import json
import logging
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vagen.eval.stats import SuccessStats, aggregate

log = logging.getLogger(__name__)

EMBODIED = ("sokoban", "frozenlake", "navigation", "primitive_skill", "svg")
#: Embodied suites whose episode score is graded (SVG: image similarity), averaged by mean score as
#: VAGEN reports them; the others by success rate (their score is 1 on success, else 0).
GRADED = ("svg",)
ALL_DOMAINS = "ALL"  # the domain column of a whole-suite row in the CSV
NO_DOMAIN = "(none)"
CSV_COLUMNS = (
    "suite", "domain", "label", "max_steps", "n", "successes", "rate", "ci_low", "ci_high", "mean_score",
    "mean_steps", "infra_errors", "agent_errors", "missing", "tokens_per_episode", "wall_s_per_episode",
    "policy", "run_dir",
)


class LeaderboardError(ValueError):
    """A run directory that cannot be read, or runs that cannot share one leaderboard."""


# -- loading runs ---------------------------------------------------------------------------

EpisodeKey = tuple[str, str, Any]  # (suite, task_id, seed)


@dataclass
class Run:
    """One ``vagen eval`` run directory, its results deduplicated by (suite, task_id, seed)."""

    path: Path
    meta: dict[str, Any]
    results: list[dict[str, Any]]
    label: str
    suite: str
    max_steps: int
    manifest_size: int

    @property
    def policy(self) -> str:
        return str(self.meta.get("policy", ""))

    def manifest(self) -> dict[EpisodeKey, str]:
        """Manifest episodes as key -> domain (empty when run.json has no manifest)."""
        out: dict[EpisodeKey, str] = {}
        for entry in self.meta.get("manifest") or []:
            suite = str(entry.get("suite") or self.suite)
            out[(suite, str(entry.get("task_id")), entry.get("seed"))] = _domain(entry.get("domain"))
        return out

    def groups(self) -> dict[tuple[str, str], tuple[int, list[dict[str, Any]]]]:
        """(suite, domain) -> (denominator, result rows).

        The denominator counts every episode in the manifest or in the results, so an
        episode the run never finished is a failure of its domain.
        """
        manifest = self.manifest()
        keys: dict[tuple[str, str], set[EpisodeKey]] = defaultdict(set)
        rows: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for key, domain in manifest.items():
            keys[(key[0], domain)].add(key)
        for row in self.results:
            key = _key(row)
            group = (key[0], _domain(row.get("domain") or manifest.get(key)))
            keys[group].add(key)
            rows[group].append(row)
        return {g: (len(k), rows[g]) for g, k in keys.items()}


def _domain(value: Any) -> str:
    return NO_DOMAIN if value is None or value == "" else str(value)


def _key(row: dict[str, Any]) -> EpisodeKey:
    return str(row["suite"]), str(row["task_id"]), row.get("seed")


def _read_results(path: Path, default_suite: str) -> list[dict[str, Any]]:
    lines = [(i, line) for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    latest: dict[EpisodeKey, dict[str, Any]] = {}
    for pos, (lineno, line) in enumerate(lines):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if pos == len(lines) - 1:  # a run killed mid-write leaves a torn last line
                log.warning("%s:%d: ignoring a truncated last line", path, lineno)
                break
            raise LeaderboardError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
        if not isinstance(row, dict):
            raise LeaderboardError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
        for required in ("task_id", "success"):
            if required not in row:
                raise LeaderboardError(f"{path}:{lineno}: result has no {required!r}")
        row = {**row, "suite": row.get("suite") or default_suite}
        latest[_key(row)] = row  # a re-played episode replaces the earlier line
    return list(latest.values())


def load_run(run_dir: str | Path) -> Run:
    """Read one run directory; raise :class:`LeaderboardError` naming the folder if it is not one."""
    path = Path(run_dir)
    if not path.is_dir():
        raise LeaderboardError(f"{path}: not a directory")
    meta_path, results_path = path / "run.json", path / "results.jsonl"
    for required in (meta_path, results_path):
        if not required.is_file():
            raise LeaderboardError(f"{path}: no {required.name}; not a `vagen eval` run directory")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise LeaderboardError(f"{meta_path}: not valid JSON ({e.msg})") from e
    if not isinstance(meta, dict):
        raise LeaderboardError(f"{meta_path}: expected a JSON object")
    if not meta.get("suite"):
        raise LeaderboardError(f"{meta_path}: missing 'suite'")
    max_steps = meta.get("max_steps")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise LeaderboardError(f"{meta_path}: 'max_steps' must be a positive integer, got {max_steps!r}")
    if not isinstance(meta.get("manifest"), list):
        raise LeaderboardError(f"{meta_path}: 'manifest' must be a list of episodes")
    suite = str(meta["suite"])
    results = _read_results(results_path, suite)
    label = str(meta.get("label") or meta.get("policy") or path.name)
    run = Run(path=path, meta=meta, results=results, label=label, suite=suite, max_steps=max_steps,
              manifest_size=0)
    run.manifest_size = len(run.manifest())
    return run


# -- building tables ------------------------------------------------------------------------


@dataclass
class Row:
    """Stats of one (suite, domain, label, max_steps); domain is :data:`ALL_DOMAINS` for a whole suite."""

    suite: str
    domain: str
    label: str
    max_steps: int
    stats: SuccessStats
    run: Run

    def as_dict(self) -> dict[str, Any]:
        """The row as the CSV writes it (rates as fractions in [0, 1])."""
        return {"suite": self.suite, "domain": self.domain, "label": self.label, "max_steps": self.max_steps,
                **vars(self.stats), "policy": self.run.policy, "run_dir": str(self.run.path)}


@dataclass
class AverageRow:
    """VAGEN-style average for one (label, max_steps): mean over the embodied suites it was run on."""

    label: str
    max_steps: int
    rates: dict[str, float]  # embodied suite -> success rate (mean score for GRADED suites)
    average: float


@dataclass
class Leaderboard:
    """Everything :func:`write` renders; rows are sorted by suite, domain, label, max_steps."""

    runs: list[Run]
    overall: list[Row]
    domains: list[Row]
    average: list[AverageRow]
    budgets: dict[str, list[int]]  # suite -> step budgets, only for suites run at several budgets
    generated: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def suites(self) -> list[str]:
        return sorted({r.suite for r in self.overall})

    def budget_rate(self, suite: str, label: str, budget: int) -> float | None:
        """``label``'s success rate on ``suite`` at step budget ``budget`` (None if not run)."""
        for r in self.overall:
            if (r.suite, r.label, r.max_steps) == (suite, label, budget):
                return r.stats.rate
        return None


def build(runs: list[Run]) -> Leaderboard:
    """Aggregate runs into overall, per-domain and VAGEN-average tables."""
    if not runs:
        raise LeaderboardError("no runs given")
    overall: list[Row] = []
    domains: list[Row] = []
    owner: dict[tuple[str, str, int], Run] = {}
    for run in runs:
        per_suite: dict[str, list[tuple[int, list[dict[str, Any]]]]] = defaultdict(list)
        for (suite, domain), (n, rows) in run.groups().items():
            per_suite[suite].append((n, rows))
            domains.append(Row(suite, domain, run.label, run.max_steps, aggregate(rows, n), run))
        for suite, parts in per_suite.items():
            slot = (suite, run.label, run.max_steps)
            if slot in owner:
                raise LeaderboardError(
                    f"{owner[slot].path} and {run.path} are both {run.label!r} on {suite!r} at max_steps "
                    f"{run.max_steps}; pass one of them or give them different labels (vagen eval --label)")
            owner[slot] = run
            rows = [r for _, part in parts for r in part]
            overall.append(Row(suite, ALL_DOMAINS, run.label, run.max_steps,
                               aggregate(rows, sum(n for n, _ in parts)), run))
    overall.sort(key=lambda r: (r.suite, r.label, r.max_steps))
    domains.sort(key=lambda r: (r.suite, r.domain, r.label, r.max_steps))

    budgets_of: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in overall:
        budgets_of[(r.suite, r.label)].add(r.max_steps)
    budgets = {suite: sorted({r.max_steps for r in overall if r.suite == suite})
               for (suite, _), steps in budgets_of.items() if len(steps) > 1}

    embodied: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for r in overall:
        value = r.stats.mean_score if r.suite in GRADED else r.stats.rate
        if r.suite in EMBODIED and value is not None and not math.isnan(value):
            embodied[(r.label, r.max_steps)][r.suite] = value
    average = [AverageRow(label, steps, rates, sum(rates.values()) / len(rates))
               for (label, steps), rates in sorted(embodied.items())]
    return Leaderboard(runs=list(runs), overall=overall, domains=domains, average=average, budgets=budgets)


# -- rendering ------------------------------------------------------------------------------


@dataclass
class Cell:
    """A table cell: display text and, for numeric columns, the value to sort by (None: blank)."""

    text: str
    value: float | None = None


@dataclass
class Table:
    id: str
    headers: list[tuple[str, bool]]  # (title, numeric)
    rows: list[list[Cell]]


def _num(x: float | None, fmt: str, scale: float = 1.0) -> Cell:
    if x is None or math.isnan(x):
        return Cell("", None)
    return Cell(format(x * scale, fmt), x * scale)


def _ci(s: SuccessStats) -> Cell:
    return Cell(f"[{100 * s.ci_low:.1f}, {100 * s.ci_high:.1f}]", 100 * s.ci_low)


def _text(s: Any) -> Cell:
    return Cell("" if s is None else str(s))


def _stat_cells(s: SuccessStats, extended: bool) -> list[Cell]:
    cells = [Cell(str(s.n), s.n), _num(s.rate, ".1f", 100), _ci(s), _num(s.mean_score, ".3f"),
             _num(s.mean_steps, ".1f"), Cell(str(s.infra_errors), s.infra_errors)]
    if extended:
        cells += [Cell(str(s.agent_errors), s.agent_errors), Cell(str(s.missing), s.missing),
                  _num(s.tokens_per_episode, ".0f"), _num(s.wall_s_per_episode, ".1f")]
    return cells


_STAT_HEADERS = [("n", True), ("success %", True), ("95% CI (%)", True), ("mean score", True),
                 ("mean steps", True), ("infra errors", True)]
_EXTENDED_HEADERS = [("agent errors", True), ("missing", True), ("tokens/episode", True), ("wall s/episode", True)]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "_"


def tables(lb: Leaderboard) -> dict[str, Table]:
    """The leaderboard as display tables keyed by HTML id (``overall-<suite>``, ``domains``, ...)."""
    out: dict[str, Table] = {}
    for suite in lb.suites():
        budgets = lb.budgets.get(suite, [])
        headers = [("label", False), ("max_steps", True), *_STAT_HEADERS, *_EXTENDED_HEADERS,
                   *[(f"success@{b}", True) for b in budgets]]
        rows = [[_text(r.label), Cell(str(r.max_steps), r.max_steps), *_stat_cells(r.stats, extended=True),
                 *[_num(lb.budget_rate(suite, r.label, b), ".1f", 100) for b in budgets]]
                for r in lb.overall if r.suite == suite]
        table_id = f"overall-{_slug(suite)}"
        out[table_id] = Table(table_id, headers, rows)
    out["domains"] = Table(
        "domains", [("suite", False), ("domain", False), ("label", False), ("max_steps", True), *_STAT_HEADERS],
        [[_text(r.suite), _text(r.domain), _text(r.label), Cell(str(r.max_steps), r.max_steps),
          *_stat_cells(r.stats, extended=False)] for r in lb.domains])
    suites = [s for s in EMBODIED if any(s in a.rates for a in lb.average)]
    out["vagen-average"] = Table(
        "vagen-average",
        [("label", False), ("max_steps", True), *[(f"{s} %", True) for s in suites], ("suites", True),
         ("average %", True)],
        [[_text(a.label), Cell(str(a.max_steps), a.max_steps), *[_num(a.rates.get(s), ".1f", 100) for s in suites],
          Cell(str(len(a.rates)), len(a.rates)), _num(a.average, ".1f", 100)] for a in lb.average])
    out["runs"] = Table(
        "runs",
        [("path", False), ("label", False), ("policy", False), ("suite", False), ("max_steps", True),
         ("results", True), ("manifest", True), ("started", False), ("ended", False)],
        [[_text(run.path), _text(run.label), _text(run.policy), _text(run.suite),
          Cell(str(run.max_steps), run.max_steps), Cell(str(len(run.results)), len(run.results)),
          Cell(str(run.manifest_size), run.manifest_size), _text(run.meta.get("started")),
          _text(run.meta.get("ended") or "(not finished)")] for run in lb.runs])
    return out


AVERAGE_NOTE = (f"Mean of per-suite success rates over the embodied suites ({', '.join(EMBODIED)}) each label "
                f"was run on at that step budget ({', '.join(GRADED)}: mean score, the graded similarity); the "
                "suites column says how many. OSWorld and web suites are not part of this average.")
COLUMN_NOTE = ("Rates are successes / manifest size: infra errors, agent errors and missing episodes (no result "
               "line) count as failures. CI is the Wilson 95% interval. Mean score counts errors and missing "
               "episodes as 0; mean steps, tokens and wall time are over episodes with a result. success@B is "
               "the same label's success rate at step budget B.")


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _markdown_table(t: Table) -> str:
    lines = ["| " + " | ".join(_md_escape(h) for h, _ in t.headers) + " |",
             "|" + "|".join("---:" if numeric else "---" for _, numeric in t.headers) + "|"]
    lines += ["| " + " | ".join(_md_escape(c.text) for c in row) + " |" for row in t.rows]
    return "\n".join(lines)


def _markdown(lb: Leaderboard, ts: dict[str, Table], plots: dict[str, Path]) -> str:
    parts = ["# VAGEN leaderboard", "", f"Generated {lb.generated} from {len(lb.runs)} runs. {COLUMN_NOTE}", "",
             "## Overall", ""]
    for suite in lb.suites():
        parts += [f"### {_md_escape(suite)}", "", _markdown_table(ts[f"overall-{_slug(suite)}"]), ""]
        if f"budget_{_slug(suite)}" in plots:
            parts += [f"![success vs step budget: {_md_escape(suite)}](plots/budget_{_slug(suite)}.png)", ""]
    parts += ["## Per domain", "", _markdown_table(ts["domains"]), ""]
    parts += [f"![per-domain success: {_md_escape(s)}](plots/domains_{_slug(s)}.png)"
              for s in lb.suites() if f"domains_{_slug(s)}" in plots]
    parts += ["", "## VAGEN average (embodied suites)", "", AVERAGE_NOTE, ""]
    parts += [_markdown_table(ts["vagen-average"]) if ts["vagen-average"].rows else "No embodied suites in these runs.",
              "", "## Runs", "", _markdown_table(ts["runs"]), ""]
    return "\n".join(parts)


def _csv_value(v: Any) -> Any:
    return "" if isinstance(v, float) and math.isnan(v) else v


def _write_csv(lb: Leaderboard, path: Path) -> None:
    rows = sorted(lb.overall + lb.domains,
                  key=lambda r: (r.suite, r.domain != ALL_DOMAINS, r.domain, r.label, r.max_steps))
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _csv_value(v) for k, v in r.as_dict().items()})


# -- plots ----------------------------------------------------------------------------------


def _series_name(label: str, max_steps: int, several_budgets: bool) -> str:
    return f"{label} @{max_steps}" if several_budgets else label


def _new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A bare Figure on the Agg canvas: no pyplot global state, safe in threads and headless.
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _domain_plot(lb: Leaderboard, suite: str, path: Path) -> None:
    rows = [r for r in lb.domains if r.suite == suite and not math.isnan(r.stats.rate)]
    domains = sorted({r.domain for r in rows})
    series = sorted({(r.label, r.max_steps) for r in rows})
    several = suite in lb.budgets
    width = 0.8 / max(1, len(series))
    fig = _new_figure(max(5.0, 0.5 + len(domains) * (0.35 + 0.25 * len(series))), 4.2)
    ax = fig.subplots()
    for i, (label, steps) in enumerate(series):
        mine = {r.domain: r.stats for r in rows if (r.label, r.max_steps) == (label, steps)}
        xs = [j + (i - (len(series) - 1) / 2) * width for j, d in enumerate(domains) if d in mine]
        stats = [mine[d] for d in domains if d in mine]
        heights = [100 * s.rate for s in stats]
        yerr = [[100 * (s.rate - s.ci_low) for s in stats], [100 * (s.ci_high - s.rate) for s in stats]]
        ax.bar(xs, heights, width, yerr=yerr, capsize=3, label=_series_name(label, steps, several))
    ax.set_xticks(range(len(domains)))
    ax.set_xticklabels(domains, rotation=30 if len(domains) > 4 else 0, ha="right" if len(domains) > 4 else "center")
    ax.set_ylim(0, 105)
    ax.set_ylabel("success % (Wilson 95% CI)")
    ax.set_title(f"{suite}: success per domain")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _budget_plot(lb: Leaderboard, suite: str, path: Path) -> None:
    fig = _new_figure(6.0, 4.2)
    ax = fig.subplots()
    for label in sorted({r.label for r in lb.overall if r.suite == suite}):
        stats = sorted(((r.max_steps, r.stats) for r in lb.overall
                        if (r.suite, r.label) == (suite, label) and not math.isnan(r.stats.rate)),
                       key=lambda p: p[0])
        if not stats:
            continue
        xs = [b for b, _ in stats]
        ys = [100 * s.rate for _, s in stats]
        yerr = [[100 * (s.rate - s.ci_low) for _, s in stats], [100 * (s.ci_high - s.rate) for _, s in stats]]
        ax.errorbar(xs, ys, yerr=yerr, marker="o", capsize=3, label=label)
    ax.set_xticks(lb.budgets[suite])
    ax.set_ylim(0, 105)
    ax.set_xlabel("max_steps (step budget)")
    ax.set_ylabel("success % (Wilson 95% CI)")
    ax.set_title(f"{suite}: success vs step budget")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def write_plots(lb: Leaderboard, plots_dir: Path) -> dict[str, Path]:
    """``domains_<suite>.png`` per suite and ``budget_<suite>.png`` per suite run at several budgets."""
    import matplotlib

    plots_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    # Labels and domains come from run files: never interpret `$...$` in them as math.
    with matplotlib.rc_context({"text.parse_math": False}):
        for suite in lb.suites():
            jobs = [(f"domains_{_slug(suite)}", _domain_plot)]
            if suite in lb.budgets:
                jobs.append((f"budget_{_slug(suite)}", _budget_plot))
            for name, plot in jobs:
                path = plots_dir / f"{name}.png"
                plot(lb, suite, path)
                written[name] = path
    return written


# -- HTML -----------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1400px;
       padding: 0 1em; color: #1d1d1f; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.meta, .note { color: #555; max-width: 60em; }
table { border-collapse: collapse; margin: 0.8em 0 1.5em; font-variant-numeric: tabular-nums; }
th, td { padding: 0.3em 0.7em; border-bottom: 1px solid #e5e5e5; white-space: nowrap; }
th { background: #f4f4f6; cursor: pointer; user-select: none; text-align: left; }
th.num, td.num { text-align: right; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
tbody tr:hover { background: #fafae8; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 1em 0.5em 0; }
"""

# Click (or Enter on) a header: sort that table's body by the column, toggling direction.
# Numeric columns sort by data-value; blank cells stay last in either direction.
_JS = """
(function () {
  function sortBy(th) {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var numeric = th.classList.contains("num");
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var ca = a.cells[col], cb = b.cells[col];
      if (numeric) {
        var x = ca.getAttribute("data-value"), y = cb.getAttribute("data-value");
        var bx = x === null || x === "", by = y === null || y === "";
        if (bx || by) { return bx - by; }
        return dir * (parseFloat(x) - parseFloat(y));
      }
      return dir * ca.textContent.localeCompare(cb.textContent, undefined, {numeric: true});
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable thead th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(th); } });
  });
})();
"""


_NUM_CLASS = ' class="num"'


def _html_table(t: Table) -> str:
    esc = html.escape
    head = "".join(f'<th scope="col" tabindex="0"{_NUM_CLASS if numeric else ""}>{esc(h)}</th>'
                   for h, numeric in t.headers)
    body = []
    for row in t.rows:
        cells = []
        for cell, (_, numeric) in zip(row, t.headers, strict=True):
            if numeric:
                value = "" if cell.value is None else repr(float(cell.value))
                cells.append(f'<td class="num" data-value="{value}">{esc(cell.text)}</td>')
            else:
                cells.append(f"<td>{esc(cell.text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table id="{esc(t.id)}" class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>\n{chr(10).join(body)}\n</tbody></table>")


def _img(name: str, alt: str) -> str:
    return f'<img src="plots/{html.escape(name)}.png" alt="{html.escape(alt)}">'


def _html(lb: Leaderboard, ts: dict[str, Table], plots: dict[str, Path]) -> str:
    esc = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>VAGEN leaderboard</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>VAGEN leaderboard</h1>",
             f'<p class="meta">Generated <time id="generated" datetime="{esc(lb.generated)}">{esc(lb.generated)}'
             f"</time> from {len(lb.runs)} runs. Click a column header to sort.</p>",
             f'<p class="note">{esc(COLUMN_NOTE)}</p>', '<section id="overall"><h2>Overall</h2>']
    for suite in lb.suites():
        slug = _slug(suite)
        parts += [f"<h3>{esc(suite)}</h3>", _html_table(ts[f"overall-{slug}"])]
        if f"budget_{slug}" in plots:
            parts.append(_img(f"budget_{slug}", f"{suite}: success vs step budget"))
    parts += ["</section>", '<section id="per-domain"><h2>Per domain</h2>', _html_table(ts["domains"]), "<div>"]
    parts += [_img(f"domains_{_slug(s)}", f"{s}: success per domain") for s in lb.suites()
              if f"domains_{_slug(s)}" in plots]
    parts += ["</div></section>", '<section id="average"><h2>VAGEN average (embodied suites)</h2>',
              f'<p class="note">{esc(AVERAGE_NOTE)}</p>',
              _html_table(ts["vagen-average"]) if ts["vagen-average"].rows
              else "<p>No embodied suites in these runs.</p>",
              "</section>", '<section id="run-list"><h2>Runs</h2>', _html_table(ts["runs"]), "</section>",
              f"<script>{_JS}</script>", "</body></html>", ""]
    return "\n".join(parts)


def write(lb: Leaderboard, out_dir: str | Path) -> dict[str, Path]:
    """Write ``leaderboard.md``, ``leaderboard.csv``, ``plots/*.png`` and ``index.html`` under ``out_dir``.

    Returns the paths keyed ``markdown``, ``csv``, ``html`` and one key per plot (its file stem).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ts = tables(lb)
    plots = write_plots(lb, out / "plots")
    paths = {"markdown": out / "leaderboard.md", "csv": out / "leaderboard.csv", "html": out / "index.html"}
    paths["markdown"].write_text(_markdown(lb, ts, plots), encoding="utf-8")
    _write_csv(lb, paths["csv"])
    paths["html"].write_text(_html(lb, ts, plots), encoding="utf-8")
    log.info("wrote a leaderboard of %d runs to %s", len(lb.runs), out)
    return {**paths, **plots}


def leaderboard(run_dirs: list[str | Path], out_dir: str | Path) -> dict[str, Any]:
    """Load, build and write a leaderboard; return ``{"paths": {...}, "overall": [row dicts]}``."""
    lb = build([load_run(d) for d in run_dirs])
    return {"paths": write(lb, out_dir), "overall": [r.as_dict() for r in lb.overall]}
