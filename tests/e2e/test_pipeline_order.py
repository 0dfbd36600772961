"""What a pipeline's order promises, in both --pipeline-order modes (docs/ARCHITECTURE.md).

`sent` (the default, as Redis): a pipeline's commands take effect in the order sent, also when
its keys sit on both shards of a --threads 2 server (deadbolt sends the rest of the pipeline along
the shards, server/core/relay.cc). test_atomicity.py checks that other clients see them in that
order; here one client checks that each command sees exactly the earlier ones.

`key`: commands on the same key keep their order, commands for different shards may run at
once, and replies always leave in the order sent. Barriers (multi-key commands, MULTI/EXEC,
blocking calls) see every earlier command of the connection.

Each mode's checks run against a server started in that mode; the `sent` checks also run
against redis-server, which is trivially ordered.
"""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, decode, integer  # noqa: E402
from slots import on_shard, shard_of  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def keys_on_both(name, n):
    """n keys `name:i`, alternating between the shards of a --threads 2 server."""
    out, i = [], 0
    while len(out) < n:
        key = "%s:%d" % (name, i)
        if shard_of(key) == len(out) % 2:
            out.append(key)
        i += 1
    return out


class OrderChecks:
    """Checks that hold in both modes: each command sees the connection's earlier commands on
    its own key, and replies come back in the order sent."""

    def test_pipeline_over_both_shards_sees_its_own_writes(self):
        # SET k_i, then read it back later in the same pipeline after commands on the other
        # shard: a reply out of place or a read that misses the write shows here.
        keys = keys_on_both("own", 40)
        rnd = random.Random(7)
        cmds, want = [], []
        written = {}
        for step in range(3000):  # more than one relay (1,024 commands) carries
            k = rnd.choice(keys)
            if rnd.random() < 0.5:
                cmds.append(("SET", k, "v%d" % step))
                want.append(OK)
                written[k] = "v%d" % step
            else:
                cmds.append(("GET", k))
                want.append(bulk(written[k]) if k in written else b"$-1\r\n")
        c = self.conn()
        for k in keys:
            c.cmd("DEL", k)
        got = c.pipeline(cmds)
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(g, w, "reply %d to %r" % (i, cmds[i]))

    def test_errors_between_commands_keep_their_place(self):
        # Refused in the dispatcher (unknown, arity) or by the handler (WRONGTYPE) between
        # commands for both shards: each reply in its place.
        a, b = on_shard(0, "err"), on_shard(1, "err")
        c = self.conn()
        c.cmd("DEL", a, b)
        for first in (a, b):
            other = b if first == a else a
            got = c.pipeline([("SET", first, "1"), ("NOSUCHCOMMAND",), ("GET", other),
                              ("GET",), ("HSET", first, "f", "v"), ("INCR", other), ("GET", first)])
            self.assertEqual(got[0], OK)
            self.assertTrue(got[1].startswith(b"-ERR unknown command"), got[1])
            self.assertIn(got[2], (b"$-1\r\n", bulk("1")))
            self.assertTrue(got[3].startswith(b"-ERR wrong number of arguments"), got[3])
            self.assertTrue(got[4].startswith(b"-WRONGTYPE"), got[4])
            self.assertTrue(got[5].startswith(b":"), got[5])
            self.assertEqual(got[6], bulk("1"))

    def test_incr_per_key_counts_up_in_order(self):
        keys = keys_on_both("ctr", 6)
        c = self.conn()
        for k in keys:
            c.cmd("DEL", k)
        cmds = [("INCR", keys[i % len(keys)]) for i in range(600)]
        got = c.pipeline(cmds)
        seen = {k: 0 for k in keys}
        for (name, k), g in zip(cmds, got):
            seen[k] += 1
            self.assertEqual(g, integer(seen[k]), "INCR %s" % k)

    def test_multi_key_command_sees_earlier_single_key_writes(self):
        # MSET/MGET over both shards is a barrier: it runs after every earlier command.
        a, b = on_shard(0, "bar"), on_shard(1, "bar")
        c = self.conn()
        for r in range(50):
            got = c.pipeline([("SET", a, "a%d" % r), ("SET", b, "b%d" % r), ("MGET", a, b),
                              ("MSET", a, "x%d" % r, b, "y%d" % r), ("GET", b), ("GET", a)])
            self.assertEqual(decode(got[2]), [b"a%d" % r, b"b%d" % r])
            self.assertEqual(got[3:], [OK, bulk("y%d" % r), bulk("x%d" % r)])

    def test_exec_sees_earlier_writes_and_later_commands_see_exec(self):
        a, b = on_shard(0, "tx"), on_shard(1, "tx")
        c = self.conn()
        got = c.pipeline([("SET", a, "1"), ("SET", b, "1"), ("MULTI",), ("INCR", a),
                          ("INCR", b), ("EXEC",), ("GET", a), ("GET", b)])
        self.assertEqual(decode(got[5]), [2, 2])
        self.assertEqual(got[6:], [bulk("2"), bulk("2")])

    def test_select_in_a_pipeline_applies_to_the_commands_after_it(self):
        a, b = on_shard(0, "db"), on_shard(1, "db")
        c = self.conn()
        got = c.pipeline([("SELECT", "0"), ("SET", a, "zero"), ("SET", b, "zero"),
                          ("SELECT", "3"), ("SET", a, "three"), ("GET", b), ("SELECT", "0"),
                          ("GET", a), ("GET", b)])
        self.assertEqual(got[4:], [OK, b"$-1\r\n", OK, bulk("zero"), bulk("zero")])
        c.cmd("SELECT", "3")
        self.assertEqual(c.cmd("GET", a), bulk("three"))
        c.cmd("FLUSHDB")


    def test_large_replies_from_both_shards_keep_their_order(self):
        # Replies far larger than a socket buffer, from both shards, read only once everything
        # was sent (the socket is full while later replies are made): each whole, in its place.
        big0, big1 = on_shard(0, "ordbig"), on_shard(1, "ordbig")
        small0, small1 = on_shard(0, "ordsmall"), on_shard(1, "ordsmall")
        v0, v1 = b"a" * (3 << 20), b"b" * (3 << 20) + b"end"
        setup = self.conn()
        for k, v in ((big0, v0), (big1, v1), (small0, b"s0"), (small1, b"s1")):
            self.assertEqual(setup.cmd("SET", k, v), OK)
        for c in (self.conn(), self.conn()):  # connections land on both reactors in turn
            cmds, want = [], []
            for big, v, small, sv in ((big1, v1, small0, b"s0"), (big0, v0, small1, b"s1")) * 3:
                cmds += [("GET", big), ("GET", small), ("PING",)]
                want += [bulk(v), bulk(sv), b"+PONG\r\n"]
            got = c.pipeline(cmds)
            for i, (g, w) in enumerate(zip(got, want)):
                self.assertEqual(len(g), len(w), "reply %d to %r" % (i, cmds[i]))
                self.assertEqual(g, w, "reply %d to %r" % (i, cmds[i]))

    def test_pipelines_starting_on_either_shard(self):
        # Pipelines that start on one shard and go to the other, of every length up to 40
        # rounds: replies made before the switch and after it leave in the order sent.
        a, b = on_shard(0, "ordmix"), on_shard(1, "ordmix")
        for c in (self.conn(), self.conn()):
            for n in range(1, 40):
                cmds = [("SET", a, "x%d" % n), ("GET", a), ("INCR", b + ":n"), ("GET", b + ":n"),
                        ("GET", a)] * n
                got = c.pipeline(cmds)
                self.assertEqual(got[0::5], [OK] * n)
                self.assertEqual(got[1::5], [bulk("x%d" % n)] * n)
                counts = [int(r[1:-2]) for r in got[2::5]]
                self.assertEqual(counts, list(range(counts[0], counts[0] + n)))
                self.assertEqual(got[3::5], [bulk(str(v)) for v in counts])
                self.assertEqual(got[4::5], [bulk("x%d" % n)] * n)


