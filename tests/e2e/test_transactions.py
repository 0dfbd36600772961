"""Transactions: MULTI/EXEC/DISCARD/WATCH/UNWATCH with keys on both shards of a `--threads 2`
server (slots 0-8191 live on shard 0, 8192-16383 on shard 1), the errors that go with them, WATCH
aborts (a change, a delete, an expiry, a key created, by another client or by the watcher itself;
nil EXEC is `*-1` in RESP2 and `_` in RESP3), multi-key commands inside a transaction, MSETNX across
shards, and pipelined transactions.

Every expected reply is the exact byte string Redis 7.0 sends (checked with
DEADBOLT_AGAINST_REDIS=1). KEYS order is the server's hashtable order, so KEYS is compared as a set.
Concurrency (many clients racing) is in test_atomicity.py."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from slots import crc16, key_slot, on_shard  # noqa: E402
from harness import (NIL, NIL_ARRAY, NOT_INTEGER, NULL3, OK, PONG, WRONGTYPE, array,  # noqa: E402
                     bulk, decode, integer, wrong_args)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


QUEUED = b"+QUEUED\r\n"
EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"
NESTED_MULTI = b"-ERR MULTI calls can not be nested\r\n"
EXEC_WITHOUT_MULTI = b"-ERR EXEC without MULTI\r\n"
DISCARD_WITHOUT_MULTI = b"-ERR DISCARD without MULTI\r\n"
WATCH_INSIDE_MULTI = b"-ERR WATCH inside MULTI is not allowed\r\n"


# Keys used below (slots.py: which shard a key lives on); test_key_placement checks that they really are on the shard their name says.
A0, A1 = on_shard(0, "a"), on_shard(1, "a")
B0, B1 = on_shard(0, "b"), on_shard(1, "b")
C0, C1 = on_shard(0, "c"), on_shard(1, "c")


def bulks(*items):
    return array(*[bulk(i) for i in items])


class TxTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def queue(self, *commands, c=None):
        """Sends each command inside an open MULTI; each must be answered +QUEUED."""
        for args in commands:
            self.assertReply(QUEUED, *args, c=c)

    def transaction(self, *commands, c=None):
        """MULTI, the commands (each QUEUED), EXEC; returns EXEC's raw reply."""
        self.assertReply(OK, "MULTI", c=c)
        self.queue(*commands, c=c)
        return (c or self.c).cmd("EXEC")


class KeyPlacementTest(TxTestCase):
    def test_key_placement(self):
        # Published values: CRC16/XMODEM check value, and slots from the Redis Cluster spec.
        self.assertEqual(crc16(b"123456789"), 0x31C3)
        self.assertEqual(key_slot("foo"), 12182)
        self.assertEqual(key_slot("bar"), 5061)
        self.assertEqual(key_slot("{user1000}.following"), key_slot("{user1000}.followers"))
        self.assertEqual(key_slot("foo{}{bar}"), crc16(b"foo{}{bar}") % 16384)
        self.assertEqual(key_slot("foo{{bar}}zap"), key_slot("{bar"))
        for key in (A0, B0, C0):
            self.assertLess(key_slot(key), 8192, key)
        for key in (A1, B1, C1):
            self.assertGreaterEqual(key_slot(key), 8192, key)


