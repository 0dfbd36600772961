"""Replies sent by the shard that ran the commands, on a `--threads 2` server (default
`--pipeline-order sent`).

A relay whose last shard is not its connection's own sends the replies to the client's socket
from that shard (server/core/relay.cc, SendRepliesHere) and then goes home only to be recycled.
Nothing waits for that message, so it wakes nobody, unless the connection has something waiting
for it (more input, a reply behind it). Here:

- commands one at a time on keys of both shards: every reply is right, and INFO's
  pipeline_replies_from_shard counts one for each remote command;
- a second write sent while the first one's relay is out (so it waits for the relay to be home),
  with a slow tick (`--hz 1`): if that wait did not wake the connection's reactor, each such
  command would wait for the next tick, up to a second; thirty of them must take far less;
- a reply larger than the socket's buffer, read late: it arrives whole and in order (the shard's
  send is short, and home sends the rest), and the connection goes on;
- a server stopped while replies sent from a shard wait for clients that do not read: it exits
  cleanly (under AddressSanitizer, without a leak);
- a command whose reply goes from the shard and a pipeline whose replies go from home (a command
  ran ahead on the lower shard), written one right after the other in both orders: the replies
  come in order.
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, integer  # noqa: E402
from slots import on_shard  # noqa: E402


def from_shard(c):
    return int(harness.info(c, "stats").get("pipeline_replies_from_shard", "0"))


@unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's INFO field and flags")
@unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key forwards commands one by one")
class RepliesFromShardTest(unittest.TestCase):
    def setUp(self):
        self.server = harness.ServerProcess(["--threads", "2", "--hz", "1",
                                             "--move-connections", "no"]).start()
        self.ctl = harness.RespConn(self.server.port)

    def tearDown(self):
        self.ctl.close()
        problem = self.server.stop()
        self.assertIsNone(problem, problem)

    def test_one_at_a_time_on_both_shards(self):
        keys = [on_shard(0, "one"), on_shard(1, "one")]
        before = from_shard(self.ctl)
        with harness.RespConn(self.server.port) as c:
            for i in range(50):
                for k in keys:
                    self.assertEqual(c.cmd("INCR", k), integer(i + 1))
            # Half the commands were on the other reactor's shard, whichever this one is; the
            # INFO commands of ctl run on their own connection and are no relays.
            self.assertEqual(from_shard(self.ctl) - before, 50)
            self.assertEqual(c.cmd("MGET", *keys), b"*2\r\n$2\r\n50\r\n$2\r\n50\r\n")

    def test_input_behind_a_relay_out_is_run_without_waiting_for_the_tick(self):
        keys = [on_shard(0, "behind"), on_shard(1, "behind")]
        value = b"v" * (256 * 1024)  # the shard takes a while over it, so the INCR waits
        with harness.RespConn(self.server.port) as c:
            start = time.monotonic()
            for i in range(60):
                k = keys[i % 2]
                c.send(harness.encode_command("SET", k, value))
                c.send(harness.encode_command("INCR", "n" + k))
                self.assertEqual(c.read_replies(2), [OK, integer(i // 2 + 1)])
            elapsed = time.monotonic() - start
        # Not a timing measurement: a lost wake-up costs up to a second (--hz 1) for each of the
        # thirty remote SETs, half a second on average, so a server losing them takes 15 s.
        self.assertLess(elapsed, 10.0)

    def test_a_large_reply_read_late_arrives_whole(self):
        value = bytes(range(256)) * (128 * 1024)  # 32 MiB, beyond the sockets' buffers here
        keys = [on_shard(0, "large"), on_shard(1, "large")]
        for k in keys:
            self.assertEqual(self.ctl.cmd("SET", k, value), OK)
        with harness.RespConn(self.server.port) as c:
            for k in keys:
                c.send(harness.encode_command("GET", k) + harness.encode_command("PING"))
                time.sleep(0.3)  # the reply fills the socket and the send stops short
                self.assertEqual(c.read_replies(2), [bulk(value), b"+PONG\r\n"])
            self.assertEqual(c.cmd("STRLEN", keys[0]), integer(len(value)))

    def test_stopped_while_a_shard_sends_to_a_client_not_reading(self):
        value = b"x" * (32 << 20)
        keys = [on_shard(0, "stuck"), on_shard(1, "stuck")]
        for k in keys:
            self.assertEqual(self.ctl.cmd("SET", k, value), OK)
        before = from_shard(self.ctl)
        # Connections are spread over the reactors in turn, so of two made one after the other,
        # one has the key on the other reactor: its shard sends what the socket takes, and the
        # rest waits for a reader that never comes. The server must still stop cleanly. (A send
        # that took nothing would wait in the shard's ring, freed when the ring is: IoCall::drop.
        # Which of the two happens is up to the kernel's buffers.)
        conns = [harness.RespConn(self.server.port) for _ in range(4)]
        try:
            for i, c in enumerate(conns):
                c.send(harness.encode_command("GET", keys[i // 2]))
            deadline = time.monotonic() + 10
            while from_shard(self.ctl) - before < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(from_shard(self.ctl) - before, 2)
            problem = self.server.stop()  # before the clients go, which would end the sends
            self.assertIsNone(problem, problem)
        finally:
            for c in conns:
                c.close()

    def test_replies_from_home_then_from_the_shard_keep_their_order(self):
        low, high = on_shard(0, "order"), on_shard(1, "order")
        before = from_shard(self.ctl)
        with harness.RespConn(self.server.port) as c:
            n = {low: 0, high: 0}

            def expect(sent):
                out = []
                for k in sent:
                    n[k] += 1
                    out.append(integer(n[k]))
                return out

            pipeline = [high, low, high]  # low runs ahead on shard 0: the replies go from home
            for i in range(30):
                alone = (low, high)[i % 2]  # on each shard in turn: from the shard if remote
                # One alone, then the pipeline in a second write, usually while the first one's
                # relay is out; then the other way round.
                c.send(harness.encode_command("INCR", alone))
                c.send(b"".join(harness.encode_command("INCR", k) for k in pipeline))
                self.assertEqual(c.read_replies(4), expect([alone] + pipeline))
                c.send(b"".join(harness.encode_command("INCR", k) for k in pipeline))
                c.send(harness.encode_command("INCR", alone))
                self.assertEqual(c.read_replies(4), expect(pipeline + [alone]))
            # (Whether the two writes came in one read or two is up to timing.) One alone on
            # each shard, read before the next: one of them is remote, its reply from the shard.
            for k in (low, high):
                self.assertEqual(c.cmd("INCR", k), expect([k])[0])
            self.assertGreater(from_shard(self.ctl) - before, 0)


if __name__ == "__main__":
    unittest.main()
