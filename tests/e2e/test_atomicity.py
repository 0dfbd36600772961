"""Atomicity of cross-shard operations under concurrency, on a `--threads 2` server (slots
0-8191 on shard 0, 8192-16383 on shard 1; every test uses keys on both shards, checked with a
CRC16 slot computed here):

- MSET of two keys on different shards racing with MGET (and MULTI/GET/GET/EXEC) readers:
  no reader ever sees the two keys differ;
- MSETNX racing on overlapping key sets that span both shards: exactly one winner per round,
  and every key holds the winner's value;
- the optimistic-lock loop WATCH/GET/MULTI/SET/EXEC from 50 clients: no lost update (and with
  a mirror key on the other shard written in the same EXEC, the two never differ);
- transactions that INCR keys of both shards from several clients while other clients run
  single-key traffic: no deadlock, exact totals, every transaction sees the keys equal, and the
  single-key clients keep making progress;
- DEL racing with MSET of the same keys: every reader sees all of them or none of them;
- DBSIZE and KEYS (alone and inside MULTI) racing with MSET/DEL of key pairs: always an even
  count;
- one client's single-key SETs on two shards, one at a time or pipelined: atomic readers see
  them take effect in the order they were sent;
- clients that close mid-transaction (FIN or RST, before or after EXEC): nothing half-applied,
  nothing left locked, no connection left behind.

Each worker thread has its own connection. Loops are bounded by work, not by the clock: every
worker does at least a minimum number of rounds, writers keep writing until the readers have
done theirs (so the reads overlap the writes), and a short duration only lets a fast machine do
more; a slow (loaded, sanitized) machine makes a test longer, never fails it. The clocks left
only catch a server that stopped answering: WORKER_IO_TIMEOUT for one reply, JOIN_TIMEOUT without
a reply to any worker of a test (or, for the WATCH clients, without a successful increment), so
a deadlock is a failure instead of a hang. Against redis-server (trivially atomic) everything
passes, which checks the test logic."""

import os
import random
import re
import socket
import struct
import sys
import threading
import time
import traceback
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL_ARRAY, NOT_INTEGER, OK, array, bulk, decode, integer  # noqa: E402
from slots import crc16, key_slot, on_shard, shard_of  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


QUEUED = b"+QUEUED\r\n"

# A worker waits at most WORKER_IO_TIMEOUT for one reply, and a group of workers is hung once
# none of them has had a reply for JOIN_TIMEOUT: a server that deadlocks fails the test instead
# of hanging the suite. Only guards against hangs, not speed requirements (a test may take as
# long as it needs while replies keep coming): generous, because under ASan the server runs
# several times slower and a machine shared with builds can slow it further (50 WATCH clients
# queued on the same two keys of an ASan server on a 2-core machine at load 20 saw one reply
# take over 8 s).
WORKER_IO_TIMEOUT = max(60.0, harness.IO_TIMEOUT)
JOIN_TIMEOUT = max(120.0, 2 * WORKER_IO_TIMEOUT)


# ---------------------------------------------------------------------------------------------
# Worker threads
# ---------------------------------------------------------------------------------------------

class WorkerFailed(Exception):
    pass


