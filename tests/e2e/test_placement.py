"""Where the reactors run (--pin auto|yes|no), and where a connection lives (--move-connections):
deadbolt only; Redis has neither.

auto, the default, pins reactor i to the i-th CPU the server may use only when the reactors
leave one of those CPUs free; when every CPU has a reactor they are left to the scheduler, so
that a reactor can move off a core another busy process wants (bench/RESULTS.md measured
pinning there costing redis-benchmark 40% of its throughput at P1). The test reads each
reactor thread's allowed CPUs from /proc."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import slots  # noqa: E402
from harness import integer  # noqa: E402


def reactor_cpus(pid):
    """{thread name: allowed CPUs} for the server's reactor threads ("reactor-<i>")."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, tid)
        with open(base + "comm") as f:
            name = f.read().strip()
        if not name.startswith("reactor-"):
            continue
        out[name] = os.sched_getaffinity(int(tid))
    return out


@unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's own flag")
@unittest.skipUnless(len(os.sched_getaffinity(0)) >= 2, "needs two CPUs")
class PlacementTest(unittest.TestCase):
    def placed(self, args):
        server = harness.ServerProcess(args).start()
        try:
            with harness.RespConn(server.port) as c:
                self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
            return reactor_cpus(server.proc.pid), server.log_tail()
        finally:
            server.stop()

    def test_auto_leaves_reactors_free_when_every_cpu_has_one(self):
        allowed = os.sched_getaffinity(0)
        cpus, log = self.placed(["--threads", str(len(allowed))])
        self.assertEqual(len(cpus), len(allowed), cpus)
        for name, got in cpus.items():
            self.assertEqual(got, allowed, name)
        self.assertIn("not pinned", log)

    def test_auto_pins_when_a_cpu_is_left_free(self):
        allowed = sorted(os.sched_getaffinity(0))
        cpus, log = self.placed(["--threads", "1"])
        self.assertEqual(cpus, {"reactor-0": {allowed[0]}})
        self.assertIn("pinned to CPUs %d" % allowed[0], log)

    def test_yes_pins_each_reactor_and_no_pins_none(self):
        allowed = sorted(os.sched_getaffinity(0))
        cpus, _ = self.placed(["--threads", "2", "--pin", "yes"])
        self.assertEqual(cpus, {"reactor-0": {allowed[0]}, "reactor-1": {allowed[1]}})
        cpus, _ = self.placed(["--threads", "1", "--no-pin"])
        self.assertEqual(cpus, {"reactor-0": set(allowed)})


def stats(c):
    """INFO stats as {field: value}, the per-reactor lines as {"reactor<i>": {k: v}}."""
    out = {}
    for line in harness.decode(c.cmd("INFO", "stats")).decode().split("\r\n"):
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        if k.startswith("reactor"):
            v = dict(kv.split("=", 1) for kv in v.split(","))
        out[k] = v
    return out


def moved_in(c, reactor):
    return int(stats(c)["reactor%d" % reactor]["moved_in"])


@unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's own placement")
class MoveConnectionsTest(unittest.TestCase):
    """A connection whose keys keep landing on another reactor's shard moves to that reactor
    (once idle, at most once a second). A move is invisible to the client: the same socket,
    client id, name, database, protocol and user, no reply lost or out of order."""

    def setUp(self):
        self.server = harness.ServerProcess(["--threads", "2"]).start()
        self.ctl = harness.RespConn(self.server.port)

    def tearDown(self):
        self.ctl.close()
        self.server.stop()

    def counter_on(self, shard, c, n, start=0):
        """n pipelined INCRs of a key on `shard`, in batches; checks every reply in order."""
        key = slots.on_shard(shard, "ctr")
        done = start
        while done < start + n:
            batch = min(100, start + n - done)
            got = c.pipeline([("INCR", key)] * batch)
            self.assertEqual(got, [integer(done + i + 1) for i in range(batch)])
            done += batch
        return key

    def test_a_connection_moves_to_its_keys_reactor_keeping_its_session(self):
        with harness.RespConn(self.server.port) as c:
            self.assertEqual(c.cmd("CLIENT", "SETNAME", "mover"), b"+OK\r\n")
            self.assertEqual(c.cmd("SELECT", "5"), b"+OK\r\n")
            c.cmd("HELLO", "3")
            cid = c.call("CLIENT", "ID")
            # Keys on shard 0, then (a second later, the least time between moves) on shard 1:
            # wherever the connection was accepted, it ends on reactor 1 having moved there
            # once. Replies are checked all the way.
            self.counter_on(0, c, 1000)
            time.sleep(1.1)
            self.counter_on(1, c, 1000)
            self.assertEqual(moved_in(self.ctl, 1), 1)
            self.assertGreaterEqual(int(stats(self.ctl)["connections_moved"]), 1)
            # The session came along.
            self.assertEqual(c.call("CLIENT", "ID"), cid)
            self.assertEqual(c.call("CLIENT", "GETNAME"), b"mover")
            self.assertEqual(c.cmd("SET", "db5key", "x"), b"+OK\r\n")
            self.assertEqual(self.ctl.cmd("EXISTS", "db5key"), integer(0))  # not in db 0
            self.assertIsInstance(c.call("HELLO"), dict)  # still RESP3: a map
            listed = [l for l in harness.decode(self.ctl.cmd("CLIENT", "LIST")).decode().split("\n")
                      if "name=mover" in l]
            self.assertEqual(len(listed), 1, listed)
            self.assertIn("db=5", listed[0])
            self.assertEqual(int(harness.decode(self.ctl.cmd("INFO", "clients")).decode()
                                 .split("connected_clients:")[1].split("\r\n")[0]), 2)

    def test_input_that_arrives_during_a_move_runs_in_order(self):
        # A command split over two writes, the second sent once the replies before it came:
        # a move may start between them (the first half waits in the input buffer, goes along).
        key = slots.on_shard(1, "split")
        other = slots.on_shard(0, "split")
        with harness.RespConn(self.server.port) as c:
            for rnd in range(12):
                shard_key = key if rnd < 6 else other
                if rnd == 6:
                    time.sleep(1.1)
                cmds = b"".join(harness.encode_command("INCR", shard_key) for _ in range(60))
                whole = harness.encode_command("INCR", shard_key)
                c.send(cmds + whole[:9])
                replies = c.read_replies(60)
                c.send(whole[9:])
                replies.append(c.read_reply())
                done = 61 * (rnd % 6)  # INCRs of this key before this round
                self.assertEqual(replies, [integer(done + i + 1) for i in range(61)])
        self.assertGreaterEqual(int(stats(self.ctl)["connections_moved"]), 1)

    def test_keys_spread_over_the_shards_do_not_move_a_connection(self):
        with harness.RespConn(self.server.port) as c:
            cmds = [("SET", "spread:%d" % i, "v") for i in range(3000)]
            for i in range(0, len(cmds), 300):
                self.assertEqual(c.pipeline(cmds[i:i + 300]), [b"+OK\r\n"] * 300)
        self.assertEqual(int(stats(self.ctl)["connections_moved"]), 0)

    def test_a_connection_watching_keys_or_subscribed_stays(self):
        # Keys on both shards, so on one of them the connection is away from home: it would
        # move if nothing held it.
        with harness.RespConn(self.server.port) as c:
            key0 = slots.on_shard(0, "ctr")
            # Watching keys, it stays (the watch lives on its reactor); EXEC still sees that its
            # own INCRs touched a watched key.
            self.assertEqual(c.cmd("WATCH", key0), b"+OK\r\n")
            self.counter_on(0, c, 600)
            self.counter_on(1, c, 600)
            self.assertEqual(int(stats(self.ctl)["connections_moved"]), 0)
            self.assertEqual(c.cmd("MULTI"), b"+OK\r\n")
            c.cmd("INCR", key0)
            self.assertEqual(c.cmd("EXEC"), b"*-1\r\n")
        time.sleep(0.2)  # c, free of its watch after EXEC, may have moved as it closed
        before = int(stats(self.ctl)["connections_moved"])
        with harness.RespConn(self.server.port) as s:
            # A RESP3 subscriber may run any command; its subscriptions keep it where it is.
            self.assertEqual(s.cmd("HELLO", "3")[:1], b"%")
            self.assertEqual(s.cmd("SUBSCRIBE", "ch")[:2], b">3")
            self.counter_on(0, s, 600, start=600)
            self.counter_on(1, s, 600, start=600)
            self.assertEqual(int(stats(self.ctl)["connections_moved"]), before)
            self.assertEqual(self.ctl.cmd("PUBLISH", "ch", "hi"), integer(1))
            self.assertEqual(harness.decode(s.read_reply()), [b"message", b"ch", b"hi"])

    def test_off_with_move_connections_no(self):
        self.assertEqual(self.ctl.cmd("CONFIG", "SET", "move-connections", "no"), b"+OK\r\n")
        with harness.RespConn(self.server.port) as c:
            self.counter_on(0, c, 600)
            self.counter_on(1, c, 600)
        self.assertEqual(int(stats(self.ctl)["connections_moved"]), 0)


if __name__ == "__main__":
    unittest.main()
