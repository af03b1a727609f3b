# SPDX-License-Identifier: Apache-2.0
"""A Python process whose memory cannot be read, for test_python.py.

    python3 pystall.py FILE

maps FILE (on the test's FUSE file system), prints "ready" and spins in
stalled_spin() > stalled_leaf(). A line on stdin starts the lock case, as
tests/workloads/stall_app.c does it: one thread reads this process's own
memory at a page of FILE nobody has touched, through /proc/self/mem (the
kernel reads the page from the file system while it holds the process's
memory-map lock, and the file system does not answer), and another maps
memory in a loop (it waits for that lock, and so does every reader of the
process's memory after it: /proc/PID/mem). Both release the GIL while they
wait; the spinning thread goes on.
"""
import mmap
import os
import sys
import threading
import time

PAGE = 4096


def read_own_memory(addr):
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    try:
        os.pread(fd, 1, addr)  # waits in the file system, the memory-map lock held
    except OSError:
        pass


def map_in_a_loop():
    time.sleep(0.2)  # the reader holds the lock by then
    while True:
        m = mmap.mmap(-1, PAGE)
        m.close()
        time.sleep(0.001)


def stalled_leaf(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def stalled_spin():
    while True:
        stalled_leaf(20000)


def main():
    fd = os.open(sys.argv[1], os.O_RDONLY)
    size = os.fstat(fd).st_size
    mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ)  # kept mapped while it spins
    addr = None
    # The mapping's address, from /proc/self/maps (mmap objects do not expose it).
    path = os.path.realpath(sys.argv[1])
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith(path):
                addr = int(line.split("-")[0], 16)
                break
    assert addr is not None, "the file's mapping is not in /proc/self/maps"
    print("ready", flush=True)
    threading.Thread(target=lambda: (sys.stdin.readline(), start_lock_case(addr, size)),
                     daemon=True).start()
    stalled_spin()


def start_lock_case(addr, size):
    cold = addr + size - PAGE  # a page nobody has touched
    threading.Thread(target=read_own_memory, args=(cold,), daemon=True).start()
    threading.Thread(target=map_in_a_loop, daemon=True).start()


if __name__ == "__main__":
    main()
