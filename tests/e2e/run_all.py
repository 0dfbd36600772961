#!/usr/bin/python3
"""Runs every tests/e2e/test_*.py and ends with the line `N passed, M failed` (and `, K skipped`).
Exits non-zero if anything failed or nothing ran.

  DEADBOLT_SERVER=build/release/server/deadbolt-server /usr/bin/python3 tests/e2e/run_all.py
  DEADBOLT_AGAINST_REDIS=1 /usr/bin/python3 tests/e2e/run_all.py        # the reference
  ... run_all.py -k lock -k Protocol    # only tests whose name contains a pattern
  ... run_all.py -q                     # dots instead of one line per test
"""

import importlib.util
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM_PYTHON = "/usr/bin/python3"


def reexec_with_system_python():
    """redis-py comes from Debian's python3-redis: if this interpreter cannot import it and is
    not /usr/bin/python3, run again under /usr/bin/python3 instead of skipping those tests."""
    if importlib.util.find_spec("redis") is not None:
        return
    if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK) \
            and not os.environ.get("DEADBOLT_E2E_REEXEC"):
        os.environ["DEADBOLT_E2E_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


class CountingResult(unittest.TextTestResult):
    """Counts outcomes per test (a test with several failing subtests is one failure; an error
    in setUpModule/tearDownModule counts as one failure)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}

    def _mark(self, test, outcome):
        key = test.id() if hasattr(test, "id") else str(test)
        if self.outcomes.get(key) == "failed":
            return
        self.outcomes[key] = outcome

    def startTest(self, test):
        super().startTest(test)
        self._mark(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._mark(test, "failed")

    def addError(self, test, err):
        super().addError(test, err)
        self._mark(test, "failed")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._mark(test, "failed")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._mark(test, "skipped")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._mark(test, "failed")

    def count(self, outcome):
        return sum(1 for v in self.outcomes.values() if v == outcome)


def main(argv):
    reexec_with_system_python()
    verbosity = 2
    patterns = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "-q":
            verbosity = 1
        elif a == "-k" and args:
            patterns.append(args.pop(0))
        else:
            print(__doc__, file=sys.stderr)
            return 2

    if not os.environ.get("DEADBOLT_SERVER") and os.environ.get("DEADBOLT_AGAINST_REDIS") != "1":
        print("run_all.py: set DEADBOLT_SERVER=/path/to/deadbolt-server, or DEADBOLT_AGAINST_REDIS=1 "
              "to run against /usr/bin/redis-server", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2

    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = ["*%s*" % p for p in patterns]
    suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)

    target = os.environ.get("DEADBOLT_SERVER") or "/usr/bin/redis-server (DEADBOLT_AGAINST_REDIS=1)"
    print("e2e: server under test: %s" % target, flush=True)
    runner = unittest.TextTestRunner(verbosity=verbosity, resultclass=CountingResult, stream=sys.stdout)
    start = time.monotonic()
    result = runner.run(suite)
    elapsed = time.monotonic() - start

    passed, failed, skipped = result.count("passed"), result.count("failed"), result.count("skipped")
    print("e2e: %d tests in %.1fs" % (len(result.outcomes), elapsed))
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line, flush=True)
    if failed or passed == 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