class MultiExecTest(TxTestCase):
    def test_exec_replies_in_order_across_shards(self):
        got = self.transaction(("SET", A0, "1"), ("SET", A1, "10"), ("INCR", A0),
                               ("INCRBY", A1, "5"), ("GET", A0), ("GET", A1), ("GET", B1),
                               ("APPEND", B0, "xy"), ("STRLEN", B0))
        self.assertEqual(got, array(OK, OK, integer(2), integer(15), bulk("2"), bulk("15"), NIL,
                                    integer(2), integer(2)))
        self.assertReply(bulks("2", "15", "xy"), "MGET", A0, A1, B0)

    def test_queued_commands_run_only_at_exec(self):
        other = self.conn()
        self.assertReply(OK, "MULTI")
        self.queue(("SET", A0, "x"), ("SET", A1, "y"))
        # Not run yet, and the other connection is not in a transaction.
        self.assertReply(bulks(None, None), "MGET", A0, A1, c=other)
        self.assertReply(OK, "SET", B1, "z", c=other)
        self.assertReply(array(OK, OK), "EXEC")
        self.assertReply(bulks("x", "y", "z"), "MGET", A0, A1, B1, c=other)

    def test_runtime_errors_do_not_stop_the_others(self):
        self.assertReply(OK, "SET", A1, "not a number")
        got = self.transaction(("SET", A0, "abc"), ("INCR", A0), ("INCR", A1), ("SET", B1, "5"),
                               ("INCR", B1), ("INCRBY", B0, "x"), ("APPEND", A1, "!"),
                               ("GET", A0), ("GET", A1))
        self.assertEqual(got, array(OK, NOT_INTEGER, NOT_INTEGER, OK, integer(6), NOT_INTEGER,
                                    integer(13), bulk("abc"), bulk("not a number!")))
        self.assertReply(bulks("abc", "not a number!", "6", None), "MGET", A0, A1, B1, B0)

    def test_errors_found_only_when_run(self):
        # Arity is checked when queuing; these pass it and fail inside EXEC, one by one.
        got = self.transaction(("MSET", A0, "v", A1), ("MSETNX", B1, "v", B0),
                               ("SET", C0, "v", "EX", "abc"), ("SET", C1, "v", "XX", "NX"),
                               ("SELECT", "99999"), ("SET", A1, "x"), ("GET", A1))
        self.assertEqual(got, array(wrong_args("mset"), wrong_args("msetnx"), NOT_INTEGER,
                                    b"-ERR syntax error\r\n", b"-ERR DB index is out of range\r\n",
                                    OK, bulk("x")))
        self.assertReply(integer(1), "DBSIZE")

    def test_wrongtype_inside_exec(self):
        self.make_hash(self.c, C1)
        got = self.transaction(("SET", A0, "v"), ("GET", C1), ("INCR", C1), ("SET", A1, "w"),
                               ("MGET", A0, C1, A1), ("GET", A0))
        self.assertEqual(got, array(OK, WRONGTYPE, WRONGTYPE, OK, bulks("v", None, "w"),
                                    bulk("v")))
        self.assertReply(b"+hash\r\n", "TYPE", C1)

    def test_empty_transaction(self):
        self.assertReply(OK, "MULTI")
        self.assertReply(b"*0\r\n", "EXEC")
        self.assertReply(PONG, "PING")

    def test_nested_multi(self):
        self.assertReply(OK, "MULTI")
        self.assertReply(NESTED_MULTI, "MULTI")
        # The error does not flag the transaction: it still runs.
        self.queue(("SET", A0, "1"), ("SET", A1, "2"))
        self.assertReply(NESTED_MULTI, "MULTI")
        self.assertReply(array(OK, OK), "EXEC")
        self.assertReply(bulks("1", "2"), "MGET", A0, A1)
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")

    def test_exec_without_multi(self):
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")
        self.assertReply(EXEC_WITHOUT_MULTI, "exec")
        self.assertReply(PONG, "PING")

    def test_discard_without_multi(self):
        self.assertReply(DISCARD_WITHOUT_MULTI, "DISCARD")
        self.assertReply(DISCARD_WITHOUT_MULTI, "discard")
        self.assertReply(PONG, "PING")

    def test_discard_drops_the_queue(self):
        self.assertReply(OK, "SET", A1, "old")
        self.assertReply(OK, "MULTI")
        self.queue(("SET", A0, "new"), ("SET", A1, "new"), ("DEL", B0, B1))
        self.assertReply(OK, "DISCARD")
        self.assertReply(bulks(None, "old"), "MGET", A0, A1)
        # Out of the transaction: commands run at once, EXEC/DISCARD have nothing to end.
        self.assertReply(PONG, "PING")
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")
        self.assertReply(DISCARD_WITHOUT_MULTI, "DISCARD")
        # A new transaction starts empty.
        self.assertEqual(self.transaction(("GET", A1)), array(bulk("old")))

    def test_discard_after_queued_error(self):
        self.assertReply(OK, "MULTI")
        self.assertReply(wrong_args("set"), "SET", A0)
        self.assertReply(OK, "DISCARD")
        self.assertEqual(self.transaction(("SET", A0, "ok"), ("GET", A0)),
                         array(OK, bulk("ok")))

    def test_execabort_after_wrong_arity(self):
        self.assertReply(OK, "MULTI")
        self.queue(("SET", A0, "1"), ("SET", A1, "1"))
        self.assertReply(wrong_args("set"), "SET", B0)
        self.assertReply(wrong_args("get"), "GET")
        self.queue(("SET", B1, "1"))  # still queued after the error...
        self.assertReply(EXECABORT, "EXEC")  # ...but nothing runs
        self.assertReply(bulks(None, None, None, None), "MGET", A0, A1, B0, B1)
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")  # the transaction is gone
        self.assertEqual(self.transaction(("SET", A0, "2")), array(OK))

    def test_execabort_after_unknown_command(self):
        self.assertReply(OK, "MULTI")
        self.queue(("SET", A0, "1"))
        self.assertReply(b"-ERR unknown command 'NOSUCHCMD', with args beginning with: '%s' 'x' \r\n"
                         % A1.encode(), "NOSUCHCMD", A1, "x")
        self.queue(("SET", A1, "1"))
        self.assertReply(EXECABORT, "EXEC")
        self.assertReply(bulks(None, None), "MGET", A0, A1)
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")

    def test_exec_with_arguments_inside_multi_aborts(self):
        self.assertReply(OK, "MULTI")
        self.queue(("SET", A0, "1"))
        self.assertReply(b"-EXECABORT Transaction discarded because of: wrong number of arguments "
                         b"for 'exec' command\r\n", "EXEC", "extra")
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")
        self.assertReply(NIL, "GET", A0)

    def test_execabort_after_unknown_or_misused_subcommand(self):
        # Redis refuses these before queueing, as an unknown command (processCommand).
        self.assertReply(OK, "MULTI")
        self.queue(("SET", A0, "1"))
        self.assertReply(b"-ERR unknown subcommand 'BOGUS'. Try OBJECT HELP.\r\n",
                         "OBJECT", "BOGUS", A0)
        self.assertReply(wrong_args("object|encoding"), "OBJECT", "ENCODING")
        self.assertReply(wrong_args("config|get"), "CONFIG", "GET")
        self.assertReply(b"-ERR unknown subcommand 'nope'. Try CLIENT HELP.\r\n", "CLIENT", "nope")
        self.queue(("SELECT", "1"))
        self.assertReply(EXECABORT, "EXEC")
        self.assertReply(NIL, "GET", A0)  # nothing ran: still database 0, no key
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")

    def test_exec_with_arguments_outside_multi_aborts(self):
        # Redis's execCommandAbort, inside MULTI or not: it also forgets the watched keys.
        other = self.conn()
        self.assertReply(OK, "WATCH", A0)
        self.assertReply(b"-EXECABORT Transaction discarded because of: wrong number of arguments "
                         b"for 'exec' command\r\n", "EXEC", "extra")
        self.assertReply(OK, "SET", A0, "changed", c=other)
        self.assertEqual(self.transaction(("SET", C0, "done")), array(OK))

    def test_watch_inside_multi(self):
        other = self.conn()
        self.assertReply(OK, "MULTI")
        self.assertReply(WATCH_INSIDE_MULTI, "WATCH", A0)
        self.assertReply(WATCH_INSIDE_MULTI, "WATCH", A0, A1)
        self.queue(("SET", A0, "mine"), ("SET", A1, "mine"))
        # The refused WATCH watches nothing: a change by another client does not abort EXEC.
        self.assertReply(OK, "SET", A0, "theirs", c=other)
        self.assertReply(array(OK, OK), "EXEC")
        self.assertReply(bulks("mine", "mine"), "MGET", A0, A1)

    def test_watch_arity(self):
        self.assertReply(wrong_args("watch"), "WATCH")
        self.assertReply(OK, "MULTI")
        self.assertReply(wrong_args("watch"), "WATCH")
        self.assertReply(EXECABORT, "EXEC")

    def test_unwatch_inside_multi_is_queued(self):
        self.assertReply(OK, "MULTI")
        self.assertReply(QUEUED, "UNWATCH")
        self.queue(("SET", A0, "1"))
        self.assertReply(array(OK, OK), "EXEC")

    def test_select_inside_multi(self):
        self.assertReply(OK, "SET", A0, "db0")
        got = self.transaction(("SELECT", "1"), ("SET", A0, "db1"), ("SET", A1, "db1"),
                               ("MGET", A0, A1), ("DBSIZE",))
        self.assertEqual(got, array(OK, OK, OK, bulks("db1", "db1"), integer(2)))
        # The SELECT sticks after EXEC.
        self.assertReply(bulks("db1", "db1"), "MGET", A0, A1)
        self.assertReply(OK, "SELECT", "0")
        self.assertReply(bulks("db0", None), "MGET", A0, A1)
        # And back again inside one transaction.
        got = self.transaction(("SELECT", "1"), ("GET", A1), ("SELECT", "0"), ("GET", A1))
        self.assertEqual(got, array(OK, bulk("db1"), OK, NIL))
        self.assertReply(bulks("db0", None), "MGET", A0, A1)
        self.assertReply(b"-ERR DB index is out of range\r\n", "SELECT", "99999")

    def test_multi_key_commands_inside_multi(self):
        got = self.transaction(
            ("MSET", A0, "1", A1, "2", B0, "3", B1, "4"),
            ("MGET", A0, A1, B0, B1, C0, C1),
            ("EXISTS", A0, A1, B0, B1, C0, C1, A1),
            ("DEL", A0, B1, C0),
            ("EXISTS", A0, A1, B0, B1),
            ("MGET", B1, B0, A1, A0),
            ("MSET", C1, "5", C0, "6"),
            ("DEL", A1, B0, C0, C1, C1),
            ("MGET", A0, A1, B0, B1, C0, C1))
        self.assertEqual(got, array(
            OK,
            bulks("1", "2", "3", "4", None, None),
            integer(5),
            integer(2),
            integer(2),
            bulks(None, "3", "2", None),
            OK,
            integer(4),
            bulks(None, None, None, None, None, None)))
        self.assertReply(integer(0), "DBSIZE")

    def test_keys_and_dbsize_inside_multi(self):
        self.assertReply(OK, "MSET", A0, "1", A1, "2", B0, "3", B1, "4")
        raw = self.transaction(("KEYS", "*"), ("DBSIZE",), ("KEYS", "a:*"), ("SET", C1, "5"),
                               ("DEL", B0), ("KEYS", "*"), ("DBSIZE",), ("KEYS", "nomatch*"))
        got = decode(raw)
        self.assertIsInstance(got, list, raw)
        self.assertEqual(len(got), 8, raw)
        keys_all, size, keys_a, set_ok, deleted, keys_after, size_after, none = got
        self.assertEqual(sorted(keys_all), sorted(k.encode() for k in (A0, A1, B0, B1)), raw)
        self.assertEqual(size, 4, raw)
        self.assertEqual(sorted(keys_a), sorted([A0.encode(), A1.encode()]), raw)
        self.assertEqual((set_ok, deleted), (b"OK", 1), raw)
        self.assertEqual(sorted(keys_after), sorted(k.encode() for k in (A0, A1, B1, C1)), raw)
        self.assertEqual(size_after, 4, raw)
        self.assertEqual(none, [], raw)

    def test_flushdb_inside_multi(self):
        self.assertReply(OK, "MSET", B0, "1", B1, "1")
        got = self.transaction(("SET", A0, "1"), ("FLUSHDB",), ("SET", A1, "2"), ("DBSIZE",),
                               ("KEYS", "*"), ("MGET", A0, A1, B0, B1))
        self.assertEqual(got, array(OK, OK, OK, integer(1), bulks(A1), bulks(None, "2", None, None)))

    def test_large_transaction(self):
        commands = []
        expected = []
        for n in range(1, 301):
            commands += [("INCR", A0), ("INCR", A1), ("MGET", A0, A1)]
            expected += [integer(n), integer(n), bulks(str(n), str(n))]
        self.c.send(b"".join(harness.encode_command(*cmd)
                             for cmd in [("MULTI",)] + commands + [("EXEC",)]))
        self.assertEqual(self.c.read_replies(len(commands) + 1), [OK] + [QUEUED] * len(commands))
        self.assertEqual(self.c.read_reply(), array(*expected))
        self.assertReply(bulks("300", "300"), "MGET", A0, A1)

    def test_reset_ends_multi_and_watch(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A1)
        self.assertReply(OK, "MULTI")
        self.queue(("SET", B0, "1"))
        self.assertReply(b"+RESET\r\n", "RESET")
        self.assertReply(EXEC_WITHOUT_MULTI, "EXEC")
        self.assertReply(OK, "SET", A1, "z", c=other)
        self.assertEqual(self.transaction(("GET", A1), ("GET", B0)), array(bulk("z"), NIL))

    def test_quit_inside_multi(self):
        c = self.conn()
        self.assertReply(OK, "MULTI", c=c)
        self.queue(("SET", A0, "1"), ("SET", A1, "1"), c=c)
        self.assertReply(OK, "QUIT", c=c)
        self.assertEqual(c.read_until_closed(), b"")
        self.assertReply(integer(0), "EXISTS", A0, A1)

    def test_msetnx_across_shards(self):
        self.assertReply(integer(1), "MSETNX", A0, "x", A1, "y")
        self.assertReply(bulks("x", "y"), "MGET", A0, A1)
        # One existing key (on either shard) stops the whole command: nothing is set.
        for existing in (A0, A1):
            with self.subTest(existing=existing):
                self.assertReply(integer(0), "MSETNX", B0, "new", existing, "new", B1, "new")
                self.assertReply(integer(0), "EXISTS", B0, B1)
                self.assertReply(bulks("x", "y"), "MGET", A0, A1)
        # The same inside a transaction.
        got = self.transaction(("MSETNX", C0, "1", C1, "1"), ("MSETNX", B1, "2", C1, "2", B0, "2"),
                               ("MGET", C0, C1, B0, B1))
        self.assertEqual(got, array(integer(1), integer(0), bulks("1", "1", None, None)))
        self.assertReply(integer(4), "DBSIZE")


