"""Commands that run ahead of their pipeline, on a `--threads 2` server (default
`--pipeline-order sent`).

A pipeline's relay visits each shard once, in ascending order (server/core/relay.cc), so a
command on shard 0 may run before an earlier command of its pipeline on shard 1. Its key then
stays locked until that earlier command has run, so no other client sees the later effect before
the earlier one. Here:

- a writer pipelines SETs over keys alternating between the shards while atomic readers (MGET,
  MULTI/EXEC) read them all: they always see a prefix of the writer's round;
- an earlier command of the pipeline is held on shard 1 behind a transaction's lock while the
  later one has already run on shard 0: a reader of the later key, and a BLPOP waiter woken by
  it, see the earlier write too (they wait for it);
- many clients pipelining commands on a few hot keys of both shards, with cross-shard
  transactions on the same keys: nothing deadlocks and every increment is counted once.

The first and last also run against redis-server (trivially ordered), which checks the tests.
"""

import os
import random
import select
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, bulk, decode, integer  # noqa: E402
from slots import on_shard  # noqa: E402
from test_atomicity import AtomicityTestCase, read_transaction, transaction_bytes  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def run_ahead_count(c):
    return int(harness.info(c, "stats").get("pipeline_cmds_run_ahead", "0"))


def atomic_reader(keys, writer_done, min_reads, tx, possible, writer_does):
    """A worker body reading `keys` atomically (MGET, or GETs in MULTI/EXEC if `tx`) until the
    writer is done and it has read `min_reads` times: possible(values) must hold for every
    read, else it fails naming what the writer does."""
    def body(w, conn):
        reads = 0
        while not writer_done.is_set() or reads < min_reads:
            if tx:
                conn.send(transaction_bytes(*[("GET", k) for k in keys]))
                got = decode(read_transaction(w, conn, len(keys), "MULTI GET.. EXEC"))
            else:
                got = decode(conn.cmd("MGET", *keys))
            if not possible(got):
                w.fail("read %d saw %r: the writer, which %s, never went through that state"
                       % (reads, got, writer_does))
            reads += 1
        return reads
    return body


def ordered_reader(keys, writer_done, min_reads, tx):
    """atomic_reader of the four keys a writer sets to its round number in that order: every
    read must find k0 >= k1 >= k2 >= k3 >= k0 - 1."""
    def possible(got):
        v = [int(x) for x in got]
        return v[0] >= v[1] >= v[2] >= v[3] >= v[0] - 1
    return atomic_reader(keys, writer_done, min_reads, tx, possible,
                         "sets %s in that order" % keys)


def round_writer(writer_done, commands, replies, min_rounds=200):
    """A worker body pipelining commands(n) for rounds n = 1, 2, ... for at least a second and
    `min_rounds` rounds, expecting replies(n); sets writer_done at the end."""
    def body(w, conn):
        n = 0
        stop = time.monotonic() + 1.0
        while time.monotonic() < stop or n < min_rounds:
            n += 1
            cmds = commands(n)
            conn.send(b"".join(harness.encode_command(*cmd) for cmd in cmds))
            w.expect(conn.read_replies(len(cmds)), replies(n), "round %d" % n)
        writer_done.set()
        return n
    return body


class RunAheadTestCase(AtomicityTestCase):
    def wait_for(self, c, pred, timeout=30.0, section="stats"):
        """Polls an INFO section until pred(fields); False if it never held within `timeout`."""
        stop = time.monotonic() + timeout
        while time.monotonic() < stop:
            if pred(harness.info(c, section)):
                return True
            time.sleep(0.002)
        return False


@unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key keeps only per-key order")
class PipelineSeenInOrderTest(RunAheadTestCase):
    def test_writes_alternating_between_shards_seen_in_order(self):
        # The writer sets k0 (shard 1), k1 (shard 0), k2 (shard 1), k3 (shard 0) to n in one
        # pipeline. Wherever its connection lives, k1 or k3 runs ahead of an earlier SET on
        # shard 1. An atomic read of all four must find k0 >= k1 >= k2 >= k3 >= k0 - 1.
        keys = [on_shard(1 - i % 2, "ahead%d" % i) for i in range(4)]
        c = self.conn()
        self.assertReply(OK, "MSET", *[x for k in keys for x in (k, "0")])
        before = None if harness.AGAINST_REDIS else run_ahead_count(c)
        writer_done = threading.Event()
        writer = round_writer(writer_done, lambda n: [("SET", k, n) for k in keys],
                              lambda n: [OK] * len(keys))
        bodies = [("writer", writer)]
        bodies += [("mget%d" % i, ordered_reader(keys, writer_done, 20, False)) for i in range(2)]
        bodies += [("tx%d" % i, ordered_reader(keys, writer_done, 20, True)) for i in range(2)]
        results = self.run_workers(bodies, on_error=writer_done.set)
        self.assertGreaterEqual(results["writer"], 200, repr(results))
        if before is not None:
            # The test is about commands run ahead: there must have been some.
            self.assertGreater(run_ahead_count(c) - before, 0, "no command ran ahead")


@unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key keeps only per-key order")
class SeenInOrderPastTheHoldTest(RunAheadTestCase):
    def test_writes_between_big_reads_seen_in_order(self):
        # The same rounds of SETs, with reads of a 1 MB value on each shard between them: a
        # round's replies pass the 16 MB hold on unread replies, so a relay stops running ahead
        # there and comes back to the shard for the rest, and goes home early to wait for the
        # reader (server/core/relay.cc, StopAhead and PauseHere). The readers must still never
        # see a later SET without an earlier one, and the writer gets every reply in order.
        keys = [on_shard(1 - i % 2, "held%d" % i) for i in range(4)]
        bigs = [on_shard(s, "heldbig") for s in range(2)]
        values = [(b"%d" % s) * (1 << 20) for s in range(2)]
        c = self.conn()
        self.assertReply(OK, "MSET", *[x for k in keys for x in (k, "0")])
        for k, v in zip(bigs, values):
            self.assertReply(OK, "SET", k, v)
        before = None if harness.AGAINST_REDIS else harness.info(c, "stats")
        writer_done = threading.Event()
        reads = 10  # of a big value after each SET: 40 MB of replies a round

        def writer(w, conn):
            expected, cmds = [], []
            for i, k in enumerate(keys):
                big = 1 - i % 2  # the other shard's value after each SET
                cmds.append(("SET", k, None))
                expected.append(OK)
                cmds += [("GET", bigs[big], "")] * reads
                expected += [bulk(values[big])] * reads
            for n in range(1, 16):
                conn.send(b"".join(harness.encode_command(*(a[:2] + ((n,) if a[0] == "SET" else ())))
                                   for a in cmds))
                for i, want in enumerate(expected):
                    got = conn.read_reply()
                    if got != want:
                        w.fail("round %d, reply %d: %r..." % (n, i, got[:40]))
            writer_done.set()
            return n

        bodies = [("writer", writer), ("mget", ordered_reader(keys, writer_done, 5, False)),
                  ("tx", ordered_reader(keys, writer_done, 5, True))]
        results = self.run_workers(bodies, on_error=writer_done.set)
        self.assertEqual(results["writer"], 15, repr(results))
        if before is not None:
            after = harness.info(c, "stats")
            # With appendfsync always a relay that ran commands ahead keeps their locks until
            # every part of it is on disk: it neither stops running ahead nor goes home early.
            fields = ["pipeline_cmds_run_ahead"]
            if not harness.FSYNC_ALWAYS:
                fields += ["pipeline_relay_pauses", "pipeline_ahead_stops"]
            for field in fields:
                self.assertGreater(int(after[field]) - int(before[field]), 0, field)


# The Redis documentation's compare-and-delete, which deadbolt runs natively (catalogued).
COMPARE_AND_DELETE = ('if redis.call("get",KEYS[1]) == ARGV[1] then return '
                      'redis.call("del",KEYS[1]) else return 0 end')


@unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key keeps only per-key order")
class LockScriptsSeenInOrderTest(RunAheadTestCase):
    def test_releases_by_script_alternating_between_shards_seen_in_order(self):
        # A catalogued lock script that publishes nothing (here the classic compare-and-delete)
        # may run ahead too, under locks on its keys. Each round the writer pipelines SET k0..k3
        # to n, then EVALSHA compare-and-delete of k0..k3, the keys alternating between the
        # shards. An atomic read must find the keys set so far (a prefix of k0..k3) or those
        # not yet deleted (a suffix), all holding the same round.
        keys = [on_shard(1 - i % 2, "cad%d" % i) for i in range(4)]
        c = self.conn()
        sha = decode(c.cmd("SCRIPT", "LOAD", COMPARE_AND_DELETE)).decode()
        c.cmd("DEL", *keys)
        before = None if harness.AGAINST_REDIS else run_ahead_count(c)
        writer_done = threading.Event()
        writer = round_writer(
            writer_done,
            lambda n: [("SET", k, n) for k in keys] + [("EVALSHA", sha, 1, k, n) for k in keys],
            lambda n: [OK] * 4 + [integer(1)] * 4)

        def possible(got):
            present = "".join("1" if v is not None else "0" for v in got)
            return (present in ("0000", "1000", "1100", "1110", "1111", "0111", "0011", "0001")
                    and len({v for v in got if v is not None}) <= 1)

        does = "sets %s in that order and then deletes them in that order" % keys
        bodies = [("writer", writer),
                  ("mget", atomic_reader(keys, writer_done, 20, False, possible, does)),
                  ("tx", atomic_reader(keys, writer_done, 20, True, possible, does))]
        results = self.run_workers(bodies, on_error=writer_done.set)
        self.assertGreaterEqual(results["writer"], 200, repr(results))
        if before is not None:
            self.assertGreater(run_ahead_count(c) - before, 0, "no command ran ahead")

    @unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's relays and INFO fields")
    def test_a_pipeline_of_lock_scripts_runs_ahead(self):
        # Releases alone, alternating between the shards: the relay visits each shard once, and
        # the scripts of the lower shard run ahead of those before them on the higher one.
        keys = [on_shard(1 - i % 2, "cadonly%d" % i) for i in range(8)]
        c = self.conn()
        sha = decode(c.cmd("SCRIPT", "LOAD", COMPARE_AND_DELETE)).decode()
        before = run_ahead_count(c)
        # With appendfsync always an origin whose relays met each other's locks (an earlier
        # test's hot keys) sends them in order for up to a second (TaggedBackoff, a span of
        # time): tries go on for three.
        until = time.monotonic() + (3.0 if harness.FSYNC_ALWAYS else 0)
        while True:
            c.cmd("MSET", *[x for k in keys for x in (k, "tok")])
            got = c.pipeline([("EVALSHA", sha, 1, k, "tok") for k in keys])
            self.assertEqual(got, [integer(1)] * len(keys))
            if run_ahead_count(c) > before or time.monotonic() > until:
                break
        self.assertGreater(run_ahead_count(c) - before, 0, "no script ran ahead")


@unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's relays and INFO fields")
@unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key keeps only per-key order")
class HeldBackTest(RunAheadTestCase):
    """An earlier command of a pipeline waits on shard 1 behind a transaction's lock while a later
    one has already run on shard 0: that one's effect must stay out of sight until then."""

    BIG = 100000  # elements of the list an EXEC scans again and again while it holds it

    def setUp(self):
        super().setUp()
        self.big = on_shard(1, "held:big")
        self.data = on_shard(1, "held:data")
        self.w = on_shard(0, "held:w")
        c = self.conn()
        for start in range(0, self.BIG, 10000):
            c.pipeline([("RPUSH", self.big) + tuple("e%d" % i for i in range(start, start + 1000))
                        for _ in range(10)])

    def hold_and_run(self, writer_cmds, prepare, observe):
        """A holder's EXEC keeps self.big locked (scanning it with LREM); the writer pipelines
        writer_cmds, whose first command waits for the EXEC on shard 1 and whose last runs
        ahead on shard 0; once INFO shows that, observe(c, ctx) looks, ctx being what
        prepare(c) returned. Returns True if the scene was set (the EXEC outlasted the set-up),
        False to try again with a longer EXEC."""
        c = self.conn()
        ctx = prepare(c)
        holder = self.conn(timeout=harness.IO_TIMEOUT * 10)
        writer = self.conn(timeout=harness.IO_TIMEOUT * 10)
        ahead_before = run_ahead_count(c)
        # Steps alternating between the shards keep the EXEC going hop after hop, its keys
        # locked, while each reactor still serves others between its steps.
        queued = [("LREM", self.big, "0", "none"), ("GET", self.w)] * self.scans
        holder.pipeline([("MULTI",)] + queued)
        holder.send(harness.encode_command("EXEC"))
        locked = self.wait_for(c, lambda s: int(s["tx_locked_keys"]) >= 2)
        writer.send(b"".join(harness.encode_command(*cmd) for cmd in writer_cmds))
        # The writer's first command waits (for the EXEC), its last has run ahead.
        held = locked and self.wait_for(
            c, lambda s: int(s["tx_waiting"]) >= 1
            and int(s["pipeline_cmds_run_ahead"]) > ahead_before, timeout=5.0)
        # The scene counts only if the EXEC is still running now.
        held = held and not select.select([holder.sock], [], [], 0)[0]
        if held:
            observe(c, ctx)
        self.assertEqual(len(decode(holder.read_reply())), len(queued), "the holder's EXEC")
        got = writer.read_replies(len(writer_cmds))
        self.assertEqual(got[0], integer(self.BIG), "the writer's LLEN")
        c.cmd("DEL", *[cmd[1] for cmd in writer_cmds[1:]])
        for x in (c, holder, writer):
            x.close()
        return held

    def pipeline(self, later):
        """The writer's: LLEN big (waits for the EXEC on shard 1), SET data (shard 1), `later`
        (a write on shard 0), then reads switching between the shards, so that visiting each
        shard once (and `later` running ahead) is what costs the relay fewest messages."""
        return [("LLEN", self.big), ("SET", self.data, "1"), later] + [
            ("GET", self.data), ("EXISTS", later[1])] * 2

    def run_scene(self, writer_cmds, prepare, observe):
        self.scans = 50
        for _ in range(6):
            if self.hold_and_run(writer_cmds, prepare, observe):
                return
            self.scans *= 3
        self.fail("could not hold a key on shard 1 long enough to look (EXEC of %d scans)"
                  % self.scans)

    def test_reader_of_the_later_key_sees_the_earlier_write(self):
        q = on_shard(0, "held:q")

        def observe(c, _):
            # GET q waits until the writer's pipeline has run whole (q is locked until then);
            # run ahead unlocked, it would answer 1 while data is still unset.
            got_q = c.cmd("GET", q)
            got_data = c.cmd("GET", self.data)
            self.assertEqual(got_q, bulk("1"))
            self.assertEqual(got_data, bulk("1"), "q was set after data, yet data is missing")

        self.run_scene(self.pipeline(("SET", q, "1")), lambda c: None, observe)

    def test_blpop_waiter_woken_by_the_later_push_sees_the_earlier_write(self):
        q = on_shard(0, "held:list")

        def prepare(c):
            waiter = self.conn(timeout=harness.IO_TIMEOUT * 10)
            waiter.send(harness.encode_command("BLPOP", q, "0"))
            self.assertTrue(self.wait_for(
                c, lambda s: int(s["blocked_clients"]) >= 1, section="clients"))
            return waiter

        def observe(c, waiter):
            got = waiter.read_reply()  # served only once the pipeline has run whole
            self.assertEqual(decode(got), [q.encode(), b"x"])
            self.assertEqual(c.cmd("GET", self.data), bulk("1"),
                             "woken by a push sent after SET data, yet data is missing")

        self.run_scene(self.pipeline(("LPUSH", q, "x")), prepare, observe)


