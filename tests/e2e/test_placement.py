"""Where the reactors run: --pin auto|yes|no (deadbolt only; Redis has no such flag).

auto, the default, pins reactor i to the i-th CPU the server may use only when the reactors
leave one of those CPUs free; when every CPU has a reactor they are left to the scheduler, so
that a reactor can move off a core another busy process wants (bench/RESULTS.md measured
pinning there costing redis-benchmark 40% of its throughput at P1). The test reads each
reactor thread's allowed CPUs from /proc."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def reactor_cpus(pid):
    """{thread name: allowed CPUs} for the server's reactor threads ("reactor-<i>")."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, tid)
        with open(base + "comm") as f:
            name = f.read().strip()
        if not name.startswith("reactor-"):
            continue
        out[name] = os.sched_getaffinity(int(tid))
    return out


@unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's own flag")
@unittest.skipUnless(len(os.sched_getaffinity(0)) >= 2, "needs two CPUs")
class PlacementTest(unittest.TestCase):
    def placed(self, args):
        server = harness.ServerProcess(args).start()
        try:
            with harness.RespConn(server.port) as c:
                self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
            return reactor_cpus(server.proc.pid), server.log_tail()
        finally:
            server.stop()

    def test_auto_leaves_reactors_free_when_every_cpu_has_one(self):
        allowed = os.sched_getaffinity(0)
        cpus, log = self.placed(["--threads", str(len(allowed))])
        self.assertEqual(len(cpus), len(allowed), cpus)
        for name, got in cpus.items():
            self.assertEqual(got, allowed, name)
        self.assertIn("not pinned", log)

    def test_auto_pins_when_a_cpu_is_left_free(self):
        allowed = sorted(os.sched_getaffinity(0))
        cpus, log = self.placed(["--threads", "1"])
        self.assertEqual(cpus, {"reactor-0": {allowed[0]}})
        self.assertIn("pinned to CPUs %d" % allowed[0], log)

    def test_yes_pins_each_reactor_and_no_pins_none(self):
        allowed = sorted(os.sched_getaffinity(0))
        cpus, _ = self.placed(["--threads", "2", "--pin", "yes"])
        self.assertEqual(cpus, {"reactor-0": {allowed[0]}, "reactor-1": {allowed[1]}})
        cpus, _ = self.placed(["--threads", "1", "--no-pin"])
        self.assertEqual(cpus, {"reactor-0": set(allowed)})


if __name__ == "__main__":
    unittest.main()
