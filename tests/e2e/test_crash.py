"""Durability under crashes: runs tools/lockcrash, which starts its own deadbolt-server with
--appendonly yes on a fresh directory, loads it with lock traffic (SET NX PX / DELIFEQ and
LOCK.ACQUIRE / LOCK.RELEASE, 64 pipelined connections), kills it with SIGKILL at a random moment,
restarts it on the same directory (with another --threads in some rounds) and reads every key
back. With appendfsync always nothing acknowledged may be lost; with everysec the losses are
reported and must be of writes acknowledged within 2 s of the kill. Then the tool's self-tests:
a server without a journal, and a tester that counts in-flight operations as acknowledged, must
both be reported as losing locks.

The tool decides what counts as lost (see tools/README.md, "lockcrash"); this module checks its
exit code and summary line. A few rounds only; `lockcrash --rounds 50` is the long run.

The binary: $DEADBOLT_LOCKCRASH, else <build>/tools/lockcrash next to
DEADBOLT_SERVER=<build>/server/deadbolt-server. Skipped with DEADBOLT_AGAINST_REDIS=1 (the
reference redis-server has neither DELIFEQ nor LOCK.ACQUIRE, and its journal is not ours)."""

import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS

ROUNDS = os.environ.get("DEADBOLT_CRASH_ROUNDS", "3")
# Every step of the tool is bounded (start 60 s, replies 10 s); this only guards the suite.
RUN_TIMEOUT = 300


def lockcrash_path():
    """(binary, server) or (None, reason)."""
    server = os.environ.get("DEADBOLT_SERVER")
    if not server:
        return None, "set DEADBOLT_SERVER (lockcrash starts the server itself)"
    explicit = os.environ.get("DEADBOLT_LOCKCRASH")
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise RuntimeError("DEADBOLT_LOCKCRASH=%r is not an executable file" % explicit)
        return explicit, server
    build = os.path.dirname(os.path.dirname(os.path.abspath(server)))
    path = os.path.join(build, "tools", "lockcrash")
    if not os.access(path, os.X_OK):
        return None, "%s is not built (or set DEADBOLT_LOCKCRASH)" % path
    return path, server


