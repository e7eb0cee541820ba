"""render.py's interleaved pairs on key-value files written here: the
median of the pairs' p99 ratios, the count within 2x, and pairs left out."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import render  # noqa: E402


def pair(k, ours, direct, admission):
    return ["m_pair%d_dispatch_apply_to_remote_job_p99_ms %g" % (k, ours),
            "m_pair%d_dispatch_floor_direct_calls_p99_ms %g" % (k, direct),
            "m_pair%d_dispatch_floor_worker_admission_p99_ms %g" % (k, admission)]


class Pairs(unittest.TestCase):
    def rows(self, lines):
        with tempfile.TemporaryDirectory() as d:
            kv = os.path.join(d, "kv")
            os.mkdir(kv)
            with open(os.path.join(kv, "mkueue-standalone.kv"), "w") as f:
                f.write("\n".join(["rate_pairs 3"] + lines) + "\n")
            out = os.path.join(d, "out.json")
            render.collect(out, kv, "mkueue-standalone")
            with open(out) as f:
                return {r["metric"]: r["values"] for r in json.load(f)["rows"]}

    def test_median_and_count_within_2x(self):
        # ratios to the floor with admission: 1.5, 3, 1.2, 10 (pair 2 with
        # the floor first changes nothing here: the pair is what counts)
        rows = self.rows(pair(1, 300, 100, 200) + pair(2, 600, 300, 200) +
                         pair(3, 240, 120, 200) + pair(4, 2000, 400, 200))
        at = "apply -> remote job at 3/s, p99 / "
        self.assertEqual(rows[at + "floor with admission p99: median of 4 interleaved pairs"],
                         {"mkueue-standalone": 2.25})
        self.assertEqual(rows[at + "floor with admission p99: pairs within 2x (of 4)"],
                         {"mkueue-standalone": 2})
        # to the direct calls: 3, 2, 2, 5 -> median 2.5, two within 2x
        self.assertEqual(rows[at + "floor p99: median of 4 interleaved pairs"],
                         {"mkueue-standalone": 2.5})
        self.assertEqual(rows[at + "floor p99: pairs within 2x (of 4)"],
                         {"mkueue-standalone": 2})

    def test_a_pair_without_its_floor_is_left_out(self):
        # pair 2's floor printed n/a (no job arrived): not read, not a ratio
        lines = pair(1, 300, 100, 200) + pair(3, 900, 300, 300)
        lines += ["m_pair2_dispatch_apply_to_remote_job_p99_ms 500",
                  "m_pair2_dispatch_floor_worker_admission_p99_ms n/a"]
        rows = self.rows(lines)
        key = "apply -> remote job at 3/s, p99 / floor with admission p99: median of 2 interleaved pairs"
        self.assertEqual(rows[key], {"mkueue-standalone": 2.25})

    def test_no_pairs_no_rows(self):
        rows = self.rows(["m_dispatch_apply_to_remote_job_p99_ms 300"])
        self.assertFalse([m for m in rows if "interleaved" in m])


if __name__ == "__main__":
    unittest.main()
