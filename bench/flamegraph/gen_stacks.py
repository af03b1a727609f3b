#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a synthetic folded-stacks profile with N distinct stacks, shaped like
a whole-system profile: many processes, deep C++-style names, shared start-up
frames, a call graph walked at random, kernel tails on some stacks, and a
heavy-tailed count per stack. Deterministic for a given seed.

usage: gen_stacks.py N OUT.folded [SEED]"""
import random
import sys


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
    words = ["alloc", "parse", "flush", "encode", "decode", "lookup", "insert", "visit", "render",
             "hash", "compare", "read", "write", "poll", "dispatch", "schedule", "copy", "merge",
             "resolve", "compile", "emit", "scan", "sort", "reduce", "update", "apply"]
    spaces = ["std", "app", "net", "db", "io", "json", "http", "core", "util", "rt", "gc", "sql"]
    classes = ["Buffer", "Table", "Session", "Request", "Parser", "Index", "Pool", "Queue",
               "Worker", "Cache", "Node", "Tree", "Stream", "Channel", "Engine", "Planner"]
    nfuncs = 20000
    funcs = []
    for i in range(nfuncs):
        funcs.append(f"{rng.choice(spaces)}::{rng.choice(classes)}::{rng.choice(words)}_{i}")
    callees = [[rng.randrange(nfuncs) for _ in range(rng.randint(2, 7))] for _ in range(nfuncs)]
    kernel = ["entry_SYSCALL_64_after_hwframe_[k]", "do_syscall_64_[k]", "__x64_sys_read_[k]",
              "ksys_read_[k]", "vfs_read_[k]", "__x64_sys_write_[k]", "ksys_write_[k]",
              "vfs_write_[k]", "__x64_sys_futex_[k]", "do_futex_[k]", "futex_wait_[k]",
              "schedule_[k]", "__schedule_[k]", "asm_exc_page_fault_[k]", "exc_page_fault_[k]",
              "handle_mm_fault_[k]", "clear_page_erms_[k]"]
    procs = [f"service-{i}" for i in range(40)]
    entry = {p: rng.randrange(nfuncs) for p in procs}
    seen = {}
    while len(seen) < n:
        p = rng.choice(procs)
        frames = [p, "_start", "__libc_start_main", "main"]
        f = entry[p]
        for _ in range(rng.randint(4, 40)):
            frames.append(funcs[f])
            f = rng.choice(callees[f])
        if rng.random() < 0.25:
            k = rng.randrange(0, len(kernel) - 3)
            frames += kernel[k:k + rng.randint(2, 4)]
        key = ";".join(frames)
        if key not in seen:
            seen[key] = min(int(rng.paretovariate(1.1)), 100000)
    with open(out, "w") as f:
        for k, v in seen.items():
            f.write(f"{k} {v}\n")


if __name__ == "__main__":
    main()
