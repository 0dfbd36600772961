"""When the journal cannot be written (issue 17, items 3 and 4): a full disk, made with a small
tmpfs mounted for each test (the suite runs as root; without the right to mount, the tests skip
and say so).

- As Redis: while the journal's last write failed, write commands, PING and an EXEC that would
  write are refused with "MISCONF Errors writing to the AOF file: <strerror>", reads and INFO
  work, and once the disk has room again writes are accepted again by themselves (the journal
  retries every second). These checks also run against redis-server --appendonly yes
  (DEADBOLT_AGAINST_REDIS=1).
- deadbolt's own promises: a write whose journal write failed is never acknowledged, so a SIGKILL
  loses nothing that was answered OK (with --appendfsync everysec too); with
  --appendfsync always a full disk answers the waiting writes with an error rather than hanging,
  and other clients' reads are answered meanwhile; a restart on the full disk works (start-up
  appends to the journal as it is when it has no room for a compacted copy)."""

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, decode, encode_command  # noqa: E402
from slots import on_shard  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS

# Generous bounds: the suite also runs under ASan on a busy 2-core machine.
SLACK = 15.0
MISCONF = "MISCONF Errors writing to the AOF file: No space left on device"
VALUE = "v" * 200


def setUpModule():
    harness.server_command(0)  # DEADBOLT_SERVER or DEADBOLT_AGAINST_REDIS must say what to run


def parse_info(raw):
    out = {}
    for line in decode(raw).decode().splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def is_error(raw, text):
    return raw == b"-" + text.encode() + b"\r\n"


class FullDiskCase(unittest.TestCase):
    """Base: --dir on a 2 MB tmpfs of its own; fill() takes every free byte, free() gives them
    back. Servers are started with start(), killed with kill(); the mount goes with the test."""

    maxDiff = 4000
    redis_too = False

    def setUp(self):
        if AGAINST_REDIS and not self.redis_too:
            self.skipTest("deadbolt's own promise; redis-server acknowledges the write whose AOF "
                          "write fails, and exits on a write error with appendfsync always")
        self.dir = tempfile.mkdtemp(prefix="deadbolt-fulldisk-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", self.dir],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            self.skipTest("cannot mount a tmpfs to fill up (needs root): %s"
                          % r.stdout.decode(errors="replace").strip())
        self.addCleanup(self._umount)
        self.filler = os.path.join(self.dir, "filler")
        self.server = None
        self.logs = []
        self._conns = []
        self.addCleanup(self._cleanup)  # runs first: nothing may keep the mount busy

    def _umount(self):
        if subprocess.run(["umount", self.dir]).returncode != 0:
            subprocess.run(["umount", "-l", self.dir])

    def _cleanup(self):
        for c in self._conns:
            c.close()
        self._conns = []
        if self.server is not None:
            self.server.kill()
            self.logs.append((self.server.argv, self.server.log_text()))
            self.server = None

    def start(self, fsync, threads=2):
        self.assertIsNone(self.server)
        if AGAINST_REDIS:
            args = ["--appendonly", "yes", "--appendfsync", fsync, "--dir", self.dir]
        else:
            args = ["--threads", str(threads), "--appendonly", "yes", "--appendfsync", fsync,
                    "--dir", self.dir]
        self.server = harness.ServerProcess(extra_args=args).start()
        return self.conn()

    def conn(self):
        c = harness.RespConn(self.server.port, timeout=SLACK)
        self._conns.append(c)
        return c

    def kill(self):
        for c in self._conns:
            c.close()
        self._conns = []
        self.server.kill()
        self.logs.append((self.server.argv, self.server.log_text()))
        for marker in ("Sanitizer", "runtime error:"):
            self.assertNotIn(marker, self.logs[-1][1])
        self.server = None

    def fill(self):
        """Takes every free byte of the tmpfs."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for chunk in (1 << 16, 4096, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * chunk)
                except OSError as e:
                    self.assertEqual(e.errno, errno.ENOSPC)
        finally:
            os.close(fd)

    def free(self):
        os.remove(self.filler)

    def info(self, c):
        return parse_info(c.cmd("INFO", "persistence"))

    def set_until_refused(self, c, prefix, limit=20000):
        """SETs prefix:0, prefix:1, ... one at a time until one is refused; returns the keys
        answered OK and the refusal."""
        acked = []
        for i in range(limit):
            key = "%s:%d" % (prefix, i)
            raw = c.cmd("SET", key, VALUE)
            if raw != OK:
                return acked, raw
            acked.append(key)
        self.fail("%d SETs on a full disk were all answered OK" % limit)

    def wait_writable(self, c):
        """Writes are accepted again within a few retries (one a second)."""
        deadline = time.monotonic() + SLACK
        while True:
            raw = c.cmd("SET", "probe", "1")
            if raw == OK:
                return
            self.assertTrue(is_error(raw, MISCONF), raw)
            if time.monotonic() > deadline:
                self.fail("writes still refused %ds after the disk had room again" % SLACK)
            time.sleep(0.1)

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result is not None else 0
        out = super().run(result)
        if result is not None and len(result.failures) + len(result.errors) > before:
            for argv, text in self.logs[-3:]:
                sys.stderr.write("\n--- server output after failure of %s (%s) ---\n%s\n--- end ---\n"
                                 % (self.id(), " ".join(argv), text[-3000:]))
        return out


class MisconfTest(FullDiskCase):
    """Redis's behaviour: refuse writes with MISCONF while the journal cannot be written."""

    redis_too = True

    def test_writes_refused_with_misconf_reads_work_and_writes_come_back(self):
        c = self.start("everysec")
        self.assertEqual(c.cmd("SET", "before", "1"), OK)
        self.fill()
        acked, refusal = self.set_until_refused(c, "k")
        self.assertTrue(is_error(refusal, MISCONF), refusal)
        # Refused until the disk has room: writes, PING (as Redis: health checks notice), and
        # a transaction with a write in it; reads and INFO are answered.
        other = self.conn()
        self.assertTrue(is_error(other.cmd("SET", "x", "1"), MISCONF))
        self.assertTrue(is_error(other.cmd("DEL", "before"), MISCONF))
        self.assertTrue(is_error(other.cmd("PING"), MISCONF))
        self.assertEqual(other.cmd("GET", "before"), b"$1\r\n1\r\n")
        self.assertEqual(self.info(other)["aof_last_write_status"], "err")
        replies = other.pipeline([("MULTI",), ("SET", "x", "1"), ("EXEC",)])
        self.assertEqual(replies[0], OK)
        self.assertTrue(is_error(replies[1], MISCONF), replies[1])
        self.assertTrue(replies[2].startswith(b"-EXECABORT "), replies[2])
        replies = other.pipeline([("MULTI",), ("GET", "before"), ("EXEC",)])
        self.assertEqual(replies[2], b"*1\r\n$1\r\n1\r\n")
        if not AGAINST_REDIS:
            self.assertTrue(is_error(other.cmd("LOCK.ACQUIRE", "l", "me", "10000"), MISCONF))
        # Room again: writes are accepted again without anyone doing anything.
        self.free()
        self.wait_writable(other)
        self.assertEqual(other.cmd("PING"), b"+PONG\r\n")
        self.assertEqual(self.info(other)["aof_last_write_status"], "ok")
        self.assertEqual(other.cmd("SET", "after", "1"), OK)
        for key in acked:
            self.assertEqual(c.cmd("EXISTS", key), b":1\r\n", key)


