"""RENAME, RENAMENX and COPY, with source and destination on the same shard and on different
shards (the server runs with --threads 2; slots 0-8191 are shard 0, the rest shard 1).

Checked against redis-server first: DEADBOLT_AGAINST_REDIS=1 /usr/bin/python3 tests/e2e/test_rename.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, OK, array, bulk, integer  # noqa: E402
from slots import on_shard, shard_of  # noqa: E402

NO_SUCH_KEY = b"-ERR no such key\r\n"
SAME_OBJECT = b"-ERR source and destination objects are the same\r\n"


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


class RenameTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def pairs(self):
        """(src, dst) on one shard, then on different shards."""
        a0, b0 = on_shard(0, "rn:a"), on_shard(0, "rn:b")
        a1 = on_shard(1, "rn:a")
        self.assertEqual(shard_of(a0), shard_of(b0))
        self.assertNotEqual(shard_of(a0), shard_of(a1))
        return [(a0, b0), (a0, a1), (a1, a0)]

    def test_rename_moves_value_and_ttl(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(NO_SUCH_KEY, "RENAME", src, dst)
                self.assertReply(OK, "SET", src, "v", "PX", "100000")
                self.assertReply(OK, "SET", dst, "old")
                self.assertReply(OK, "RENAME", src, dst)
                self.assertReply(NIL, "GET", src)
                self.assertReply(bulk("v"), "GET", dst)
                self.assertTTL(dst, 98000, 100000, cmd="PTTL")
                # A key without a TTL makes the destination persistent.
                self.assertReply(OK, "SET", src, "w")
                self.assertReply(OK, "RENAME", src, dst)
                self.assertReply(integer(-1), "PTTL", dst)

    def test_rename_to_itself(self):
        k = on_shard(1, "rn:self")
        self.assertReply(NO_SUCH_KEY, "RENAME", k, k)
        self.assertReply(OK, "SET", k, "v")
        self.assertReply(OK, "RENAME", k, k)
        self.assertReply(integer(0), "RENAMENX", k, k)
        self.assertReply(bulk("v"), "GET", k)

    def test_renamenx(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(NO_SUCH_KEY, "RENAMENX", src, dst)
                self.assertReply(OK, "SET", src, "v")
                self.assertReply(OK, "SET", dst, "taken")
                self.assertReply(integer(0), "RENAMENX", src, dst)
                self.assertReply(bulk("v"), "GET", src)
                self.assertReply(bulk("taken"), "GET", dst)
                self.assertReply(integer(1), "DEL", dst)
                self.assertReply(integer(1), "RENAMENX", src, dst)
                self.assertReply(integer(0), "EXISTS", src)
                self.assertReply(bulk("v"), "GET", dst)

    def test_rename_hash(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(integer(2), "HSET", src, "owner:1", "1", "f", "x")
                self.assertReply(integer(1), "PEXPIRE", src, "50000")
                self.assertReply(OK, "RENAME", src, dst)
                self.assertReply(bulk("1"), "HGET", dst, "owner:1")
                self.assertReply(integer(2), "HLEN", dst)
                self.assertTTL(dst, 48000, 50000, cmd="PTTL")
                self.assertReply(integer(0), "EXISTS", src)

    def test_copy(self):
        for src, dst in self.pairs():
            with self.subTest(src=src, dst=dst):
                self.assertReply(OK, "FLUSHALL")
                self.assertReply(integer(0), "COPY", src, dst)
                self.assertReply(OK, "SET", src, "v", "PX", "100000")
                self.assertReply(integer(1), "COPY", src, dst)
                self.assertReply(bulk("v"), "GET", src)
                self.assertReply(bulk("v"), "GET", dst)
                self.assertTTL(dst, 98000, 100000, cmd="PTTL")
                self.assertReply(OK, "SET", src, "w")
                self.assertReply(integer(0), "COPY", src, dst)
                self.assertReply(bulk("v"), "GET", dst)
                self.assertReply(integer(1), "COPY", src, dst, "REPLACE")
                self.assertReply(bulk("w"), "GET", dst)
                self.assertReply(integer(-1), "PTTL", dst)

    def test_copy_errors_and_db(self):
        k = on_shard(0, "cp:k")
        self.assertReply(OK, "SET", k, "v")
        self.assertReply(SAME_OBJECT, "COPY", k, k)
        self.assertReply(b"-ERR syntax error\r\n", "COPY", k, "x", "BOGUS")
        self.assertReply(b"-ERR DB index is out of range\r\n", "COPY", k, "x", "DB", "99999")
        self.assertReply(integer(1), "COPY", k, k, "DB", "1")
        c = self.conn()
        self.assertReply(OK, "SELECT", "1", c=c)
        self.assertReply(bulk("v"), "GET", k, c=c)
        other = on_shard(1, "cp:k")
        self.assertReply(integer(1), "COPY", k, other, "DB", "2")
        self.assertReply(OK, "SELECT", "2", c=c)
        self.assertReply(bulk("v"), "GET", other, c=c)
        self.assertReply(OK, "SELECT", "0", c=c)
        self.assertReply(NIL, "GET", other, c=c)


if __name__ == "__main__":
    harness.main()