class WatchTest(TxTestCase):
    def watch_then(self, keys, action, commands=(("SET", C0, "done"),), c=None):
        """WATCH keys on self.c, run action(), then MULTI/commands/EXEC; returns EXEC's reply."""
        self.assertReply(OK, "WATCH", *keys)
        action()
        return self.transaction(*commands, c=c)

    def test_watch_untouched_key_execs(self):
        self.assertReply(OK, "SET", A0, "1")
        got = self.watch_then([A0, A1], lambda: None, [("INCR", A0), ("SET", A1, "x")])
        self.assertEqual(got, array(integer(2), OK))

    def test_change_by_another_client_aborts(self):
        other = self.conn()
        self.assertReply(OK, "SET", A0, "1")
        got = self.watch_then([A0], lambda: self.assertReply(OK, "SET", A0, "2", c=other),
                              [("SET", A0, "mine"), ("SET", A1, "mine")])
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(bulks("2", None), "MGET", A0, A1)  # nothing ran

    def test_change_aborts_in_resp3(self):
        other = self.conn()
        self.assertTrue(self.c.cmd("HELLO", "3").startswith(b"%"))
        self.assertReply(OK, "SET", A1, "1")
        got = self.watch_then([A1], lambda: self.assertReply(OK, "SET", A1, "2", c=other),
                              [("SET", A1, "mine")])
        self.assertEqual(got, NULL3)
        self.assertReply(bulk("2"), "GET", A1)
        # A transaction that runs replies with a RESP3 array holding RESP3 nulls.
        self.assertEqual(self.transaction(("GET", A0), ("GET", A1), ("SET", A0, "z")),
                         array(NULL3, bulk("2"), OK))

    def test_same_value_still_aborts(self):
        other = self.conn()
        self.assertReply(OK, "SET", A0, "same")
        got = self.watch_then([A0], lambda: self.assertReply(OK, "SET", A0, "same", c=other))
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(NIL, "GET", C0)

    def test_change_by_the_watcher_itself_aborts(self):
        self.assertReply(OK, "SET", A0, "1")
        got = self.watch_then([A0], lambda: self.assertReply(integer(2), "INCR", A0))
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(NIL, "GET", C0)

    def test_every_kind_of_change_aborts(self):
        other = self.conn()
        changes = [
            ("SET", A1, "2"), ("INCR", A1), ("APPEND", A1, "z"), ("DEL", A1), ("UNLINK", A1),
            ("GETDEL", A1), ("GETSET", A1, "9"), ("SETRANGE", A1, "0", "q"), ("PEXPIRE", A1, "100000"),
            ("PERSIST", A1), ("MSET", B0, "1", A1, "2"), ("DEL", B0, A1), ("INCRBYFLOAT", A1, "1.5"),
            ("SET", A1, "new", "XX"), ("GETEX", A1, "PX", "100000"),
            ("APPEND", A1, ""),  # written, though unchanged: Redis signals it
            ("SET", A1, "x", "PXAT", "1"),  # written, and gone at once
        ]
        for change in changes:
            with self.subTest(change=change):
                self.assertReply(OK, "SET", A1, "1")
                if change[0] == "PERSIST":
                    self.assertReply(integer(1), "PEXPIRE", A1, "100000")
                self.assertReply(OK, "WATCH", A0, A1)
                self.assertFalse(other.cmd(*change).startswith(b"-"), change)
                self.assertEqual(self.transaction(("SET", C0, "done")), NIL_ARRAY)
                self.assertReply(NIL, "GET", C0)

    def test_reads_and_noop_writes_do_not_abort(self):
        other = self.conn()
        self.assertReply(OK, "SET", A0, "1")
        noops = [
            ("GET", A0), ("MGET", A0, A1), ("EXISTS", A0, A1), ("STRLEN", A0), ("TTL", A0),
            ("TYPE", A0), ("SET", A0, "x", "NX"), ("SET", A1, "x", "XX"), ("DEL", A1),
            ("MSETNX", B0, "1", A0, "2"), ("PERSIST", A0), ("SETNX", A0, "2"),
        ]
        for noop in noops:
            with self.subTest(noop=noop):
                self.assertReply(OK, "WATCH", A0, A1)
                self.assertFalse(other.cmd(*noop).startswith(b"-"), noop)
                self.assertEqual(self.transaction(("GET", A0)), array(bulk("1")))
        self.assertReply(integer(0), "EXISTS", A1, B0)

    def test_set_already_expired_on_a_missing_key_aborts(self):
        # Redis writes the key and lets it expire: the watcher hears of it all the same.
        other = self.conn()
        for expiry in (("PXAT", "1"), ("EXAT", "1000000000")):
            with self.subTest(expiry=expiry):
                self.assertReply(OK, "WATCH", A1)
                self.assertReply(OK, "SET", A1, "v", *expiry, c=other)
                self.assertEqual(self.transaction(("SET", C0, "done")), NIL_ARRAY)
                self.assertReply(integer(0), "EXISTS", A1, C0)

    def test_script_across_shards_touches_only_what_it_writes(self):
        # Keys of a script on two shards: the one it only reads stays untouched, as in Redis.
        other = self.conn()
        script = "redis.call('set', KEYS[1], 'v'); return redis.call('get', KEYS[2])"
        self.assertReply(OK, "SET", A1, "1")
        self.assertReply(OK, "WATCH", A1)
        self.assertReply(bulk("1"), "EVAL", script, "2", A0, A1, c=other)
        self.assertEqual(self.transaction(("SET", C0, "done")), array(OK))
        self.assertReply(OK, "WATCH", A0)
        self.assertReply(bulk("1"), "EVAL", script, "2", A0, A1, c=other)
        self.assertEqual(self.transaction(("SET", C0, "again")), NIL_ARRAY)
        self.assertReply(bulk("done"), "GET", C0)

    def test_delete_aborts(self):
        other = self.conn()
        self.assertReply(OK, "SET", A0, "1")
        got = self.watch_then([A0], lambda: self.assertReply(integer(1), "DEL", A0, c=other),
                              [("SET", A0, "mine")])
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(integer(0), "EXISTS", A0)

    def test_expiry_aborts(self):
        # Redis 7: a watched key that expires before EXEC aborts the transaction, whether or
        # not anyone touched it (lazily or actively deleted) in between.
        for key in (A0, A1):
            for touch in (False, True):
                with self.subTest(key=key, touched_after_expiry=touch):
                    # Half a second: the key must still be there when WATCH runs.
                    self.assertReply(OK, "SET", key, "1", "PX", "500")
                    self.assertReply(OK, "WATCH", key, B0 if key == A1 else B1)
                    time.sleep(0.8)
                    if touch:
                        self.assertReply(integer(0), "EXISTS", key, c=self.conn())
                    self.assertEqual(self.transaction(("SET", key, "mine")), NIL_ARRAY)
                    self.assertReply(NIL, "GET", key)

    def test_key_already_expired_when_watched(self):
        # Gone (logically) at WATCH time: its removal is no change; creating it again is.
        other = self.conn()
        for key in (A0, A1):
            for action in ("none", "read", "create"):
                with self.subTest(key=key, action=action):
                    self.assertReply(OK, "SET", key, "1", "PX", "50")
                    time.sleep(0.2)
                    self.assertReply(OK, "WATCH", key)
                    if action == "read":
                        self.assertReply(integer(0), "EXISTS", key, c=other)
                    elif action == "create":
                        self.assertReply(OK, "SET", key, "new", c=other)
                    got = self.transaction(("GET", key))
                    self.assertEqual(got, NIL_ARRAY if action == "create" else array(NIL))
                    self.c.cmd("DEL", key)

    def test_expiry_after_exec_is_not_an_abort(self):
        self.assertReply(OK, "SET", A0, "1", "PX", "100000")
        got = self.watch_then([A0], lambda: None, [("GET", A0)])
        self.assertEqual(got, array(bulk("1")))

    def test_missing_key_created_aborts(self):
        other = self.conn()
        got = self.watch_then([A1], lambda: self.assertReply(OK, "SET", A1, "x", c=other),
                              [("SET", A1, "mine")])
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(bulk("x"), "GET", A1)

    def test_missing_key_left_missing_execs(self):
        got = self.watch_then([A0, A1], lambda: None, [("GET", A0), ("SET", A1, "mine")])
        self.assertEqual(got, array(NIL, OK))

    def test_keys_on_both_shards(self):
        other = self.conn()
        self.assertReply(OK, "MSET", A0, "1", A1, "1")
        for changed in (A0, A1):
            with self.subTest(changed=changed):
                got = self.watch_then([A0, A1, B0, B1],
                                      lambda: self.assertReply(OK, "SET", changed, "2", c=other),
                                      [("SET", C0, "done"), ("SET", C1, "done")])
                self.assertEqual(got, NIL_ARRAY)
                self.assertReply(integer(0), "EXISTS", C0, C1)
        # Watched keys on both shards, several WATCH calls, nothing changed: EXEC runs.
        self.assertReply(OK, "WATCH", A0)
        self.assertReply(OK, "WATCH", A1, B1)
        self.assertReply(OK, "WATCH", B0, A0)
        self.assertEqual(self.transaction(("SET", C0, "done"), ("SET", C1, "done"), ("MGET", A0, A1)),
                         array(OK, OK, bulks("2", "2")))
        # A cross-shard write by another client aborts too.
        got = self.watch_then([A0, A1], lambda: self.assertReply(
            OK, "MSET", B0, "x", A1, "3", B1, "y", c=other), [("DEL", C0, C1)])
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(integer(2), "EXISTS", C0, C1)

    def test_unwatch_clears(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A0, A1)
        self.assertReply(OK, "UNWATCH")
        self.assertReply(OK, "MSET", A0, "x", A1, "y", c=other)
        self.assertEqual(self.transaction(("GET", A0), ("GET", A1)), array(bulk("x"), bulk("y")))
        self.assertReply(OK, "UNWATCH")  # without WATCH: fine too

    def test_exec_clears_watches(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A0, A1)
        self.assertEqual(self.transaction(("SET", A0, "1")), array(OK))
        self.assertReply(OK, "SET", A1, "changed", c=other)
        self.assertEqual(self.transaction(("GET", A1)), array(bulk("changed")))

    def test_aborted_exec_clears_watches(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A0)
        self.assertReply(OK, "SET", A0, "1", c=other)
        self.assertEqual(self.transaction(("SET", A0, "mine")), NIL_ARRAY)
        self.assertReply(OK, "SET", A0, "2", c=other)
        self.assertEqual(self.transaction(("SET", A0, "mine")), array(OK))
        self.assertReply(bulk("mine"), "GET", A0)

    def test_discard_clears_watches(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A0, A1)
        self.assertReply(OK, "MULTI")
        self.assertReply(OK, "DISCARD")
        self.assertReply(OK, "SET", A1, "x", c=other)
        self.assertEqual(self.transaction(("GET", A1)), array(bulk("x")))

    def test_execabort_clears_watches(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A0)
        self.assertReply(OK, "MULTI")
        self.assertReply(wrong_args("get"), "GET")
        self.assertReply(EXECABORT, "EXEC")
        self.assertReply(OK, "SET", A0, "x", c=other)
        self.assertEqual(self.transaction(("GET", A0)), array(bulk("x")))

    def test_change_in_another_db_does_not_abort(self):
        other = self.conn()
        self.assertReply(OK, "SELECT", "1", c=other)
        self.assertReply(OK, "SET", A0, "db0")
        got = self.watch_then([A0, A1], lambda: self.assertReply(
            OK, "MSET", A0, "db1", A1, "db1", c=other), [("GET", A0)])
        self.assertEqual(got, array(bulk("db0")))
        # WATCH follows the database selected when WATCH ran, not the one selected at EXEC.
        self.assertReply(OK, "WATCH", A1)
        self.assertReply(OK, "SELECT", "1")
        self.assertReply(OK, "SET", A1, "db1 value")
        self.assertEqual(self.transaction(("GET", A1)), array(bulk("db1 value")))
        self.assertReply(OK, "SELECT", "0")
        self.assertReply(OK, "WATCH", A1)
        self.assertReply(OK, "SELECT", "1")
        self.assertReply(OK, "SET", A1, "db0 value", c=self.conn())  # a new connection is on db 0
        self.assertEqual(self.transaction(("GET", A1)), NIL_ARRAY)
        # On db 1 now: a watch there is aborted by a change there.
        got = self.watch_then([A1], lambda: self.assertReply(OK, "SET", A1, "again", c=other),
                              [("GET", A1)])
        self.assertEqual(got, NIL_ARRAY)

    def test_flushall_aborts(self):
        other = self.conn()
        self.assertReply(OK, "MSET", A0, "1", A1, "1")
        got = self.watch_then([A0, A1], lambda: self.assertReply(OK, "FLUSHALL", c=other),
                              [("SET", C0, "x")])
        self.assertEqual(got, NIL_ARRAY)
        self.assertReply(integer(0), "DBSIZE")

    def test_watch_then_other_client_transaction_aborts(self):
        other = self.conn()
        self.assertReply(OK, "WATCH", A0, B1)
        self.assertEqual(self.transaction(("INCR", A0), ("INCR", A1), c=other),
                         array(integer(1), integer(1)))
        self.assertEqual(self.transaction(("SET", C0, "x")), NIL_ARRAY)
        self.assertReply(NIL, "GET", C0)