class NothingAcknowledgedLostTest(FullDiskCase):
    """A write whose journal write failed is never answered OK: a SIGKILL then loses nothing
    that was acknowledged, with everysec too."""

    def test_everysec_sigkill_on_full_disk_keeps_every_acknowledged_write(self):
        c = self.start("everysec")
        self.fill()
        acked = []
        # Pipelined, from two connections: whatever batch a write lands in, an OK means it is in
        # the file.
        conns = [c, self.conn()]
        for round_ in range(20):
            for n, conn in enumerate(conns):
                keys = ["p%d:%d:%d" % (n, round_, i) for i in range(100)]
                replies = conn.pipeline([("SET", k, VALUE) for k in keys])
                for k, raw in zip(keys, replies):
                    if raw == OK:
                        acked.append(k)
                    else:
                        self.assertTrue(is_error(raw, MISCONF), raw)
        self.assertEqual(self.info(c)["aof_last_write_status"], "err")
        self.kill()
        self.free()
        c = self.start("everysec")
        lost = [k for k in acked if c.cmd("GET", k) != b"$200\r\n" + VALUE.encode() + b"\r\n"]
        self.assertEqual(lost, [], "%d of %d acknowledged SETs lost" % (len(lost), len(acked)))


    def test_everysec_cross_shard_pipelines_keep_their_replies_in_order(self):
        # Pipelines whose commands alternate between the shards run ahead (a relay visits each
        # shard once); when a shard's journal write fails, the replies of its part become errors
        # on the way. Each reply must still be its own command's: a SET's OK or error, a GET's
        # value (its own key's), nil or error.
        c = self.start("everysec")
        self.fill()
        conns = [c, self.conn()]
        refused = 0
        for round_ in range(20):
            for n, conn in enumerate(conns):
                cmds, want = [], []
                for i in range(40):
                    key = on_shard(i % 2, "q%d:%d:%d" % (n, round_, i))
                    value = (key + ":") * 10
                    cmds += [("SET", key, value), ("GET", key)]
                    want.append(value.encode())
                replies = conn.pipeline(cmds)
                for value, set_raw, get_raw in zip(want, replies[0::2], replies[1::2]):
                    self.assertTrue(set_raw == OK or is_error(set_raw, MISCONF), set_raw)
                    refused += set_raw != OK
                    self.assertTrue(get_raw in (b"$%d\r\n%s\r\n" % (len(value), value), b"$-1\r\n")
                                    or is_error(get_raw, MISCONF), (get_raw, value))
        self.assertGreater(refused, 0)
        if not harness.KEY_ORDER:  # (--pipeline-order key sends each command to its shard)
            stats = parse_info(c.cmd("INFO", "stats"))
            self.assertGreater(int(stats["pipeline_cmds_run_ahead"]), 0)


