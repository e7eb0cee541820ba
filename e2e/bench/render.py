#!/usr/bin/env python3
"""The benchmarks' figures: build/bench/*.json and the table `make bench` prints.

  render.py collect OUT.json KVDIR FLOOR-MODE   key-value files of managers.sh -> OUT.json
  render.py table DIR                           every DIR/*.json as one table

A JSON file: {"bench": NAME, "host": {"cores": N, "load1": X}, "rows": [{"metric",
"unit", "better": "lower"|"higher", "values": {COLUMN: number}}]}. The table
shows each value with its ratio to the "kueue" column of its row; with
managers-w<W>.json for several W, a line per metric says how it grows with
the workers."""
import glob
import json
import os
import re
import sys

MODES = ["mkueue-standalone", "mkueue-with-kueue", "kueue"]
# "mkueue": webhook*.json's column (beside "floor" and "kueue")
ORDER = ["mkueue"] + MODES[:2] + ["kueue-in-with-kueue"] + MODES[2:] + ["floor"]
# the latency runs: (key prefix, key of its rate, the rate of files written
# before the rate was recorded: BENCH_RATE's default then); BENCH_RATE_LOW's
# run is the one the managers' 50 queries/s carry
LATENCY = [("m_", "rate", 10), ("m_low_", "rate_low", 3)]
# (metric with %s for "at RATE/s", unit, better, key in the mode's file,
# key in the floor mode's file), the keys without the run's prefix
LATENCY_ROWS = [
    ("apply -> remote job %s, p50", "ms", "lower", "dispatch_apply_to_remote_job_p50_ms",
     "dispatch_floor_direct_calls_p50_ms"),
    ("apply -> remote job %s, p99", "ms", "lower", "dispatch_apply_to_remote_job_p99_ms",
     "dispatch_floor_direct_calls_p99_ms"),
    ("remote finished -> manager finished %s, p50", "ms", "lower",
     "status_remote_complete_to_manager_p50_ms", "status_floor_direct_calls_p50_ms"),
    ("remote finished -> manager finished %s, p99", "ms", "lower",
     "status_remote_complete_to_manager_p99_ms", "status_floor_direct_calls_p99_ms"),
]
# (metric, unit, better, key in the mode's file, key in the floor mode's file)
FIXED = [
    ("dispatch throughput, jobs at once", "jobs/s", "higher", "m_throughput_jobs_per_s",
     "m_throughput_floor_jobs_per_s"),
    ("until the last remote job exists", "s", "lower", "m_throughput_seconds",
     "m_throughput_floor_seconds"),
    # managers.sh, clear_of_stall: the runs placed between the bed's
    # OpenAPI rebuilds; what the mode waited for that, all runs summed
    ("waited for the bed's OpenAPI rebuilds to pass, all runs", "s", "lower",
     "stall_waited_s"),
]


def read_kv(path):
    kv = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 2:
                continue
            try:
                kv[parts[0]] = float(parts[1])
            except ValueError:
                # rc_bench's "n/a" percentiles: no job arrived in the wait
                if parts[1] == "n/a" and parts[0].endswith("_p50_ms"):
                    kv.setdefault(parts[0][:-len("_p50_ms")] + "_samples", 0.0)
    return kv


