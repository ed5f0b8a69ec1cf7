"""Leaderboard from synthetic `vagen eval` run directories: numbers in MD/CSV/HTML, plots, bad input."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from vagen.eval.leaderboard import (
    ALL_DOMAINS,
    EMBODIED,
    LeaderboardError,
    build,
    leaderboard,
    load_run,
    write,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
OSWORLD_TASKS = [("chrome", "t-a"), ("chrome", "t-b"), ("os", "t-c"), ("os", "t-d")]
LABELS = {"oracle": "scripted:oracle", "random": "scripted:random"}
# Seeded-suite outcomes per (suite, label, max_steps), seeds 0..3.
SEEDED = {
    ("sokoban", "oracle", 15): [True, True, False, False],
    ("sokoban", "oracle", 50): [True, True, True, True],
    ("sokoban", "random", 15): [False, False, False, False],
    ("sokoban", "random", 50): [True, False, False, False],
    ("frozenlake", "oracle", 15): [True, True, True, False],
    ("frozenlake", "random", 15): [True, False, False, False],
}
# Expected whole-suite success % (manifest denominator) per (suite, label, max_steps).
EXPECTED_RATE = {
    ("osworld", "oracle", 15): 75.0,  # 3 of 4; the 4th is an infra_error
    ("osworld", "random", 15): 25.0,  # 1 of 4; one agent_error, one missing (truncated line)
    **{key: 100.0 * sum(v) / len(v) for key, v in SEEDED.items()},
}


def _result(suite: str, task_id: str, domain: str, seed: int | None, success: bool, label: str, max_steps: int,
            status: str = "ok", score: float | None = None, steps: int = 5) -> dict:
    return {"suite": suite, "task_id": task_id, "domain": domain, "seed": seed, "score": score,
            "success": success, "steps": steps, "status": status,
            "error": None if status == "ok" else f"{status}: boom", "attempts": 1,
            "tokens": 0 if status != "ok" else 100 + steps, "wall_s": 0.0 if status != "ok" else 1.5,
            "max_steps": max_steps, "policy": LABELS[label], "episode_dir": f"episodes/{suite}/{domain}/{task_id}"}


def write_run(run_dir: Path, suite: str, label: str, max_steps: int, manifest: list[dict], lines: list[str],
              policy: str | None = None) -> Path:
    """A run directory as `vagen eval` leaves it: run.json + results.jsonl (lines written verbatim)."""
    run_dir.mkdir(parents=True)
    meta = {"suite": suite, "env": suite, "policy": policy or LABELS.get(label, label), "label": label,
            "max_steps": max_steps, "num_envs": 2, "manifest": manifest, "config": {"temperature": 0.0},
            "versions": {"vagen": "0.1.0"}, "started": "2025-01-02T03:04:05+00:00",
            "ended": "2025-01-02T03:14:05+00:00"}
    (run_dir / "run.json").write_text(json.dumps(meta))
    (run_dir / "results.jsonl").write_text("".join(line + "\n" for line in lines))
    return run_dir


def make_runs(root: Path) -> list[Path]:
    """Two policies: osworld (2 domains) at 15 steps; sokoban at 15 and 50; frozenlake at 15."""
    dirs = []
    manifest = [{"suite": "osworld", "task_id": t, "domain": d, "seed": None} for d, t in OSWORLD_TASKS]
    oracle = [_result("osworld", t, d, None, True, "oracle", 15, score=1.0, steps=s)
              for (d, t), s in zip(OSWORLD_TASKS[:3], (4, 6, 5), strict=True)]
    oracle.append(_result("osworld", "t-d", "os", None, False, "oracle", 15, status="infra_error", steps=0))
    dirs.append(write_run(root / "osworld-oracle", "osworld", "oracle", 15, manifest,
                          [json.dumps(r) for r in oracle]))
    random = [_result("osworld", "t-a", "chrome", None, False, "random", 15, score=0.0, steps=15),
              _result("osworld", "t-b", "chrome", None, True, "random", 15, score=1.0, steps=9),
              _result("osworld", "t-c", "os", None, False, "random", 15, status="agent_error", score=0.0, steps=0)]
    torn = json.dumps(_result("osworld", "t-d", "os", None, True, "random", 15, score=1.0))[:40]
    dirs.append(write_run(root / "osworld-random", "osworld", "random", 15, manifest,
                          [json.dumps(r) for r in random] + [torn]))
    for (suite, label, steps), outcomes in SEEDED.items():
        seeded_manifest = [{"suite": suite, "task_id": f"seed-{s}", "domain": suite, "seed": s} for s in range(4)]
        rows = [_result(suite, f"seed-{s}", suite, s, ok, label, steps, steps=3 if ok else steps)
                for s, ok in enumerate(outcomes)]
        lines = [json.dumps(r) for r in rows]
        if (suite, label, steps) == ("sokoban", "random", 15):
            # A re-played episode: the earlier (successful) line must be replaced by the later one.
            lines.insert(0, json.dumps({**rows[0], "success": True}))
        dirs.append(write_run(root / f"{suite}-{label}-{steps}", suite, label, steps, seeded_manifest, lines))
    return dirs


class _Tables(HTMLParser):
    """Cells (text, data-value) of every table in a page, by table id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, list]] = {}
        self._table: dict[str, list] | None = None
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id", ""), {"headers": [], "rows": []})
        elif tag == "tr" and self._table is not None:
            self._table["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = [tag, "", a.get("data-value")]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            kind, text, value = self._cell
            if kind == "th":
                self._table["headers"].append(text)
            else:
                self._table["rows"][-1].append((text, value))
            self._cell = None
        elif tag == "table":
            self._table = None


def parse_tables(page: str) -> dict[str, dict[str, list]]:
    p = _Tables()
    p.feed(page)
    for t in p.tables.values():
        t["rows"] = [r for r in t["rows"] if r]
    return p.tables


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    return make_runs(tmp_path / "runs")


@pytest.fixture
def written(runs, tmp_path) -> dict[str, Path]:
    return write(build([load_run(d) for d in runs]), tmp_path / "board")


def test_load_run_dedups_and_ignores_torn_last_line(runs):
    replayed = load_run(runs[-4])  # sokoban random @15
    assert (replayed.label, replayed.suite, replayed.max_steps) == ("random", "sokoban", 15)
    assert len(replayed.results) == 4 and not any(r["success"] for r in replayed.results)
    torn = load_run(runs[1])
    assert len(torn.results) == 3 and torn.manifest_size == 4
    assert torn.policy == "scripted:random" and torn.meta["num_envs"] == 2


def test_build_overall_rates_errors_and_missing(runs):
    lb = build([load_run(d) for d in runs])
    rows = {(r.suite, r.label, r.max_steps): r.stats for r in lb.overall}
    assert {k: 100 * s.rate for k, s in rows.items()} == pytest.approx(EXPECTED_RATE)
    assert all(s.n == 4 for s in rows.values())
    oracle, random = rows[("osworld", "oracle", 15)], rows[("osworld", "random", 15)]
    assert (oracle.infra_errors, oracle.agent_errors, oracle.missing) == (1, 0, 0)
    assert (random.infra_errors, random.agent_errors, random.missing) == (0, 1, 1)
    assert oracle.mean_steps == pytest.approx((4 + 6 + 5 + 0) / 4)
    assert random.mean_steps == pytest.approx((15 + 9 + 0) / 3)
    assert random.mean_score == pytest.approx(0.25)


def test_build_domains_budgets_and_vagen_average(runs):
    lb = build([load_run(d) for d in runs])
    domains = {(r.suite, r.domain, r.label): r.stats for r in lb.domains if r.suite == "osworld"}
    assert (domains[("osworld", "chrome", "oracle")].n, domains[("osworld", "chrome", "oracle")].rate) == (2, 1.0)
    os_oracle = domains[("osworld", "os", "oracle")]
    assert (os_oracle.n, os_oracle.successes, os_oracle.infra_errors) == (2, 1, 1)
    os_random = domains[("osworld", "os", "random")]
    assert (os_random.n, os_random.successes, os_random.missing, os_random.agent_errors) == (2, 0, 1, 1)
    assert lb.budgets == {"sokoban": [15, 50]}
    assert lb.budget_rate("sokoban", "oracle", 50) == 1.0 and lb.budget_rate("frozenlake", "oracle", 50) is None
    average = {(a.label, a.max_steps): (100 * a.average, sorted(a.rates)) for a in lb.average}
    assert average == {
        ("oracle", 15): (pytest.approx(62.5), ["frozenlake", "sokoban"]),
        ("oracle", 50): (pytest.approx(100.0), ["sokoban"]),
        ("random", 15): (pytest.approx(12.5), ["frozenlake", "sokoban"]),
        ("random", 50): (pytest.approx(25.0), ["sokoban"]),
    }
    assert "osworld" not in EMBODIED


def test_vagen_average_absent_without_embodied_suites(runs):
    lb = build([load_run(d) for d in runs[:2]])
    assert lb.average == [] and lb.budgets == {}


def test_markdown_tables(written):
    md = written["markdown"].read_text()
    assert "### osworld" in md and "## Per domain" in md and "## VAGEN average (embodied suites)" in md
    assert "OSWorld and web suites are not part of this average" in md
    # label | max_steps | n | success % | CI | mean score | mean steps | infra | agent | missing | ...
    assert re.search(r"^\| oracle \| 15 \| 4 \| 75\.0 \| \[30\.1, 95\.4\] \| 0\.750 \| 3\.8 \| 1 \| 0 \| 0 \|", md, re.M)
    assert re.search(r"^\| random \| 15 \| 4 \| 25\.0 \| \[4\.6, 69\.9\] \| 0\.250 \| 8\.0 \| 0 \| 1 \| 1 \|", md, re.M)
    header = next(line for line in md.splitlines() if line.startswith("| label | max_steps") and "success@15" in line)
    assert header.rstrip(" |").endswith("success@15 | success@50")
    sokoban_oracle = [line for line in md.splitlines() if line.startswith("| oracle | 15 | 4 | 50.0 |")]
    assert len(sokoban_oracle) == 1 and sokoban_oracle[0].endswith("| 50.0 | 100.0 |")
    # VAGEN average: label | max_steps | sokoban % | frozenlake % | suites | average %
    assert "| oracle | 15 | 50.0 | 75.0 | 2 | 62.5 |" in md
    assert "| random | 50 | 25.0 |  | 1 | 25.0 |" in md
    assert "| osworld | os | oracle | 15 | 2 | 50.0 |" in md


def test_csv_rows(written):
    with written["csv"].open(newline="") as f:
        rows = list(csv.DictReader(f))
    by_key = {(r["suite"], r["domain"], r["label"], int(r["max_steps"])): r for r in rows}
    # 8 whole-suite rows + 4 osworld domain rows + 6 single-domain seeded rows.
    assert len(rows) == len(by_key) == 8 + 4 + 6
    for (suite, label, steps), pct in EXPECTED_RATE.items():
        row = by_key[(suite, ALL_DOMAINS, label, steps)]
        assert float(row["rate"]) == pytest.approx(pct / 100)
        assert int(row["n"]) == 4 and int(row["successes"]) == round(pct / 25)
    oracle = by_key[("osworld", ALL_DOMAINS, "oracle", 15)]
    assert float(oracle["ci_low"]) == pytest.approx(0.3006, abs=1e-4)
    assert float(oracle["ci_high"]) == pytest.approx(0.9544, abs=1e-4)
    assert (int(oracle["infra_errors"]), int(oracle["agent_errors"])) == (1, 0)
    assert float(oracle["mean_score"]) == pytest.approx(0.75) and float(oracle["mean_steps"]) == pytest.approx(3.75)
    assert float(oracle["tokens_per_episode"]) == pytest.approx((104 + 106 + 105 + 0) / 4)
    assert float(oracle["wall_s_per_episode"]) == pytest.approx(1.5 * 3 / 4)
    assert oracle["policy"] == "scripted:oracle" and oracle["run_dir"].endswith("osworld-oracle")
    chrome = by_key[("osworld", "chrome", "random", 15)]
    assert (int(chrome["n"]), int(chrome["successes"]), float(chrome["rate"])) == (2, 1, 0.5)
    assert int(by_key[("osworld", "os", "random", 15)]["missing"]) == 1


def test_html_numbers_and_no_network(written):
    page = written["html"].read_text()
    assert not re.search(r"https?://", page)
    assert "<link" not in page and not re.search(r"<script[^>]+src=", page)
    srcs = re.findall(r'src="([^"]+)"', page)
    assert sorted(srcs) == sorted(f"plots/{p.name}" for k, p in written.items() if k.startswith(("domains_", "budget_")))
    tables = parse_tables(page)
    assert {"overall-osworld", "overall-sokoban", "overall-frozenlake", "domains", "vagen-average", "runs"} <= set(tables)
    osworld = tables["overall-osworld"]
    assert osworld["headers"][:4] == ["label", "max_steps", "n", "success %"]
    cells = {row[0][0]: row for row in osworld["rows"]}
    assert cells["oracle"][3] == ("75.0", "75.0") and cells["random"][3] == ("25.0", "25.0")
    assert cells["oracle"][4][0] == "[30.1, 95.4]" and float(cells["oracle"][4][1]) == pytest.approx(30.064, abs=1e-3)
    sokoban = tables["overall-sokoban"]
    assert sokoban["headers"][-2:] == ["success@15", "success@50"]
    assert [(r[0][0], r[1][0], r[-2][0], r[-1][0]) for r in sokoban["rows"]] == [
        ("oracle", "15", "50.0", "100.0"), ("oracle", "50", "50.0", "100.0"),
        ("random", "15", "0.0", "25.0"), ("random", "50", "0.0", "25.0")]
    average = {(r[0][0], r[1][0]): r[-1] for r in tables["vagen-average"]["rows"]}
    assert average[("oracle", "15")] == ("62.5", "62.5")
    assert len(tables["runs"]["rows"]) == len(SEEDED) + 2
    assert 'id="generated"' in page


def test_html_escapes_strings_from_run_files(tmp_path):
    evil = '<script>alert("x")</script>'
    manifest = [{"suite": "sokoban", "task_id": "seed-0", "domain": "<i>d</i>", "seed": 0}]
    row = {"suite": "sokoban", "task_id": "seed-0", "domain": "<i>d</i>", "seed": 0, "success": True, "steps": 2}
    run = write_run(tmp_path / "evil", "sokoban", evil, 15, manifest, [json.dumps(row)], policy="a&b")
    page = write(build([load_run(run)]), tmp_path / "board")["html"].read_text()
    assert evil not in page and "<i>d</i>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and "a&amp;b" in page
    assert page.count("<script>") == 1  # only the sorter


def test_plots_are_pngs(written):
    plots = {k: p for k, p in written.items() if k.startswith(("domains_", "budget_"))}
    assert set(plots) == {"domains_osworld", "domains_sokoban", "domains_frozenlake", "budget_sokoban"}
    for path in plots.values():
        assert path.parent.name == "plots" and path.read_bytes()[:8] == PNG_MAGIC
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            assert im.size[0] > 100 and im.size[1] > 100


def test_leaderboard_convenience(runs, tmp_path):
    out = leaderboard([str(d) for d in runs], tmp_path / "lb")
    assert {"markdown", "csv", "html"} <= set(out["paths"]) and all(p.is_file() for p in out["paths"].values())
    assert len(out["overall"]) == len(EXPECTED_RATE)
    first = out["overall"][0]
    assert (first["suite"], first["domain"], first["label"], first["max_steps"]) == ("frozenlake", "ALL", "oracle", 15)
    assert first["rate"] == pytest.approx(0.75)


def test_bad_run_dirs(tmp_path, runs):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LeaderboardError, match=r"empty: no run\.json"):
        load_run(empty)
    only_meta = tmp_path / "only-meta"
    only_meta.mkdir()
    (only_meta / "run.json").write_text("{}")
    with pytest.raises(LeaderboardError, match=r"only-meta: no results\.jsonl"):
        load_run(only_meta)
    with pytest.raises(LeaderboardError, match="not a directory"):
        load_run(tmp_path / "nowhere")
    (only_meta / "results.jsonl").write_text("")
    with pytest.raises(LeaderboardError, match=r"only-meta.*run\.json: missing 'suite'"):
        load_run(only_meta)
    torn_middle = tmp_path / "torn-middle"
    row = json.dumps({"suite": "sokoban", "task_id": "seed-0", "seed": 0, "success": True})
    write_run(torn_middle, "sokoban", "oracle", 15, [], ["{not json", row])
    with pytest.raises(LeaderboardError, match=r"torn-middle.*results\.jsonl:1: not valid JSON"):
        load_run(torn_middle)
    with pytest.raises(LeaderboardError, match="no runs"):
        build([])