class SaveOnFullDiskTest(FullDiskCase):
    """SAVE is a journal rewrite on every shard: on a full disk it answers an error, not OK, and
    LASTSAVE stays; once there is room it succeeds again."""

    def test_save_fails_on_a_full_disk_then_succeeds(self):
        c = self.start("everysec")
        self.assertEqual(set(c.pipeline([("SET", "k%d" % i, VALUE) for i in range(200)])), {OK})
        t0 = int(c.cmd("LASTSAVE")[1:-2])
        self.fill()
        time.sleep(max(0.0, t0 + 1.05 - time.time()))  # LASTSAVE counts seconds
        self.assertEqual(c.cmd("SAVE"), b"-ERR the journal rewrite failed on at least one shard "
                                        b"(see the server log)\r\n")
        self.assertEqual(int(c.cmd("LASTSAVE")[1:-2]), t0)
        self.assertEqual(self.info(c)["rdb_last_bgsave_status"], "err")
        self.free()
        self.assertEqual(c.cmd("SAVE"), OK)
        self.assertGreater(int(c.cmd("LASTSAVE")[1:-2]), t0)
        self.assertEqual(self.info(c)["rdb_last_bgsave_status"], "ok")
        self.assertEqual(c.cmd("DBSIZE"), b":200\r\n")


