"""Lock safety under contention: runs tools/locktorture against the module's server (started
with --threads 2, so the tool's 16 connections land on both reactors and its 3 lock keys on both
shards) with each lock method, and once with a deliberately broken protocol (--fault), which the
tool must report as overlapping holders.

The tool decides what counts as a violation (see tools/README.md, "locktorture"); this module
checks its exit code and its "0 violations" line. Bounded by work, not by the clock: a clean run
is repeated until the runs have made MIN_ACQUISITIONS in all, and a faulty one until the tool has
caught the fault, so a slow (loaded, sanitized) machine makes the test longer instead of failing
it; only RUN_TIMEOUT without any progress fails. A method the server does not have yet (Redisson
scripts: NOSCRIPT; the native LOCK.ACQUIRE: unknown command) is reported by the tool as skipped,
and the test is then skipped with the tool's reason.

The binary: $DEADBOLT_LOCKTORTURE, else <build>/tools/locktorture next to
DEADBOLT_SERVER=<build>/server/deadbolt-server. Skipped with DEADBOLT_AGAINST_REDIS=1: setnx
needs DELIFEQ and SET IFEQ, which Redis 7.0 lacks, and the other methods are deadbolt's own."""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS
SKIP_REASON = ("locktorture's methods need DELIFEQ / SET IFEQ, Redisson's scripts or LOCK.ACQUIRE, "
               "none of which the reference redis-server 7.0 has")

SECONDS = os.environ.get("DEADBOLT_TORTURE_SECONDS", "2")
# The tool's own guard against a hung reply (its default: 5 s on top of a native WAIT), made
# generous: an ASan server on a loaded 2-core machine answered a WAIT 1 s acquire after 5 s.
IO_TIMEOUT_MS = "60000"
# The run itself is bounded (--seconds, WAIT 1 s, IO_TIMEOUT_MS per reply); this only guards the
# suite: one run, and runs that repeat without progress (no acquisition, the fault not caught yet).
RUN_TIMEOUT = 120
# A clean method is checked over at least this many acquisitions (in one run or several).
MIN_ACQUISITIONS = 101


def locktorture_path():
    """The binary, or None with the reason."""
    explicit = os.environ.get("DEADBOLT_LOCKTORTURE")
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise RuntimeError("DEADBOLT_LOCKTORTURE=%r is not an executable file" % explicit)
        return explicit, None
    server = os.environ.get("DEADBOLT_SERVER")
    if not server:
        return None, "set DEADBOLT_LOCKTORTURE or DEADBOLT_SERVER to find locktorture"
    build = os.path.dirname(os.path.dirname(os.path.abspath(server)))
    path = os.path.join(build, "tools", "locktorture")
    if not os.access(path, os.X_OK):
        return None, "%s is not built (or set DEADBOLT_LOCKTORTURE)" % path
    return path, None


def setUpModule():
    if not AGAINST_REDIS:
        harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


@unittest.skipIf(AGAINST_REDIS, SKIP_REASON)
class TortureTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.binary, why = locktorture_path()
        if self.binary is None:
            self.skipTest(why)

    def torture(self, *args):
        """Runs locktorture against the module's server; returns (exit code, stdout + stderr)."""
        argv = [self.binary, "--port", str(self.port), "--shards", "2", "--seconds", SECONDS,
                "--io-timeout", IO_TIMEOUT_MS, *args]
        return harness.run_tool(self, argv, RUN_TIMEOUT)

    def skip_if_skipped(self, out, method):
        m = re.search(r"^== %s: SKIPPED: (.*)$" % method, out, re.M)
        if m:
            self.skipTest("locktorture skipped %s: %s" % (method, m.group(1)))

    def repeat(self, run):
        """Calls run() until it returns True; fails once runs have gone on for RUN_TIMEOUT
        since the last one that returned None (progress but not done yet) or started."""
        progress = time.monotonic()
        runs = 0
        while True:
            runs += 1
            done = run()
            if done:
                return runs
            if done is None:
                progress = time.monotonic()
            elif time.monotonic() - progress > RUN_TIMEOUT:
                return self.fail("%d runs, none with progress for %ds" % (runs, RUN_TIMEOUT))

    def assert_clean(self, method):
        # Every run clean, until they made MIN_ACQUISITIONS in all.
        total = [0]

        def run():
            code, out = self.torture("--method", method)
            self.assertEqual(code, 0, out)
            self.assertRegex(out, r"(?m)^locktorture: 0 violations, 0 errors;", out)
            self.skip_if_skipped(out, method)
            self.assertRegex(out, r"(?m)^== %s: 16 clients, 3 locks" % method, out)
            self.assertRegex(out, r"(?m)^   0 violations, 0 errors,", out)
            acquired = int(re.search(r"acquisitions (\d+)", out).group(1))
            total[0] += acquired
            if total[0] >= MIN_ACQUISITIONS:
                return True
            return None if acquired else False

        self.repeat(run)

    def test_setnx(self):
        self.assert_clean("setnx")

    def test_redisson(self):
        self.assert_clean("redisson")

    def test_native(self):
        self.assert_clean("native")

    def test_fault_is_caught(self):
        # SET without NX and release by plain DEL: holders must be seen overlapping (in one run
        # of several, if a slow machine makes few of them).
        def run():
            code, out = self.torture("--method", "setnx", "--fault", "--seconds", "1")
            self.assertIn(code, (0, 1), out)
            m = re.search(r"(?m)^   (\d+) violations(?: \((\d+) overlap)?", out)
            self.assertIsNotNone(m, out)
            if not int(m.group(2) or 0):
                return False
            self.assertEqual(code, 1, out)
            self.assertIn("VIOLATION overlap: lock ", out)
            return True

        self.repeat(run)

    def test_early_release_is_caught(self):
        # Redisson and native clients that release before leaving the critical section.
        for method in ("redisson", "native"):
            with self.subTest(method=method):
                def run():
                    code, out = self.torture("--method", method, "--fault", "--seconds", "1")
                    if re.search(r"(?m)^== %s: SKIPPED" % method, out):
                        self.assertEqual(code, 0, out)
                        return True
                    self.assertIn(code, (0, 1), out)
                    if not re.search(r"(?m)^   [1-9]\d* violations \([1-9]\d* overlap", out):
                        return False  # not caught in this run: another one
                    self.assertEqual(code, 1, out)
                    return True

                self.repeat(run)

    def test_queue_jumping_is_caught(self):
        # Native clients that poll without WAIT but claim their first attempt as their place in
        # the queue: the FIFO check must see grants out of order (in one run of several, if a
        # slow machine makes few of them).
        def run():
            code, out = self.torture("--method", "native", "--fault-order")
            self.skip_if_skipped(out, "native")
            self.assertIn(code, (0, 1), out)
            if re.search(r"(?m)^   \d+ violations \(.*\d+ out-of-order-grant", out):
                self.assertEqual(code, 1, out)
                return True
            # On a machine so loaded that the server starved for CPU, every inversion may have
            # been excused as a late request (a warning): the check still saw them.
            return bool(re.search(r"(?m)^   warning: lock \d+: client \d+ was granted token", out))

        self.repeat(run)


if __name__ == "__main__":
    unittest.main()