class CountingConn(harness.RespConn):
    """A RespConn that counts the replies it has read: the progress run_workers watches."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.replies = 0

    def read_reply(self):
        raw = super().read_reply()
        self.replies += 1
        return raw


class Worker(threading.Thread):
    """Runs body(worker, conn) on its own connection once every worker is connected."""

    def __init__(self, name, body, port, start_barrier, on_error):
        super().__init__(daemon=True, name=name)
        self.body = body
        self.on_error = on_error
        self.port = port
        self.start_barrier = start_barrier
        self.conn = None
        self.started = False
        self.result = None
        self.error = None

    def fail(self, message):
        raise WorkerFailed("%s: %s" % (self.name, message))

    def expect(self, got, expected, what):
        if got != expected:
            self.fail("%s: got %r, expected %r" % (what, got, expected))

    def run(self):
        try:
            self.conn = CountingConn(self.port, timeout=WORKER_IO_TIMEOUT)
            self.expect(self.conn.cmd("PING"), b"+PONG\r\n", "PING")
            self.start_barrier.wait(JOIN_TIMEOUT)
            self.started = True
            self.result = self.body(self, self.conn)
        except WorkerFailed as e:
            self.error = str(e)
        except threading.BrokenBarrierError:
            self.error = "%s: start barrier broken (another worker failed first)" % self.name
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = "%s: %s: %s\n%s" % (self.name, type(e).__name__, e,
                                              traceback.format_exc(limit=4))
        finally:
            if self.error:
                if not self.started:  # the others would wait for it at the start barrier
                    self.start_barrier.abort()
                if self.on_error:
                    self.on_error()  # wake the others (round barriers, stop events)

    def shutdown(self):
        if self.conn is not None:
            try:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.conn.close()


class Quota:
    """An event set once each of `n` workers has called reached() (typically when its count hits
    its minimum, or when it finishes); set() releases the waiters early (on an error)."""

    def __init__(self, n):
        self.left = n
        self.lock = threading.Lock()
        self.event = threading.Event()
        if n <= 0:
            self.event.set()

    def reached(self):
        with self.lock:
            self.left -= 1
            if self.left == 0:
                self.event.set()

    def is_set(self):
        return self.event.is_set()

    def set(self):
        self.event.set()


class AtomicityTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def run_workers(self, bodies, on_error=None):
        """bodies: [(name, body)]. Starts them together and waits for all of them as long as
        replies keep coming (a slow machine is not a failure), fails on any worker error or when
        no worker has had a reply for JOIN_TIMEOUT (a hang); returns {name: result}.
        on_error() runs when a worker fails or hangs, to release the others."""
        start_barrier = threading.Barrier(len(bodies) + 1)
        workers = [Worker(name, body, self.port, start_barrier, on_error) for name, body in bodies]
        started = time.monotonic()
        for w in workers:
            w.start()
        try:
            start_barrier.wait(JOIN_TIMEOUT)
        except threading.BrokenBarrierError:
            pass  # a worker failed to connect; reported below

        def replies():
            return sum(w.conn.replies for w in workers if w.conn is not None)

        seen, last_progress = replies(), time.monotonic()
        for w in workers:
            while w.is_alive() and time.monotonic() - last_progress < JOIN_TIMEOUT:
                w.join(min(1.0, max(0.0, last_progress + JOIN_TIMEOUT - time.monotonic())))
                n = replies()
                if n != seen:
                    seen, last_progress = n, time.monotonic()
        hung = [w.name for w in workers if w.is_alive()]
        if hung and on_error:
            on_error()
        for w in workers:
            if w.is_alive():
                w.shutdown()
        # The first cause first: "barrier broken" errors are consequences.
        errors = sorted((w.error for w in workers if w.error), key=lambda e: "barrier broken" in e)
        if hung:
            self.fail("no reply to any worker for %.0fs, workers still running %.1fs after the "
                      "start (deadlock?): %s%s"
                      % (JOIN_TIMEOUT, time.monotonic() - started, ", ".join(hung[:10]),
                         "\nerrors: " + "\n".join(errors[:5]) if errors else ""))
        for w in workers:
            if w.conn is not None:
                w.conn.close()
        if errors:
            self.fail("%d worker(s) failed; first ones:\n%s" % (len(errors), "\n".join(errors[:5])))
        return {w.name: w.result for w in workers}

    def assertOnShards(self, keys):
        """keys[0] on shard 0 and keys[1] on shard 1 (and so on alternately)."""
        for i, key in enumerate(keys):
            self.assertEqual(shard_of(key), i % 2, "key %r (slot %d) is not on shard %d"
                             % (key, key_slot(key), i % 2))


def transaction_bytes(*commands):
    """MULTI, commands, EXEC encoded for one write."""
    return b"".join(harness.encode_command(*c) for c in [("MULTI",)] + list(commands) + [("EXEC",)])


def read_transaction(worker, conn, n_commands, what):
    """Reads the replies to transaction_bytes(): +OK, n x +QUEUED; returns EXEC's raw reply."""
    worker.expect(conn.read_reply(), OK, "%s: MULTI" % what)
    for i in range(n_commands):
        worker.expect(conn.read_reply(), QUEUED, "%s: command %d queued" % (what, i))
    return conn.read_reply()


class KeyPlacementTest(AtomicityTestCase):
    def test_slot_function(self):
        # CRC16/XMODEM check value and slots published in the Redis Cluster specification.
        self.assertEqual(crc16(b"123456789"), 0x31C3)
        self.assertEqual(key_slot("foo"), 12182)
        self.assertEqual(key_slot("bar"), 5061)
        self.assertEqual(key_slot("{user1000}.following"), key_slot("{user1000}.followers"))
        self.assertEqual(shard_of("bar"), 0)
        self.assertEqual(shard_of("foo"), 1)


