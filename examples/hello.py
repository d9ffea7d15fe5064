"""nsbox's first example: a short, self-contained Python program.

    nsbox python examples/hello.py

No network, no files: it computes the primes below 50 and says which
Python is running it.
"""

import platform
import sys


def primes_below(limit):
    sieve = [True] * limit
    sieve[0:2] = [False, False]
    for n in range(2, int(limit ** 0.5) + 1):
        if sieve[n]:
            sieve[n * n::n] = [False] * len(range(n * n, limit, n))
    return [n for n, is_prime in enumerate(sieve) if is_prime]


if __name__ == "__main__":
    primes = primes_below(50)
    print("Hello from inside nsbox!")
    print("primes below 50:", " ".join(map(str, primes)))
    print("that is %d primes, summing to %d" % (len(primes), sum(primes)))
    print("Python %s (%s)" % (platform.python_version(), sys.implementation.name))
