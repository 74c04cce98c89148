"""Counting of checks, shared by the interop scripts.

Each script makes one `Tally`, calls `check` for every expectation (a failure prints its name and
why, and the script goes on so that one run shows every failure), and ends with `finish`, which
prints "NAME: N passed, M failed" and gives the exit status: 1 when a check failed, or when none
ran at all (a script that checked nothing proved nothing).
"""

import sys


class Tally:
    def __init__(self, name, detail_limit=None):
        self.name = name
        self.detail_limit = detail_limit
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            return
        self.failed += 1
        detail = str(detail)
        if self.detail_limit is not None:
            detail = detail[:self.detail_limit]
        print(f"FAIL {name} {detail}".rstrip(), file=sys.stderr)

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed or not self.passed else 0
