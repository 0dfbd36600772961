"""redis-py's Lock (Debian's python3-redis) against the server: acquire (SET NX PX) blocking and
not, and its scripts — release, extend, reacquire — sent by SHA1 (EVALSHA, SCRIPT LOAD on
NOSCRIPT), which deadbolt runs natively. A lock that expired and was taken by someone else
raises LockNotOwnedError on release, extend and reacquire; threads that serialise a
read-modify-write through the lock lose no update. Node.js clients are in tests/js."""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import redis  # Debian's python3-redis: run with /usr/bin/python3
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError:  # pragma: no cover - depends on the interpreter
    redis = None


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


@unittest.skipIf(redis is None, "redis-py is not importable by %s (use /usr/bin/python3 with "
                                "python3-redis installed)" % sys.executable)
class RedisPyLockTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.r = self.client()
        self.assertTrue(self.r.flushall())

    def client(self):
        r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30)
        self.addCleanup(r.close)
        return r

    def test_non_blocking_acquire_and_release(self):
        first = self.r.lock("lk:a", timeout=10)
        second = self.client().lock("lk:a", timeout=10)
        self.assertTrue(first.acquire(blocking=False))
        self.assertTrue(first.owned())
        self.assertFalse(second.acquire(blocking=False))
        self.assertFalse(second.owned())
        token = self.r.get("lk:a")
        self.assertEqual(token, first.local.token)
        # A release by someone who does not hold it raises and leaves the lock alone.
        second.local.token = b"not-the-token"
        with self.assertRaises(LockNotOwnedError):
            second.release()
        self.assertEqual(self.r.get("lk:a"), token)
        first.release()
        self.assertFalse(self.r.exists("lk:a"))
        with self.assertRaises(LockError):
            first.release()  # already released: redis-py refuses before asking the server
        self.assertTrue(second.acquire(blocking=False))
        second.release()

    def test_blocking_acquire_waits_for_the_release(self):
        # Released by another thread: its token must not be thread-local.
        # The holder's lease is far longer than the waiter may wait, so the waiter can only get
        # the lock by the release; the wait itself has no tight bound (a slow machine).
        holder = self.r.lock("lk:b", timeout=120, thread_local=False)
        self.assertTrue(holder.acquire(blocking=False))
        waiter = self.client().lock("lk:b", timeout=10, sleep=0.02)
        released = threading.Event()

        def release_later():
            time.sleep(0.3)
            holder.release()
            released.set()

        t = threading.Thread(target=release_later)
        t.start()
        start = time.monotonic()
        self.assertTrue(waiter.acquire(blocking=True, blocking_timeout=60))
        waited = time.monotonic() - start
        t.join(60)
        self.assertTrue(released.is_set())
        self.assertGreaterEqual(waited, 0.2)
        self.assertTrue(waiter.owned())
        waiter.release()

    def test_blocking_acquire_times_out(self):
        holder = self.r.lock("lk:c", timeout=10)
        self.assertTrue(holder.acquire(blocking=False))
        start = time.monotonic()
        self.assertFalse(self.client().lock("lk:c", sleep=0.02).acquire(blocking_timeout=0.2))
        self.assertGreaterEqual(time.monotonic() - start, 0.15)
        with self.assertRaises(LockError):
            with self.client().lock("lk:c", blocking_timeout=0.1, sleep=0.02):
                pass
        holder.release()

    def test_extend_and_reacquire(self):
        lock = self.r.lock("lk:d", timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(lock.extend(10))  # adds to the TTL
        self.assertTrue(14000 < self.r.pttl("lk:d") <= 15000)
        self.assertTrue(lock.extend(2, replace_ttl=True))
        self.assertTrue(1000 < self.r.pttl("lk:d") <= 2000)
        self.assertTrue(lock.reacquire())  # back to the lock's timeout
        self.assertTrue(4000 < self.r.pttl("lk:d") <= 5000)
        lock.release()
        with self.assertRaises(LockError):
            lock.extend(1)

    def test_lock_stolen_after_expiry(self):
        lock = self.r.lock("lk:e", timeout=0.1)
        self.assertTrue(lock.acquire(blocking=False))
        time.sleep(0.3)
        self.assertFalse(lock.locked())
        thief = self.client().lock("lk:e", timeout=10)
        self.assertTrue(thief.acquire(blocking=False))
        with self.assertRaises(LockNotOwnedError):
            lock.extend(5)
        with self.assertRaises(LockNotOwnedError):
            lock.reacquire()
        with self.assertRaises(LockNotOwnedError):
            lock.release()
        # The thief's lock is untouched by all that.
        self.assertTrue(thief.owned())
        self.assertTrue(9000 < self.r.pttl("lk:e") <= 10000)
        thief.release()

    def test_expired_lock_cannot_be_extended(self):
        lock = self.r.lock("lk:f", timeout=0.1)
        self.assertTrue(lock.acquire(blocking=False))
        time.sleep(0.3)
        with self.assertRaises(LockNotOwnedError):
            lock.extend(5)
        self.assertFalse(self.r.exists("lk:f"))

    def test_threads_serialise_through_the_lock(self):
        """8 threads x 25 non-atomic increments (GET, then SET) under the lock: none is lost."""
        self.r.set("lk:counter", 0)
        errors = []

        def worker():
            try:
                r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30)
                for _ in range(25):
                    with r.lock("lk:g", timeout=5, sleep=0.001, blocking_timeout=20):
                        v = int(r.get("lk:counter"))
                        r.set("lk:counter", v + 1)
                r.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        ts = [threading.Thread(target=worker) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertFalse(any(t.is_alive() for t in ts), "workers hung")
        self.assertEqual(errors, [])
        self.assertEqual(int(self.r.get("lk:counter")), 200)
        self.assertFalse(self.r.exists("lk:g"))


if __name__ == "__main__":
    harness.main()
