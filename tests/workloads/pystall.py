# SPDX-License-Identifier: Apache-2.0
"""A Python process whose memory cannot be read, for test_python.py.

    python3 pystall.py FILE

maps FILE (on the test's FUSE file system), prints "ready", and at a line on
stdin starts the lock case and spins in stalled_spin() > stalled_leaf(). Two
helper processes do the waiting, as tests/workloads/phpstall.php's do: one
reads this process's memory at a page of FILE nobody has touched, through
/proc/PID/mem (the kernel reads the page from the file system while it holds
this process's memory-map lock, and the file system does not answer); the other
then asks for that lock to write (writing /proc/PID/clear_refs takes it) and
waits, and so does every reader of this process's memory after it.

Not threads in this process: once a writer waits for the lock, a thread that
touches the memory map while it holds the GIL (a new thread's stack, an arena
that grows) waits for good, and the spinning thread with it (it did, in one
run of three). The spinning loop maps no new memory.
"""
import mmap
import os
import subprocess
import sys

PAGE = 4096


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
    sys.stdin.readline()  # not yet: the test arms the file system first
    start_lock_case(addr, size)
    stalled_spin()


def start_lock_case(addr, size):
    pid, cold = os.getpid(), addr + size - PAGE  # a page nobody has touched
    reader = "f = open('/proc/%d/mem', 'rb', 0); f.seek(%d); f.read(1)" % (pid, cold)
    writer = "import time; time.sleep(0.2); open('/proc/%d/clear_refs', 'w').write('5')" % pid
    for code in (writer, reader):
        subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
