"""waits.py on two metrics snapshots written here: the means it prints per
work queue and per API server, and what it leaves out."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import waits  # noqa: E402

M = "127.0.0.1:17400"
W1 = "127.0.0.1:17401"


def snapshot(wait_s, work_s, keys, answer_s, budget_s, sent):
    """Metrics text: the workload queue's and the manager's and worker-1's
    POST histograms (sums in seconds), plus a bucket and a series not read"""
    return [
        'workqueue_queue_duration_seconds_sum{name="workload",controller="workload"} %g' % wait_s,
        'workqueue_queue_duration_seconds_count{name="workload",controller="workload"} %d' % keys,
        'workqueue_work_duration_seconds_sum{name="workload",controller="workload"} %g' % work_s,
        'workqueue_work_duration_seconds_count{name="workload",controller="workload"} %d' % keys,
        'workqueue_work_duration_seconds_bucket{name="workload",controller="workload",le="1"} 9',
        'rest_client_request_duration_seconds_sum{verb="POST",host="%s"} %g' % (M, answer_s),
        'rest_client_request_duration_seconds_count{verb="POST",host="%s"} %d' % (M, sent),
        'rest_client_rate_limiter_duration_seconds_sum{verb="POST",host="%s"} %g' % (M, budget_s),
        'rest_client_rate_limiter_duration_seconds_count{verb="POST",host="%s"} %d' % (M, sent),
        'rest_client_request_duration_seconds_sum{verb="POST",host="%s"} %g' % (W1, 2 * answer_s),
        'rest_client_request_duration_seconds_count{verb="POST",host="%s"} %d' % (W1, sent),
        'rest_client_rate_limiter_duration_seconds_sum{verb="POST",host="%s"} 0' % W1,
        'rest_client_rate_limiter_duration_seconds_count{verb="POST",host="%s"} %d' % (W1, sent),
        'mkueue_tracked_workloads 12',
    ]


class Figures(unittest.TestCase):
    def test_means_over_the_run_only(self):
        # before: 10 keys and 5 requests each; the run adds 20 keys waiting
        # 2 s and working 4 s in all, 10 requests answered in 0.5 s (the
        # worker's in 1 s) that waited 0.1 s for the budget
        before = waits.read(snapshot(1, 1, 10, 1, 0, 5))
        after = waits.read(snapshot(3, 5, 30, 1.5, 0.1, 15))
        out = waits.figures(before, after, {M: "manager", W1: "worker-1"})
        self.assertEqual(out[1], "  %-15s %6d  wait %8.1f  work %8.1f" % ("workload", 20, 100, 200))
        self.assertEqual(out[3], "  %-15s %6d  answer %8.1f  budget %8.1f" % ("manager", 10, 50, 10))
        self.assertEqual(out[4], "  %-15s %6d  answer %8.1f  budget %8.1f" % ("worker-1", 10, 100, 0))
        self.assertEqual(len(out), 5)

    def test_unnamed_host_and_idle_series(self):
        # nothing happened: no queue line, no request line; a host not named
        # is printed as it is
        snap = waits.read(snapshot(1, 1, 10, 1, 0, 5))
        self.assertEqual(waits.figures(snap, snap, {}),
                         ["work queues (keys handed out; mean wait for a thread, "
                          "mean time on it; ms):"])
        later = waits.read(snapshot(1, 1, 10, 2, 0, 6))
        out = waits.figures(snap, later, {})
        self.assertIn("  %-15s %6d  answer %8.1f  budget %8.1f" % (M, 1, 1000, 0), out)

    def test_steps_most_frequent_first(self):
        # the run adds 6 "winner" reconciles of 0.3 s in all and 2 "nominate"
        # of 0.4 s; "gone" is unchanged and left out
        def steps(winner, winner_s, nominate, nominate_s):
            fam = "mkueue_workload_step_duration_seconds"
            return ['%s_sum{step="winner"} %g' % (fam, winner_s),
                    '%s_count{step="winner"} %d' % (fam, winner),
                    '%s_sum{step="nominate"} %g' % (fam, nominate_s),
                    '%s_count{step="nominate"} %d' % (fam, nominate),
                    '%s_sum{step="gone"} 1' % fam,
                    '%s_count{step="gone"} 4' % fam]
        out = waits.figures(waits.read(steps(1, 0.1, 1, 0.1)), waits.read(steps(7, 0.4, 3, 0.5)), {})
        at = out.index("workload reconciles by deciding step (count; mean time on a thread, ms):")
        self.assertEqual(out[at + 1:], ["  %-22s %6d  work %8.1f" % ("winner", 6, 50),
                                        "  %-22s %6d  work %8.1f" % ("nominate", 2, 200)])


if __name__ == "__main__":
    unittest.main()
