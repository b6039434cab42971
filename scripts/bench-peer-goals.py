#!/usr/bin/env python3
"""Print DESIGN §24's goals against the medians of scripts/bench-peer.sh's runs.

Usage: bench-peer-goals.py OUT [OUT...] (OUT/analysed/raw.jsonl, and OUT/unanalysed/raw.jsonl when that run was
made). Given several runs, the medians are over every round of all of them: on a machine whose rounds move more
than the goals' margins, one run's three rounds can land a ratio on either side of its goal. Each ratio goal also
prints its band, the lowest, highest and median of the rounds' own ratios (a round's suites ran within minutes).
A missed goal is printed as missed; the script's exit status stays 0, because a figure is reported, not asserted.
"""
import json
import os
import statistics
import sys


def rows_of(paths):
    """Every row of every run, its round renamed (run, round) so that rounds of different runs stay apart."""
    rows = []
    for i, path in enumerate(paths):
        for line in open(path):
            r = json.loads(line)
            r["round"] = (i, r.get("round"))
            rows.append(r)
    return rows


def band(rows, num, den):
    """The lowest, highest and median of the rounds' own num ÷ den: on a machine whose speed drifts between rounds,
    the ratio of two suites' medians can pair rounds that saw different machines; a round's own ratio cannot."""
    by = {}
    for r in rows:
        if "rps" in r:
            by.setdefault(r["round"], {})[r["suite"]] = r["rps"]
    ratios = [s[num] / s[den] for s in by.values() if num in s and den in s]
    if not ratios:
        return ""
    return f" (rounds {min(ratios):.2f}–{max(ratios):.2f}, median {statistics.median(ratios):.2f})"


def medians(rows):
    by, colds = {}, []
    for r in rows:
        if "cold_start_ms" in r:
            colds.append(r["cold_start_ms"])
        elif "rps" in r:
            by.setdefault(r["suite"], []).append(r)
    med = {}
    for suite, rs in by.items():
        med[suite] = {k: statistics.median([r[k] for r in rs if r.get(k) is not None] or [float("nan")])
                      for k in ("rps", "p50_ms", "p99_ms", "server_cpu_us_op")}
        med[suite]["rss_mib"] = max(r.get("rss_kib") or 0 for r in rs) / 1024
        med[suite]["errors"] = sum(r["errors"] for r in rs)
    return med, colds


def main(outs):
    arows = rows_of([os.path.join(out, "analysed", "raw.jsonl") for out in outs])
    a, colds = medians(arows)
    floor, nc, nr = a["noop_go"], a["naive_create_pg"], a["naive_replay_pg"]
    rows = [("suite", "calls/s", "p50 ms", "p99 ms", "server CPU µs/call", "peak RSS MiB", "errors")]
    for s, m in a.items():
        rows.append((s, f"{m['rps']:.0f}", f"{m['p50_ms']:.1f}", f"{m['p99_ms']:.1f}",
                     f"{m['server_cpu_us_op']:.0f}", f"{m['rss_mib']:.0f}", str(m["errors"])))
    for r in rows:
        print("| " + " | ".join(r) + " |")
        if r is rows[0]:
            print("|" + "---|" * len(r))
    print()
    goals = []

    def goal(name, value, target, ok):
        goals.append(f"- {name}: {value} (goal {target}) — {'met' if ok else 'MISSED'}")

    td = {s: a[s] for s in ("td_create_pg", "td_replay_pg", "td_list_pg") if s in a}
    if "td_create_pg" in td:
        v = td["td_create_pg"]["rps"] / nc["rps"]
        goal("create ÷ naive create", f"{v:.2f}×" + band(arows, "td_create_pg", "naive_create_pg"), "≥ 1.0×", v >= 1.0)
    if "td_replay_pg" in td:
        v = td["td_replay_pg"]["rps"] / nr["rps"]
        goal("replay ÷ naive replay", f"{v:.2f}×" + band(arows, "td_replay_pg", "naive_replay_pg"), "≥ 1.0×", v >= 1.0)
        v = td["td_replay_pg"]["rps"] / floor["rps"]
        goal("replay ÷ no-op floor", f"{v:.2f}×" + band(arows, "td_replay_pg", "noop_go"), "≥ 0.95×", v >= 0.95)
    if "td_list_pg" in td:
        v = td["td_list_pg"]["rps"] / floor["rps"]
        goal("list ÷ no-op floor", f"{v:.2f}×" + band(arows, "td_list_pg", "noop_go"), "≥ 0.7×", v >= 0.7)
    for s, cap in (("td_create_pg", 400), ("td_replay_pg", 150), ("td_list_pg", 400)):
        if s in td:
            v = td[s]["server_cpu_us_op"] - floor["server_cpu_us_op"]
            goal(f"{s} server CPU beyond the floor", f"{v:.0f} µs", f"≤ {cap} µs", v <= cap)
    for s, m in td.items():
        v = m["p99_ms"] / m["p50_ms"]
        goal(f"{s} p99 ÷ p50", f"{v:.1f}", "≤ 3", v <= 3)
    rss = max(m["rss_mib"] for m in td.values())
    goal("ticketd peak RSS", f"{rss:.0f} MiB", "≤ 64 MiB", rss <= 64)
    if colds:
        print(f"- cold start with migrations on a fresh database: median {statistics.median(colds):.0f} ms "
              f"(§24's ≤ 100 ms is for an existing database: `make bench-e2e`'s -cold-starts)")
    paths = [os.path.join(out, "unanalysed", "raw.jsonl") for out in outs]
    if all(os.path.exists(p) for p in paths):
        u, _ = medians(rows_of(paths))
        for s in ("td_create_pg", "td_replay_pg"):
            if s in u and s in a:
                v = a[s]["rps"] / u[s]["rps"]
                goal(f"{s} analysed ÷ never analysed", f"{v:.2f}×", "≤ 1.5×", v <= 1.5)
    print("\n".join(goals))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
