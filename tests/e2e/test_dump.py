"""DUMP and RESTORE: a key's value as the bytes of Redis's RDB format. Payloads redis-server
7.0.15 wrote (the vectors of shard/dump_format/dump_payload_test.cc) restore to their values; a
payload deadbolt writes restores into a live redis-server and the reverse, for random values of
every type and encoding; the options, TTLs and error texts are Redis's (the file also runs against
redis-server, DEADBOLT_AGAINST_REDIS=1). Keys on both shards; a damaged payload is answered and
the server stays up; a restored key survives a SIGKILL (deadbolt's journal)."""

import os
import random
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, decode, error, integer  # noqa: E402
from slots import on_shard  # noqa: E402
from test_journal import JournalCase  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


NIL = b"$-1\r\n"
BUSYKEY = error("BUSYKEY Target key name already exists.")
FOOTER = error("ERR DUMP payload version or checksum are wrong")
BAD_DATA = error("ERR Bad data format")
SYNTAX = error("ERR syntax error")
NOT_INT = error("ERR value is not an integer or out of range")

# What redis-server 7.0.15 answered to DUMP, one payload per encoding it writes.
REDIS_PAYLOADS = {
    "owner1": "00066f776e6572310a0063e952d44e892567",
    "int16": "00c139300a009d94ea2793fc08b9",
    "lzf": "00c3094064017878e057000178780a005db7f663bb08625f",
    "quicklist": "120102171700000005008161028162020101df3802f270110104ff0a00dbba7006c27c61a0",
    "intset": "0b1c0400000005000000fbffffff010000000200000003000000a08601000a00d365f8d8af8752ac",
    "set": "02030163016101620a00d51bc2f0968e69c3",
    "hash_listpack": "10151500000004008266310382763103826632030201ff0a005c5ea813feec1ff5",
    "hash": "0402026632c0020266310276310a008f78bb39a4504727",
    "zset_listpack": "111a1a0000000600816302dffd02816102010181620283322e3504ff0a00a68a1ab1a9f2dcc2",
    "zset": "0503016200000000000004400161000000000000f03f0163000000000000f0ff0a009a24ca8fdcb1d08c",
}


def payload(name):
    return bytes.fromhex(REDIS_PAYLOADS[name])


class DumpTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def test_payloads_redis_wrote_restore_to_their_values(self):
        a, b = on_shard(0, "r"), on_shard(1, "r")
        self.assertReplies([
            (("RESTORE", a + "s1", "0", payload("owner1")), OK),
            (("GET", a + "s1"), bulk("owner1")),
            (("RESTORE", b + "s2", "0", payload("int16")), OK),
            (("GET", b + "s2"), bulk("12345")),
            (("RESTORE", a + "s3", "0", payload("lzf")), OK),
            (("GET", a + "s3"), bulk("x" * 100)),
            (("RESTORE", b + "l", "0", payload("quicklist")), OK),
            (("LRANGE", b + "l", "0", "-1"), harness.array(
                bulk("a"), bulk("b"), bulk("1"), bulk("-200"), bulk("70000"))),
            (("RESTORE", a + "is", "0", payload("intset")), OK),
            (("SMISMEMBER", a + "is", "-5", "100000", "4"), harness.array(
                integer(1), integer(1), integer(0))),
            (("SCARD", a + "is"), integer(5)),
            (("RESTORE", b + "set", "0", payload("set")), OK),
            (("SCARD", b + "set"), integer(3)),
            (("RESTORE", a + "h1", "0", payload("hash_listpack")), OK),
            (("HGET", a + "h1", "f2"), bulk("2")),
            (("RESTORE", b + "h2", "0", payload("hash")), OK),
            (("HGET", b + "h2", "f1"), bulk("v1")),
            (("RESTORE", a + "z1", "0", payload("zset_listpack")), OK),
            (("ZRANGE", a + "z1", "0", "-1", "WITHSCORES"), harness.array(
                bulk("c"), bulk("-3"), bulk("a"), bulk("1"), bulk("b"), bulk("2.5"))),
            (("RESTORE", b + "z2", "0", payload("zset")), OK),
            (("ZSCORE", b + "z2", "c"), bulk("-inf")),
        ])

    def test_a_lock_moves_by_dump_and_restore(self):
        # The owner token travels; the TTL is RESTORE's to give (a payload has none).
        src, dst = on_shard(0, "lock:"), on_shard(1, "lock:")
        self.assertReply(OK, "SET", src, "owner-7f3a", "NX", "PX", "30000")
        p = decode(self.c.cmd("DUMP", src))
        self.assertEqual(p, bytes.fromhex("000a") + b"owner-7f3a" + p[12:])  # raw string, as Redis
        self.assertReplies([
            (("RESTORE", dst, "30000", p), OK),
            (("GET", dst), bulk("owner-7f3a")),
            (("PTTL", dst), range(29000, 30001)),
            (("RESTORE", dst, "0", p), BUSYKEY),
            (("DEL", dst), integer(1)),
            (("DUMP", dst), NIL),
        ])

    def test_string_payloads_are_redis_bytes(self):
        self.assertReply(OK, "SET", "s", "owner1")
        self.assertReply(bulk(payload("owner1")), "DUMP", "s")
        self.assertReply(OK, "SET", "n", "12345")
        self.assertReply(bulk(payload("int16")), "DUMP", "n")

    def test_every_type_round_trips_across_shards(self):
        c = self.c
        for shard in (0, 1):
            k = on_shard(shard, "v")
            c.cmd("RPUSH", k + "l", "a", "", "-1", "9" * 30)
            c.cmd("SADD", k + "s", *["m%d" % i for i in range(600)])
            c.cmd("SADD", k + "i", "1", "-2", str(2 ** 62))
            c.cmd("HSET", k + "h", "f", "v", "n", "12")
            c.cmd("ZADD", k + "z", "-inf", "x", "0.1", "y", "1e300", "z")
            c.cmd("SET", k + "b", bytes(range(256)) * 100)
        for suffix, read in (("l", ("LRANGE", "0", "-1")), ("s", ("SMEMBERS",)),
                             ("i", ("SMEMBERS",)), ("h", ("HGETALL",)),
                             ("z", ("ZRANGE", "0", "-1", "WITHSCORES")), ("b", ("GET",))):
            for src, dst in ((0, 1), (1, 0)):
                k, d = on_shard(src, "v") + suffix, on_shard(dst, "copy") + suffix
                p = decode(c.cmd("DUMP", k))
                self.assertEqual(c.cmd("RESTORE", d, "0", p, "REPLACE"), OK)
                got = decode(c.cmd(read[0], d, *read[1:]))
                want = decode(c.cmd(read[0], k, *read[1:]))
                if read[0] in ("SMEMBERS", "HGETALL"):
                    got, want = sorted(got), sorted(want)
                self.assertEqual(got, want, suffix)
                self.assertEqual(c.cmd("TYPE", d), c.cmd("TYPE", k))

    def test_options_ttls_and_errors_as_redis(self):
        p = payload("owner1")
        self.assertReplies([
            (("DUMP", "missing"), NIL),
            (("RESTORE", "k", "0"), harness.wrong_args("restore")),
            (("RESTORE", "k", "0", p), OK),
            (("RESTORE", "k", "0", p), BUSYKEY),
            (("RESTORE", "k", "-1", p), BUSYKEY),  # the key is checked before the TTL
            (("RESTORE", "k", "0", p, "REPLACE"), OK),
            (("RESTORE", "k2", "-1", p), error("ERR Invalid TTL value, must be >= 0")),
            (("RESTORE", "k2", "abc", p), NOT_INT),
            (("RESTORE", "k2", "0", "short"), FOOTER),
            (("RESTORE", "k2", "0", p[:-1] + bytes([p[-1] ^ 1])), FOOTER),
            (("RESTORE", "k2", "0", p[:-10] + b"\x0d\x00" + p[-8:]), FOOTER),  # version 13
            (("RESTORE", "k2", "0", p, "foo"), SYNTAX),
            (("RESTORE", "k2", "0", p, "IDLETIME"), SYNTAX),
            (("RESTORE", "k2", "0", p, "IDLETIME", "-1"),
             error("ERR Invalid IDLETIME value, must be >= 0")),
            (("RESTORE", "k2", "0", p, "IDLETIME", "x"), NOT_INT),
            (("RESTORE", "k2", "0", p, "FREQ", "256"),
             error("ERR Invalid FREQ value, must be >= 0 and <= 255")),
            (("RESTORE", "k2", "0", p, "FREQ", "10", "IDLETIME", "5"), SYNTAX),
            (("RESTORE", "k2", "0", p, "IDLETIME", "5", "FREQ", "3"), SYNTAX),
            (("EXISTS", "k2"), integer(0)),
            (("RESTORE", "k2", "0", p, "IDLETIME", "1000"), OK),
            (("OBJECT", "IDLETIME", "k2"), range(995, 1005)),
            (("RESTORE", "k3", "5000", p), OK),
            (("PTTL", "k3"), range(4000, 5001)),
            (("RESTORE", "k4", "1", p, "ABSTTL"), OK),  # long past: not created
            (("EXISTS", "k4"), integer(0)),
            (("RESTORE", "k3", "1", p, "ABSTTL", "REPLACE"), OK),  # ... and the old one is gone
            (("EXISTS", "k3"), integer(0)),
            (("RESTORE", "k5", "99999999999999999", p, "absttl"), OK),
            (("PEXPIRETIME", "k5"), integer(99999999999999999)),
            (("RESTORE", "k6", "0", bytes.fromhex("0f00") + p[-10:-8] + b"\x00" * 8), FOOTER),
            (("RESTORE-ASKING", "k7", "0", p), OK),
            (("GET", "k7"), bulk("owner1")),
        ])

    def test_bad_data_is_refused_and_nothing_changes(self):
        def close(body):
            body += b"\x0a\x00"
            return body + struct.pack("<Q", crc64(body))
        self.assertReply(OK, "SET", "k", "old")
        for body in ("0200", "020201610161", "0f00", "0014616263", "0280ffffffff",
                     "05010161000000000000f87f"):
            self.assertReply(BAD_DATA, "RESTORE", "k", "0", close(bytes.fromhex(body)), "REPLACE")
        self.assertReply(bulk("old"), "GET", "k")

    def test_restore_breaks_a_watch_and_runs_in_multi(self):
        other = self.conn()
        self.assertReplies([
            (("SET", "w", "1"), OK),
            (("WATCH", "w"), OK),
        ])
        self.assertReply(OK, "RESTORE", "w", "0", payload("owner1"), "REPLACE", c=other)
        self.assertReplies([
            (("MULTI",), OK),
            (("GET", "w"), b"+QUEUED\r\n"),
            (("EXEC",), b"*-1\r\n"),
            (("MULTI",), OK),
            (("RESTORE", "m", "0", payload("int16")), b"+QUEUED\r\n"),
            (("DUMP", "m"), b"+QUEUED\r\n"),
            (("EXEC",), harness.array(OK, bulk(payload("int16")))),
        ])

    def test_random_damage_is_answered(self):
        if harness.AGAINST_REDIS:
            self.skipTest("redis-server checks duplicates only with sanitize-dump-payload")
        rng = random.Random(7)
        seeds = [payload(n)[:-10] for n in REDIS_PAYLOADS]
        answered = set()
        for i in range(3000):
            body = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 3)):
                if not body:
                    break
                at = rng.randrange(len(body))
                if rng.random() < 0.7:
                    body[at] = rng.randrange(256)
                else:
                    del body[at:at + rng.randint(1, 3)]
            body = bytes(body) + b"\x0a\x00"
            p = body + struct.pack("<Q", crc64(body))
            r = self.c.cmd("RESTORE", "d%d" % i, "0", p)
            self.assertIn(r, (OK, BAD_DATA))
            answered.add(r)
        self.assertEqual(answered, {OK, BAD_DATA})
        self.assertReply(b"+PONG\r\n", "PING")


