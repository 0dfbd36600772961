"""Many concurrent connections: 200 clients at once doing SET/GET/INCR on their own, shared and
{tag}ged keys, with exact per-client checks and a final consistency check; and 200 clients
racing for the same locks with SET NX (exactly one must win each)."""

import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, OK, PONG, bulk, decode, integer  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


CLIENTS = 200
ROUNDS = 20
SLOTS = 17
BARRIER_TIMEOUT = 120


class Worker(threading.Thread):
    def __init__(self, idx, port, start_barrier, end_barrier, body):
        super().__init__(daemon=True)
        self.idx = idx
        self.port = port
        self.start_barrier = start_barrier
        self.end_barrier = end_barrier
        self.body = body
        self.errors = []
        self.result = None

    def check(self, got, expected, what):
        if got != expected:
            self.errors.append("client %d: %s: got %r, expected %r" % (self.idx, what, got, expected))

    def run(self):
        conn = None
        try:
            conn = harness.RespConn(self.port, timeout=60)
            self.check(conn.cmd("PING"), PONG, "PING")  # the server has accepted us
            self.start_barrier.wait(BARRIER_TIMEOUT)
            self.result = self.body(self, conn)
            self.end_barrier.wait(BARRIER_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append("client %d: %s: %s" % (self.idx, type(e).__name__, e))
            self.start_barrier.abort()
            self.end_barrier.abort()
        finally:
            if conn:
                conn.close()


class ConcurrencyTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def run_workers(self, body, while_connected=None):
        """Runs CLIENTS workers; all are connected at once before any starts `body`, and none
        disconnects before `while_connected()` (if given) has run."""
        start_barrier = threading.Barrier(CLIENTS + 1)
        end_barrier = threading.Barrier(CLIENTS + 1)
        workers = [Worker(i, self.port, start_barrier, end_barrier, body) for i in range(CLIENTS)]
        for w in workers:
            w.start()
        try:
            start_barrier.wait(BARRIER_TIMEOUT)
            if while_connected:
                while_connected()
            end_barrier.wait(BARRIER_TIMEOUT)
        except threading.BrokenBarrierError:
            pass  # a worker failed; its error is reported below
        except BaseException:
            start_barrier.abort()
            end_barrier.abort()
            raise
        finally:
            for w in workers:
                w.join(BARRIER_TIMEOUT)
        errors = [e for w in workers for e in w.errors]
        self.assertFalse(any(w.is_alive() for w in workers), "some clients hung")
        if errors:
            self.fail("%d errors, first ones:\n%s" % (len(errors), "\n".join(errors[:10])))
        return workers

    def test_200_clients_set_get_incr(self):
        def body(w, c):
            i = w.idx
            for r in range(ROUNDS):
                own_value = "%d:%d" % (i, r)
                w.check(c.cmd("SET", "c:%d:own" % i, own_value), OK, "SET own")
                w.check(c.cmd("GET", "c:%d:own" % i), bulk(own_value), "GET own")
                w.check(c.cmd("INCR", "c:%d:n" % i), integer(r + 1), "INCR own counter")
                w.check(c.cmd("SET", "{tag}:own:%d" % i, own_value), OK, "SET tagged own")
                w.check(c.cmd("GET", "{tag}:own:%d" % i), bulk(own_value), "GET tagged own")
                shared = c.cmd("INCR", "c:shared:ctr")
                if not re.fullmatch(rb":\d+\r\n", shared) or int(shared[1:-2]) < 1:
                    w.check(shared, ":<positive>", "INCR shared")
                tagged = c.cmd("INCRBY", "{tag}:ctr", str(i % 5 + 1))
                if not re.fullmatch(rb":\d+\r\n", tagged):
                    w.check(tagged, ":<n>", "INCRBY tagged")
                slot = "c:slot:%d" % ((i + r) % SLOTS)
                w.check(c.cmd("SET", slot, own_value), OK, "SET slot")
                got = c.cmd("GET", slot)
                if not re.fullmatch(rb"\$\d+\r\n\d+:\d+\r\n", got):
                    w.check(got, "<some client's value>", "GET slot")
                if r % 5 == 4:  # a small pipeline
                    cmds = [("SET", "c:%d:p%d" % (i, k), str(k)) for k in range(5)]
                    cmds += [("GET", "c:%d:p%d" % (i, k)) for k in range(5)]
                    cmds += [("DEL", *["c:%d:p%d" % (i, k) for k in range(5)])]
                    w.check(c.pipeline(cmds), [OK] * 5 + [bulk(str(k)) for k in range(5)] + [integer(5)],
                            "pipeline")

        def while_connected():
            info = decode(self.c.cmd("INFO", "clients")).decode()
            m = re.search(r"connected_clients:(\d+)", info)
            self.assertIsNotNone(m, info)
            self.assertGreaterEqual(int(m.group(1)), CLIENTS + 1)

        self.run_workers(body, while_connected)

        c = self.c
        self.assertReply(bulk(str(CLIENTS * ROUNDS)), "GET", "c:shared:ctr")
        self.assertReply(bulk(str(ROUNDS * sum(i % 5 + 1 for i in range(CLIENTS)))), "GET", "{tag}:ctr")
        own = c.pipeline([("GET", "c:%d:own" % i) for i in range(CLIENTS)])
        self.assertEqual(own, [bulk("%d:%d" % (i, ROUNDS - 1)) for i in range(CLIENTS)])
        counters = c.pipeline([("GET", "c:%d:n" % i) for i in range(CLIENTS)])
        self.assertEqual(counters, [bulk(str(ROUNDS))] * CLIENTS)
        tagged = c.pipeline([("GET", "{tag}:own:%d" % i) for i in range(CLIENTS)])
        self.assertEqual(tagged, [bulk("%d:%d" % (i, ROUNDS - 1)) for i in range(CLIENTS)])
        for s in range(SLOTS):
            self.assertRegex(c.cmd("GET", "c:slot:%d" % s), rb"^\$\d+\r\n\d+:\d+\r\n$")
        self.assertReply(integer(3 * CLIENTS + 2 + SLOTS), "DBSIZE")
        self.assertEqual(len(decode(c.cmd("KEYS", "*"))), 3 * CLIENTS + 2 + SLOTS)

    def test_200_clients_race_for_locks(self):
        locks = ["lock:a", "lock:b", "{tag}:lock", "lock:{tag}:c", "lock:e"]

        def body(w, c):
            won = []
            for name in locks:
                token = "tok-%d" % w.idx
                r = c.cmd("SET", name, token, "NX", "PX", "30000")
                if r == OK:
                    won.append(name)
                elif r != NIL:
                    w.check(r, "+OK or nil", "SET NX PX")
                got = c.cmd("GET", name)
                if not re.fullmatch(rb"\$\d+\r\ntok-\d+\r\n", got):
                    w.check(got, "a token", "GET lock")
                if name in won:
                    w.check(got, bulk(token), "GET own lock")
            return won

        workers = self.run_workers(body)
        for name in locks:
            winners = [w.idx for w in workers if name in w.result]
            self.assertEqual(len(winners), 1, "%s won by %r" % (name, winners))
            self.assertReply(bulk("tok-%d" % winners[0]), "GET", name)
            self.assertTTL(name, 25000, 30000, cmd="PTTL")

    def test_200_clients_pipelined_incr(self):
        per_client = 250

        def body(w, c):
            replies = c.pipeline([("INCR", "pipe:ctr")] * per_client + [("INCR", "pipe:%d" % w.idx)] * 10)
            values = [int(r[1:-2]) for r in replies[:per_client] if r.startswith(b":")]
            w.check(len(values), per_client, "integer replies")
            w.check(values, sorted(values), "INCR replies increase within one pipeline")
            w.check(replies[per_client:], [integer(k + 1) for k in range(10)], "own counter")
            return values

        workers = self.run_workers(body)
        self.assertReply(bulk(str(CLIENTS * per_client)), "GET", "pipe:ctr")
        all_values = sorted(v for w in workers for v in w.result)
        self.assertEqual(all_values, list(range(1, CLIENTS * per_client + 1)))  # each value once


if __name__ == "__main__":
    harness.main()
