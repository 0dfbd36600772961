"""Lock safety under contention: runs tools/locktorture against the module's server (started
with --threads 2, so the tool's 16 connections land on both reactors and its 3 lock keys on both
shards) with each lock method, and once with a deliberately broken protocol (--fault), which the
tool must report as overlapping holders.

The tool decides what counts as a violation (see tools/README.md, "locktorture"); this module
checks its exit code and its "0 violations" line. A method the server does not have yet (Redisson
scripts: NOSCRIPT; the native LOCK.ACQUIRE: unknown command) is reported by the tool as skipped,
and the test is then skipped with the tool's reason.

The binary: $DEADBOLT_LOCKTORTURE, else <build>/tools/locktorture next to
DEADBOLT_SERVER=<build>/server/deadbolt-server. Skipped with DEADBOLT_AGAINST_REDIS=1: setnx
needs DELIFEQ and SET IFEQ, which Redis 7.0 lacks, and the other methods are deadbolt's own."""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

AGAINST_REDIS = (not os.environ.get("DEADBOLT_SERVER")
                 and os.environ.get("DEADBOLT_AGAINST_REDIS") == "1")
SKIP_REASON = ("locktorture's methods need DELIFEQ / SET IFEQ, Redisson's scripts or LOCK.ACQUIRE, "
               "none of which the reference redis-server 7.0 has")

SECONDS = os.environ.get("DEADBOLT_TORTURE_SECONDS", "2")
# The run itself is bounded (--seconds, WAIT 1 s, 5 s per reply); this only guards the suite.
RUN_TIMEOUT = 120


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
                *args]
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            self.fail("%s did not finish within %ds:\n%s"
                      % (" ".join(argv), RUN_TIMEOUT, (e.output or b"").decode("utf-8", "replace")))
        out = p.stdout.decode("utf-8", "replace")
        return p.returncode, "$ %s\n%s" % (" ".join(argv), out)

    def skip_if_skipped(self, out, method):
        m = re.search(r"^== %s: SKIPPED: (.*)$" % method, out, re.M)
        if m:
            self.skipTest("locktorture skipped %s: %s" % (method, m.group(1)))

    def assert_clean(self, method):
        code, out = self.torture("--method", method)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"(?m)^locktorture: 0 violations, 0 errors;", out)
        self.skip_if_skipped(out, method)
        self.assertRegex(out, r"(?m)^== %s: 16 clients, 3 locks" % method, out)
        self.assertRegex(out, r"(?m)^   0 violations, 0 errors,", out)
        acquired = int(re.search(r"acquisitions (\d+)", out).group(1))
        self.assertGreater(acquired, 100, out)

    def test_setnx(self):
        self.assert_clean("setnx")

    def test_redisson(self):
        self.assert_clean("redisson")

    def test_native(self):
        self.assert_clean("native")

    def test_fault_is_caught(self):
        # SET without NX and release by plain DEL: holders must be seen overlapping.
        code, out = self.torture("--method", "setnx", "--fault", "--seconds", "1")
        self.assertEqual(code, 1, out)
        m = re.search(r"(?m)^   (\d+) violations \((\d+) overlap", out)
        self.assertIsNotNone(m, out)
        self.assertGreater(int(m.group(2)), 0, out)
        self.assertIn("VIOLATION overlap: lock ", out)

    def test_early_release_is_caught(self):
        # Redisson and native clients that release before leaving the critical section.
        for method in ("redisson", "native"):
            with self.subTest(method=method):
                code, out = self.torture("--method", method, "--fault", "--seconds", "1")
                if re.search(r"(?m)^== %s: SKIPPED" % method, out):
                    self.assertEqual(code, 0, out)
                    continue
                self.assertEqual(code, 1, out)
                self.assertRegex(out, r"(?m)^   \d+ violations \(\d+ overlap", out)

    def test_queue_jumping_is_caught(self):
        # Native clients that poll without WAIT but claim their first attempt as their place in
        # the queue: the FIFO check must see grants out of order.
        code, out = self.torture("--method", "native", "--fault-order")
        self.skip_if_skipped(out, "native")
        if re.search(r"(?m)^   \d+ violations \(.*\d+ out-of-order-grant", out):
            self.assertEqual(code, 1, out)
        else:
            # On a machine so loaded that the server starved for CPU, every inversion may have
            # been excused as a late request (a warning): the check still saw them.
            self.assertRegex(out, r"(?m)^   warning: lock \d+: client \d+ was granted token", out)


if __name__ == "__main__":
    unittest.main()