class SentOrderTest(OrderChecks, harness.ServerTestCase):
    """The default mode (and redis-server)."""

    @unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key keeps only per-key order")
    def test_writes_on_two_shards_are_seen_in_order_by_a_barrier(self):
        # Pipelined SET a, SET b, then an atomic MGET on another connection at random moments:
        # never b's new value with a's old one.
        a, b = on_shard(0, "seq"), on_shard(1, "seq")
        w, r = self.conn(), self.conn()
        w.cmd("MSET", a, "0", b, "0")
        for n in range(1, 300):
            w.send(harness.encode_command("SET", a, n) + harness.encode_command("SET", b, n))
            va, vb = (int(x) for x in decode(r.cmd("MGET", a, b)))
            self.assertIn(va, (vb, vb + 1), "a=%d b=%d" % (va, vb))
            self.assertEqual(w.read_replies(2), [OK, OK])

    def test_config_reports_the_mode(self):
        if harness.AGAINST_REDIS:
            self.skipTest("deadbolt's own setting")
        want = "key" if harness.KEY_ORDER else "sent"
        self.assertEqual(decode(self.c.cmd("CONFIG", "GET", "pipeline-order")),
                         [b"pipeline-order", want.encode()])


@unittest.skipIf(harness.AGAINST_REDIS, "a deadbolt mode")
class KeyOrderTest(OrderChecks, harness.ServerTestCase):
    """--pipeline-order key, on a server of its own."""

    @classmethod
    def setUpClass(cls):
        cls.key_server = harness.ServerProcess(["--pipeline-order", "key"]).start()

    @classmethod
    def tearDownClass(cls):
        problem = cls.key_server.stop()
        if problem:
            raise AssertionError(problem + "\n" + cls.key_server.log_tail())

    def conn(self, timeout=harness.IO_TIMEOUT):
        c = harness.RespConn(self.key_server.port, timeout=timeout)
        self._conns.append(c)
        return c

    def test_config_reports_the_mode(self):
        self.assertEqual(decode(self.conn().cmd("CONFIG", "GET", "pipeline-order")),
                         [b"pipeline-order", b"key"])

    def test_blocking_call_waits_for_earlier_commands(self):
        # LOCK.ACQUIRE ... WAIT is a barrier: it sees the SETs sent before it on both shards.
        a, b = on_shard(0, "blk"), on_shard(1, "blk")
        c = self.conn()
        got = c.pipeline([("SET", a, "1"), ("SET", b, "1"), ("DEL", a), ("DEL", b),
                          ("LOCK.ACQUIRE", b, "me", "10000", "WAIT", "1000"), ("EXISTS", b)])
        self.assertEqual(got[:4], [OK, OK, integer(1), integer(1)])
        self.assertTrue(got[4].startswith(b":"), got[4])
        self.assertEqual(got[5], integer(1))


if __name__ == "__main__":
    unittest.main()
