"""HyperLogLog: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST. The values are Redis's bytes (the same
sparse runs, the same switch to dense, the same cached count), so the GET bytes and the counts
below are those redis-server 7.0 gives; the file also runs against it (DEADBOLT_AGAINST_REDIS=1).
Keys on both shards: PFCOUNT of several keys and PFMERGE gather their registers across shards.
A value survives a SIGKILL with --appendfsync always (deadbolt's journal)."""

import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, decode, integer  # noqa: E402
from slots import on_shard  # noqa: E402
from test_journal import JournalCase  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


NOT_HLL = b"-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n"
INVALID = b"-INVALIDOBJ Corrupted HLL object detected\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
HEADER = b"HYLL\x01\x00\x00\x00"
# PFADD h a b c: three VAL runs between XZERO runs, the cached count stale (top bit of byte 15).
ABC_RUNS = b"`\xf3\x80P\xb1\x84K\xfb\x80BZ"
ABC_STALE = HEADER + b"\x00" * 7 + b"\x80" + ABC_RUNS
ABC_CACHED = HEADER + b"\x03" + b"\x00" * 7 + ABC_RUNS
A, B = on_shard(0, "hll"), on_shard(1, "hll")


def elements(prefix, lo, hi):
    return ["%s%d" % (prefix, i) for i in range(lo, hi)]


class HllTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def test_add_count_and_the_bytes_redis_writes(self):
        self.assertReplies([
            (("PFADD", "h", "a", "b", "c"), integer(1)),
            (("GET", "h"), bulk(ABC_STALE)),
            (("PFADD", "h", "a", "c"), integer(0)),  # no register grew
            (("PFCOUNT", "h"), integer(3)),
            (("GET", "h"), bulk(ABC_CACHED)),  # the count is cached in the value
            (("PFDEBUG", "ENCODING", "h"), b"+sparse\r\n"),
            (("PFDEBUG", "DECODE", "h"),
             bulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603")),
            (("PFADD", "empty"), integer(1)),  # created, though with no element
            (("PFADD", "empty"), integer(0)),
            (("PFCOUNT", "empty"), integer(0)),
            (("PFCOUNT", "missing"), integer(0)),
        ])

    def test_a_large_set_turns_dense_and_counts_as_redis(self):
        for lo in range(0, 20000, 1000):
            self.c.cmd("PFADD", "big", *elements("e", lo, lo + 1000))
        self.assertReply(b"+dense\r\n", "PFDEBUG", "ENCODING", "big")
        self.assertReply(integer(19901), "PFCOUNT", "big")
        raw = decode(self.c.cmd("GET", "big"))
        self.assertEqual(len(raw), 16 + 12288)
        self.assertEqual(hashlib.sha1(raw).hexdigest(), "ffcb2f620f6f5388057b499b27d936438b668ab0")

    def test_count_and_merge_across_shards(self):
        self.assertReply(integer(1), "PFADD", A, *elements("x", 0, 300))
        self.assertReply(integer(1), "PFADD", B, *elements("x", 200, 500))
        self.assertReply(integer(499), "PFCOUNT", A, B)
        self.assertReply(integer(499), "PFCOUNT", B, "missing", A)
        for dst in (on_shard(0, "merged"), on_shard(1, "merged")):
            self.assertReply(OK, "PFMERGE", dst, A, B)
            self.assertReply(integer(499), "PFCOUNT", dst)
            self.assertReply(b"+sparse\r\n", "PFDEBUG", "ENCODING", dst)
            raw = decode(self.c.cmd("GET", dst))
            self.assertEqual((len(raw), hashlib.sha1(raw).hexdigest()),
                             (1038, "e3377fc7be5f1a8b4cacaf3b0d2410bf4d4798f5"))
        # The destination's own registers count too; a dense source makes it dense.
        self.assertReply(integer(1), "PFADD", B, *elements("y", 0, 3000))
        self.assertReply(OK, "PFMERGE", A, B)
        self.assertReply(b"+dense\r\n", "PFDEBUG", "ENCODING", A)
        self.assertReply(OK, "PFMERGE", "only")  # no source: an empty HLL
        self.assertReply(integer(0), "PFCOUNT", "only")

    def test_errors(self):
        self.c.cmd("SET", "s", "abc")
        self.c.cmd("RPUSH", "l", "x")
        self.c.cmd("PFADD", A, "a")
        self.c.cmd("SET", "dense_short", b"HYLL\x00\x00\x00\x00" + b"\x00" * 108)
        # Sparse runs covering one register too few: an error once the count is recomputed; a
        # fresh cached count is answered without looking (as Redis).
        self.c.cmd("SET", "corrupt", HEADER + b"\x00" * 7 + b"\x80" + b"\x7f\xfe")
        self.c.cmd("SET", "corrupt_cached", HEADER + b"\x07" + b"\x00" * 7 + b"\x7f\xfe")
        self.assertReplies([
            (("PFADD", "s", "x"), NOT_HLL),
            (("PFCOUNT", "s"), NOT_HLL),
            (("PFADD", "dense_short", "x"), NOT_HLL),
            (("PFADD", "l", "x"), WRONGTYPE),
            (("PFCOUNT", A, "l"), WRONGTYPE),
            (("PFCOUNT", A, "s", "l"), NOT_HLL),  # the first bad key's error
            (("PFMERGE", "s", A), NOT_HLL),
            (("PFMERGE", A, "l"), WRONGTYPE),
            (("PFMERGE", B, A, "s"), NOT_HLL),
            (("PFCOUNT", "corrupt"), INVALID),
            (("PFCOUNT", "corrupt_cached"), integer(7)),
            (("PFCOUNT", "corrupt", A), INVALID),
            (("GET", "s"), bulk("abc")),
            (("EXISTS", B), integer(0)),  # a failed merge writes nothing
            (("PFADD",), b"-ERR wrong number of arguments for 'pfadd' command\r\n"),
            (("PFCOUNT",), b"-ERR wrong number of arguments for 'pfcount' command\r\n"),
            (("PFMERGE",), b"-ERR wrong number of arguments for 'pfmerge' command\r\n"),
            (("PFDEBUG", "ENCODING", "missing"), b"-ERR The specified key does not exist\r\n"),
            (("PFDEBUG", "NOPE", A), b"-ERR Unknown PFDEBUG subcommand 'NOPE'\r\n"),
        ])

    def test_pfdebug_and_selftest(self):
        self.assertReply(integer(1), "PFADD", "h", "a", "b", "c")
        regs = decode(self.c.cmd("PFDEBUG", "GETREG", "h"))  # makes it dense, as in Redis
        self.assertEqual(len(regs), 16384)
        self.assertEqual(sorted(r for r in regs if r), [1, 1, 2])
        self.assertReply(b"+dense\r\n", "PFDEBUG", "ENCODING", "h")
        self.assertReply(b"-ERR HLL encoding is not sparse\r\n", "PFDEBUG", "DECODE", "h")
        self.assertReply(integer(0), "PFDEBUG", "TODENSE", "h")
        self.assertReply(integer(1), "PFADD", "g", "a")
        self.assertReply(integer(1), "PFDEBUG", "TODENSE", "g")
        self.assertReply(integer(3), "PFCOUNT", "h")
        self.assertReply(OK, "PFSELFTEST")

    def test_a_stale_count_recomputed_breaks_a_watch(self):
        # Redis writes the recomputed count into the value: a change WATCH sees.
        self.assertReply(integer(1), "PFADD", "w", "a")
        other = self.conn()
        self.assertReply(OK, "WATCH", "w")
        self.assertReply(integer(1), "PFCOUNT", "w", c=other)
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "PING")
        self.assertReply(b"*-1\r\n", "EXEC")
        # A fresh cache is only read.
        self.assertReply(OK, "WATCH", "w")
        self.assertReply(integer(1), "PFCOUNT", "w", c=other)
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "PING")
        self.assertReply(b"*1\r\n+PONG\r\n", "EXEC")


class HllJournalTest(JournalCase):
    def test_values_survive_sigkill(self):
        c = self.start(threads=2, fsync="always")
        c.cmd("PFADD", A, *elements("e", 0, 5000))  # dense
        c.cmd("PFADD", B, "a", "b", "c")
        self.assertEqual(c.cmd("PFCOUNT", A), integer(4968))  # as redis-server counts them
        self.assertEqual(c.cmd("PFMERGE", on_shard(1, "m"), A, B), OK)
        before = [c.cmd("GET", k) for k in (A, B, on_shard(1, "m"))]
        self.kill()
        c = self.start(threads=2, fsync="always")
        self.assertEqual([c.cmd("GET", k) for k in (A, B, on_shard(1, "m"))], before)
        self.assertEqual(c.cmd("PFCOUNT", on_shard(1, "m")), integer(4972))
        self.stop()


if __name__ == "__main__":
    unittest.main()