class MsetMgetTest(AtomicityTestCase):
    DURATION = 1.5  # writers go on at least this long (more races on a fast machine)...
    MIN_WRITES = 40  # ...and for at least this many writes each (6 writers: 240 in all)
    MIN_READS = 100  # ...and until each reader has read this often (6 readers: 600 in all)
    WRITERS = 4
    TX_WRITERS = 2
    READERS = 4
    TX_READERS = 2

    def test_mset_never_seen_half_done(self):
        a, b = on_shard(0, "pair"), on_shard(1, "pair")
        self.assertOnShards([a, b])
        self.assertReply(OK, "MSET", a, "init", b, "init")
        # Work-bounded, not time-bounded: the writers run for at least DURATION, MIN_WRITES
        # writes each and until every reader has done MIN_READS reads (so those reads race with
        # the writes); the readers until the writers have finished. A slow machine makes the
        # test longer instead of failing it.
        abort = threading.Event()
        writers_done = Quota(self.WRITERS + self.TX_WRITERS)
        readers_ready = Quota(self.READERS + self.TX_READERS)

        def writer(idx, tx):
            def body(w, c):
                writes = 0
                w_stop = time.monotonic() + self.DURATION
                try:
                    while not abort.is_set() and (time.monotonic() < w_stop
                                                  or writes < self.MIN_WRITES
                                                  or not readers_ready.is_set()):
                        v = "%s%d:%d" % ("t" if tx else "w", idx, writes)
                        # Half the writers name the shard-1 key first: lock order must not depend on it.
                        keys = (a, b) if idx % 2 == 0 else (b, a)
                        if tx:
                            c.send(transaction_bytes(*[("SET", k, v) for k in keys]))
                            w.expect(read_transaction(w, c, 2, "MULTI SET SET EXEC"), array(OK, OK), "EXEC")
                        else:
                            w.expect(c.cmd("MSET", keys[0], v, keys[1], v), OK, "MSET")
                        writes += 1
                finally:
                    writers_done.reached()
                return writes
            return body

        def reader(idx, tx):
            def body(w, c):
                reads, distinct, last = 0, 0, None
                while not abort.is_set() and (not writers_done.is_set() or reads < self.MIN_READS):
                    if tx:
                        c.send(transaction_bytes(("GET", a), ("GET", b)))
                        raw = read_transaction(w, c, 2, "MULTI GET GET EXEC")
                    else:
                        raw = c.cmd("MGET", a, b) if idx % 2 == 0 else c.cmd("MGET", b, a)
                    got = decode(raw)
                    if not (isinstance(got, list) and len(got) == 2 and isinstance(got[0], bytes)):
                        w.fail("read %d: unexpected reply %r" % (reads, raw))
                    if got[0] != got[1]:
                        w.fail("read %d saw the two keys differ (torn MSET): %r" % (reads, raw))
                    if got[0] != last:
                        distinct += 1
                        last = got[0]
                    reads += 1
                    if reads == self.MIN_READS:
                        readers_ready.reached()
                return reads, distinct
            return body

        bodies = [("writer%d" % i, writer(i, False)) for i in range(self.WRITERS)]
        bodies += [("txwriter%d" % i, writer(i, True)) for i in range(self.TX_WRITERS)]
        bodies += [("reader%d" % i, reader(i, False)) for i in range(self.READERS)]
        bodies += [("txreader%d" % i, reader(i, True)) for i in range(self.TX_READERS)]
        results = self.run_workers(bodies, on_error=abort.set)
        writes = [results[name] for name, _ in bodies if "writer" in name]
        reads = [results[name] for name, _ in bodies if "reader" in name]
        msg = "writes %r, reads %r" % (writes, reads)
        for n in writes:
            self.assertGreaterEqual(n, self.MIN_WRITES, msg)
        for r, _ in reads:
            self.assertGreaterEqual(r, self.MIN_READS, msg)
        # The readers did run while the values changed (their first MIN_READS reads each raced
        # with the writers, who each wrote different values).
        self.assertGreaterEqual(sum(d for _, d in reads), 10, msg)
        final = decode(self.c.cmd("MGET", a, b))
        self.assertEqual(final[0], final[1])

    def check_single_key_writes_seen_in_order(self, pipelined):
        # One client writes a = n, then b = n, with two single-key SETs (one reply awaited at a
        # time, or both sent in one write). Commands of one connection take effect in order, so
        # an atomic read of both keys (MGET, or GET/GET in a transaction) has a == b or
        # a == b + 1; b > a would mean b's write became visible before the earlier write of a.
        a, b = on_shard(0, "seq"), on_shard(1, "seq")
        self.assertOnShards([a, b])
        self.assertReply(OK, "MSET", a, "0", b, "0")
        # Work-bounded, not time-bounded: the writer runs for at least `duration` and at least
        # 100 rounds, the readers until it has finished and they have read 20 times each, so a
        # slow (loaded, sanitized) machine makes the test longer instead of failing it.
        duration = 1.0
        writer_done = threading.Event()

        def writer(w, c):
            n = 0
            w_stop = time.monotonic() + duration
            while time.monotonic() < w_stop or n < 100:
                n += 1
                if pipelined:
                    c.send(harness.encode_command("SET", a, n) + harness.encode_command("SET", b, n))
                    w.expect(c.read_replies(2), [OK, OK], "SET a, SET b")
                else:
                    w.expect(c.cmd("SET", a, n), OK, "SET a")
                    w.expect(c.cmd("SET", b, n), OK, "SET b")
            writer_done.set()
            return n

        def reader(idx, tx):
            def body(w, c):
                reads = 0
                while not writer_done.is_set() or reads < 20:
                    if tx:
                        c.send(transaction_bytes(("GET", a), ("GET", b)))
                        raw = read_transaction(w, c, 2, "MULTI GET GET EXEC")
                        got = decode(raw)
                    else:
                        raw = c.cmd("MGET", a, b) if idx % 2 == 0 else c.cmd("MGET", b, a)
                        got = decode(raw)
                        if idx % 2:
                            got = got[::-1]
                    va, vb = int(got[0]), int(got[1])
                    if va not in (vb, vb + 1):
                        w.fail("read %d: %s=%d, %s=%d: the writer never went through this state "
                               "(it sets %s, then %s%s); reply %r"
                               % (reads, a, va, b, vb, a, b, ", pipelined" if pipelined else "", raw))
                    reads += 1
                return reads
            return body

        bodies = [("writer", writer)]
        bodies += [("reader%d" % i, reader(i, False)) for i in range(3)]
        bodies += [("txreader%d" % i, reader(i, True)) for i in range(2)]
        results = self.run_workers(bodies, on_error=writer_done.set)
        msg = repr(results)
        self.assertGreaterEqual(results["writer"], 100, msg)
        for name, n in results.items():
            self.assertGreaterEqual(n, 20, msg)

    def test_single_key_writes_seen_in_order(self):
        self.check_single_key_writes_seen_in_order(pipelined=False)

    @unittest.skipIf(harness.KEY_ORDER, "--pipeline-order key keeps only per-key order")
    def test_pipelined_single_key_writes_seen_in_order(self):
        self.check_single_key_writes_seen_in_order(pipelined=True)