def test_duplicate_slot_is_an_error(runs, tmp_path):
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("run.json", "results.jsonl"):
        (clone / name).write_bytes((runs[0] / name).read_bytes())
    with pytest.raises(LeaderboardError, match=r"osworld-oracle and .*clone are both 'oracle' on 'osworld'"):
        build([load_run(runs[0]), load_run(clone)])


def test_vagen_average_takes_svg_by_mean_score_and_splits_as_domains(tmp_path):
    """SVG is graded (similarity): it enters the average by mean score, not by its (rare) successes."""
    manifest = [{"suite": "svg", "task_id": f"seed-{s}", "domain": "svg", "seed": s} for s in range(4)]
    svg = [_result("svg", f"seed-{s}", "svg", s, s == 0, "random", 15, score=sc)
           for s, sc in enumerate((0.96, 0.5, 0.3, 0.2))]
    splits = ("base", "long_horizon")
    nav_manifest = [{"suite": "navigation", "task_id": f"{sp}/seed-{s}", "domain": sp, "seed": s}
                    for s in range(2) for sp in splits]
    nav = [_result("navigation", m["task_id"], m["domain"], m["seed"], m["domain"] == "base", "random", 15,
                   score=float(m["domain"] == "base")) for m in nav_manifest]
    runs = [write_run(tmp_path / "svg", "svg", "random", 15, manifest, [json.dumps(r) for r in svg]),
            write_run(tmp_path / "nav", "navigation", "random", 15, nav_manifest, [json.dumps(r) for r in nav])]
    lb = build([load_run(d) for d in runs])
    (avg,) = lb.average
    assert avg.rates == {"svg": pytest.approx(0.49), "navigation": pytest.approx(0.5)}
    assert avg.average == pytest.approx(0.495)
    per_split = {r.domain: r.stats.rate for r in lb.domains if r.suite == "navigation"}
    assert per_split == {"base": 1.0, "long_horizon": 0.0}
