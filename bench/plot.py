#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots benchmark results (docs/benchmarks.md, "Result files").

Usage: bench/plot.py [--out DIR] [FILE.json ...]
  (default: every docs/benchmarks/data/*.json; PNGs go to
  docs/benchmarks/img/, or to --out DIR)

Needs matplotlib (Debian: python3-matplotlib, in scripts/install-deps.sh).

A result file is one run (or one sitting of runs) of one benchmark area:

  {
    "bench": "runs",                       # the area: core, checkpoints, turns, ...
    "date": "2026-12-01T06:31Z",           # when the run was made (UTC)
    "title": "Runs: /bin/true, 100 samples", # optional: the plots' title
    "source": "benchmarks/history/runs.md#...", # optional: the run, from docs/
    "cells": [                             # latencies against their anchor
      {
        "name": "process.start + process.wait",  # what was timed
        "unit": "ms",                            # us, ms or s
        "label": "daemon",                       # optional: what p50/p99 time
        "p50": 7.48, "p99": 18.29,               # the daemon, nearest-rank
        "baseline": "raw bwrap",                 # optional: what the anchor is
        "baseline_p50": 6.75, "baseline_p99": 9.67,
        "target_p99": 15,          # optional: drawn as a red line (also target_p50)
        "target_ratio": 1.0,       # optional: at most this p50 / baseline_p50
        "raw": false               # optional: the baseline is no raw one (an
                                   # older daemon, a smaller load); default true
      }
    ],
    "rounds": {                            # optional: overhead per round
      "title": "...",
      "measure": "tracked loop / untracked loop",   # what a ratio divides
      "ratio_label": "ratio of the medians",  # optional: what "ratio" is
      "target_max": 1.05,                  # optional (or target_min)
      "entries": [
        {"name": "20 ms batches", "n": 25,  # n: rounds in the run
         "ratio": 1.008,                    # ratio of the two medians
         "per_round": 1.015,                # median of each round's ratio
         "low": 0.88, "high": 1.14}         # range of the per-round ratios
      ]                                     # ("on" and "off" instead of a
    }                                       # ratio: ratio = on / off)
  }

p50 and p99 are nearest-rank percentiles of the samples (bench/benchlib.py,
p50_p99); p99 may be null where the run recorded only a median.
baseline_p50 and baseline_p99 are the raw baseline measured in the same run
(the anchor, e.g. the CLI or the kernel call doing the same work), or null
where the cell has none. In a rounds entry, ratio (or on and off) or
per_round is required; the others are optional. Keys not named here are
kept for the record (figures of the run that are no latency) and not
plotted.

Writes, per file NAME.json: NAME.png (one panel per cell: a bar to the p50,
a line on to the p99, the baseline below it) if it has cells, and
NAME-rounds.png (each entry's ratio, its per-round median and range, the
target) if it has rounds. Across all files: overview.png, every cell with
a raw baseline as p50 / baseline_p50 and p99 / baseline_p99, with the
target ratio where the cell has one.
"""
import argparse, glob, json, os, sys, textwrap

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "docs", "benchmarks")

DAEMON_COLOR = "#1f77b4"
BASELINE_COLOR = "#999999"
TARGET_COLOR = "#d62728"
ROUND_COLOR = "#ff7f0e"
UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
# The order of the areas in docs/benchmarks.md.
AREAS = ["core", "checkpoints", "turns", "live-checkpoints", "files",
         "reliability", "metrics", "runs", "proxy", "tracker-storm",
         "tracking", "density"]


def load(path):
    with open(path) as f:
        doc = json.load(f)
    for key in ("bench", "date"):
        if key not in doc:
            sys.exit(f"{path}: missing \"{key}\"")
    doc.setdefault("cells", [])
    for i, cell in enumerate(doc["cells"]):
        for key in ("name", "unit", "p50"):
            if cell.get(key) is None:
                sys.exit(f"{path}: cell {i} has no \"{key}\"")
        if cell["unit"] not in UNITS:
            sys.exit(f"{path}: cell {i}: unit must be one of {', '.join(UNITS)}")
        for key in ("p99", "baseline_p50", "baseline_p99"):
            cell.setdefault(key, None)
    rounds = doc.get("rounds")
    if rounds is not None:
        for i, e in enumerate(rounds.get("entries", [])):
            if e.get("ratio") is None and e.get("on") and e.get("off"):
                e["ratio"] = e["on"] / e["off"]
            if "name" not in e or (e.get("ratio") is None
                                   and e.get("per_round") is None):
                sys.exit(f"{path}: rounds entry {i} needs a name and a ratio "
                         "or per_round")
    return doc


def fmt(v):
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def tidy(ax):
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def save(fig, out_path):
    fig.savefig(out_path, dpi=90, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    # A palette of 96 colours keeps the text sharp and the file small.
    try:
        from PIL import Image
        with Image.open(out_path) as im:
            small = im.convert("RGB").quantize(colors=96)
        small.save(out_path, optimize=True)
    except ImportError:
        pass
    print(f"plot: {os.path.relpath(out_path)} "
          f"({os.path.getsize(out_path) // 1024} KiB)")


def plot_cells(doc, out_path):
    cells = doc["cells"]
    fig, axes = plt.subplots(len(cells), 1, squeeze=False,
                             figsize=(7.5, 0.55 + 0.95 * len(cells)))
    title = doc.get("title", doc["bench"])
    fig.suptitle("\n".join(textwrap.wrap(
        f"{title} ({doc['date']}), bar p50, line to p99", 90)),
        fontsize=10, x=0.01, ha="left")

    def peak(c):
        return max(v for v in (c["p50"], c["p99"], c["baseline_p50"],
                               c["baseline_p99"], c.get("target_p50"),
                               c.get("target_p99")) if v is not None)
    # Cells of one unit share a scale.
    unit_top = {}
    for c in cells:
        unit_top[c["unit"]] = max(unit_top.get(c["unit"], 0), peak(c))
    for ax, cell in zip(axes[:, 0], cells):
        rows = [(cell.get("label", "daemon"), cell["p50"], cell["p99"],
                 DAEMON_COLOR)]
        if cell["baseline_p50"] is not None:
            rows.append((cell.get("baseline", "baseline"), cell["baseline_p50"],
                         cell["baseline_p99"], BASELINE_COLOR))
        top = unit_top[cell["unit"]]
        for y, (label, p50, p99, color) in enumerate(rows):
            ax.barh(y, p50, height=0.6, color=color)
            text = fmt(p50)
            if p99 is not None:
                ax.plot([p50, p99], [y, y], color=color, linewidth=1.5)
                ax.plot([p99], [y], marker="|", markersize=10, color=color)
                text += f" / {fmt(p99)}"
            ax.text(max(p50, p99 or 0) + top * 0.01, y, text,
                    va="center", fontsize=8)
        for key, what in (("target_p50", "p50"), ("target_p99", "p99")):
            if cell.get(key) is not None:
                ax.axvline(cell[key], color=TARGET_COLOR, linestyle="--",
                           linewidth=1)
                ax.text(cell[key], -0.55, f" target {what} {cell[key]:g}",
                        color=TARGET_COLOR, fontsize=7, va="bottom")
        ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
        ax.set_xlim(0, top * 1.22)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(f"{cell['name']} ({cell['unit']})", fontsize=9,
                     loc="left", pad=2)
        tidy(ax)
    fig.tight_layout(h_pad=0.6)
    save(fig, out_path)


def plot_rounds(doc, out_path):
    rounds = doc["rounds"]
    entries = rounds["entries"]
    labels = []
    for e in entries:
        name = e["name"] + (f" ({e['n']} rounds)" if e.get("n") else "")
        labels.append("\n".join(textwrap.wrap(name, 44,
                                              break_on_hyphens=False)))
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.42 * len(entries)))
    values = []
    for y, e in enumerate(entries):
        text = []
        if e.get("ratio") is not None:
            ax.plot(e["ratio"], y - 0.12, "o", color=DAEMON_COLOR,
                    markersize=6)
            values.append(e["ratio"])
            text.append(f"{e['ratio']:.3f}")
        if e.get("low") is not None and e.get("high") is not None:
            ax.plot([e["low"], e["high"]], [y + 0.14] * 2, color=ROUND_COLOR,
                    linewidth=1.2)
            values += [e["low"], e["high"]]
        if e.get("per_round") is not None:
            ax.plot(e["per_round"], y + 0.14, "D", color=ROUND_COLOR,
                    markersize=5)
            values.append(e["per_round"])
            text.append(f"per round {e['per_round']:.3f}")
        right = max(v for v in (e.get("ratio"), e.get("per_round"),
                                e.get("high")) if v is not None)
        ax.text(right, y, "  " + ", ".join(text), va="center", fontsize=8)
    ax.axvline(1.0, color="#555555", linewidth=0.8)
    handles = []
    if any(e.get("ratio") is not None for e in entries):
        handles.append(Line2D([], [], marker="o", color=DAEMON_COLOR,
                              linestyle="", label=rounds.get(
                                  "ratio_label", "ratio of the medians")))
    if any(e.get("per_round") is not None for e in entries):
        handles.append(Line2D([], [], marker="D", color=ROUND_COLOR,
                              label="median of each round's ratio, "
                                    "and its range"))
    for key, word in (("target_max", "at most"), ("target_min", "at least")):
        if rounds.get(key) is not None:
            ax.axvline(rounds[key], color=TARGET_COLOR, linestyle="--",
                       linewidth=1)
            values.append(rounds[key])
            handles.append(Line2D([], [], color=TARGET_COLOR, linestyle="--",
                                  label=f"target: {word} {rounds[key]}"))
    lo, hi = min(values + [1.0]), max(values + [1.0])
    pad = max(hi - lo, 0.05) * 0.08
    ax.set_xlim(lo - pad, hi + pad * 4.5)
    ax.set_yticks(range(len(entries)), labels, fontsize=8)
    ax.set_ylim(len(entries) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel(rounds.get("measure", "ratio"), fontsize=9)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(handles=handles, fontsize=7, loc="lower left",
              bbox_to_anchor=(0, 1.0), ncol=3, frameon=False)
    title = rounds.get("title", doc.get("title", doc["bench"]))
    title = "\n".join(textwrap.wrap(f"{title} ({doc['date']})", 80))
    ax.set_title(title, fontsize=10, loc="left", pad=20)
    tidy(ax)
    fig.tight_layout()
    save(fig, out_path)


def plot_overview(docs, out_path):
    rows = []
    for doc in sorted(docs, key=lambda d: (AREAS.index(d["bench"])
                                           if d["bench"] in AREAS else 99)):
        for c in doc["cells"]:
            if c["baseline_p50"] is None or c.get("raw") is False:
                continue
            p50 = c["p50"] / c["baseline_p50"]
            p99 = (c["p99"] / c["baseline_p99"]
                   if c["p99"] is not None and c["baseline_p99"] else None)
            name = f"{doc['bench']}: {c['name']}"
            rows.append((name, c.get("baseline", "baseline"), p50, p99,
                         c.get("target_ratio"), doc["date"][:10]))
    fig, ax = plt.subplots(figsize=(8.5, 1.4 + 0.3 * len(rows)))
    area, shade = None, False
    for y, row in enumerate(rows):
        if row[0].split(":")[0] != area:
            area, shade = row[0].split(":")[0], not shade
        if shade:
            ax.axhspan(y - 0.5, y + 0.5, color="#f0f0f0", zorder=0)
    top = 1.0
    for y, (name, base, p50, p99, target, date) in enumerate(rows):
        text = f" {p50:.2f}x"
        right = p50
        if p99 is not None:
            ax.plot([p50, p99], [y, y], color=DAEMON_COLOR, linewidth=0.8)
            ax.plot(p99, y, "o", markerfacecolor="white",
                    markeredgecolor=DAEMON_COLOR, markersize=6)
            text += f" / {p99:.2f}x"
            right = max(p50, p99)
        ax.plot(p50, y, "o", color=DAEMON_COLOR, markersize=5)
        if target is not None:
            ax.plot(target, y, marker="|", color=TARGET_COLOR, markersize=12,
                    markeredgewidth=2)
            right = max(right, target)
        ax.text(right * 1.04, y, text, va="center", fontsize=7)
        top = max(top, right)
    labels = ["\n".join(textwrap.wrap(f"{n} (against {b})", 58,
                                      break_on_hyphens=False))
              for n, b, *_ in rows]
    ax.set_xscale("log")
    ax.axvline(1.0, color="#555555", linewidth=0.8)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16, 32) if t <= top * 2]
    ax.set_xlim(0.25, top * 2)
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("the daemon's time / the raw baseline's, same run "
                  "(1x: as fast as the baseline)", fontsize=9)
    ax.legend(handles=[
        Line2D([], [], marker="o", color=DAEMON_COLOR, linestyle="",
               label="p50 / baseline p50"),
        Line2D([], [], marker="o", markerfacecolor="white",
               markeredgecolor=DAEMON_COLOR, linestyle="",
               label="p99 / baseline p99"),
        Line2D([], [], marker="|", color=TARGET_COLOR, linestyle="",
               markersize=12, markeredgewidth=2,
               label="target: p50 ratio at most")],
        fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3,
        frameon=False)
    ax.set_title("Latest recorded run of each area: latency against the raw "
                 "baseline", fontsize=10, loc="left", pad=20)
    tidy(ax)
    fig.tight_layout()
    save(fig, out_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out", default=os.path.join(DOCS, "img"))
    args = ap.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(DOCS, "data", "*.json")))
    if not files:
        sys.exit("plot: no result files")
    os.makedirs(args.out, exist_ok=True)
    docs = []
    for path in files:
        doc = load(path)
        docs.append(doc)
        name = os.path.splitext(os.path.basename(path))[0]
        if doc["cells"]:
            plot_cells(doc, os.path.join(args.out, name + ".png"))
        if doc.get("rounds", {}).get("entries"):
            plot_rounds(doc, os.path.join(args.out, name + "-rounds.png"))
    if any(c["baseline_p50"] is not None and c.get("raw") is not False
           for d in docs for c in d["cells"]):
        plot_overview(docs, os.path.join(args.out, "overview.png"))


if __name__ == "__main__":
    main()