class MsetnxRaceTest(AtomicityTestCase):
    CLIENTS = 8
    ROUNDS = 200

    def test_racing_msetnx_one_winner_per_round(self):
        rounds = self.ROUNDS
        shared0 = [on_shard(0, "nx:%d:s" % r) for r in range(rounds)]
        shared1 = [on_shard(1, "nx:%d:s" % r) for r in range(rounds)]
        private = [[on_shard(i % 2, "nx:%d:p%d" % (r, i)) for i in range(self.CLIENTS)]
                   for r in range(rounds)]
        for r in range(rounds):
            self.assertOnShards([shared0[r], shared1[r]])
        # No deadline for the rounds: a client whose reply does not come fails after
        # WORKER_IO_TIMEOUT and breaks the barrier for the others (on_error).
        round_barrier = threading.Barrier(self.CLIENTS)

        def client(i):
            def body(w, c):
                won = []
                for r in range(rounds):
                    try:
                        round_barrier.wait(JOIN_TIMEOUT)
                    except threading.BrokenBarrierError:
                        w.fail("round %d: barrier broken (another client failed)" % r)
                    v = "c%d:r%d" % (i, r)
                    # Overlapping sets: every client has both shared keys plus its own key; the
                    # key order differs between clients.
                    pairs = [(shared0[r], v), (private[r][i], v), (shared1[r], v)]
                    if i % 2:
                        pairs.reverse()
                    if i % 4 >= 2:
                        pairs = pairs[1:] + pairs[:1]
                    args = ["MSETNX"] + [x for p in pairs for x in p]
                    got = c.cmd(*args)
                    if got not in (integer(0), integer(1)):
                        round_barrier.abort()
                        w.fail("round %d: MSETNX replied %r" % (r, got))
                    won.append(got == integer(1))
                return won
            return body

        results = self.run_workers([("client%d" % i, client(i)) for i in range(self.CLIENTS)],
                                   on_error=round_barrier.abort)
        winners = []
        for r in range(rounds):
            w = [i for i in range(self.CLIENTS) if results["client%d" % i][r]]
            self.assertEqual(len(w), 1, "round %d: MSETNX returned 1 to clients %r" % (r, w))
            winners.append(w[0])
        # Every key of a round holds the winner's value; the losers' own keys were never set.
        replies = self.c.pipeline([("MGET", shared0[r], shared1[r], *private[r]) for r in range(rounds)])
        for r, raw in enumerate(replies):
            v = ("c%d:r%d" % (winners[r], r)).encode()
            expected = [v, v] + [v if i == winners[r] else None for i in range(self.CLIENTS)]
            self.assertEqual(decode(raw), expected, "round %d (winner client%d)" % (r, winners[r]))
        self.assertReply(integer(3 * rounds), "DBSIZE")
        # The race is real: not always the same client.
        self.assertGreater(len(set(winners)), 1, "client%d won every round" % winners[0])