class AlwaysFullDiskTest(FullDiskCase):
    """appendfsync always on a full disk: errors, not a hang; a restart on the same disk."""

    def test_full_disk_fails_fast_serves_reads_and_restarts_on_the_same_disk(self):
        c = self.start("always", threads=1)
        before = ["b:%d" % i for i in range(300)]
        for k in before:
            self.assertEqual(c.cmd("SET", k, VALUE), OK)
        self.fill()
        # The writer gets an answer, an error, rather than waiting (IO timeout = SLACK).
        acked, refusal = self.set_until_refused(c, "k")
        self.assertTrue(is_error(refusal, MISCONF), refusal)
        # Another client on the same reactor: reads and INFO answered, writes refused.
        other = self.conn()
        self.assertEqual(other.cmd("GET", "b:0"), b"$200\r\n" + VALUE.encode() + b"\r\n")
        self.assertEqual(self.info(other)["aof_last_write_status"], "err")
        self.assertTrue(is_error(other.cmd("PING"), MISCONF))
        self.assertTrue(is_error(other.cmd("LOCK.ACQUIRE", "l", "me", "10000"), MISCONF))
        # A pipeline: each write answered with an error, each read with its value.
        replies = other.pipeline([("SET", "y", "1"), ("GET", "b:1"), ("SET", "z", "1")])
        self.assertTrue(is_error(replies[0], MISCONF), replies[0])
        self.assertEqual(replies[1], b"$200\r\n" + VALUE.encode() + b"\r\n")
        self.assertTrue(is_error(replies[2], MISCONF), replies[2])
        # A crash, and a start on the still full disk: start-up has no room for a compacted
        # copy of the journal, and appends to it as it is.
        self.kill()
        c = self.start("always", threads=1)
        for k in before + acked:
            self.assertEqual(c.cmd("GET", k), b"$200\r\n" + VALUE.encode() + b"\r\n", k)
        self.free()
        self.wait_writable(c)
        self.assertEqual(c.cmd("PING"), b"+PONG\r\n")

    def test_two_reactors_forwarded_and_cross_shard_writes_fail_fast(self):
        # Replies that come back from the other reactor (a forwarded SET, an MSET across both
        # shards, a transaction) are errors too, not a hang, and reads go on being answered.
        c = self.start("always", threads=2)
        k0, k1 = on_shard(0, "a"), on_shard(1, "b")
        self.assertEqual(c.cmd("SET", k0, "1"), OK)
        self.assertEqual(c.cmd("SET", k1, "1"), OK)
        self.fill()
        conns = [c, self.conn(), self.conn()]
        refused = 0
        for i in range(300):
            replies = []
            for n, conn in enumerate(conns):
                conn.send(encode_command("SET", on_shard(n % 2, "x%d" % i), VALUE)
                          + encode_command("MSET", on_shard(0, "m%d" % i), VALUE,
                                           on_shard(1, "n%d" % i), VALUE)
                          + encode_command("GET", k0) + encode_command("GET", k1))
            for conn in conns:
                replies += conn.read_replies(4)
            # A read pipelined behind a failed write waited with it, and fails with it.
            for raw in replies[2::4] + replies[3::4]:
                self.assertTrue(raw == b"$1\r\n1\r\n" or is_error(raw, MISCONF), raw)
            for raw in replies[0::4] + replies[1::4]:
                self.assertTrue(raw == OK or is_error(raw, MISCONF), raw)
                refused += raw != OK
            if all(is_error(raw, MISCONF) for raw in replies[0::4] + replies[1::4]):
                break
        self.assertGreater(refused, 0)
        reader = self.conn()
        self.assertEqual(reader.pipeline([("GET", k0), ("GET", k1)]), [b"$1\r\n1\r\n"] * 2)
        replies = c.pipeline([("MULTI",), ("GET", k0), ("GET", k1), ("EXEC",)])
        self.assertEqual(replies[3], b"*2\r\n$1\r\n1\r\n$1\r\n1\r\n")
        self.free()
        self.wait_writable(c)
        self.assertEqual(c.cmd("MSET", k0, "2", k1, "2"), OK)

    def test_shutdown_on_full_disk_acknowledges_nothing_unwritten(self):
        # SHUTDOWN right behind a write that cannot reach the journal (the disk filled before
        # any write failed): the write's reply is an error, or the connection closes without
        # one; an OK means the value comes back.
        big = "w" * 65536
        for fsync in ("always", "everysec"):
            c = self.start(fsync, threads=1)
            self.fill()
            c.send(encode_command("SET", "big", big) + encode_command("SHUTDOWN"))
            try:
                reply = c.read_reply()
            except ConnectionError:
                reply = None
            code = self.server.wait_exit(SLACK)
            self.logs.append((self.server.argv, self.server.log_text()))
            self.server = None
            self.assertIsNotNone(code, "still running %ds after SHUTDOWN" % SLACK)
            for marker in ("Sanitizer", "runtime error:"):
                self.assertNotIn(marker, self.logs[-1][1])
            self.free()
            c = self.start(fsync, threads=1)
            if reply == OK:
                self.assertEqual(c.cmd("STRLEN", "big"), b":65536\r\n", fsync)
            else:
                self.assertTrue(reply is None or is_error(reply, MISCONF), reply)
            self.assertEqual(c.cmd("SET", "after", "1"), OK)
            self.kill()


class StartOnFullDiskTest(FullDiskCase):
    """Start-up writes each shard a compacted copy of its journal; with no room for one it
    appends to the journal as it is (cut back to whole frames) instead of refusing to start."""

    def test_restart_with_less_room_than_a_journal(self):
        c = self.start("always")
        keys = ["k:%d" % i for i in range(2000)]
        for i in range(0, len(keys), 100):
            for raw in c.pipeline([("SET", k, VALUE) for k in keys[i:i + 100]]):
                self.assertEqual(raw, OK)
        self.kill()
        self.fill()
        c = self.start("always")
        got = c.pipeline([("GET", k) for k in keys])
        self.assertEqual(got, [b"$200\r\n" + VALUE.encode() + b"\r\n"] * len(keys))
        # The journal goes on where it was: after room comes back, a write and a restart.
        self.free()
        self.assertEqual(c.cmd("SET", "later", "1"), OK)
        self.kill()
        c = self.start("always")
        self.assertEqual(c.cmd("GET", "later"), b"$1\r\n1\r\n")
        self.assertEqual(c.cmd("DBSIZE"), b":%d\r\n" % (len(keys) + 1))


if __name__ == "__main__":
    unittest.main()
