#!/usr/bin/python3
"""Smoke test of bench/null_responder (compare.py's floor): it must answer every command of a
pipeline exactly once, whole or split anywhere across writes, `+PONG` to PING and `$-1` to the
rest, on several connections, and close a connection that sends something else.

    null_responder_test.py /path/to/null_responder
"""

import socket
import subprocess
import sys
import time


def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_exactly(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("connection closed after %r" % buf)
        buf += chunk
    return buf


def main():
    binary = sys.argv[1]
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    proc = subprocess.Popen([binary, "--port", str(port)])
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.02)
        lock = enc("SET", "lock:1", "x" * 36, "NX", "PX", "30000")
        stream = enc("ping") + lock * 300 + enc("PING") + enc("SET", "k", "v" * 20000)
        expected = b"+PONG\r\n" + b"$-1\r\n" * 300 + b"+PONG\r\n" + b"$-1\r\n"
        conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        # One write; one byte at a time through the first 200 bytes; and odd-sized pieces.
        conns[0].sendall(stream)
        for i in range(200):
            conns[1].sendall(stream[i:i + 1])
        conns[1].sendall(stream[200:])
        for i in range(0, len(stream), 997):
            conns[2].sendall(stream[i:i + 997])
        for i, c in enumerate(conns):
            got = read_exactly(c, len(expected))
            assert got == expected, "connection %d: %r..." % (i, got[:80])
        bad = socket.create_connection(("127.0.0.1", port))
        bad.sendall(b"GET x\r\n")  # not multibulk: closed
        bad.settimeout(5)
        assert bad.recv(100) == b"", "inline command not refused"
        assert proc.poll() is None, "null_responder exited"
        print("null_responder: ok")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