class WatchCounterTest(AtomicityTestCase):
    CLIENTS = 50
    INCREMENTS = 20

    def run_counter(self, counter, mirror):
        """CLIENTS x INCREMENTS optimistic increments of `counter` (and `mirror`, if given, in
        the same EXEC); returns (values written by successful EXECs, aborted EXECs)."""
        keys = [counter] + ([mirror] if mirror else [])
        # Replies keep coming even if every EXEC aborts, so the livelock guard is on progress:
        # JOIN_TIMEOUT without a successful increment by any client. Not a speed limit: on a
        # slow machine the clients take as long as they need while some of them get through.
        stop = threading.Event()
        last_success = [time.monotonic()]

        def body(w, c):
            written, aborted, streak = [], 0, 0
            rng = random.Random(w.name)
            while len(written) < self.INCREMENTS and not stop.is_set():
                if time.monotonic() - last_success[0] > JOIN_TIMEOUT:
                    w.fail("no increment by any client for %.0fs (livelock?); %d of %d here, "
                           "%d aborts" % (JOIN_TIMEOUT, len(written), self.INCREMENTS, aborted))
                c.send(harness.encode_command("WATCH", *keys) + harness.encode_command("MGET", *keys))
                w.expect(c.read_reply(), OK, "WATCH")
                raw = c.read_reply()
                values = decode(raw)
                if not isinstance(values, list) or len(values) != len(keys):
                    w.fail("MGET replied %r" % raw)
                if mirror and values[0] != values[1]:
                    w.fail("MGET saw counter != mirror: %r" % raw)
                n = int(values[0] or 0) + 1
                sets = [("SET", k, str(n)) for k in keys]
                c.send(transaction_bytes(*sets))
                got = read_transaction(w, c, len(sets), "increment")
                if got == array(*[OK] * len(sets)):
                    written.append(n)
                    streak = 0
                    last_success[0] = time.monotonic()
                elif got == NIL_ARRAY:
                    aborted += 1
                    streak += 1
                    # The usual randomized, growing back-off of an optimistic-lock client. Without
                    # it, 50 clients spend most of the test on doomed retries, and a loaded
                    # machine makes that a feedback loop (slower replies, more aborts).
                    time.sleep(rng.uniform(0, min(0.1, 0.001 * 2 ** streak)))
                else:
                    w.fail("EXEC replied %r" % got)
            return written, aborted

        results = self.run_workers([("client%d" % i, body) for i in range(self.CLIENTS)],
                                   on_error=stop.set)
        written = sorted(v for vals, _ in results.values() for v in vals)
        aborted = sum(a for _, a in results.values())
        return written, aborted

    def test_watch_multi_exec_counter(self):
        counter = on_shard(1, "wctr")
        total = self.CLIENTS * self.INCREMENTS
        written, aborted = self.run_counter(counter, None)
        # Each successful EXEC wrote a different value: no update was lost.
        self.assertEqual(written, list(range(1, total + 1)), "aborted EXECs: %d" % aborted)
        self.assertReply(bulk(str(total)), "GET", counter)

    def test_watch_multi_exec_counter_and_mirror_on_other_shard(self):
        counter, mirror = on_shard(0, "wctr"), on_shard(1, "wmirror")
        self.assertOnShards([counter, mirror])
        total = self.CLIENTS * self.INCREMENTS
        written, aborted = self.run_counter(counter, mirror)
        self.assertEqual(written, list(range(1, total + 1)), "aborted EXECs: %d" % aborted)
        self.assertReply(array(bulk(str(total)), bulk(str(total))), "MGET", counter, mirror)


