"""Where a bench run's time went inside mkueue's reconciler, from two
snapshots of its /metrics (before and after the run):

* per work queue (kind of key): keys handed out, their mean wait for a
  thread and mean time on one;
* per API server (host, named by NAMES): requests sent, their mean time to
  the answer and mean wait for the client's qps budget;
* per step that decided a Workload's reconcile (dispatch.c): reconciles
  and their mean time, the most frequent first.

Usage: waits.py BEFORE AFTER [HOST=NAME ...]
BEFORE, AFTER: metrics text (only the *_sum and *_count series are read).
"""
import re
import sys

SERIES = re.compile(r'^(\w+)_(sum|count)\{([^}]*)\}\s+(\S+)$')
LABEL = re.compile(r'(\w+)="([^"]*)"')
QUEUE = {"workqueue_queue_duration_seconds": "wait",
         "workqueue_work_duration_seconds": "work"}
CLIENT = {"rest_client_request_duration_seconds": "answer",
          "rest_client_rate_limiter_duration_seconds": "budget"}
STEPS = "mkueue_workload_step_duration_seconds"


def read(lines):
    """{(family, part, labels): value} of the histograms' sums and counts"""
    out = {}
    for ln in lines:
        m = SERIES.match(ln.strip())
        if m and (m.group(1) in QUEUE or m.group(1) in CLIENT or m.group(1) == STEPS):
            labels = tuple(sorted(LABEL.findall(m.group(3))))
            out[(m.group(1), m.group(2), labels)] = float(m.group(4))
    return out


def figures(before, after, names):
    """The printed lines: queues by kind, then requests by server"""
    queues, servers, steps = {}, {}, {}
    for (fam, part, labels), v in after.items():
        d = v - before.get((fam, part, labels), 0.0)
        lab = dict(labels)
        if fam == STEPS:
            row = steps.setdefault(lab.get("step", "?"), {})
            row[("work", part)] = row.get(("work", part), 0.0) + d
            continue
        if fam in QUEUE:
            row = queues.setdefault(lab.get("name", "?"), {})
            key = QUEUE[fam]
        else:
            host = lab.get("host", "?")
            row = servers.setdefault(names.get(host, host), {})
            key = CLIENT[fam]
        row[(key, part)] = row.get((key, part), 0.0) + d

    def mean_ms(row, key):
        n = row.get((key, "count"), 0.0)
        return 1000 * row.get((key, "sum"), 0.0) / n if n > 0 else 0.0

    out = ["work queues (keys handed out; mean wait for a thread, mean time on it; ms):"]
    for kind in sorted(queues):
        row = queues[kind]
        n = row.get(("wait", "count"), 0.0)
        if n > 0:
            out.append("  %-15s %6d  wait %8.1f  work %8.1f"
                       % (kind, n, mean_ms(row, "wait"), mean_ms(row, "work")))
    lines = []
    for server in sorted(servers):
        row = servers[server]
        n = row.get(("budget", "count"), 0.0)  # every request waits for the budget, 0 or more
        if n > 0:
            lines.append("  %-15s %6d  answer %8.1f  budget %8.1f"
                         % (server, n, mean_ms(row, "answer"), mean_ms(row, "budget")))
    if lines:
        out.append("requests (sent; mean time to the answer, mean wait for the qps budget; ms):")
        out += lines
    lines = ["  %-22s %6d  work %8.1f" % (step, row.get(("work", "count"), 0.0), mean_ms(row, "work"))
             for step, row in sorted(steps.items(), key=lambda kv: (-kv[1].get(("work", "count"), 0.0), kv[0]))
             if row.get(("work", "count"), 0.0) > 0]
    if lines:
        out.append("workload reconciles by deciding step (count; mean time on a thread, ms):")
        out += lines
    return out


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    names = dict(a.split("=", 1) for a in argv[3:] if "=" in a)
    with open(argv[1]) as b, open(argv[2]) as a:
        print("\n".join(figures(read(b), read(a), names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
