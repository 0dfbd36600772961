"""Connection and server commands: PING, ECHO, HELLO and RESP3 encodings, AUTH, SELECT, QUIT,
RESET, CLIENT, unknown-command and arity errors, COMMAND, INFO, CONFIG GET, TIME, and inline
commands."""

import os
import shutil
import sys
import socket
import subprocess
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from slots import on_shard  # noqa: E402
from harness import (NIL, NOT_INTEGER, NULL3, OK, PONG, SYNTAX, RespSet,  # noqa: E402
                     Verbatim, array, bulk, decode, integer, wrong_args)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


HELLO_KEYS = [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]
AUTH_NO_PASSWORD = (b"-ERR AUTH <password> called without any password configured for the "
                    b"default user. Are you sure your configuration is correct?\r\n")
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
NOPROTO = b"-NOPROTO unsupported protocol version\r\n"


def unknown_subcommand(sub, cmd):
    return b"-ERR unknown subcommand '%s'. Try %s HELP.\r\n" % (sub.encode(), cmd.encode())


def unknown_command(raw_tail):
    return b"-ERR unknown command " + raw_tail + b"\r\n"


def client_id(c):
    raw = c.cmd("CLIENT", "ID")
    assert raw.startswith(b":"), raw
    return int(raw[1:-2])


class ConnTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")


class PingEchoTest(ConnTestCase):
    def test_ping(self):
        self.assertReply(PONG, "PING")
        self.assertReply(PONG, "ping")
        self.assertReply(bulk("hello"), "PING", "hello")
        self.assertReply(bulk(""), "PING", "")
        self.assertReply(bulk(b"a\r\nb"), "PING", b"a\r\nb")
        self.assertReply(wrong_args("ping"), "PING", "a", "b")

    def test_echo(self):
        self.assertReply(bulk("hi"), "ECHO", "hi")
        self.assertReply(bulk(""), "ECHO", "")
        self.assertReply(bulk(b"\x00\xff"), "ECHO", b"\x00\xff")
        self.assertReply(wrong_args("echo"), "ECHO")
        self.assertReply(wrong_args("echo"), "ECHO", "a", "b")


class WaitTest(ConnTestCase):
    def test_wait_without_replicas_and_its_errors(self):
        # No replicas: WAIT 0 answers 0 at once. Errors in Redis's order and wording: the
        # replica count first, then the timeout.
        self.assertReply(b":0\r\n", "WAIT", "0", "0")
        self.assertReply(NOT_INTEGER, "WAIT", "abc", "abc")
        self.assertReply(NOT_INTEGER, "WAIT", "abc", "0")
        self.assertReply(b"-ERR timeout is not an integer or out of range\r\n", "WAIT", "0", "abc")
        self.assertReply(b"-ERR timeout is negative\r\n", "WAIT", "0", "-1")


