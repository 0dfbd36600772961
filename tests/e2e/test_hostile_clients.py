"""Hostile but fair clients (issue 17, items 1, 6 and 9): a subcommand argument holding newlines
must neither abort CLIENT LIST nor forge lines in it (cmd= shows what Redis shows); a client that
never authenticates cannot make the server hold unbounded replies or input; wrong passwords are
counted and logged (rate-limited); every README flag is in --help.

The module's server runs with --requirepass; the same tests run against redis-server 7.0.15
where the behaviour is Redis's."""

import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK  # noqa: E402

PASSWORD = "hostile-secret"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def setUpModule():
    harness.start_module_server(["--requirepass", PASSWORD])


def tearDownModule():
    harness.stop_module_server()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class HostileTestCase(harness.ServerTestCase):
    def authed(self):
        c = self.conn()
        self.assertEqual(c.cmd("AUTH", PASSWORD), OK)
        return c

    def client_id(self, c):
        return harness.decode(c.cmd("CLIENT", "ID"))

    def client_list(self, c, *extra):
        raw = harness.decode(c.cmd("CLIENT", "LIST", *extra))
        self.assertIsInstance(raw, bytes, raw)
        return bytes(raw)


class ClientListTest(HostileTestCase):
    def assert_well_formed(self, listing, ids):
        """Every line is one client's: starts with id=, ends in \\n, has each field once."""
        self.assertTrue(listing.endswith(b"\n"), listing[-200:])
        lines = listing[:-1].split(b"\n")
        seen = []
        for line in lines:
            m = re.match(rb"id=(\d+) addr=\S+ laddr=\S+ fd=\d+ name=\S* age=\d+ idle=\d+ ", line)
            self.assertIsNotNone(m, "malformed CLIENT LIST line %r in %r" % (line, listing))
            self.assertEqual(line.count(b" cmd="), 1, line)
            self.assertEqual(line.count(b" addr="), 1, line)
            self.assertTrue(line.endswith(b" resp=2") or b" resp=2 " in line, line)
            seen.append(int(m.group(1)))
        for i in ids:
            self.assertIn(i, seen, listing)
        return {int(re.match(rb"id=(\d+) ", l).group(1)): l for l in lines}

    def cmd_of(self, observer, cid):
        line = self.client_list(observer, "ID", str(cid))
        m = re.search(rb" cmd=(\S+) ", line)
        self.assertIsNotNone(m, line)
        return m.group(1).decode()

    def test_newlines_in_a_subcommand_do_not_abort_client_list(self):
        # ../shared/repro/clientlist_abort.py: a90e732 threw std::out_of_range here and aborted.
        a, b = self.authed(), self.authed()
        aid = self.client_id(a)
        for container in ("CLIENT", "CONFIG", "COMMAND"):
            reply = a.cmd(container, "\n\n")
            self.assertTrue(reply.startswith(b"-ERR unknown subcommand '  '"), reply)
            lines = self.assert_well_formed(self.client_list(b), [aid, self.client_id(b)])
            self.assertIn(b" cmd=NULL ", lines[aid])
        self.assertEqual(self.conn().cmd("PING"), b"-NOAUTH Authentication required.\r\n")

    def test_no_client_can_forge_a_line(self):
        a, b = self.authed(), self.authed()
        aid, bid = self.client_id(a), self.client_id(b)
        # At most 32 bytes: what a90e732 kept of a subcommand and showed as a line of its own.
        forged = "\nid=1 addr=6.6.6.6:6 name=admin"
        self.assertLessEqual(len(forged), 32)
        self.assertTrue(a.cmd("CONFIG", forged).startswith(b"-ERR unknown subcommand"))
        self.assertTrue(a.cmd("CLIENT", forged).startswith(b"-ERR unknown subcommand"))
        # The other fields a client sets are refused with spaces or newlines in them.
        self.assertTrue(a.cmd("CLIENT", "SETNAME", forged).startswith(b"-ERR"))
        self.assertTrue(a.cmd("CLIENT", "SETNAME", "a b").startswith(b"-ERR"))
        self.assertTrue(a.cmd("HELLO", "2", "SETNAME", forged).startswith(b"-ERR"))
        if not harness.AGAINST_REDIS:  # CLIENT SETINFO is Redis 7.2's
            for attr in ("LIB-NAME", "LIB-VER"):
                self.assertTrue(a.cmd("CLIENT", "SETINFO", attr, forged).startswith(b"-ERR"))
        self.assertTrue(a.cmd("CONFIG", forged).startswith(b"-ERR unknown subcommand"))
        listing = self.client_list(b)
        self.assertNotIn(b"6.6.6.6", listing)
        self.assertNotIn(b"name=admin", listing)
        lines = self.assert_well_formed(listing, [aid, bid])
        self.assertIn(b" cmd=NULL ", lines[aid])
        self.assertIn(b" name= ", lines[aid])

    def test_cmd_field_as_redis_shows_it(self):
        a, b = self.authed(), self.authed()
        aid = self.client_id(a)
        # (command a sends, cmd= that CLIENT LIST then shows for a). Redis names the command as
        # looked up, before its arity is checked: unknown commands and subcommands are NULL.
        steps = [
            (["PING"], "ping"),
            (["client", "NoSuch"], "NULL"),
            (["PING"], "ping"),
            (["CONFIG"], "config"),
            (["NOSUCHCOMMAND", "x"], "NULL"),
            (["GET"], "get"),
            (["CLIENT", "SETNAME"], "client|setname"),
            (["CLIENT", "GETNAME"], "client|getname"),
            (["config", "GeT", "port"], "config|get"),
            (["COMMAND", "COUNT"], "command|count"),
            (["CLIENT", "x" * 40], "NULL"),
        ]
        for args, want in steps:
            a.cmd(*args)
            self.assertEqual(self.cmd_of(b, aid), want, "after %r" % (args,))
        info = bytes(harness.decode(a.cmd("CLIENT", "INFO")))
        self.assertIn(b" cmd=client|info ", info)
        own = self.client_list(a, "ID", str(aid))
        self.assertIn(b" cmd=client|list ", own)
        # Before AUTH, refused commands are named too.
        u = self.conn()
        self.assertEqual(u.cmd("GET", "k"), b"-NOAUTH Authentication required.\r\n")
        addr = b" addr=%s:%d " % (u.sock.getsockname()[0].encode(), u.sock.getsockname()[1])
        line = [l for l in self.client_list(b).split(b"\n") if addr in l]
        self.assertEqual(len(line), 1)
        self.assertIn(b" cmd=get ", line[0])