class PipelineTest(TxTestCase):
    def test_pipelined_transactions_and_more(self):
        commands = [
            ("PING",),
            ("MULTI",),
            ("SET", A0, "1"),
            ("INCR", A1),
            ("MGET", A0, A1, B0),
            ("MSET", B0, "b0", B1, "b1"),
            ("EXEC",),
            ("GET", B1),
            ("MULTI",),
            ("DEL", A0, A1, B0),
            ("SET", B1),  # arity error: the transaction is aborted
            ("EXEC",),
            ("MULTI",),
            ("GET", A0),
            ("DISCARD",),
            ("WATCH", A0, A1),
            ("INCR", A1),  # our own change aborts the next EXEC
            ("MULTI",),
            ("DEL", A0),
            ("EXEC",),
            ("MULTI",),
            ("DEL", A0),
            ("EXISTS", A0, A1, B0, B1),
            ("EXEC",),
            ("ECHO", "end"),
        ]
        got = self.c.pipeline(commands)
        expected = [
            PONG,
            OK, QUEUED, QUEUED, QUEUED, QUEUED,
            array(OK, integer(1), bulks("1", "1", None), OK),
            bulk("b1"),
            OK, QUEUED, wrong_args("set"), EXECABORT,
            OK, QUEUED, OK,
            OK, integer(2), OK, QUEUED, NIL_ARRAY,
            OK, QUEUED, QUEUED, array(integer(1), integer(3)),
            bulk("end"),
        ]
        for i, (cmd, g, e) in enumerate(zip(commands, got, expected)):
            self.assertEqual(g, e, "reply %d to %r" % (i, cmd))
        self.assertReply(bulks(None, "2", "b0", "b1"), "MGET", A0, A1, B0, B1)

    def test_many_pipelined_transactions(self):
        rounds = 200
        commands = []
        for _ in range(rounds):
            commands += [("MULTI",), ("INCR", A0), ("INCR", A1), ("GET", A0), ("EXEC",)]
        commands.append(("MGET", A0, A1))
        got = self.c.pipeline(commands)
        for r in range(rounds):
            chunk = got[5 * r:5 * r + 5]
            n = r + 1
            self.assertEqual(chunk, [OK, QUEUED, QUEUED, QUEUED,
                                     array(integer(n), integer(n), bulk(str(n)))], "round %d" % r)
        self.assertEqual(got[-1], bulks(str(rounds), str(rounds)))