class HelloTest(ConnTestCase):
    def check_hello(self, raw, proto, cid):
        value = decode(raw)
        if proto == 2:
            self.assertTrue(raw.startswith(b"*14\r\n"), raw)
            self.assertIsInstance(value, list)
            self.assertEqual(value[0::2], HELLO_KEYS)
            fields = dict(zip(value[0::2], value[1::2]))
        else:
            self.assertTrue(raw.startswith(b"%7\r\n"), raw)
            self.assertIsInstance(value, dict)
            self.assertEqual(list(value.keys()), HELLO_KEYS)
            fields = value
        self.assertIsInstance(fields[b"server"], bytes)
        self.assertIsInstance(fields[b"version"], bytes)
        self.assertRegex(fields[b"version"].decode(), r"^\d+\.\d+\.\d+")
        self.assertEqual(fields[b"proto"], proto)
        self.assertEqual(fields[b"id"], cid)
        self.assertEqual(fields[b"mode"], b"standalone")
        self.assertEqual(fields[b"role"], b"master")
        self.assertEqual(fields[b"modules"], [])
        self.assertIn(b"\r\n$5\r\nproto\r\n:%d\r\n$2\r\nid\r\n:%d\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                      b"$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n" % (proto, cid), raw)
        self.assertTrue(raw.endswith(b"$7\r\nmodules\r\n*0\r\n"), raw)

    def test_hello_2(self):
        cid = client_id(self.c)
        self.check_hello(self.c.cmd("HELLO", "2"), 2, cid)
        self.check_hello(self.c.cmd("HELLO"), 2, cid)
        self.assertReply(NIL, "GET", "nokey")

    def test_hello_3(self):
        cid = client_id(self.c)
        self.check_hello(self.c.cmd("HELLO", "3"), 3, cid)
        self.check_hello(self.c.cmd("hello"), 3, cid)  # no argument: current protocol
        self.assertReply(NULL3, "GET", "nokey")
        self.check_hello(self.c.cmd("HELLO", "2"), 2, cid)
        self.assertReply(NIL, "GET", "nokey")

    def test_hello_errors(self):
        self.assertReplies([
            (("HELLO", "4"), NOPROTO),
            (("HELLO", "1"), NOPROTO),
            (("HELLO", "0"), NOPROTO),
            (("HELLO", "abc"), b"-ERR Protocol version is not an integer or out of range\r\n"),
            (("HELLO", "2", "foo"), b"-ERR Syntax error in HELLO option 'foo'\r\n"),
            (("HELLO", "3", "4"), b"-ERR Syntax error in HELLO option '4'\r\n"),
            (("HELLO", "2", "SETNAME"), b"-ERR Syntax error in HELLO option 'SETNAME'\r\n"),
            (("HELLO", "3", "AUTH", "a"), b"-ERR Syntax error in HELLO option 'AUTH'\r\n"),
            (("HELLO", "3", "AUTH", "user", "pass"), WRONGPASS),
        ])
        # A failed HELLO leaves the protocol as it was.
        self.assertReply(NIL, "GET", "nokey")
        self.check_hello(self.c.cmd("HELLO", "3"), 3, client_id(self.c))
        self.assertReply(NOPROTO, "HELLO", "4")
        self.assertReply(NULL3, "GET", "nokey")

    def test_hello_setname_and_auth(self):
        cid = client_id(self.c)
        self.check_hello(self.c.cmd("HELLO", "3", "SETNAME", "conn-a"), 3, cid)
        self.assertReply(bulk("conn-a"), "CLIENT", "GETNAME")
        self.check_hello(self.c.cmd("HELLO", "2", "AUTH", "default", "anything", "SETNAME", "b"), 2, cid)
        self.assertReply(bulk("b"), "CLIENT", "GETNAME")


class Resp3Test(ConnTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(self.c.cmd("HELLO", "3").startswith(b"%7\r\n"))

    def test_null_and_aggregates(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReplies([
            (("GET", "nokey"), NULL3),
            (("MGET", "a", "nokey"), b"*2\r\n$1\r\n1\r\n_\r\n"),
            (("SET", "a", "2", "GET"), bulk("1")),
            (("SET", "a", "3", "XX", "GET"), bulk("2")),
            (("SET", "b", "1", "XX"), NULL3),
            (("SET", "a", "1", "NX"), NULL3),
            (("GETDEL", "nokey"), NULL3),
            (("GETEX", "nokey"), NULL3),
            (("RANDOMKEY",), bulk("a")),
            (("EXISTS", "a", "nokey"), integer(1)),
            (("TTL", "a"), integer(-1)),
            (("KEYS", "*"), b"*1\r\n$1\r\na\r\n"),
            (("SCAN", "0", "MATCH", "zz*", "COUNT", "1000"), b"*2\r\n$1\r\n0\r\n*0\r\n"),
            (("PING",), PONG),
            (("ECHO", "x"), bulk("x")),
            (("CLIENT", "GETNAME"), NULL3),
            (("GET",), wrong_args("get")),
        ])
        self.assertReply(OK, "FLUSHALL")
        self.assertReply(NULL3, "RANDOMKEY")

    def test_incrbyfloat_is_a_bulk_string(self):
        # Redis 7.0 replies to INCRBYFLOAT with a bulk string in RESP3 too, not a double.
        self.assertReply(bulk("1.5"), "INCRBYFLOAT", "f", "1.5")
        self.assertReply(bulk("2.5"), "INCRBYFLOAT", "f", "1")

    def test_config_get_is_a_map(self):
        raw = self.c.cmd("CONFIG", "GET", "maxmemory")
        self.assertRegex(raw, rb"^%1\r\n\$9\r\nmaxmemory\r\n\$\d+\r\n\d+\r\n$")
        self.assertReply(b"%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n", "CONFIG", "GET", "databases")
        self.assertReply(b"%0\r\n", "CONFIG", "GET", "nosuchparameter")

    def test_client_info_is_verbatim(self):
        raw = self.c.cmd("CLIENT", "INFO")
        self.assertTrue(raw.startswith(b"="), raw)
        value = decode(raw)
        self.assertIsInstance(value, Verbatim)
        self.assertEqual(value.format, b"txt")
        self.assertIn(b"id=%d " % client_id(self.c), value)
        self.assertIn(b" resp=3", value)

    def test_info_is_verbatim(self):
        raw = self.c.cmd("INFO", "server")
        self.assertTrue(raw.startswith(b"="), raw)
        value = decode(raw)
        self.assertEqual(value.format, b"txt")
        self.assertIn(b"redis_version:", value)

    def test_command_docs_is_a_map(self):
        value = decode(self.c.cmd("COMMAND", "DOCS", "get"))
        self.assertIsInstance(value, dict)
        self.assertEqual(list(value.keys()), [b"get"])
        self.assertIsInstance(value[b"get"], dict)
        self.assertIn(b"summary", value[b"get"])

    def test_command_info_uses_sets(self):
        value = decode(self.c.cmd("COMMAND", "INFO", "get"))
        entry = value[0]
        self.assertEqual(entry[0], b"get")
        self.assertEqual(entry[1], 2)
        self.assertIsInstance(entry[2], RespSet)
        self.assertIn(b"readonly", entry[2])


class AuthTest(ConnTestCase):
    def test_auth_without_password_configured(self):
        self.assertReplies([
            (("AUTH", "foo"), AUTH_NO_PASSWORD),
            (("AUTH", "user", "pass"), WRONGPASS),
            (("AUTH", "default", "anything"), OK),   # the default user has nopass
            (("AUTH",), wrong_args("auth")),
            (("AUTH", "a", "b", "c"), SYNTAX),
            (("PING",), PONG),
        ])


class SelectQuitResetTest(ConnTestCase):
    def test_select(self):
        self.assertReply(OK, "SELECT", "5")
        self.assertReply(OK, "SET", "k", "5")
        self.assertIn(b" db=5 ", self.c.cmd("CLIENT", "INFO"))
        self.assertReply(OK, "SELECT", "0")
        self.assertReply(NIL, "GET", "k")
        self.assertReply(b"-ERR DB index is out of range\r\n", "SELECT", "16")
        self.assertReply(NOT_INTEGER, "SELECT", "x")

    def test_quit(self):
        c = self.conn()
        c.send(harness.encode_command("QUIT") + harness.encode_command("PING"))
        self.assertEqual(c.read_until_closed(), OK)  # no PONG after QUIT
        c = self.conn()
        self.assertEqual(c.cmd("quit", "extra-args-are-ignored"), OK)
        self.assertEqual(c.read_until_closed(), b"")
        self.assertReply(PONG, "PING")

    def test_half_closed_client_is_answered_then_closed(self):
        # `printf ... | nc -N`: the client shuts its writing side after its commands. As Redis,
        # every command it sent runs and is answered (on this shard, across shards, in a
        # transaction), then the server closes; nothing is left connected.
        a0, a1 = on_shard(0, "hc"), on_shard(1, "hc")
        sent = b"".join(harness.encode_command(*c) for c in [
            ("SET", a0, "1"), ("GET", a0), ("SET", a1, "2"), ("GET", a1), ("MGET", a0, a1),
            ("MULTI",), ("INCR", a0), ("GET", a1), ("EXEC",), ("PING",)])
        want = (OK + bulk("1") + OK + bulk("2") + b"*2\r\n" + bulk("1") + bulk("2") + OK +
                b"+QUEUED\r\n+QUEUED\r\n*2\r\n:2\r\n" + bulk("2") + PONG)
        before = harness.info(self.c, "clients")["connected_clients"]
        for _ in range(4):  # connections land on both reactors
            self.assertReply(OK, "SET", a0, "0")
            s = socket.create_connection(("127.0.0.1", harness.port()), timeout=10)
            s.sendall(sent)
            s.shutdown(socket.SHUT_WR)
            got = b""
            while True:
                data = s.recv(4096)
                if not data:
                    break
                got += data
            s.close()
            self.assertEqual(got, want)
        deadline = time.monotonic() + 10
        while (harness.info(self.c, "clients")["connected_clients"] != before and
               time.monotonic() < deadline):
            time.sleep(0.02)
        self.assertEqual(harness.info(self.c, "clients")["connected_clients"], before)

    def test_reset(self):
        c = self.c
        cid = client_id(c)
        self.assertReply(OK, "SELECT", "2")
        self.assertReply(OK, "SET", "k", "2")
        self.assertReply(OK, "CLIENT", "SETNAME", "before-reset")
        self.assertTrue(c.cmd("HELLO", "3").startswith(b"%7"))
        self.assertReply(b"+RESET\r\n", "RESET")
        self.assertReply(NIL, "GET", "k")              # back to db 0 and RESP2
        self.assertReply(NIL, "CLIENT", "GETNAME")
        self.assertEqual(client_id(c), cid)
        info = c.cmd("CLIENT", "INFO")
        self.assertIn(b" db=0 ", info)
        self.assertIn(b" resp=2", info)
        self.assertReply(wrong_args("reset"), "RESET", "x")


class ClientCommandTest(ConnTestCase):
    def test_client_id(self):
        a, b = self.conn(), self.conn()
        ida, idb = client_id(a), client_id(b)
        self.assertNotEqual(ida, idb)
        self.assertEqual(client_id(a), ida)
        self.assertGreater(client_id(self.conn()), max(ida, idb))
        self.assertReply(wrong_args("client|id"), "CLIENT", "ID", "x")

    def test_setname_getname(self):
        self.assertReplies([
            (("CLIENT", "GETNAME"), NIL),
            (("CLIENT", "SETNAME", "myname"), OK),
            (("CLIENT", "GETNAME"), bulk("myname")),
            (("client", "setname", "a b"),
             b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"),
            (("CLIENT", "SETNAME", "a\nb"),
             b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"),
            (("CLIENT", "GETNAME"), bulk("myname")),
            (("CLIENT", "SETNAME", ""), OK),
            (("CLIENT", "GETNAME"), NIL),
            (("CLIENT", "SETNAME"), wrong_args("client|setname")),
            (("CLIENT", "SETNAME", "a", "b"), wrong_args("client|setname")),
            (("CLIENT", "GETNAME", "x"), wrong_args("client|getname")),
        ])

    def test_setinfo(self):
        # CLIENT SETINFO came in Redis 7.2: 7.0 rejects it as an unknown subcommand, 7.2+ says
        # +OK and shows lib-name/lib-ver in CLIENT INFO. Either is accepted here.
        raw = self.c.cmd("CLIENT", "SETINFO", "LIB-NAME", "redis-py")
        self.assertIn(raw, (OK, unknown_subcommand("SETINFO", "CLIENT")))
        if raw == OK:
            self.assertReply(OK, "CLIENT", "SETINFO", "LIB-VER", "4.3.4")
            info = self.c.cmd("CLIENT", "INFO")
            self.assertIn(b" lib-name=redis-py ", info)
            self.assertIn(b" lib-ver=4.3.4", info)
        self.assertReply(PONG, "PING")

    def test_unknown_subcommands(self):
        self.assertReplies([
            (("CLIENT", "MAINT_NOTIFICATIONS", "on"), unknown_subcommand("MAINT_NOTIFICATIONS", "CLIENT")),
            (("client", "maint_notifications", "on", "moving-endpoint-type", "internal-ip"),
             unknown_subcommand("maint_notifications", "CLIENT")),
            (("CLIENT", "foo"), unknown_subcommand("foo", "CLIENT")),
            (("CLIENT",), wrong_args("client")),
            (("PING",), PONG),
        ])

    def test_client_kill_filters(self):
        err = harness.error
        self.assertReply(err("ERR Unknown client type 'bogus'"), "CLIENT", "KILL", "TYPE", "bogus")
        self.assertReply(err("ERR No such user 'nouser'"), "CLIENT", "KILL", "USER", "nouser")
        self.assertReply(SYNTAX, "CLIENT", "KILL", "MAXAGE", "5")  # Redis 7.4's; 7.0 refuses it
        normal, sub = self.conn(), self.conn()
        self.assertEqual(sub.cmd("SUBSCRIBE", "killfilter"),
                         harness.array(bulk(b"subscribe"), bulk(b"killfilter"), integer(1)))
        self.assertReply(integer(0), "CLIENT", "KILL", "TYPE", "master")
        self.assertReply(integer(1), "CLIENT", "KILL", "TYPE", "pubsub")
        self.assertEqual(normal.cmd("PING"), PONG)  # only the subscriber went
        with self.assertRaises((ConnectionError, OSError)):
            sub.cmd("PING")
        # USER: only that user's clients.
        self.assertReply(OK, "ACL", "SETUSER", "killme", "on", ">pw", "+@all", "~*")
        try:
            victim = self.conn()
            self.assertEqual(victim.cmd("AUTH", "killme", "pw"), OK)
            self.assertReply(integer(1), "CLIENT", "KILL", "USER", "killme")
            self.assertEqual(normal.cmd("PING"), PONG)
            with self.assertRaises((ConnectionError, OSError)):
                victim.cmd("PING")
        finally:
            self.c.cmd("ACL", "DELUSER", "killme")

    def test_client_list_and_info(self):
        a, b = self.c, self.conn()
        ida, idb = client_id(a), client_id(b)
        self.assertReply(OK, "CLIENT", "SETNAME", "conn-a", c=a)
        self.assertReply(OK, "CLIENT", "SETNAME", "conn-b", c=b)
        self.assertReply(OK, "SELECT", "3", c=b)

        listing = decode(a.cmd("CLIENT", "LIST"))
        self.assertIsInstance(listing, bytes)
        self.assertTrue(listing.endswith(b"\n"))
        lines = listing.decode().rstrip("\n").split("\n")
        self.assertGreaterEqual(len(lines), 2)
        by_id = {}
        for line in lines:
            fields = dict(kv.split("=", 1) for kv in line.split(" "))
            for name in ("id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "cmd",
                         "user", "resp"):
                self.assertIn(name, fields, line)
            by_id[int(fields["id"])] = fields
        self.assertEqual(by_id[ida]["name"], "conn-a")
        self.assertEqual(by_id[idb]["name"], "conn-b")
        self.assertEqual(by_id[idb]["db"], "3")
        self.assertEqual(by_id[ida]["cmd"], "client|list")
        self.assertEqual(by_id[idb]["cmd"], "select")
        self.assertEqual(by_id[ida]["resp"], "2")
        self.assertRegex(by_id[ida]["addr"], r"^127\.0\.0\.1:\d+$")
        self.assertEqual(by_id[ida]["laddr"], "127.0.0.1:%d" % self.port)

        only_b = decode(a.cmd("CLIENT", "LIST", "ID", str(idb)))
        self.assertEqual(only_b.count(b"\n"), 1)
        self.assertTrue(only_b.startswith(b"id=%d " % idb))

        info = decode(b.cmd("CLIENT", "INFO"))
        self.assertTrue(info.startswith(b"id=%d addr=127.0.0.1:" % idb), info)
        self.assertTrue(info.endswith(b"\n"))
        self.assertEqual(info.count(b"\n"), 1)
        self.assertIn(b" name=conn-b ", info)
        self.assertIn(b" db=3 ", info)
        self.assertIn(b" cmd=client|info ", info)


class ErrorRepliesTest(ConnTestCase):
    def test_unknown_command(self):
        self.assertReplies([
            (("foo", "a", "b"), unknown_command(b"'foo', with args beginning with: 'a' 'b' ")),
            (("foo",), unknown_command(b"'foo', with args beginning with: ")),
            (("FOO", "a", "b", "c", "d", "e"),
             unknown_command(b"'FOO', with args beginning with: 'a' 'b' 'c' 'd' 'e' ")),
            (("foo", "a b", "c"), unknown_command(b"'foo', with args beginning with: 'a b' 'c' ")),
            (("foo", ""), unknown_command(b"'foo', with args beginning with: '' ")),
            # Newlines in the error are turned into spaces.
            (("foo", "a\r\nb"), unknown_command(b"'foo', with args beginning with: 'a  b' ")),
            (("fo\no", "a"), unknown_command(b"'fo o', with args beginning with: 'a' ")),
        ])

    def test_unknown_command_truncation(self):
        # The command name is cut at 128 bytes, and the list of arguments stops at 128 bytes.
        self.assertReply(unknown_command(b"'" + b"x" * 128 + b"', with args beginning with: "), "x" * 200)
        self.assertReply(unknown_command(b"'foo', with args beginning with: '" + b"x" * 128 + b"' "),
                         "foo", "x" * 200)
        self.assertReply(unknown_command(b"'foo', with args beginning with: '" + b"a" * 50 + b"' '"
                                         + b"b" * 50 + b"' '" + b"c" * 22 + b"' "),
                         "foo", "a" * 50, "b" * 50, "c" * 50)
        args = [str(i) for i in range(40)]
        expected = b"".join(b"'%d' " % i for i in range(28))
        self.assertReply(unknown_command(b"'foo', with args beginning with: " + expected), "foo", *args)

    def test_wrong_arity(self):
        self.assertReplies([
            (("GET",), wrong_args("get")),
            (("get", "a", "b"), wrong_args("get")),
            (("GeT",), wrong_args("get")),
            (("SET", "a"), wrong_args("set")),
            (("INCR",), wrong_args("incr")),
            (("PING",), PONG),
        ])


class CommandTest(ConnTestCase):
    def test_command_count(self):
        raw = self.c.cmd("COMMAND", "COUNT")
        self.assertRegex(raw, rb"^:\d+\r\n$")
        self.assertGreater(decode(raw), 10)

    def test_command_info(self):
        value = decode(self.c.cmd("COMMAND", "INFO", "get"))
        self.assertIsInstance(value, list)
        self.assertEqual(len(value), 1)
        entry = value[0]
        self.assertIsInstance(entry, list)
        self.assertGreaterEqual(len(entry), 6)
        self.assertEqual(entry[0], b"get")
        self.assertEqual(entry[1], 2)                 # arity
        self.assertIn(b"readonly", entry[2])          # flags
        self.assertEqual(entry[3:6], [1, 1, 1])       # first key, last key, step

        value = decode(self.c.cmd("COMMAND", "INFO", "SET", "nosuchcommand", "mget"))
        self.assertEqual(len(value), 3)
        self.assertEqual(value[0][0], b"set")
        self.assertEqual(value[0][1], -3)
        self.assertIn(b"write", value[0][2])
        self.assertIsNone(value[1])
        self.assertEqual(value[2][0], b"mget")
        self.assertEqual(value[2][1], -2)
        self.assertEqual(value[2][3:6], [1, -1, 1])

    def test_command_docs(self):
        value = decode(self.c.cmd("COMMAND", "DOCS", "get"))
        self.assertIsInstance(value, list)
        self.assertEqual(len(value), 2)
        self.assertEqual(value[0], b"get")
        docs = value[1]
        self.assertIsInstance(docs, list)
        self.assertEqual(len(docs) % 2, 0)
        self.assertIn(b"summary", docs[0::2])
        self.assertReply(b"*0\r\n", "COMMAND", "DOCS", "nosuchcommand")

    def test_command_errors(self):
        self.assertReply(unknown_subcommand("foo", "COMMAND"), "COMMAND", "foo")
        self.assertReply(SYNTAX, "COMMAND", "LIST", "BOGUS")
        self.assertReply(SYNTAX, "COMMAND", "LIST", "FILTERBY", "BOGUS", "x")

    def test_command_info_of_a_missing_command_is_a_null_bulk(self):
        # As Redis (addReplyNull): $-1 in the array, not a null array.
        self.assertReply(b"*1\r\n$-1\r\n", "COMMAND", "INFO", "nosuchcommand")
        self.assertReply(b"*1\r\n$-1\r\n", "COMMAND", "INFO", "config|nosuch")

    def test_command_info_and_list_name_subcommands(self):
        value = decode(self.c.cmd("COMMAND", "INFO", "config|get"))
        self.assertEqual(value[0][0:2], [b"config|get", -3])
        names = decode(self.c.cmd("COMMAND", "LIST"))
        self.assertIn(b"config|get", names)
        self.assertIn(b"get", names)

    def test_command_list_filterby(self):
        got = set(decode(self.c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG|G*")))
        self.assertEqual(got, {b"config|get"})
        got = set(decode(self.c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN", "getde*")))
        self.assertEqual(got, {b"getdel"})
        got = set(decode(self.c.cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", "TRANSACTION")))
        self.assertEqual(got, {b"multi", b"exec", b"discard", b"watch", b"unwatch"})
        self.assertReply(b"*0\r\n", "COMMAND", "LIST", "FILTERBY", "PATTERN", "nosuch*")
        self.assertReply(b"*0\r\n", "COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcat")
        self.assertReply(b"*0\r\n", "COMMAND", "LIST", "FILTERBY", "MODULE", "nosuchmodule")

    # Where deadbolt's COMMAND INFO differs from Redis 7.0's on purpose: flags only.
    KNOWN_FLAG_DIFFERENCES = {
        # Marked write here: a call across shards locks its keys for writing (FanOutPhases);
        # Redis leaves it to the script's flags, and does not feed EVAL itself to MONITOR.
        "eval", "evalsha", "fcall", "eval_ro", "evalsha_ro", "fcall_ro",
        "exec",  # Redis's skip_slowlog: EXEC is logged here when it is slow
        "select",  # noscript here: a script may not change its database
        "cluster|reset",  # every CLUSTER subcommand that changes the cluster is disabled
    }

    def test_command_info_matches_redis(self):
        # Arity, flags, key positions and ACL categories of every command both servers have,
        # subcommands included: clients (and cluster clients) read them to route and to check.
        # Redis's no_async_loading is left out: deadbolt never loads in the background.
        if harness.AGAINST_REDIS or not os.access(harness.REDIS_SERVER, os.X_OK):
            self.skipTest("needs redis-server beside deadbolt")
        port = harness.free_port()
        work = tempfile.mkdtemp(prefix="deadbolt-cmdinfo-")
        self.addCleanup(shutil.rmtree, work, True)
        ref = subprocess.Popen(
            [harness.REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, cwd=work, start_new_session=True)
        self.addCleanup(ref.wait, 10)
        self.addCleanup(ref.terminate)
        harness.wait_port(port)
        r = harness.RespConn(port)
        self.addCleanup(r.close)

        def text(v):
            if isinstance(v, (bytes, bytearray)):
                return v.decode()
            return [text(x) for x in v] if isinstance(v, list) else v

        names = sorted(set(text(decode(self.c.cmd("COMMAND", "LIST")))))
        self.assertGreater(len(names), 200)
        differences, compared = [], 0
        for name in names:
            mine = text(decode(self.c.cmd("COMMAND", "INFO", name)))[0]
            theirs = text(decode(r.cmd("COMMAND", "INFO", name)))[0]
            if theirs is None:
                continue  # deadbolt's own (DELIFEQ, LOCK.*, ...)
            compared += 1
            theirs[2] = [f for f in theirs[2] if f != "no_async_loading"]
            for i, field in ((1, "arity"), (2, "flags"), (3, "first key"), (4, "last key"),
                             (5, "step"), (6, "categories")):
                a, b = mine[i], theirs[i]
                if isinstance(a, list):
                    a, b = sorted(a), sorted(b)
                if a != b and not (field == "flags" and name in self.KNOWN_FLAG_DIFFERENCES):
                    differences.append("%s %s: deadbolt %r, redis %r" % (name, field, a, b))
        self.assertGreater(compared, 200)
        self.assertEqual(differences, [])

    def test_command_getkeys(self):
        # The keys a call names, as the dispatcher routes it (and a cluster client would).
        def keys(*names):
            return array(*(bulk(k) for k in names))
        for call, reply in [
                (("SET", "k", "v", "NX", "PX", "100"), keys("k")),
                (("MSET", "a", "1", "b", "2"), keys("a", "b")),
                (("LMPOP", "2", "a", "b", "LEFT"), keys("a", "b")),
                (("BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "3"), keys("a", "b")),
                (("ZUNIONSTORE", "d", "2", "a", "b"), keys("d", "a", "b")),  # not numkeys
                (("EVAL", "return", "2", "a", "b", "c"), keys("a", "b")),
                (("EVAL", "return", "0"), keys()),
                (("EVAL", "return", "5", "a"), keys()),  # no mandatory keys: no error
                (("BITOP", "AND", "d", "a", "b"), keys("d", "a", "b")),
                (("OBJECT", "ENCODING", "k"), keys("k")),
                (("LMPOP", "0", "a", "LEFT"),
                 b"-ERR Invalid arguments specified for command\r\n"),
                (("PING", "x"), b"-ERR The command has no key arguments\r\n"),
                (("NOPE", "a"), b"-ERR Invalid command specified\r\n"),
                (("OBJECT", "NOPE", "k"), b"-ERR Invalid command specified\r\n"),
                (("GET", "a", "b"),
                 b"-ERR Invalid number of arguments specified for command\r\n"),
                (("GET",), b"-ERR wrong number of arguments for 'command|getkeys' command\r\n")]:
            self.assertReply(reply, "COMMAND", "GETKEYS", *call)

    def test_shutdown_is_refused_inside_multi(self):
        # Redis's no_multi: refused when queued, and EXEC then aborts (the server stays up).
        self.assertReply(OK, "MULTI")
        self.assertReply(b"-ERR Command not allowed inside a transaction\r\n", "SHUTDOWN")
        self.assertReply(b"-EXECABORT Transaction discarded because of previous errors.\r\n",
                         "EXEC")
        self.assertReply(PONG, "PING")
        if not harness.AGAINST_REDIS:
            self.assertIn(b"no_multi", decode(self.c.cmd("COMMAND", "INFO", "shutdown"))[0][2])

    def test_allow_busy_flag(self):
        # What may run while a script is busy (Redis's allow_busy), from the same table.
        for name, busy in (("auth", True), ("multi", True), ("shutdown", True), ("get", False),
                           ("script|kill", True), ("script|flush", False)):
            flags = decode(self.c.cmd("COMMAND", "INFO", name))[0][2]
            self.assertEqual(b"allow_busy" in flags, busy, name)


class InfoTest(ConnTestCase):
    def info(self, *sections):
        raw = self.c.cmd("INFO", *sections)
        self.assertTrue(raw.startswith(b"$"), raw[:100])
        text = decode(raw).decode()
        fields = {}
        for line in text.split("\r\n"):
            if line and not line.startswith("#"):
                self.assertIn(":", line)
                k, v = line.split(":", 1)
                fields[k] = v
        return text, fields

    def test_server_section(self):
        text, f = self.info("server")
        self.assertTrue(text.startswith("# Server\r\n"), text[:50])
        self.assertTrue(text.endswith("\r\n"))
        self.assertRegex(f["redis_version"], r"^\d+\.\d+\.\d+")
        self.assertEqual(f["tcp_port"], str(self.port))
        self.assertIn("process_id", f)
        self.assertIn("uptime_in_seconds", f)
        self.assertIn("redis_mode", f)
        self.assertNotIn("# Clients", text)

    def test_clients_section(self):
        self.conn().cmd("PING")
        text, f = self.info("clients")
        self.assertTrue(text.startswith("# Clients\r\n"))
        self.assertGreaterEqual(int(f["connected_clients"]), 2)
        self.assertIn("blocked_clients", f)

    def test_memory_section(self):
        text, f = self.info("memory")
        self.assertTrue(text.startswith("# Memory\r\n"))
        self.assertGreater(int(f["used_memory"]), 0)
        self.assertIn("used_memory_human", f)
        self.assertIn("maxmemory", f)

    def test_stats_section(self):
        text, f = self.info("stats")
        self.assertTrue(text.startswith("# Stats\r\n"))
        for name in ("total_connections_received", "total_commands_processed", "expired_keys",
                     "expire_cycle_cpu_milliseconds", "keyspace_hits", "keyspace_misses"):
            self.assertRegex(f[name], r"^\d+$", name)

    def test_keyspace_section(self):
        self.assertReply(OK, "MSET", "a", "1", "b", "2")
        self.assertReply(OK, "SET", "c", "3", "EX", "100")
        self.assertReply(OK, "SELECT", "3")
        self.assertReply(OK, "SET", "x", "1")
        self.assertReply(OK, "SELECT", "0")
        text, f = self.info("keyspace")
        self.assertTrue(text.startswith("# Keyspace\r\n"))
        self.assertRegex(f["db0"], r"^keys=3,expires=1,avg_ttl=\d+$")
        self.assertRegex(f["db3"], r"^keys=1,expires=0,avg_ttl=0$")
        self.assertNotIn("db1", f)
        self.assertReply(OK, "FLUSHALL")
        self.assertReply(bulk("# Keyspace\r\n"), "INFO", "keyspace")

    def test_commandstats_section(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReply(bulk("1"), "GET", "a")
        text, f = self.info("commandstats")
        self.assertTrue(text.startswith("# Commandstats\r\n"))
        for cmd in ("set", "get"):
            self.assertRegex(f["cmdstat_" + cmd],
                             r"^calls=\d+,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=\d+,failed_calls=\d+$")

    def test_default_and_multiple_sections(self):
        text, f = self.info()
        for header in ("# Server", "# Clients", "# Memory", "# Stats", "# Keyspace"):
            self.assertIn(header + "\r\n", text)
        self.assertIn("redis_version", f)
        self.assertIn("connected_clients", f)
        text, f = self.info("server", "clients")
        self.assertIn("# Server\r\n", text)
        self.assertIn("# Clients\r\n", text)
        self.assertNotIn("# Memory", text)
        self.assertReply(bulk(""), "INFO", "nosuchsection")
        _text, f = self.info("SERVER")
        self.assertIn("redis_version", f)


class ConfigTimeTest(ConnTestCase):
    def test_config_get(self):
        raw = self.c.cmd("CONFIG", "GET", "maxmemory")
        self.assertRegex(raw, rb"^\*2\r\n\$9\r\nmaxmemory\r\n\$\d+\r\n\d+\r\n$")
        self.assertReply(b"*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n", "CONFIG", "GET", "databases")
        self.assertReply(b"*0\r\n", "CONFIG", "GET", "nosuchparameter")
        value = decode(self.c.cmd("config", "get", "maxmemory", "databases"))
        pairs = dict(zip(value[0::2], value[1::2]))
        self.assertEqual(set(pairs), {b"maxmemory", b"databases"})
        self.assertEqual(pairs[b"databases"], b"16")
        self.assertReply(wrong_args("config|get"), "CONFIG", "GET")

    def test_config_get_save_and_appendonly(self):
        # redis-benchmark reads these two at startup and warns if they are missing.
        self.assertReply(b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n", "CONFIG", "GET", "save")
        self.assertReply(b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n", "CONFIG", "GET", "appendonly")
        self.assertReply(unknown_subcommand("foo", "CONFIG"), "CONFIG", "foo")

    def test_time(self):
        before = time.time()
        value = decode(self.c.cmd("TIME"))
        after = time.time()
        self.assertIsInstance(value, list)
        self.assertEqual(len(value), 2)
        sec, usec = value
        self.assertTrue(sec.isdigit() and usec.isdigit(), value)
        self.assertLess(int(usec), 1000000)
        t = int(sec) + int(usec) / 1e6
        self.assertTrue(before - 1 <= t <= after + 1, (before, t, after))
        self.assertReply(wrong_args("time"), "TIME", "x")


class RedisRepliesTest(ConnTestCase):
    """Replies found different from Redis 7.0 by a differential run, now the same."""

    def test_config_set_names_a_parameter_once(self):
        self.assertReply(harness.error("ERR CONFIG SET failed (possibly related to argument 'HZ')"
                                       " - duplicate parameter"), "CONFIG", "SET", "hz", "5",
                         "HZ", "6")
        self.assertReply(OK, "CONFIG", "SET", "hz", "10")

    def test_config_help(self):
        lines = decode(self.c.cmd("CONFIG", "HELP"))
        self.assertEqual(lines[0], b"CONFIG <subcommand> [<arg> [value] [opt] ...]. "
                                   b"Subcommands are:")
        self.assertEqual(lines[-2:], [b"HELP", b"    Prints this help."])

    def test_acl_log_negative_count_lists_nothing(self):
        self.assertReply(b"*0\r\n", "ACL", "LOG", "-1")

    def test_memory_usage_negative_samples(self):
        self.assertReply(OK, "SET", "mu:k", "v")
        self.assertReply(SYNTAX, "MEMORY", "USAGE", "mu:k", "SAMPLES", "-1")
        self.assertReply(NOT_INTEGER, "MEMORY", "USAGE", "mu:k", "SAMPLES", "x")


class InlineTest(ConnTestCase):
    def send(self, data, n=1):
        self.c.send(data)
        return self.c.read_replies(n)

    def test_inline_ping(self):
        self.assertEqual(self.send(b"PING\r\n"), [PONG])
        self.assertEqual(self.send(b"ping hi\r\n"), [bulk("hi")])
        self.assertEqual(self.send(b"PING\n"), [PONG])              # bare LF
        self.assertEqual(self.send(b"  PING  \r\n"), [PONG])
        self.assertEqual(self.send(b"\t PING\t\r\n"), [PONG])
        self.assertEqual(self.send(b"\r\n\n\r\nPING\r\n"), [PONG])  # empty lines are skipped

    def test_inline_quotes(self):
        self.assertEqual(self.send(b'SET a "b c"\r\nGET a\r\n', 2), [OK, bulk("b c")])
        self.assertEqual(self.send(b"SET a 'x y'\r\nGET a\r\n", 2), [OK, bulk("x y")])
        self.assertEqual(self.send(b'SET a "x\\x41\\n\\t\\\\y"\r\nGET a\r\n', 2), [OK, bulk(b"xA\n\t\\y")])
        # Single quotes take escapes literally (except \').
        self.assertEqual(self.send(b"SET a 'x\\x41\\n'\r\nGET a\r\n", 2), [OK, bulk(b"x\\x41\\n")])
        self.assertEqual(self.send(b'ECHO "a\\"b"\r\n'), [bulk('a"b')])
        self.assertEqual(self.send(b"ECHO 'a\\'b'\r\n"), [bulk("a'b")])
        self.assertEqual(self.send(b'ECHO ""\r\n'), [bulk("")])

    def test_inline_errors_and_mixing(self):
        self.assertEqual(self.send(b"foo a b\r\n"),
                         [unknown_command(b"'foo', with args beginning with: 'a' 'b' ")])
        self.assertEqual(self.send(b"get\r\n"), [wrong_args("get")])
        # Inline and multibulk commands mixed in one write.
        data = b"SET m 1\r\n" + harness.encode_command("INCR", "m") + b"INCR m\r\nGET m\r\n"
        self.assertEqual(self.send(data, 4), [OK, integer(2), integer(3), bulk("3")])



class IdleTimeoutTest(ConnTestCase):
    """CONFIG SET timeout closes idle clients (checked once a second), but not subscribers."""

    def test_idle_client_is_closed(self):
        c = self.c
        self.assertReply(OK, "CONFIG", "SET", "timeout", "1")
        try:
            idle = self.conn()
            self.assertReply(PONG, "PING", c=idle)
            sub = self.conn()
            sub.send(harness.encode_command("SUBSCRIBE", "idle-test"))
            sub.read_reply()
            deadline = time.time() + 12
            closed = False
            while time.time() < deadline and not closed:
                time.sleep(2.5)  # past the timeout: a probe itself counts as activity
                try:
                    idle.send(harness.encode_command("PING"))
                    closed = idle.read_reply() == b""
                except (ConnectionError, OSError, harness.IncompleteReply, socket.timeout):
                    closed = True
            self.assertTrue(closed, "an idle client should be closed after the timeout")
            sub.send(harness.encode_command("PING"))
            self.assertEqual(sub.read_reply(), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        finally:
            self.assertReply(OK, "CONFIG", "SET", "timeout", "0", c=self.conn())


if __name__ == "__main__":
    harness.main()
