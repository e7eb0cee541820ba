#!/usr/bin/env python3
"""Where a dispatch spends its time, from mkueue-reconciler's info log.

    timeline.py LOG [PREFIX [SINCE]]

Reads the JSON lines of a reconciler run at --log-level info and follows
every Workload whose job's "namespace/name" starts with PREFIX (default
"bench-low/lat-": the bench's paced latency run) through the steps the log
records (from SINCE on, a UTC time as the log writes it,
2026-12-05T05:40:00: a namespace's earlier runs reuse the job names):

    created   the Workload is created for its job ("workload created")
    reserved  the gate reserved its quota ("quota reserved")
    copied    the last of its remote copies exists ("remote workload created")
    named     a worker's Kueue admitted a copy, mkueue saw it and wrote that
              worker into status.clusterName ("cluster name written")
    job       the remote job exists ("remote job created")
    ready     the check Ready and the Workload Admitted are written
              ("The workload got reservation on ...")

and prints, per step, p50 / p90 / p99 / max milliseconds from the step
before, and the whole created -> job. A Workload missing a step is counted
apart (its job may have been created before the log began). Figures, not
a test: the bench prints them beside its own (README, Performance).
"""
import json
import sys
from datetime import datetime

STEPS = ["created", "reserved", "copied", "named", "job", "ready"]


def ms(ts):
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000


def read(path, prefix, since):
    latest = {}  # "ns/job" -> its newest Workload's "ns/name" (runs reuse job names)
    seen = {}  # "ns/workload" -> {step: ms}
    with open(path, errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            msg, t = r.get("msg", ""), r.get("ts")
            if not t or t < since:
                continue
            if msg == "workload created":
                if r.get("job", "").startswith(prefix):
                    key = r["job"].partition("/")[0] + "/" + r.get("workload", "")
                    latest[r["job"]] = key
                    seen[key] = {"created": ms(t)}
                continue
            key = r.get("workload")
            if msg == "remote job created":
                key = latest.get("%s/%s" % (r.get("namespace"), r.get("job")))
            if key not in seen:
                continue
            s = seen[key]
            if msg == "quota reserved":
                s.setdefault("reserved", ms(t))
            elif msg == "remote workload created":
                s["copied"] = ms(t)  # the last copy's
            elif msg == "cluster name written":
                s.setdefault("named", ms(t))
            elif msg.startswith("The workload got reservation on"):
                s.setdefault("ready", ms(t))
            elif msg == "remote job created":
                s.setdefault("job", ms(t))
    return seen


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    seen = read(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "bench-low/lat-",
                sys.argv[3] if len(sys.argv) > 3 else "")
    whole = [s for s in seen.values() if all(k in s for k in STEPS)]
    print("%d Workloads, %d with every step" % (len(seen), len(whole)))
    if not whole:
        return
    print("%-22s %8s %8s %8s %8s" % ("step (ms)", "p50", "p90", "p99", "max"))
    rows = [(a + " -> " + b, [s[b] - s[a] for s in whole]) for a, b in zip(STEPS, STEPS[1:])]
    rows.append(("created -> job", [s["job"] - s["created"] for s in whole]))
    for name, v in rows:
        print("%-22s %8.1f %8.1f %8.1f %8.1f" % (name, pct(v, .5), pct(v, .9), pct(v, .99), max(v)))


if __name__ == "__main__":
    main()