class ShutdownInFlightTest(harness.ServerTestCase):
    """SIGTERM while cross-shard MSETs and EXECs are between their hops: the server must exit
    cleanly. Under AddressSanitizer a transaction left in flight that is not freed at shutdown
    is reported by LeakSanitizer and fails the exit code that stop() checks."""

    ROUNDS = 6

    def test_sigterm_with_transactions_in_flight(self):
        mset = b"".join(harness.encode_command("MSET", A0, str(i), A1, str(i), B1, "x")
                        for i in range(2000))
        multi = b"".join(harness.encode_command("MULTI") + harness.encode_command("SET", A0, "1") +
                         harness.encode_command("MSET", B0, "1", B1, "2") +
                         harness.encode_command("EXEC") for _ in range(1000))
        for round_ in range(self.ROUNDS):
            # Every other round with the journal (a release then also waits for fsyncs).
            extra = ["--appendonly", "yes", "--appendfsync", "always", "--dir", "."] \
                if round_ % 2 else []
            server = harness.ServerProcess(extra).start()
            socks = []
            try:
                for i in range(6):
                    s = socket.create_connection(("127.0.0.1", server.port))
                    s.sendall(mset if i % 2 else multi)
                    socks.append(s)
                # Work-bounded: stop once the server has answered some of it; which hop each
                # transaction is at varies with the round.
                got = b""
                while len(got) < 200 * (round_ + 1):
                    chunk = socks[round_ % len(socks)].recv(65536)
                    self.assertTrue(chunk, "server closed the connection")
                    got += chunk
                problem = server.stop()
                self.assertIsNone(problem, "round %d: %s\n%s" % (round_, problem,
                                                                  server.log_tail()))
            finally:
                for s in socks:
                    s.close()
                if server.proc is not None:
                    server.stop()


if __name__ == "__main__":
    harness.main()
