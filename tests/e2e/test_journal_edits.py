"""The journal's edit records (kEdit, shard/journal_format/journal_format.h): a change to a large
list, hash, set, sorted set or stream is journalled as the change (the elements pushed, the count popped, the fields
set), not as the whole collection, and everything still comes back.

Each test starts its own servers with a temporary --dir (test_journal.py's JournalCase), runs
random commands on large collections, reads every key, and checks that the same keys come back
after SIGKILL with --appendfsync always: through replay, through a rewrite running while the
edits are made, across a change of --threads, next to MULTI/EXEC, and with TTLs. The journal's
growth per command shows that edits were written: a collection written whole on each change
would grow it by kilobytes per command."""

import os
import random
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import decode, integer  # noqa: E402
from test_journal import JournalCase, to_int  # noqa: E402

# Below the journal's threshold (Journal::kEditMinElements, 32) a collection is written whole.
BIG = 300
LISTS = ["{a}list", "{b}list", "queue"]
HASHES = ["{a}hash", "hash"]
SETS = ["{b}set", "set"]
ZSETS = ["{a}zset", "delayed"]
STREAMS = ["{b}stream", "events"]
next_id = [BIG + 1]  # explicit stream IDs: <n>-1, n growing


def setUpModule():
    harness.server_command(0)


def populate(c):
    for k in LISTS:
        c.cmd("RPUSH", k, *["item%d" % i for i in range(BIG)])
    for k in HASHES:
        c.cmd("HSET", k, *[x for i in range(BIG) for x in ("field%d" % i, "value%d" % i)])
    for k in SETS:
        c.cmd("SADD", k, *["member%d" % i for i in range(BIG)])
    for k in ZSETS:
        c.cmd("ZADD", k, *[x for i in range(BIG) for x in (str(i), "job%d" % i)])
    for k in STREAMS:
        for i in range(1, BIG + 1):
            c.cmd("XADD", k, "%d-1" % i, "n", str(i))
        c.cmd("XGROUP", "CREATE", k, "workers", "0")