class HotKeysTest(RunAheadTestCase):
    def test_pipelines_and_transactions_on_hot_keys_never_deadlock(self):
        # Six hot keys, three per shard. Pipelining clients INCRBY them in random order (and
        # read them back); transaction clients INCR pairs across the shards and MGET them all.
        # Every relay takes locks for the commands it runs ahead and transactions take theirs:
        # nothing may wait forever, and each key ends at exactly the sum of its increments.
        keys = [on_shard(i % 2, "hot%d" % i) for i in range(6)]
        c = self.conn()
        c.cmd("DEL", *keys)
        totals = [dict.fromkeys(keys, 0) for _ in range(9)]

        def pipeliner(idx):
            def body(w, conn):
                rnd = random.Random(idx)
                for rounds in range(60):
                    cmds = []
                    for _ in range(24):
                        k = rnd.choice(keys)
                        if rnd.random() < 0.7:
                            by = rnd.randint(1, 5)
                            totals[idx][k] += by
                            cmds.append(("INCRBY", k, str(by)))
                        else:
                            cmds.append(("GET", k))
                    for cmd, got in zip(cmds, conn.pipeline(cmds)):
                        if got[:1] not in (b":", b"$"):
                            w.fail("%r answered %r" % (cmd, got))
                return rounds + 1
            return body

        def transactor(idx):
            def body(w, conn):
                rnd = random.Random(100 + idx)
                for rounds in range(150):
                    a, b = rnd.choice(keys[0::2]), rnd.choice(keys[1::2])
                    totals[idx][a] += 1
                    totals[idx][b] += 1
                    conn.send(transaction_bytes(("INCR", a), ("INCR", b)))
                    read_transaction(w, conn, 2, "MULTI INCR INCR EXEC")
                    conn.cmd("MGET", *keys)
                return rounds + 1
            return body

        bodies = [("pipe%d" % i, pipeliner(i)) for i in range(6)]
        bodies += [("tx%d" % i, transactor(i)) for i in range(6, 9)]
        self.run_workers(bodies)
        got = [int(x or 0) for x in decode(c.cmd("MGET", *keys))]
        want = [sum(t[k] for t in totals) for k in keys]
        self.assertEqual(got, want, "each key must hold the sum of its increments")


if __name__ == "__main__":
    unittest.main()
