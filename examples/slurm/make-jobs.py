#!/usr/bin/env python3
"""Writes a grading batch of N python jobs (default 400) to stdout: each job
is a submission of square_sum(n) with a test appended. Most are right; one in
25 is off by one (outcome fail) and one in 100 never returns (outcome
timeout: those have a 1 s limit, the others the default 10 s, ample for a
job of ~30 ms on a busy machine), so the results have something to report. Deterministic: the
same N gives the same file (examples/slurm/jobs.jsonl is N=400)."""
import json
import sys

RIGHT = "def square_sum(n):\n    return sum(k * k for k in range(n))\n"
OFF_BY_ONE = "def square_sum(n):\n    return sum(k * k for k in range(n + 1))\n"
LOOPS = "def square_sum(n):\n    while True:\n        n += 1\n"


def job(i):
    n = 1000 + 37 * i
    code = LOOPS if i % 100 == 42 else OFF_BY_ONE if i % 25 == 7 else RIGHT
    expected = sum(k * k for k in range(n))
    job = {"id": "sub-%04d" % i, "kind": "python", "code": code,
           "test_code": "assert square_sum(%d) == %d" % (n, expected)}
    if code is LOOPS:
        job["timeout"] = 1
    return job


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    for i in range(n):
        sys.stdout.write(json.dumps(job(i), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
