"""timeline.py on a reconciler log written here: which Workloads it follows,
which steps it times, and the figures it prints for them."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import timeline  # noqa: E402


def line(ts, msg, **kv):
    return json.dumps(dict(ts="2026-12-06T10:00:%06.3fZ" % ts, level="info", msg=msg, **kv))


def dispatch(job, wl, t0, ns="bench-low"):
    """One job's dispatch, its steps 10, 20, 40, 80 and 160 ms apart."""
    key = "%s/%s" % (ns, wl)
    return [
        line(t0, "workload created", logger="workload", job="%s/%s" % (ns, job), workload=wl),
        line(t0 + .010, "quota reserved", workload=key),
        line(t0 + .020, "remote workload created", cluster="worker-1", workload=key),
        line(t0 + .030, "remote workload created", cluster="worker-2", workload=key),
        line(t0 + .070, "cluster name written", workload=key, cluster="worker-1"),
        line(t0 + .150, "remote job created", cluster="worker-1", namespace=ns, job=job),
        line(t0 + .310, 'The workload got reservation on "worker-1"', workload=key),
    ]


class Timeline(unittest.TestCase):
    def log(self, lines):
        f = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
        f.write("\n".join(lines) + "\n")
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def run_main(self, *args):
        out = io.StringIO()
        argv = sys.argv
        sys.argv = ["timeline.py"] + list(args)
        try:
            with redirect_stdout(out):
                timeline.main()
        finally:
            sys.argv = argv
        return out.getvalue().splitlines()

    def test_steps_from_the_step_before(self):
        path = self.log(dispatch("lat-1", "job-lat-1-a", 1) + dispatch("lat-2", "job-lat-2-b", 2))
        s = timeline.read(path, "bench-low/lat-", "")
        self.assertEqual(len(s), 2)
        w = s["bench-low/job-lat-1-a"]
        # the copy is timed at the last one's create
        self.assertAlmostEqual(w["copied"] - w["created"], 30, places=3)
        self.assertAlmostEqual(w["job"] - w["named"], 80, places=3)
        out = self.run_main(path)
        self.assertEqual(out[0], "2 Workloads, 2 with every step")
        rows = {r[:22].strip(): r[22:].split() for r in out[2:]}
        self.assertEqual(rows["reserved -> copied"], ["20.0"] * 4)
        self.assertEqual(rows["named -> job"], ["80.0"] * 4)
        self.assertEqual(rows["created -> job"], ["150.0"] * 4)

    def test_other_jobs_garbage_and_missing_steps(self):
        lines = dispatch("lat-1", "job-lat-1-a", 1)
        lines += dispatch("thr-1", "job-thr-1-c", 2)  # not the prefix
        lines += ["not json", "{\"msg\": \"no time\"}"]
        lines += dispatch("lat-3", "job-lat-3-d", 3)[:3]  # never got its job
        out = self.run_main(self.log(lines))
        self.assertEqual(out[0], "2 Workloads, 1 with every step")

    def test_a_job_name_run_again_counts_its_newest_workload(self):
        lines = dispatch("lat-1", "job-lat-1-old", 1)[:1]  # an earlier run, cut short
        lines += dispatch("lat-1", "job-lat-1-new", 5)
        s = timeline.read(self.log(lines), "bench-low/lat-", "")
        self.assertIn("job", s["bench-low/job-lat-1-new"])
        self.assertNotIn("job", s["bench-low/job-lat-1-old"])
        # and SINCE leaves the earlier run out
        s = timeline.read(self.log(lines), "bench-low/lat-", "2026-12-06T10:00:04")
        self.assertEqual(list(s), ["bench-low/job-lat-1-new"])

    def test_percentiles(self):
        v = list(range(1, 101))
        self.assertEqual(timeline.pct(v, .5), 51)
        self.assertEqual(timeline.pct(v, .99), 99)
        self.assertEqual(timeline.pct([7], .99), 7)


if __name__ == "__main__":
    unittest.main()