def random_command(rng, whole=True):
    """One command on the collections above, of a kind that is journalled as an edit, or with
    `whole`, now and then one that is not (LINSERT)."""
    k = rng.choice(LISTS + HASHES + SETS + ZSETS + STREAMS)
    v = "x%d" % rng.randrange(1000)
    if k in LISTS:
        if whole and rng.randrange(8) == 0:
            return ("LINSERT", k, "BEFORE", "item%d" % rng.randrange(BIG), v)  # written whole
        return rng.choice([
            ("RPUSH", k, v, v + "b"),
            ("LPUSH", k, v),
            ("LPOP", k),
            ("RPOP", k, str(rng.randrange(1, 4))),
            ("LTRIM", k, str(rng.randrange(3)), str(-1 - rng.randrange(3))),
            ("LMOVE", k, k, rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"])),
            ("RPOPLPUSH", k, rng.choice(LISTS)),
        ])
    if k in HASHES:
        f = "field%d" % rng.randrange(BIG + 50)
        return rng.choice([
            ("HSET", k, f, v, "f" + v, v),
            ("HDEL", k, f, "field%d" % rng.randrange(BIG)),
            ("HINCRBY", k, "counter", str(rng.randrange(1, 9))),
            ("HINCRBYFLOAT", k, "float", "0.25"),
            ("HSETNX", k, f, v),
        ])
    if k in STREAMS:
        old = "%d-1" % rng.randrange(1, next_id[0])
        consumer = rng.choice(["alice", "bob"])
        r = rng.randrange(10)
        next_id[0] += 1
        if r < 3:
            return ("XADD", k, "%d-1" % next_id[0], "n", v)
        return [
            ("XADD", k, "MAXLEN", str(BIG), "%d-1" % next_id[0], "n", v),
            ("XREADGROUP", "GROUP", "workers", consumer, "COUNT", "3", "STREAMS", k, ">"),
            ("XACK", k, "workers", old, "%d-1" % rng.randrange(1, next_id[0])),
            ("XDEL", k, old),
            ("XCLAIM", k, "workers", consumer, "0", old),
            ("XTRIM", k, "MINID", "%d-1" % rng.randrange(1, 20)),
            ("XGROUP", "CREATECONSUMER", k, "workers", "c%d" % rng.randrange(5)),
        ][r - 3]
    if k in ZSETS:
        m = "job%d" % rng.randrange(BIG + 50)
        return rng.choice([
            ("ZADD", k, str(rng.randrange(1000) / 4), m, "1e3", v),
            ("ZADD", k, "GT", "CH", str(rng.randrange(1000)), m),
            ("ZADD", k, "XX", "INCR", "2", m),
            ("ZINCRBY", k, "-1.5", m),
            ("ZREM", k, m, v),
            ("ZPOPMIN", k),
            ("ZPOPMAX", k, "2"),
        ])
    return rng.choice([
        ("SADD", k, v, "member%d" % rng.randrange(BIG)),
        ("SREM", k, "member%d" % rng.randrange(BIG), v),
        ("SPOP", k),
        ("SPOP", k, "2"),
        ("SMOVE", k, rng.choice(SETS), "member%d" % rng.randrange(BIG)),
    ])


def pipeline(c, cmds):
    """The replies of cmds, sent 500 at a time."""
    out = []
    for i in range(0, len(cmds), 500):
        part = cmds[i:i + 500]
        c.send(b"".join(harness.encode_command(*a) for a in part))
        out += c.read_replies(len(part))
    return out


READ = {b"+list\r\n": lambda k: ("LRANGE", k, "0", "-1"),
        b"+hash\r\n": lambda k: ("HGETALL", k),
        b"+set\r\n": lambda k: ("SMEMBERS", k),
        b"+zset\r\n": lambda k: ("ZRANGE", k, "0", "-1", "WITHSCORES"),
        b"+stream\r\n": lambda k: ("XRANGE", k, "-", "+"),
        b"+string\r\n": lambda k: ("GET", k)}


def snapshot(c):
    """Every key's type and contents (hashes and sets sorted), and whether it has a TTL."""
    keys = sorted(decode(c.cmd("KEYS", "*")))
    types = pipeline(c, [("TYPE", k) for k in keys])
    values = pipeline(c, [READ[t](k) for k, t in zip(keys, types)])
    ttls = pipeline(c, [("PTTL", k) for k in keys])
    out = {}
    for k, t, raw, ttl in zip(keys, types, values, ttls):
        v = decode(raw)
        if t == b"+hash\r\n":
            v = sorted(zip(v[0::2], v[1::2]))
        elif t == b"+set\r\n":
            v = sorted(v)
        out[k] = (t, v, to_int(ttl) > 0)
    for k in keys:
        if out[k][0] == b"+stream\r\n":
            # The counters and the group's pending entries (without their idle times).
            info = decode(c.cmd("XINFO", "STREAM", k))
            info = dict(zip(info[0::2], info[1::2]))
            pending = [p[:2] + p[3:] for p in decode(c.cmd("XPENDING", k, "workers", "-", "+",
                                                             "100000"))]
            out[k] += (info[b"last-generated-id"], info[b"entries-added"],
                       info[b"max-deleted-entry-id"], decode(c.cmd("XPENDING", k, "workers")),
                       pending)
    return out


class JournalEditTest(JournalCase):

    def run_commands(self, c, rng, n, whole=True):
        """n random commands, pipelined 20 at a time; none may fail."""
        for start in range(0, n, 20):
            cmds = [random_command(rng, whole) for _ in range(min(20, n - start))]
            c.send(b"".join(harness.encode_command(*a) for a in cmds))
            for a, r in zip(cmds, c.read_replies(len(cmds))):
                self.assertFalse(r.startswith(b"-"), "%r -> %r" % (a, r))

    def edits(self, c):
        return int(self.info(c)["aof_edit_records"])

    def assert_comes_back(self, before, threads):
        self.kill()
        c = self.start(threads=threads)
        after = snapshot(c)
        self.assertEqual(sorted(after), sorted(before))
        for k in before:
            self.assertEqual(after[k], before[k], k)
        return c

    def test_edits_are_small_and_survive_sigkill_and_a_threads_change(self):
        c = self.start(threads=2)
        populate(c)
        edits0 = self.edits(c)
        size0 = self.journal_size()
        rng = random.Random(7)
        n = 1500
        self.run_commands(c, rng, n, whole=False)
        # Each command's frame is a few dozen bytes; a whole collection of BIG elements would
        # be kilobytes per command.
        grown = self.journal_size() - size0
        self.assertLess(grown, 100 * n, "the journal grew by %d bytes for %d commands" % (grown, n))
        self.assertGreater(self.edits(c) - edits0, n // 2)
        self.run_commands(c, rng, 300)
        before = snapshot(c)
        self.assertEqual(len(before), len(LISTS) + len(HASHES) + len(SETS) + len(ZSETS) + len(STREAMS))
        c = self.assert_comes_back(before, threads=2)
        # The restart wrote fresh files: more edits after it, then other layouts.
        self.run_commands(c, rng, 300)
        before = snapshot(c)
        c = self.assert_comes_back(before, threads=1)
        self.run_commands(c, rng, 300)
        before = snapshot(c)
        self.assert_comes_back(before, threads=3)
        self.stop()

    def test_edits_made_while_a_rewrite_runs(self):
        c = self.start(threads=2)
        populate(c)
        # Many more keys, so that the rewrite's scan takes several turns while the edits go on.
        for i in range(0, 20000, 1000):
            c.cmd("MSET", *[x for j in range(i, i + 1000) for x in ("k%d" % j, "v")])
        rng = random.Random(11)
        for round_ in range(3):
            done = threading.Event()
            errors = []

            def edit():
                try:
                    with harness.RespConn(self.server.port) as w:
                        r = random.Random(round_)
                        while not done.is_set():
                            a = random_command(r)
                            reply = w.cmd(*a)
                            if reply.startswith(b"-"):
                                errors.append((a, reply))
                except Exception as e:  # noqa: BLE001: reported below
                    errors.append(e)
            t = threading.Thread(target=edit)
            t.start()
            try:
                self.assertEqual(c.cmd("BGREWRITEAOF"),
                                 b"+Background append only file rewriting started\r\n")
                self.wait_rewrites(c, round_ + 1)
            finally:
                done.set()
                t.join()
            self.assertEqual(errors, [])
            self.run_commands(c, rng, 200)
        before = snapshot(c)
        self.assertEqual(len(before), len(LISTS) + len(HASHES) + len(SETS) + len(ZSETS) + len(STREAMS) + 20000)
        self.assert_comes_back(before, threads=2)
        self.stop()

    def test_a_sigkill_during_a_rewrite(self):
        c = self.start(threads=1)
        populate(c)
        for i in range(0, 30000, 1000):
            c.cmd("MSET", *[x for j in range(i, i + 1000) for x in ("k%d" % j, "v")])
        rng = random.Random(5)
        self.assertEqual(c.cmd("BGREWRITEAOF"),
                         b"+Background append only file rewriting started\r\n")
        self.run_commands(c, rng, 400)
        before = snapshot(c)
        self.assert_comes_back(before, threads=1)
        self.stop()

    def test_transactions_between_edits(self):
        c = self.start(threads=2)
        populate(c)
        rng = random.Random(3)
        for _ in range(30):
            self.run_commands(c, rng, 10)
            # A transaction on keys of both shards (written whole), then edits of the same keys.
            self.assertEqual(c.cmd("MULTI"), b"+OK\r\n")
            for k in ("{a}list", "{b}list"):
                c.cmd("RPUSH", k, "tx")
                c.cmd("LPOP", k)
            c.cmd("HSET", "{a}hash", "tx", "1")
            c.cmd("SADD", "{b}set", "tx")
            r = decode(c.cmd("EXEC"))
            self.assertEqual(len(r), 6)
            c.cmd("RPOP", "{a}list")
            c.cmd("HDEL", "{a}hash", "tx")
        before = snapshot(c)
        self.assert_comes_back(before, threads=2)
        self.stop()

    def test_ttls_are_kept_and_an_expired_collection_stays_gone(self):
        c = self.start(threads=2)
        populate(c)
        self.assertEqual(c.cmd("PEXPIRE", "queue", "600000"), integer(1))
        self.assertEqual(c.cmd("PEXPIRE", "set", "300"), integer(1))
        rng = random.Random(9)
        self.run_commands(c, rng, 200)
        c.cmd("RPUSH", "queue", "last")
        c.cmd("SADD", "set", "last")
        self.wait_for("the set's TTL", lambda: c.cmd("EXISTS", "set") == integer(0))
        before = snapshot(c)
        self.assertTrue(before[b"queue"][2])
        self.assertNotIn(b"set", before)
        after = self.assert_comes_back(before, threads=2)
        self.assertGreater(to_int(after.cmd("PTTL", "queue")), 0)
        self.stop()


if __name__ == "__main__":
    unittest.main()