class CrossShardTransactionTest(AtomicityTestCase):
    TX_CLIENTS = 6
    TX_PER_CLIENT = 500  # at least; more until every single-key client has done MIN_SINGLE_OPS
    SINGLE_CLIENTS = 4
    MIN_SINGLE_OPS = 20
    # Nine in ten of a single-key client's SET + GET round trips must see no more than this many
    # transactions commit: counted in transactions, not seconds, so that a slow machine does not
    # matter. Fair service shows 8-18 (6 transaction clients, one transaction in flight each); a
    # shard that serves its single-key queue only once the transactions are done, or rarely, goes
    # far past it on most round trips. The single longest wait is reported but not judged: one
    # client thread (or a reactor, with 4 of them on 2 cores) descheduled for 100 ms sees 1,000
    # transactions commit meanwhile, whatever the server does.
    MAX_P90_GAP_TX = 100

    def test_all_shard_transactions_with_single_key_traffic(self):
        x0, x1 = on_shard(0, "tx:x"), on_shard(1, "tx:x")
        y0, y1 = on_shard(0, "tx:y"), on_shard(1, "tx:y")
        self.assertOnShards([x0, x1, y0, y1])
        # Work-bounded, not time-bounded: the transaction clients run at least TX_PER_CLIENT
        # transactions each and until every single-key client has done MIN_SINGLE_OPS (so those
        # ran alongside the transactions; a single-key client whose reply never comes fails
        # after WORKER_IO_TIMEOUT, one served too rarely by MAX_P90_GAP_TX); the single-key clients
        # until the transactions are done.
        abort = threading.Event()
        done = Quota(self.TX_CLIENTS)
        singles_ready = Quota(self.SINGLE_CLIENTS)
        committed = [0]  # transactions committed so far, by all clients
        lock = threading.Lock()

        def tx_client(i):
            # Different clients list the keys in different orders.
            order = [x0, x1, y0, y1] if i % 2 == 0 else [y1, x1, y0, x0]

            def body(w, c):
                t = 0
                try:
                    while not abort.is_set() and (t < self.TX_PER_CLIENT
                                                  or not singles_ready.is_set()):
                        c.send(transaction_bytes(*[("INCR", k) for k in order]))
                        raw = read_transaction(w, c, len(order), "transaction %d" % t)
                        got = decode(raw)
                        if not (isinstance(got, list) and len(got) == 4
                                and all(isinstance(v, int) for v in got)):
                            w.fail("transaction %d: EXEC replied %r" % (t, raw))
                        # Every transaction increments all four keys, so inside one they are
                        # equal; unequal values mean another transaction interleaved.
                        if len(set(got)) != 1:
                            w.fail("transaction %d saw different values (not isolated): %r" % (t, raw))
                        t += 1
                        with lock:
                            committed[0] += 1
                finally:
                    done.reached()
                return t
            return body

        def single_client(i):
            key = on_shard(i % 2, "single:%d" % i)

            def body(w, c):
                ops, gaps = 0, []
                with lock:
                    last = committed[0]
                while not abort.is_set() and not done.is_set():
                    v = "%d" % ops
                    w.expect(c.cmd("SET", key, v), OK, "SET")
                    w.expect(c.cmd("GET", key), bulk(v), "GET")
                    with lock:
                        now = committed[0]
                    gaps.append(now - last)
                    last = now
                    ops += 1
                    if ops == self.MIN_SINGLE_OPS:
                        singles_ready.reached()
                gaps.sort()
                return ops, gaps[len(gaps) * 9 // 10] if gaps else 0, gaps[-1] if gaps else 0
            return body

        started = time.monotonic()
        bodies = [("tx%d" % i, tx_client(i)) for i in range(self.TX_CLIENTS)]
        bodies += [("single%d" % i, single_client(i)) for i in range(self.SINGLE_CLIENTS)]
        results = self.run_workers(bodies, on_error=abort.set)
        elapsed = time.monotonic() - started
        per_client = [results["tx%d" % i] for i in range(self.TX_CLIENTS)]
        total = sum(per_client)
        self.assertReply(array(*[bulk(str(total))] * 4), "MGET", x0, x1, y0, y1)
        singles = [results["single%d" % i] for i in range(self.SINGLE_CLIENTS)]
        msg = ("single-key clients (ops, then transactions committed during one SET + GET: 90th "
               "percentile, most): %r; "
               "transactions %r, took %.2fs" % (singles, per_client, elapsed))
        for n in per_client:
            self.assertGreaterEqual(n, self.TX_PER_CLIENT, msg)
        for ops, p90_gap, _ in singles:
            self.assertGreaterEqual(ops, self.MIN_SINGLE_OPS, msg)
            self.assertLessEqual(p90_gap, self.MAX_P90_GAP_TX, msg)


class DelVersusMsetTest(AtomicityTestCase):
    MIN_ROUNDS = 50  # at least this many rounds...
    MIN_OBSERVER_READS = 40  # ...and until each observer has read this often (3: 120 in all)...
    ROUNDS = 300  # ...then more, up to this many, while DURATION has not passed
    DURATION = 3.0
    OBSERVERS = 3

    def test_del_racing_mset_all_or_nothing(self):
        keys = [on_shard(0, "dm:a"), on_shard(1, "dm:a"), on_shard(0, "dm:b"), on_shard(1, "dm:b")]
        self.assertOnShards(keys)
        n = len(keys)
        round_barrier = threading.Barrier(3)  # setter, deleter, checker
        stop = threading.Event()
        observers_ready = Quota(self.OBSERVERS)
        rounds_done = [0]
        outcomes = {"present": 0, "absent": 0}

        def wait(w, what):
            # Not a speed limit: a party whose reply does not come fails after WORKER_IO_TIMEOUT
            # and breaks the barrier (abort() below).
            try:
                round_barrier.wait(JOIN_TIMEOUT)
            except threading.BrokenBarrierError:
                w.fail("%s: barrier broken" % what)

        def check_all_or_nothing(w, c, what):
            """One MGET and one EXISTS: all keys or none (MGET values all from one MSET)."""
            raw = c.cmd("MGET", *keys)
            got = decode(raw)
            if not isinstance(got, list) or len(got) != n:
                w.fail("%s: MGET replied %r" % (what, raw))
            if any(v is None for v in got) and any(v is not None for v in got):
                w.fail("%s: MGET saw some keys but not all: %r" % (what, raw))
            if len(set(got)) != 1:
                w.fail("%s: MGET saw values of different MSETs: %r" % (what, raw))
            ex = c.cmd("EXISTS", *keys)
            if ex not in (integer(0), integer(n)):
                w.fail("%s: EXISTS replied %r (expected 0 or %d)" % (what, ex, n))
            return got[0] is not None

        def next_round(r, stop_at):
            """True if round r should run (the checker decides; the barrier tells the others).
            Work-bounded, not time-bounded: at least MIN_ROUNDS and until the observers have
            read MIN_OBSERVER_READS each (so their reads race with the rounds); the clock only
            limits the extra rounds a fast machine runs."""
            if stop.is_set():
                return False
            if r < self.MIN_ROUNDS or not observers_ready.is_set():
                return True
            return r < self.ROUNDS and time.monotonic() < stop_at

        def setter(w, c):
            r = 0
            while True:
                wait(w, "round %d start" % r)
                if stop.is_set():
                    return
                v = "r%d" % r
                args = [x for k in (keys if r % 2 else reversed(keys)) for x in (k, v)]
                w.expect(c.cmd("MSET", *args), OK, "round %d MSET" % r)
                wait(w, "round %d end" % r)
                r += 1

        def deleter(w, c):
            r = 0
            while True:
                wait(w, "round %d start" % r)
                if stop.is_set():
                    return
                cmd = "DEL" if r % 3 else "UNLINK"
                order = list(reversed(keys)) if r % 2 == 0 else keys
                got = c.cmd(cmd, *order)
                if got not in (integer(0), integer(n)):
                    w.fail("round %d: %s deleted %r keys (expected 0 or %d)" % (r, cmd, got, n))
                wait(w, "round %d end" % r)
                r += 1

        def checker(w, c):
            stop_at = time.monotonic() + self.DURATION
            r = 0
            try:
                while True:
                    if not next_round(r, stop_at):
                        stop.set()
                    wait(w, "round %d start" % r)
                    if stop.is_set():
                        break
                    wait(w, "round %d end" % r)
                    present = check_all_or_nothing(w, c, "after round %d" % r)
                    outcomes["present" if present else "absent"] += 1
                    r += 1
                    rounds_done[0] = r
            finally:
                stop.set()

        def observer(w, c):
            reads = 0
            while not stop.is_set():
                check_all_or_nothing(w, c, "observer read %d" % reads)
                reads += 1
                if reads == self.MIN_OBSERVER_READS:
                    observers_ready.reached()
            return reads

        bodies = [("setter", setter), ("deleter", deleter), ("checker", checker)]
        bodies += [("observer%d" % i, observer) for i in range(self.OBSERVERS)]

        def abort():
            stop.set()
            round_barrier.abort()

        results = self.run_workers(bodies, on_error=abort)
        reads = [results["observer%d" % i] for i in range(self.OBSERVERS)]
        msg = "rounds %d (%r), observer reads %r" % (rounds_done[0], outcomes, reads)
        self.assertGreaterEqual(rounds_done[0], self.MIN_ROUNDS, msg)
        for r in reads:
            self.assertGreaterEqual(r, self.MIN_OBSERVER_READS, msg)


class KeyspaceReadTest(AtomicityTestCase):
    DURATION = 1.5  # writers go on at least this long...
    MIN_ROUNDS = 20  # ...and for at least this many MSET + DEL rounds each...
    MIN_READS = 20  # ...and until each reader has counted this often
    PAIRS = 4

    def test_dbsize_and_keys_never_see_half_a_pair(self):
        # Writers create and delete pairs of keys, one key of each pair on each shard; readers
        # count keys with DBSIZE and KEYS (alone and inside MULTI): the count is always even.
        pairs = [(on_shard(0, "ks:%d" % i), on_shard(1, "ks:%d" % i)) for i in range(self.PAIRS)]
        for pair in pairs:
            self.assertOnShards(pair)
        # Work-bounded, not time-bounded: the writers run for at least DURATION, MIN_ROUNDS
        # rounds each and until every reader has done MIN_READS reads (so those reads race with
        # the writes); the readers until the writers have finished. A slow machine makes the
        # test longer instead of failing it.
        modes = ("DBSIZE", "KEYS", "MULTI")
        abort = threading.Event()
        writers_done = Quota(self.PAIRS)
        readers_ready = Quota(len(modes))

        def writer(i):
            a, b = pairs[i]

            def body(w, c):
                rounds = 0
                w_stop = time.monotonic() + self.DURATION
                try:
                    while not abort.is_set() and (time.monotonic() < w_stop
                                                  or rounds < self.MIN_ROUNDS
                                                  or not readers_ready.is_set()):
                        w.expect(c.cmd("MSET", a, "1", b, "1") if i % 2 else c.cmd("MSET", b, "1", a, "1"),
                                 OK, "MSET")
                        w.expect(c.cmd("DEL", a, b) if rounds % 2 else c.cmd("DEL", b, a), integer(2), "DEL")
                        rounds += 1
                finally:
                    writers_done.reached()
                return rounds
            return body

        def reader(mode):
            def body(w, c):
                reads = 0
                while not abort.is_set() and (not writers_done.is_set() or reads < self.MIN_READS):
                    if mode == "DBSIZE":
                        raw = c.cmd("DBSIZE")
                        n = decode(raw)
                    elif mode == "KEYS":
                        raw = c.cmd("KEYS", "ks:*")
                        n = len(decode(raw))
                    else:
                        c.send(transaction_bytes(("DBSIZE",), ("KEYS", "ks:*"), ("MGET", *pairs[0])))
                        raw = read_transaction(w, c, 3, "MULTI DBSIZE KEYS MGET EXEC")
                        size, keys, values = decode(raw)
                        if size != len(keys) or values[0] != values[1]:
                            w.fail("read %d: inconsistent transaction %r" % (reads, raw))
                        n = size
                    if not isinstance(n, int) or n % 2:
                        w.fail("read %d: %s counted an odd number of keys: %r" % (reads, mode, raw))
                    reads += 1
                    if reads == self.MIN_READS:
                        readers_ready.reached()
                return reads
            return body

        bodies = [("writer%d" % i, writer(i)) for i in range(self.PAIRS)]
        bodies += [("reader-%s" % m, reader(m)) for m in modes]
        results = self.run_workers(bodies, on_error=abort.set)
        msg = repr(results)
        for name, n in results.items():
            minimum = self.MIN_ROUNDS if name.startswith("writer") else self.MIN_READS
            self.assertGreaterEqual(n, minimum, msg)
        self.assertReply(integer(0), "DBSIZE")


class VanishingClientTest(AtomicityTestCase):
    THREADS = 4
    CLIENTS_PER_THREAD = 150

    def test_clients_closing_mid_transaction_leave_nothing_locked(self):
        # Clients send a transaction (INCR on both shards) and close at once, some with an RST,
        # some before EXEC, some with a WATCH: each transaction runs whole or not at all, and
        # no lock or watch is left behind (the keys stay usable; an observer never sees a != b).
        a, b = on_shard(0, "gone"), on_shard(1, "gone")
        self.assertOnShards([a, b])
        e = harness.encode_command
        payloads = [
            e("MULTI") + e("INCR", a) + e("INCR", b) + e("EXEC"),
            e("WATCH", a, b) + e("MULTI") + e("INCR", b) + e("INCR", a) + e("EXEC") + e("MGET", a, b),
            e("MULTI") + e("INCR", a) + e("INCR", b),  # never EXECs
            e("MULTI") + e("INCR", a) + e("INCR", b) + e("EXEC")[:-3],  # EXEC cut short
            e("MSET", a, "0", b, "0") + e("WATCH", b) + e("MULTI") + e("INCR", a) + e("INCR", b) + e("EXEC"),
        ]
        finished = threading.Event()
        remaining = [self.THREADS]
        lock = threading.Lock()

        def vanisher(i):
            def body(w, c):
                try:
                    for n in range(self.CLIENTS_PER_THREAD):
                        s = socket.create_connection(("127.0.0.1", self.port), timeout=WORKER_IO_TIMEOUT)
                        if n % 2:  # close with an RST instead of a FIN
                            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        s.sendall(payloads[(n + i) % len(payloads)])
                        if n % 3 == 0:
                            time.sleep(0.001)  # sometimes mid-EXEC, sometimes before
                        s.close()
                finally:
                    with lock:
                        remaining[0] -= 1
                        if remaining[0] == 0:
                            finished.set()
                return self.CLIENTS_PER_THREAD
            return body

        def observer(w, c):
            reads = 0
            while not finished.is_set():
                raw = c.cmd("MGET", a, b)
                got = decode(raw)
                if got[0] != got[1]:
                    w.fail("read %d saw a half-applied transaction: %r" % (reads, raw))
                reads += 1
            return reads

        bodies = [("vanisher%d" % i, vanisher(i)) for i in range(self.THREADS)]
        bodies += [("observer", observer)]
        self.run_workers(bodies, on_error=finished.set)
        # Whatever ran is complete, and nothing is left locked: these do not block.
        c = self.conn(timeout=WORKER_IO_TIMEOUT)
        got = decode(c.cmd("MGET", a, b))
        self.assertEqual(got[0], got[1], got)
        self.assertIsNotNone(got[0], "no transaction of a client that closed after EXEC ran")
        # Every vanished connection is gone from the server (none is stuck in its EXEC). The
        # deadline only catches one that never goes; a slow server may take its time.
        deadline = time.monotonic() + JOIN_TIMEOUT
        while True:
            info = decode(c.cmd("INFO", "clients")).decode()
            m = re.search(r"connected_clients:(\d+)", info)
            self.assertIsNotNone(m, info)
            if int(m.group(1)) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(int(m.group(1)), 2, "connected_clients after all others closed: %s" % info)
        self.assertEqual(c.cmd("MSET", a, "x", b, "x"), OK)
        c.send(transaction_bytes(("INCRBY", a, "0"), ("GET", b), ("DEL", a, b)))
        self.assertEqual(c.read_replies(5), [OK, QUEUED, QUEUED, QUEUED,
                                             array(NOT_INTEGER, bulk("x"), integer(2))])
        self.assertEqual(c.cmd("WATCH", a, b), OK)
        c.send(transaction_bytes(("SET", a, "1"), ("SET", b, "1")))
        self.assertEqual(c.read_replies(4), [OK, QUEUED, QUEUED, array(OK, OK)])


if __name__ == "__main__":
    harness.main()