class DumpAcrossServersTest(harness.ServerTestCase):
    """Random values of every type and encoding, built in a live redis-server: its payloads
    restore here and deadbolt's restore there, with the same contents."""

    def setUp(self):
        super().setUp()
        if harness.AGAINST_REDIS:
            self.skipTest("the server under test is redis-server itself")
        if not os.access(harness.REDIS_SERVER, os.X_OK):
            self.skipTest("no %s" % harness.REDIS_SERVER)
        self.redis_port = harness.free_port()
        proc = subprocess.Popen(
            [harness.REDIS_SERVER, "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/tmp")
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        harness.wait_port(self.redis_port)
        self.redis = harness.RespConn(self.redis_port)
        self.addCleanup(self.redis.close)
        self.assertReply(OK, "FLUSHALL")

    def content(self, c, key):
        t = decode(c.cmd("TYPE", key)).decode()
        read = {"string": ("GET",), "list": ("LRANGE", "0", "-1"), "set": ("SMEMBERS",),
                "hash": ("HGETALL",), "zset": ("ZRANGE", "0", "-1", "WITHSCORES")}[t]
        v = decode(c.cmd(read[0], key, *read[1:]))
        return t, sorted(v) if t in ("set", "hash") else v

    def test_payloads_move_both_ways(self):
        rng = random.Random(5)

        def text():
            x = rng.random()
            if x < 0.3:
                return str(rng.randint(-2 ** 63, 2 ** 63 - 1) if rng.random() < 0.3
                           else rng.randint(-70000, 70000))
            if x < 0.6:
                return rng.choice(["a", "bb", "x" * rng.randint(0, 100), "abc" * rng.randint(1, 50)])
            return bytes(rng.choice(b"ab\x00\r\n\xff") for _ in range(rng.randint(0, 40)))

        r = self.redis
        keys = []
        for i in range(150):
            k, n = "k%d" % i, rng.choice([1, 2, 5, 100, 200, 700, 3000])
            kind = rng.choice(["string", "list", "set", "intset", "hash", "zset"])
            if kind == "string":
                r.cmd("SET", k, text() if rng.random() < 0.7 else "z" * rng.randint(0, 20000))
            elif kind == "list":
                r.cmd("RPUSH", k, *[text() for _ in range(n)])
            elif kind == "set":
                r.cmd("SADD", k, *[text() for _ in range(n)])
            elif kind == "intset":
                r.cmd("SADD", k, *[str(rng.randint(-2 ** 40, 2 ** 40)) for _ in range(n)])
            elif kind == "hash":
                pairs = []
                for _ in range(n):
                    pairs += [text(), text()]
                r.cmd("HSET", k, *pairs)
            else:
                pairs = []
                for _ in range(n):
                    pairs += [repr(rng.choice([rng.randint(-100, 100), rng.random() * 1e10, -1.5])),
                              text()]
                r.cmd("ZADD", k, *pairs)
            keys.append(k)
        for k in keys:
            self.assertReply(OK, "RESTORE", k, "0", decode(r.cmd("DUMP", k)))
            self.assertEqual(self.content(self.c, k), self.content(r, k), k)
        for k in keys:
            self.assertEqual(r.cmd("RESTORE", k + ":back", "0", decode(self.c.cmd("DUMP", k))), OK)
            self.assertEqual(self.content(r, k + ":back"), self.content(r, k), k)


def crc64(data):
    """Redis's CRC-64 (Jones polynomial, reflected), bit by bit."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc


class DumpJournalTest(JournalCase):
    def test_restored_keys_survive_sigkill(self):
        c = self.start(threads=2, fsync="always")
        a, b = on_shard(0, "j"), on_shard(1, "j")
        self.assertEqual(c.cmd("RESTORE", a, "0", payload("zset")), OK)
        self.assertEqual(c.cmd("RESTORE", b, "600000", payload("quicklist")), OK)
        before = [c.cmd("ZRANGE", a, "0", "-1", "WITHSCORES"), c.cmd("LRANGE", b, "0", "-1")]
        self.kill()
        c = self.start(threads=2, fsync="always")
        self.assertEqual([c.cmd("ZRANGE", a, "0", "-1", "WITHSCORES"),
                          c.cmd("LRANGE", b, "0", "-1")], before)
        ttl = int(c.cmd("PTTL", b)[1:-2])
        self.assertTrue(500000 < ttl <= 600000, ttl)
        self.stop()


if __name__ == "__main__":
    unittest.main()
