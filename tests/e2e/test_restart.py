"""A server killed with SIGKILL under load can be started again at once on the same port.

A killed deadbolt's listening socket outlives the process for 5-10 ms: the kernel tears its
io_uring down (and with it the multishot accept that holds the socket) only after the process has
been reaped. A supervisor that restarts the server at once got `could not bind ...: Address
already in use` (most restarts failed here before the fix); the server now tries its bind again
for a moment (server/core/reactor.cc, Reactor::Init). Each round loads the server on many
connections, kills it and starts a new one on the same port straight away; every start must
succeed and answer. A port another process listens on is still refused (after the retries),
with the same message as before.

Against redis-server (DEADBOLT_AGAINST_REDIS=1), which closes its socket as it dies, everything
passes: that checks the test logic."""

import contextlib
import os
import signal
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK, PONG, encode_command  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS

ROUNDS = 8
CONNECTIONS = 16
PIPELINE = 200  # lock commands written on each connection just before the kill, unread


def setUpModule():
    harness.server_command(0)  # DEADBOLT_SERVER or DEADBOLT_AGAINST_REDIS must say what to run


class RestartOnSamePortTest(unittest.TestCase):

    def load(self, conns, port, round_):
        """Opens CONNECTIONS connections (into the ExitStack `conns`) and writes PIPELINE lock
        requests on each, left unread."""
        socks = [conns.enter_context(socket.create_connection(("127.0.0.1", port),
                                                              timeout=harness.IO_TIMEOUT))
                 for _ in range(CONNECTIONS)]
        for n, s in enumerate(socks):
            s.sendall(b"".join(
                encode_command("SET", "lock:%d:%d:%d" % (round_, n, i), "owner-%d" % n, "NX",
                               "PX", "30000")
                for i in range(PIPELINE)))
        # The server is up and working: the first connection's first reply has come back.
        self.assertEqual(harness.read_one_reply_from_socket(socks[0]), OK)

    def test_sigkill_under_load_then_restart_on_the_same_port(self):
        server = harness.ServerProcess().start()
        self.addCleanup(server.kill)  # a no-op once stopped
        port = server.port
        for round_ in range(ROUNDS):
            with contextlib.ExitStack() as conns:
                self.load(conns, port, round_)
                code = server.kill()
            self.assertEqual(code, -signal.SIGKILL)
            error = None
            try:
                server.start(port=port)
            except RuntimeError as e:
                error = e
            if error is not None:
                self.fail("round %d: the restart on port %d right after the SIGKILL failed: %s"
                          % (round_ + 1, port, error))
            with harness.RespConn(port) as c:
                self.assertEqual(c.cmd("PING"), PONG)
        self.assertIsNone(server.stop())

    def test_a_port_in_use_is_still_refused(self):
        if AGAINST_REDIS:
            self.skipTest("the message is deadbolt's")
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = holder.getsockname()[1]
            code, out = harness.run_server_to_exit(["--port", str(port)])
        self.assertEqual(code, 1, out)
        self.assertIn("deadbolt: could not bind to 127.0.0.1:%d: Address already in use\n" % port,
                      out)


if __name__ == "__main__":
    unittest.main()
