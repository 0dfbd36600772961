"""prometheus-redis-exporter (Debian's package) scraping deadbolt (issue 14): the series an
operator of a lock server watches are present and right — commands and their time, latency
percentiles, memory, connections, keys per database, the journal's state, the slow log.
Skipped when the exporter is not installed (scripts/deps.sh --test installs it where Debian has
it). Checked against redis-server too (DEADBOLT_AGAINST_REDIS=1)."""

import os
import re
import subprocess
import time
import unittest
import urllib.request

import harness
from harness import OK

EXPORTER = "/usr/bin/prometheus-redis-exporter"


def setUpModule():
    if not os.access(EXPORTER, os.X_OK):
        raise unittest.SkipTest("prometheus-redis-exporter is not installed")
    harness.start_module_server(["--appendonly", "yes", "--appendfsync", "everysec"])


def tearDownModule():
    harness.stop_module_server()


SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def scrape(port):
    """Runs the exporter against the server on `port` and returns {series: value}."""
    web = harness.free_port()
    proc = subprocess.Popen([EXPORTER, "-redis.addr", "redis://127.0.0.1:%d" % port,
                             "-web.listen-address", "127.0.0.1:%d" % web],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        text = None
        for _ in range(100):  # up to 10 s for it to listen
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % web, timeout=5) as r:
                    text = r.read().decode()
                break
            except OSError:
                time.sleep(0.1)
        if text is None:
            raise AssertionError("the exporter did not answer")
    finally:
        proc.terminate()
        proc.wait(10)
    series = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            series[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return series


class ExporterTest(harness.ServerTestCase):
    def test_lock_server_series(self):
        c = self.c
        self.assertEqual(c.cmd("FLUSHALL"), OK)
        self.assertEqual(c.cmd("CONFIG", "RESETSTAT"), OK)
        # Locks taken (some with a lease), read and released; a few clients connected.
        for i in range(5):
            self.assertEqual(c.cmd("SET", "lock:%d" % i, "owner", "NX", "PX", "60000"), OK)
        for i in range(2):
            self.assertEqual(c.cmd("SET", "plain:%d" % i, "v"), OK)
        for i in range(3):
            c.cmd("GET", "lock:%d" % i)
        self.assertEqual(c.cmd("DEL", "lock:4"), harness.integer(1))
        others = [self.conn() for _ in range(3)]
        for o in others:
            self.assertEqual(o.cmd("PING"), harness.PONG)
        m = scrape(self.port)

        self.assertEqual(m["redis_up"], 1)
        self.assertEqual(m['redis_exporter_last_scrape_error{err=""}'], 0)
        self.assertEqual(m['redis_commands_total{cmd="set"}'], 7)
        self.assertEqual(m['redis_commands_total{cmd="get"}'], 3)
        self.assertEqual(m['redis_commands_total{cmd="del"}'], 1)
        self.assertGreater(m['redis_commands_duration_seconds_total{cmd="set"}'], 0)
        p50 = m['redis_latency_percentiles_usec{cmd="set",quantile="50"}']
        p99 = m['redis_latency_percentiles_usec{cmd="set",quantile="99"}']
        self.assertTrue(0 < p50 <= p99, (p50, p99))
        self.assertEqual(m['redis_latency_percentiles_usec_count{cmd="set"}'], 7)
        self.assertGreater(m["redis_memory_used_bytes"], 0)
        self.assertGreater(m["redis_memory_used_rss_bytes"], 0)
        self.assertGreaterEqual(m["redis_connected_clients"], 5)  # 4 here, the exporter
        self.assertEqual(m['redis_db_keys{db="db0"}'], 6)
        self.assertEqual(m['redis_db_keys_expiring{db="db0"}'], 4)
        self.assertEqual(m["redis_aof_enabled"], 1)
        self.assertEqual(m["redis_aof_last_write_status"], 1)
        self.assertEqual(m["redis_aof_rewrite_in_progress"], 0)
        self.assertIn("redis_slowlog_length", m)
        self.assertGreaterEqual(m["redis_uptime_in_seconds"], 0)


if __name__ == "__main__":
    harness.main()
