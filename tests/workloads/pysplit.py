# SPDX-License-Identifier: Apache-2.0
"""A Python workload with a known split, for CPython 3.6 and later (and the
shapes a Python profiler must follow: threads, asyncio, generators, deep
recursion, a C extension). Like tests/workloads/known_split.h it measures
its own truth: the thread CPU time spent in each leaf, around every call.

    python pysplit.py MODE SECONDS

MODE: split (60/30/10 in the main thread), threads (two threads, 70/20/10
and 10/30/60), asyncio, generator, recursion, cext. At the end (or on
SIGTERM) it appends one line per thread to $EMBER_TRUTH_FILE:

    tid=TID name=NAME leaf_a=NS leaf_b=NS leaf_c=NS

The line numbers of the calls and hot loops are marked (# call-a, # hot-a,
...) for the test, which checks the lines the profiler reports."""
import os
import random
import signal
import sys
import threading
import time
import zlib

CLOCK = time.CLOCK_THREAD_CPUTIME_ID
UNIT_NS = 1000000  # one unit of work: a millisecond of CPU time
STOP = threading.Event()


def cpu_ns():
    return int(time.clock_gettime(CLOCK) * 1e9)


def leaf_a(deadline):
    total = 0
    while True:
        for i in range(100):
            total += i * i % 7  # hot-a
        if cpu_ns() >= deadline:
            return total


def leaf_b(deadline):
    total = 0
    while True:
        for i in range(100):
            total ^= i + 3  # hot-b
        if cpu_ns() >= deadline:
            return total


def leaf_c(deadline):
    total = 0
    while True:
        for i in range(100):
            total += i // 3  # hot-c
        if cpu_ns() >= deadline:
            return total


def handle_request(kind, units):
    deadline = cpu_ns() + units * UNIT_NS
    if kind == "leaf_a":
        return leaf_a(deadline)  # call-a
    if kind == "leaf_b":
        return leaf_b(deadline)  # call-b
    return leaf_c(deadline)  # call-c


def dither(rng):
    """Work of random length outside the leaves: rounds drift against the sampling clock."""
    x = 0
    for i in range(rng.randrange(400)):
        x += i
    return x


class Truth:
    def __init__(self, name):
        self.name = name
        self.ns = {"leaf_a": 0, "leaf_b": 0, "leaf_c": 0}
        # /proc/thread-self -> "PID/task/TID" (every Python version, no ctypes)
        self.tid = int(os.readlink("/proc/thread-self").split("/")[-1])

    def line(self):
        return "tid=%d name=%s %s" % (self.tid, self.name,
                                      " ".join("%s=%d" % kv for kv in sorted(self.ns.items())))


TRUTHS = []


def run_split(name, plan):
    """plan: {leaf: units per round}; rounds in random order, until STOP."""
    truth = Truth(name)
    TRUTHS.append(truth)
    rng = random.Random(len(TRUTHS))
    order = [leaf for leaf, units in plan.items() for _ in range(units)]
    while not STOP.is_set():
        rng.shuffle(order)
        for kind in order:
            start = cpu_ns()
            handle_request(kind, 1)
            truth.ns[kind] += cpu_ns() - start
            dither(rng)


def run_threads():
    workers = [threading.Thread(target=run_split, args=("worker-%d" % i, plan))
               for i, plan in enumerate(({"leaf_a": 7, "leaf_b": 2, "leaf_c": 1},
                                         {"leaf_a": 1, "leaf_b": 3, "leaf_c": 6}))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def run_asyncio():
    import asyncio

    truth = Truth("asyncio")
    TRUTHS.append(truth)

    async def inner_coro(kind):
        start = cpu_ns()
        handle_request(kind, 1)  # call-async
        truth.ns[kind] += cpu_ns() - start
        await asyncio.sleep(0)

    async def outer_coro(kind):
        while not STOP.is_set():
            await inner_coro(kind)

    async def gather():
        await asyncio.gather(outer_coro("leaf_a"), outer_coro("leaf_a"), outer_coro("leaf_b"))

    loop = asyncio.new_event_loop()
    loop.run_until_complete(gather())


def run_generator():
    truth = Truth("generator")
    TRUTHS.append(truth)

    def produce():
        while not STOP.is_set():
            start = cpu_ns()
            yield handle_request("leaf_b", 1)  # call-gen
            truth.ns["leaf_b"] += cpu_ns() - start

    for _ in produce():
        pass


def recurse(depth):
    if depth:
        return recurse(depth - 1) + 1  # call-rec
    return handle_request("leaf_c", 1)


def run_recursion():
    truth = Truth("recursion")
    TRUTHS.append(truth)
    sys.setrecursionlimit(5000)
    while not STOP.is_set():
        start = cpu_ns()
        recurse(500)
        truth.ns["leaf_c"] += cpu_ns() - start


def compress_loop(data):
    return len(zlib.compress(data, 9))  # call-zlib


def run_cext():
    truth = Truth("cext")
    TRUTHS.append(truth)
    rng = random.Random(7)
    data = bytes(rng.randrange(16) for _ in range(1 << 16))
    while not STOP.is_set():
        start = cpu_ns()
        compress_loop(data)
        truth.ns["leaf_a"] += cpu_ns() - start


def run_main_split():
    run_split("main", {"leaf_a": 6, "leaf_b": 3, "leaf_c": 1})


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())
    timer = threading.Timer(seconds, STOP.set)
    timer.daemon = True  # a stop by SIGTERM does not wait for it
    timer.start()
    {"split": run_main_split, "threads": run_threads, "asyncio": run_asyncio,
     "generator": run_generator, "recursion": run_recursion, "cext": run_cext}[mode]()
    path = os.environ.get("EMBER_TRUTH_FILE")
    if path:
        with open(path, "a") as f:
            for t in TRUTHS:
                f.write(t.line() + "\n")


main()
