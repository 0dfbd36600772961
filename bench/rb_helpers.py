"""What the bench scripts that drive redis-benchmark share: a free port, a server started and
answering, a redis-cli call, and redis-benchmark's requests per second."""

import contextlib
import re
import shutil
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                          text=True, check=True).stdout.strip()


def start(argv, port, what):
    """Starts argv (a server listening on `port`) and waits until it answers PING."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if call(port, "PING") == "PONG":
                return proc
        except subprocess.CalledProcessError:
            pass
        time.sleep(0.05)
    proc.kill()
    sys.exit("%s did not start" % what)


def bench(port, args, clients, requests, keyspace):
    """redis-benchmark on core 0, P1: requests per second."""
    out = subprocess.run(["taskset", "-c", "0", "redis-benchmark", "-p", str(port), "-c",
                          str(clients), "-n", str(requests), "-r", str(keyspace), "-q"] + args,
                         capture_output=True, text=True, check=True).stdout
    m = re.findall(r"([0-9.]+) requests per second", out.replace("\r", "\n"))
    if not m:
        sys.exit("no result from redis-benchmark: %r" % out[-300:])
    return float(m[-1])


@contextlib.contextmanager
def running(argv, port, what, d=None):
    """start(), then at the end the server stopped and its --dir `d` (if any) removed."""
    proc = start(argv, port, what)
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if d:
            shutil.rmtree(d, ignore_errors=True)
