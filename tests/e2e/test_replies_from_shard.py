"""Replies written by the shard that ran the command (--replies-from-shard, on by default).

A command whose key lives on another reactor's shard normally comes home as a message, and the
connection's own reactor (woken for it) writes the reply. When the connection has nothing else to
send before that reply, the reactor that ran the command writes it to the socket itself and the
home reactor is not woken (server/core/reactor.h, Reactor::SendReply). What the socket does not
take at once (a large reply) comes home and is written from there, after the part already sent.

These checks hold for any server (redis-server included): every reply arrives whole and in order.
Against deadbolt they also check that the path was taken (INFO's cross_shard_direct_replies), so
that a server that never takes it fails here.
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, PONG, bulk  # noqa: E402
from slots import on_shard  # noqa: E402


def setUpModule():
    # One tick a second: a reply that waited for the reactor's next tick instead of being woken
    # for (see test_replies_behind_a_written_one_are_not_held) would wait up to a second.
    harness.start_module_server(() if harness.AGAINST_REDIS else ("--hz", "1"))


def tearDownModule():
    harness.stop_module_server()


def direct_replies(c):
    """INFO stats' cross_shard_direct_replies (None against redis-server)."""
    info = c.cmd("INFO", "stats").decode()
    for line in info.split("\r\n"):
        if line.startswith("cross_shard_direct_replies:"):
            return int(line.split(":")[1])
    return None


class RepliesFromShard(harness.ServerTestCase):
    def conns_on_both_reactors(self):
        # deadbolt hands accepted connections to its reactors in turn: two in a row land on both.
        return [self.conn(), self.conn()]

    def test_one_command_at_a_time_on_both_shards(self):
        # The client waits for each reply (P1): every reply to a key on the other shard is one
        # the shard may write itself.
        keys = [on_shard(0, "rfs1"), on_shard(1, "rfs1")]
        conns = self.conns_on_both_reactors()
        before = direct_replies(conns[0])
        for i in range(50):
            for c in conns:
                for k in keys:
                    self.assertEqual(c.cmd("SET", k, "v%d" % i), OK)
                    self.assertEqual(c.cmd("GET", k), bulk("v%d" % i))
        after = direct_replies(conns[0])
        if before is not None:
            # 400 commands, half of them remote for each connection.
            self.assertGreaterEqual(after - before, 100, "replies written by the other shard")

    def test_large_replies_keep_their_order(self):
        # Replies far larger than a socket buffer: the shard's write takes part of one, the
        # connection's reactor writes the rest, and the replies after it wait for it. Read only
        # after everything was sent, so the socket is full when the shards write.
        big0, big1 = on_shard(0, "rfsbig"), on_shard(1, "rfsbig")
        small0, small1 = on_shard(0, "rfssmall"), on_shard(1, "rfssmall")
        v0, v1 = b"a" * (3 << 20), b"b" * (3 << 20) + b"end"
        setup = self.conn()
        self.assertEqual(setup.cmd("SET", big0, v0), OK)
        self.assertEqual(setup.cmd("SET", big1, v1), OK)
        self.assertEqual(setup.cmd("SET", small0, "s0"), OK)
        self.assertEqual(setup.cmd("SET", small1, "s1"), OK)
        for c in self.conns_on_both_reactors():
            cmds, want = [], []
            for big, v, small, s in ((big1, v1, small0, b"s0"), (big0, v0, small1, b"s1")) * 3:
                cmds += [("GET", big), ("GET", small), ("PING",)]
                want += [bulk(v), bulk(s), PONG]
            got = c.pipeline(cmds)
            for i, (g, w) in enumerate(zip(got, want)):
                self.assertEqual(len(g), len(w), "reply %d to %r" % (i, cmds[i]))
                self.assertEqual(g, w, "reply %d to %r" % (i, cmds[i]))
            # One at a time too: each big reply may start from the shard that holds it.
            for big, v in ((big1, v1), (big0, v0)):
                self.assertEqual(c.cmd("GET", big), bulk(v))
                self.assertEqual(c.cmd("PING"), PONG)

    def test_pipelines_with_local_replies_first(self):
        # A pipeline that starts with commands of the connection's own shard and then goes to the
        # other: the replies already made go along with the relay and leave first.
        a, b = on_shard(0, "rfsmix"), on_shard(1, "rfsmix")
        for c in self.conns_on_both_reactors():
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

    def test_replies_behind_a_written_one_are_not_held(self):
        # GET of a key on the other shard, then (in one write, or in a second one a moment
        # later) a PING: the shard writes the GET's reply and the PING's reply waits for word
        # that it went. That word must wake the connection's reactor; had it to wait for the
        # next event there (a tick: a second at --hz 1), the PING would stall. Normally it takes
        # about a millisecond; the bound here is half a second, on a reply that would otherwise
        # take up to a second.
        key_for = [on_shard(1, "rfsheld"), on_shard(0, "rfsheld")]
        get = [harness.encode_command("GET", k) for k in key_for]
        ping = harness.encode_command("PING")
        for trial in range(150):
            for i, c in enumerate(self.conns_on_both_reactors()):
                c.settimeout(0.5)
                if trial % 3 == 0:
                    c.send(get[i] + ping)
                else:
                    c.send(get[i])
                    time.sleep(0.0002 * (trial % 3))
                    c.send(ping)
                try:
                    self.assertEqual(c.read_replies(2), [harness.NIL, PONG])
                except TimeoutError:
                    self.fail("trial %d, connection %d: the PING's reply was held back" % (trial, i))
                c.close()

    def test_switch_can_be_turned_off(self):
        c = self.conn()
        if harness.AGAINST_REDIS:
            self.skipTest("deadbolt's own parameter")
        self.assertEqual(c.call("CONFIG", "GET", "replies-from-shard"),
                         [b"replies-from-shard", b"yes"])


if __name__ == "__main__":
    harness.main()