def pair_ratios(d, floor):
    """the p99 / floor p99 of each interleaved pair in one mode's figures
    (managers.sh, pairs), in pair order; floor: "direct_calls" or
    "worker_admission"; a pair without both figures is left out"""
    ks = sorted(int(m.group(1)) for k in d
                for m in [re.match(r"m_pair(\d+)_dispatch_apply_to_remote_job_p99_ms$", k)] if m)
    got = [(d["m_pair%d_dispatch_apply_to_remote_job_p99_ms" % k],
            d.get("m_pair%d_dispatch_floor_%s_p99_ms" % (k, floor))) for k in ks]
    return [ours / fl for ours, fl in got if fl]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[(n - 1) // 2] + xs[n // 2]) / 2 if n else None


def pair_rows(kv, row):
    """the goal's ratio over the interleaved pairs: their median, and how
    many pairs met the goal's 2x (one pair's ratio says how the bed's slow
    windows fell: session 31 saw 1.1 to 17x with the same code)"""
    n = max((len(pair_ratios(d, "worker_admission")) for d in kv.values()), default=0)
    if not n:
        return
    at = rate_label(kv, "m_pair1_", "rate_pairs", 3)
    for fl, what in (("direct_calls", "floor p99"), ("worker_admission", "floor with admission p99")):
        row("apply -> remote job %s, p99 / %s: median of %d interleaved pairs" % (at, what, n),
            "x", "lower", None, derive=lambda d, p, fl=fl: (
                None if p else median(pair_ratios(d, fl))))
        row("apply -> remote job %s, p99 / %s: pairs within 2x (of %d)" % (at, what, n),
            "pairs", "higher", None, derive=lambda d, p, fl=fl: (
                None if p or not pair_ratios(d, fl) else
                float(sum(r <= 2 for r in pair_ratios(d, fl)))))


def collect(out, kvdir, floor_mode):
    kv = {os.path.basename(p)[:-3]: read_kv(p) for p in glob.glob(os.path.join(kvdir, "*.kv"))}
    rows = []

    def row(metric, unit, better, key, floor_key=None, derive=None):
        values = {}
        for mode, d in kv.items():
            v = derive(d, "") if derive else d.get(key)
            if v is not None:
                values[mode] = round(v, 2)
            # with-kueue: Kueue's own process beside mkueue's
            k2 = derive(d, "kueue_") if derive else d.get("kueue_" + key) if key else None
            if mode == "mkueue-with-kueue" and k2 is not None:
                values["kueue-in-with-kueue"] = round(k2, 2)
        if floor_key and floor_key in kv.get(floor_mode, {}):
            values["floor"] = kv[floor_mode][floor_key]
        if values:
            rows.append({"metric": metric, "unit": unit, "better": better, "values": values})

    floor = kv.get(floor_mode, {})

    def latency_rows(pre, at, rows_of=LATENCY_ROWS):
        """a latency run's rows (keys with prefix pre) beside the floor
        taken at the same moment of the run, when the floor mode took one"""
        for metric, unit, better, key, floor_key in rows_of:
            row(metric % at, unit, better, pre + key, pre + floor_key)
        # the floor that also waits for a worker's Kueue to admit a copy,
        # as every MultiKueue manager must (the floor column only)
        for q in ("p50", "p99"):
            row("apply -> remote job %s, %s: floor with a worker's admission" % (at, q), "ms",
                "lower", None, pre + "dispatch_floor_worker_admission_%s_ms" % q)
        # how many of the run's jobs each figure covers (a job whose remote
        # job did not appear within the wait counts in no percentile)
        row("apply -> remote job %s, jobs measured" % at, "jobs", "higher",
            pre + "dispatch_apply_to_remote_job_samples", pre + "dispatch_floor_direct_calls_samples")
        row("apply -> remote job %s, jobs measured: floor with a worker's admission" % at, "jobs",
            "higher", None, pre + "dispatch_floor_worker_admission_samples")
        # the bed's API servers rebuilding their CRDs' OpenAPI within the
        # run (managers.sh, bed_stall): a p99 beside one is the bed's
        row("bed API servers' OpenAPI rebuilds within the run %s" % at, "s", "lower",
            pre + "bed_stall_s", pre + "floor_bed_stall_s")
        # the project's goal: dispatch p99 within 2x of the floor's
        for fl, what in (("direct_calls", "floor p99"),
                         ("worker_admission", "floor with admission p99")):
            row("apply -> remote job %s, p99 / %s" % (at, what), "x", "lower", None,
                derive=lambda d, p, fl=fl: (
                    d[pre + "dispatch_apply_to_remote_job_p99_ms"] /
                    floor[pre + "dispatch_floor_%s_p99_ms" % fl]
                    if not p and pre + "dispatch_apply_to_remote_job_p99_ms" in d and
                    floor.get(pre + "dispatch_floor_%s_p99_ms" % fl) else None))

    for pre, rate_key, default in LATENCY:
        latency_rows(pre, rate_label(kv, pre, rate_key, default))
    pair_rows(kv, row)
    for r in FIXED:
        row(*r)
    for pre, rate_key, default in LATENCY:
        at = rate_label(kv, pre, rate_key, default)
        n = pre + "status_remote_complete_to_manager_samples"
        for what, key in (("manager API writes but Events", "writes_latency"),
                          ("manager API Events", "events_latency"),
                          ("worker API writes but Events, all workers,", "worker_writes_latency"),
                          ("manager API writes refused 409 (conflict)", "conflicts_latency")):
            key += pre[1:-1]  # m_low_: writes_latency_low
            row("%s per job (latency run %s, every client)" % (what, at), "requests",
                "lower", None, derive=lambda d, p, key=key, n=n: (
                    d[key] / d[n] if not p and key in d and d.get(n) else None))
    tracked = sorted({int(m.group(1)) for d in kv.values() for k in d
                      for m in [re.match(r"rss_tracked_(\d+)_mib$", k)] if m})
    stages = ["idle"] + (["running"] if any("rss_running_mib" in d for d in kv.values()) else [])
    names = {"idle": "idle", "running": "jobs running"}
    for s in stages + ["tracked_%d" % t for t in tracked]:
        label = names.get(s) or "%s tracked Workloads" % s.split("_")[-1]
        if s == "running":
            n = next((d["running"] for d in kv.values() if "running" in d), None)
            label = "%d jobs running" % n if n else label
        row("controller RSS, " + label, "MiB", "lower", "rss_%s_mib" % s)
    # the memory goals are the reconciler's own (the webhook apart)
    for s in ["tracked_%d" % t for t in tracked] + ["restarted"]:
        label = ("restarted on the tracked Workloads" if s == "restarted"
                 else "%s tracked Workloads" % s.split("_")[-1])
        row("reconciler alone RSS, " + label, "MiB", "lower", "rss_rc_%s_mib" % s)
    # what a manager reached when its wait ran out (it is measured as it is)
    row("remote jobs running at the jobs-running reading", "jobs", "higher", "running_reached")
    for t in tracked:
        row("Workloads at the %d-tracked reading" % t, "Workloads", "higher", "tracked_%d" % t)
    settle = next((d["settle"] for d in kv.values() if "settle" in d), 35)
    row("controller CPU, idle (%.0f s)" % settle, "s", "lower", "cpu_idle_s")
    row("controller CPU per dispatched job (latency + throughput runs)", "ms", "lower", None,
        derive=lambda d, p: per(d, p + "cpu_latency_s", p + "cpu_throughput_s",
                                "m_throughput_dispatched", "m_dispatch_apply_to_remote_job_samples"))
    # the bed beside the manager: on shared cores, what grows with the
    # workers there slows every manager alike (managers.sh bed_cpu)
    row("bed CPU per dispatched job, every process of the bed (latency + throughput runs)",
        "ms", "lower", None,
        derive=lambda d, p: per(d, p + "bed_cpu_latency_s", p + "bed_cpu_throughput_s",
                                "m_throughput_dispatched", "m_dispatch_apply_to_remote_job_samples"))
    row("workers' Kueue CPU per dispatched job, all workers (latency + throughput runs)",
        "ms", "lower", None,
        derive=lambda d, p: per(d, p + "workers_kueue_cpu_latency_s",
                                p + "workers_kueue_cpu_throughput_s",
                                "m_throughput_dispatched", "m_dispatch_apply_to_remote_job_samples"))
    row("controller CPU, dispatching the running jobs", "s", "lower", "cpu_running_s")
    prev = 0
    for t in tracked:
        row("controller CPU per new tracked Workload, up to %d" % t, "ms", "lower", None,
            derive=lambda d, p, t=t, prev=prev: (
                d[p + "cpu_tracked_%d_s" % t] * 1000 / (t - prev)
                if p + "cpu_tracked_%d_s" % t in d else None))
        row("manager API writes per new tracked Workload, up to %d (every client)" % t,
            "requests", "lower", None,
            derive=lambda d, p, t=t: (
                d[p + "writes_tracked_%d" % t] / d[p + "new_tracked_%d" % t]
                if d.get(p + "new_tracked_%d" % t) and p + "writes_tracked_%d" % t in d
                else None))
        row("controller RSS per tracked Workload at %d (above idle)" % t, "KiB", "lower", None,
            derive=lambda d, p, t=t: (
                (d[p + "rss_tracked_%d_mib" % t] - d[p + "rss_idle_mib"]) * 1024 / t
                if p + "rss_tracked_%d_mib" % t in d else None))
        prev = t
    # a dispatch with T Workloads tracked (managers.sh dispatch_tracked): the
    # CPU per dispatched job beside the paced run's at about none tracked
    # (the same pace: the rows say whether it stays flat), and its latency
    disp = sorted({int(m.group(1)) for d in kv.values() for k in d
                   for m in [re.match(r"m_tracked_(\d+)_dispatch_apply_to_remote_job_samples$", k)]
                   if m})
    if disp:
        row("controller CPU per dispatched job at ~0 tracked (paced run %s)"
            % rate_label(kv, "m_low_", "rate_low", 3), "ms", "lower", None,
            derive=lambda d, p: per1(d, p + "cpu_latency_low_s",
                                     "m_low_dispatch_apply_to_remote_job_samples"))
    for t in disp:
        at = rate_label(kv, "m_tracked_%d_" % t, "rate_tracked", 3)
        row("controller CPU per dispatched job at %d tracked (%s)" % (t, at), "ms", "lower", None,
            derive=lambda d, p, t=t: per1(d, p + "cpu_dispatch_tracked_%d_s" % t,
                                         "m_tracked_%d_dispatch_apply_to_remote_job_samples" % t))
    for t in disp:
        row("remote jobs within the wait at %d tracked (of BENCH_N_TRACKED)" % t, "jobs",
            "higher", "m_tracked_%d_dispatch_apply_to_remote_job_samples" % t)
    # with T tracked, the floor too is taken with them on the manager (the
    # floor mode's): whether the API server itself slowed down
    for t in disp:
        pre = "m_tracked_%d_" % t
        latency_rows(pre, "%s with %d tracked" % (rate_label(kv, pre, "rate_tracked", 3), t),
                     LATENCY_ROWS[:2])
    loads = [d["load1"] for d in kv.values() if "load1" in d]
    workers = next((int(d["workers"]) for d in kv.values() if "workers" in d), 2)
    doc = {"bench": "managers-w%d" % workers,
           "host": {"cores": os.cpu_count(), "load1": max(loads) if loads else None},
           "workers": workers, "rows": rows}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def rate_label(kv, pre, rate_key, default):
    """ "at RATE/s" of a latency run, from the modes that have it"""
    rates = sorted({d.get(rate_key, default) for d in kv.values()
                    if pre + "dispatch_apply_to_remote_job_p50_ms" in d or
                    pre + "dispatch_floor_direct_calls_p50_ms" in d})
    return "at %s/s" % " and ".join("%g" % r for r in (rates or [default]))


def per(d, a, b, n1, n2):
    """CPU ms per job over two stages"""
    if a in d and b in d and d.get(n1, 0) + d.get(n2, 0) > 0:
        return (d[a] + d[b]) * 1000 / (d.get(n1, 0) + d.get(n2, 0))
    return None


def per1(d, a, n):
    """CPU ms per job of one stage"""
    if a in d and d.get(n, 0) > 0:
        return d[a] * 1000 / d[n]
    return None


def fmt(v):
    if v is None:
        return "-"
    return "%.0f" % v if abs(v) >= 100 else "%.3g" % v


def table(d):
    docs = []
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        try:
            with open(p) as f:
                docs.append(json.load(f))
        except (OSError, ValueError) as e:
            print("%s: %s" % (p, e), file=sys.stderr)
    for doc in docs:
        rows = doc.get("rows", [])
        cols = [c for c in ORDER if any(c in r["values"] for r in rows)]
        cols += sorted({c for r in rows for c in r["values"]} - set(cols))
        h = doc.get("host", {})
        print("\n## %s (%s cores, load1 %s); (x) = ratio to kueue" %
              (doc.get("bench"), h.get("cores"), h.get("load1")))
        head = ["metric", "unit"] + cols
        lines = []
        for r in rows:
            v = r["values"]
            base = v.get("kueue")
            cells = []
            for c in cols:
                x = v.get(c)
                s = fmt(x)
                if x is not None and base and c != "kueue":
                    s += " (%.2fx)" % (x / base)
                cells.append(s)
            lines.append([r["metric"], r["unit"] + (" ^" if r["better"] == "higher" else "")] + cells)
        widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
        for line in [head, ["-" * w for w in widths]] + lines:
            print("| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |")
        print("(units marked ^: higher is better; the others lower)")
    scaling(docs)


def scaling(docs):
    """a line per metric and mode: how the figure grows from the fewest to the most workers"""
    runs = sorted((doc["workers"], doc) for doc in docs
                  if doc.get("bench", "").startswith("managers-w") and "workers" in doc)
    if len(runs) < 2:
        print("\nscaling with workers: one worker count measured (%s); MKUEUE_WORKERS=4, 8 add more"
              % ", ".join(str(w) for w, _ in runs))
        return
    (w0, a), (w1, b) = runs[0], runs[-1]
    q = w1 / w0
    print("\n## scaling from %d to %d workers (x%.0f)" % (w0, w1, q))
    first = {r["metric"]: r for r in a["rows"]}
    for r in b["rows"]:
        r0 = first.get(r["metric"])
        if not r0:
            continue
        parts = []
        for c in ORDER:
            x0, x1 = r0["values"].get(c), r["values"].get(c)
            if not x0 or x1 is None:
                continue
            g = x1 / x0
            if r["better"] == "higher":
                word = "x%.2f" % g
            else:
                word = "x%.2f, %s" % (g, "at most linear" if g <= q * 1.1 else "faster than linear")
            parts.append("%s %s" % (c, word))
        print("%s: %s" % (r["metric"], "; ".join(parts)))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "collect":
        collect(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