class UnauthenticatedLimitsTest(HostileTestCase):
    def test_unread_replies_before_auth_are_bounded(self):
        # A client before AUTH that reads its replies is served: 100 wrong AUTHs pipelined.
        c = self.conn()
        c.send(b"".join(harness.encode_command("AUTH", "x%d" % i) for i in range(100)))
        self.assertEqual(c.read_replies(100), [WRONGPASS] * 100)
        self.assertEqual(c.cmd("AUTH", PASSWORD), OK)
        self.assertEqual(c.cmd("PING"), b"+PONG\r\n")
        # Its input is bounded by Redis's limits: 10 arguments, bulks of 16 KB.
        u = self.conn()
        u.send(b"*11\r\n")
        self.assertEqual(u.read_until_closed(),
                         b"-ERR Protocol error: unauthenticated multibulk length\r\n")
        u = self.conn()
        u.send(b"*1\r\n$16385\r\n")
        self.assertEqual(u.read_until_closed(),
                         b"-ERR Protocol error: unauthenticated bulk length\r\n")
        # One that pipelines AUTH x and never reads is closed once its replies pile up (Redis
        # 7.0.15: at about 17 KB held by the server, after the kernel's socket buffers), long
        # before 40 MB; a90e732 held every reply (373 MB of RSS at 40 MB).
        pid = harness.server().proc.pid
        before = rss_kb(pid)
        s = socket.create_connection(("127.0.0.1", harness.port()), timeout=harness.IO_TIMEOUT)
        unit = harness.encode_command("AUTH", "x")
        chunk = unit * (65536 // len(unit))
        sent, closed = 0, False
        try:
            while sent < 40 * 2**20:
                s.sendall(chunk)
                sent += len(chunk)
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        except socket.timeout:
            self.fail("the server neither read nor closed after %d bytes" % sent)
        grown_mb = (rss_kb(pid) - before) / 1024
        s.close()
        self.assertTrue(closed, "still open after %d MB of AUTH x; RSS grew %.0f MB"
                        % (sent >> 20, grown_mb))
        self.assertLess(sent, 16 * 2**20)
        self.assertLess(grown_mb, 64, "RSS grew %.0f MB" % grown_mb)
        self.assertEqual(self.conn().cmd("AUTH", PASSWORD), OK)  # the server goes on
        if not harness.AGAINST_REDIS:
            stats = harness.info(self.authed(), "stats")
            self.assertGreaterEqual(int(stats["unauthenticated_clients_closed"]), 1)
            self.assertIn("closing unauthenticated client", harness.server().log_text())


class WrongPasswordTest(HostileTestCase):
    def test_wrong_passwords_are_counted(self):
        admin = self.authed()
        before = harness.info(admin, "commandstats")
        c = self.conn()
        for attempt in ("wrong", PASSWORD[:-1], PASSWORD + "x"):
            self.assertEqual(c.cmd("AUTH", attempt), WRONGPASS)
        self.assertEqual(c.cmd("AUTH", "default", "nope"), WRONGPASS)
        after = harness.info(admin, "commandstats")

        def failed(fields, cmd):
            m = re.search(r"failed_calls=(\d+)", fields.get("cmdstat_" + cmd, ""))
            return int(m.group(1)) if m else 0

        self.assertEqual(failed(after, "auth") - failed(before, "auth"), 4, after)
        if not harness.AGAINST_REDIS:  # INFO stats acl_access_denied_auth is Redis 7.2's
            s0 = int(harness.info(admin, "stats")["acl_access_denied_auth"])
            self.assertTrue(c.cmd("HELLO", "3", "AUTH", "default", "bad").startswith(
                b"-WRONGPASS"))
            self.assertEqual(c.cmd("AUTH", "bad"), WRONGPASS)
            self.assertEqual(int(harness.info(admin, "stats")["acl_access_denied_auth"]), s0 + 2)
            self.assertEqual(c.cmd("AUTH", PASSWORD), OK)
            self.assertEqual(int(harness.info(admin, "stats")["acl_access_denied_auth"]), s0 + 2)

    @harness.unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's log")
    def test_wrong_passwords_are_logged_rate_limited(self):
        # A server of its own: the log's budget (10 lines a minute per reactor) is fresh.
        server = harness.ServerProcess(["--requirepass", PASSWORD]).start()
        try:
            c = harness.RespConn(server.port)
            addr = "%s:%d" % c.sock.getsockname()
            self.assertEqual(c.cmd("AUTH", "guess"), WRONGPASS)
            for _ in range(50):
                if addr in server.log_text():
                    break
                time.sleep(0.05)
            line = [l for l in server.log_text().splitlines() if addr in l]
            self.assertEqual(len(line), 1, server.log_text())
            self.assertIn("wrong password", line[0])
            # A flood of 3,000 guesses on 4 connections leaves a few lines, not 3,000.
            conns = [harness.RespConn(server.port) for _ in range(4)]
            for _ in range(30):
                for k in conns:
                    k.send(b"".join(harness.encode_command("AUTH", "g") for _ in range(25)))
                for k in conns:
                    self.assertEqual(k.read_replies(25), [WRONGPASS] * 25)
            c.cmd("AUTH", PASSWORD)
            logged = [l for l in server.log_text().splitlines() if "wrong password" in l]
            self.assertGreaterEqual(len(logged), 2)
            self.assertLessEqual(len(logged), 2 * 10, "\n".join(logged[-5:]))
            for k in conns:
                k.close()
            c.close()
        finally:
            problem = server.stop()
        self.assertFalse(problem, problem)


@harness.unittest.skipIf(harness.AGAINST_REDIS, "deadbolt's command line")
class HelpTest(harness.unittest.TestCase):
    def test_help_lists_every_readme_flag(self):
        out = subprocess.run([os.environ["DEADBOLT_SERVER"], "--help"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30)
        self.assertEqual(out.returncode, 0)
        text = out.stdout.decode()
        with open(README) as f:
            flags = re.findall(r"^\| `(--[a-z0-9-]+)", f.read(), re.M)
        self.assertIn("--max-multibulk-len", flags)
        self.assertGreater(len(flags), 15)
        missing = [f for f in flags if not re.search(re.escape(f) + r"[\s\]=]", text)]
        self.assertEqual(missing, [], text)


if __name__ == "__main__":
    harness.main()