@unittest.skipIf(AGAINST_REDIS, "lockcrash tests deadbolt's own journal")
class CrashTest(unittest.TestCase):
    def setUp(self):
        self.binary, self.server = lockcrash_path()
        if self.binary is None:
            self.skipTest(self.server)

    def lockcrash(self, *args, env=None):
        """Runs lockcrash; returns (exit code, output). MULTI/EXEC pairs are left out (see
        test_multi_exec_is_all_or_nothing) unless asked for."""
        if "--multi-every" not in args:
            args = ("--multi-every", "0") + args
        # Its own directory, removed after the test: lockcrash keeps a directory it made itself
        # when a run fails, which the self-tests here do on purpose.
        work = tempfile.mkdtemp(prefix="lockcrash-test-")
        self.addCleanup(shutil.rmtree, work, True)
        argv = [self.binary, "--server", self.server, "--dir", work, "--kill-max", "2000", *args]
        return harness.run_tool(self, argv, RUN_TIMEOUT, env=env)

    def summary(self, out):
        m = re.search(r"(?m)^lockcrash: (PASS|FAIL): .* ([\d,]+) operations acknowledged .*"
                      r"lost ([\d,]+) keys \+ ([\d,]+) tokens .*, ([\d,]+) not allowed.*; "
                      r"([\d,]+) violations \([\d,]+ torn transactions\), ([\d,]+) errors", out)
        self.assertIsNotNone(m, out)
        n = lambda s: int(s.replace(",", ""))  # noqa: E731
        return {"verdict": m.group(1), "acked": n(m.group(2)), "lost_keys": n(m.group(3)),
                "lost_tokens": n(m.group(4)), "not_allowed": n(m.group(5)),
                "violations": n(m.group(6)), "errors": n(m.group(7))}

    def test_always_loses_nothing(self):
        # Restarts with 2, 1, 3 threads; the last round ends with SIGTERM.
        code, out = self.lockcrash("--appendfsync", "always", "--rounds", ROUNDS)
        s = self.summary(out)
        self.assertEqual(code, 0, out)
        self.assertEqual(s["verdict"], "PASS", out)
        self.assertEqual((s["lost_keys"], s["lost_tokens"], s["violations"], s["errors"]),
                         (0, 0, 0, 0), out)
        self.assertGreater(s["acked"], 1000, out)

    def test_everysec_loses_at_most_the_last_seconds(self):
        code, out = self.lockcrash("--appendfsync", "everysec", "--rounds", "2",
                                   "--loss-window", "2000")
        s = self.summary(out)
        self.assertEqual(code, 0, out)
        self.assertEqual((s["not_allowed"], s["violations"], s["errors"]), (0, 0, 0), out)

    def test_multi_exec_is_all_or_nothing(self):
        # Every 2nd connection takes and releases its plain keys two at a time in MULTI/EXEC; a
        # transaction in flight at the kill must come back whole or not at all.
        code, out = self.lockcrash("--appendfsync", "always", "--rounds", ROUNDS,
                                   "--multi-every", "2")
        s = self.summary(out)
        self.assertEqual(code, 0, out)
        self.assertEqual((s["lost_keys"], s["violations"], s["errors"]), (0, 0, 0), out)

    def power_cut(self, *args, env=None):
        """Runs lockcrash --power-cut; skips when powercutfs cannot be built or mounted here."""
        fs = os.path.join(os.path.dirname(self.binary), "powercutfs")
        if not os.access(fs, os.X_OK):
            self.skipTest("%s is not built (it needs libfuse3-dev)" % fs)
        if not os.path.exists("/dev/fuse"):
            self.skipTest("no /dev/fuse")
        code, out = self.lockcrash("--power-cut", *args, env=env)
        if code == 2 and "--power-cut:" in out:
            self.skipTest("powercutfs cannot mount here: " + out[-500:])
        return code, out

    def test_power_cut_always_loses_nothing(self):
        # The journal on powercutfs: after each kill every write not fsynced is dropped, so this
        # tests the fsyncs themselves, not only that replies wait for them.
        code, out = self.power_cut("--appendfsync", "always", "--rounds", "2")
        s = self.summary(out)
        self.assertEqual(code, 0, out)
        self.assertEqual((s["lost_keys"], s["lost_tokens"], s["violations"], s["errors"]),
                         (0, 0, 0, 0), out)
        self.assertRegex(out, r"(?m)^   power cut: \d+ files rolled back", out)

    def test_power_cut_always_with_one_journal_lagging(self):
        # Shard 1's journal fsyncs 15 ms late (powercutfs's POWERCUTFS_SLOW_FSYNC), so a pipeline
        # over two shards has one part on disk well before the other. Its replies must wait for
        # both: a build that answered once the origin's part was on disk, without the other
        # shard's ack (relay.cc, StartCommit), lost thousands of acknowledged keys here.
        code, out = self.power_cut("--appendfsync", "always", "--rounds", "2",
                                   env={"POWERCUTFS_SLOW_FSYNC": "journal-1-of-:15"})
        s = self.summary(out)
        self.assertEqual(code, 0, out)
        self.assertEqual((s["lost_keys"], s["lost_tokens"], s["violations"], s["errors"]),
                         (0, 0, 0, 0), out)

    def test_power_cut_everysec_loses_at_most_the_last_seconds(self):
        # Without rewrites (whose fsyncs would save more), everysec's own fsync is all there is.
        code, out = self.power_cut("--appendfsync", "everysec", "--rounds", "2",
                                   "--rewrite-min-size", "1gb", "--rewrite-before-kill", "0")
        s = self.summary(out)
        self.assertEqual(code, 0, out)
        self.assertEqual((s["not_allowed"], s["violations"], s["errors"]), (0, 0, 0), out)

    def test_power_cut_without_fsync_is_caught(self):
        # Self-test of the power cut: with appendfsync no and no rewrite (whose fsyncs would save
        # the file), 3 s of acknowledged writes are dropped, older than the 2 s allowed.
        code, out = self.power_cut("--appendfsync", "no", "--rounds", "1", "--no-graceful",
                                   "--kill-min", "3000", "--kill-max", "3000",
                                   "--rewrite-min-size", "1gb", "--rewrite-before-kill", "0",
                                   "--kill-start", "0")
        s = self.summary(out)
        self.assertEqual(code, 1, out)
        self.assertGreater(s["lost_keys"], 0, out)
        self.assertGreater(s["not_allowed"], 0, out)
        self.assertIn("LOST older than --loss-window-ms", out)

    def test_no_journal_is_caught(self):
        # Self-test: without a journal every lock held at the kill comes back free.
        code, out = self.lockcrash("--fault", "no-journal", "--rounds", "1", "--no-graceful")
        s = self.summary(out)
        self.assertEqual(code, 1, out)
        self.assertGreater(s["lost_keys"], 0, out)
        self.assertGreater(s["not_allowed"], 0, out)
        self.assertIn("LOST with appendfsync always: lockcrash:", out)

    def test_counting_inflight_as_acknowledged_is_caught(self):
        # Self-test: the operations in flight at the kill are mostly waiting for their fsync, so a
        # tester that counted them as acknowledged must see some of them lost.
        code, out = self.lockcrash("--fault", "inflight-acked", "--rounds", "1", "--no-graceful",
                                   "--kill-start", "0")
        s = self.summary(out)
        self.assertEqual(code, 1, out)
        self.assertGreater(s["lost_keys"], 0, out)


if __name__ == "__main__":
    unittest.main()
