# SPDX-License-Identifier: Apache-2.0
# A Ruby process whose memory cannot be read, for test_ruby.py (the Ruby twin
# of tests/workloads/plstall.pl).
#
#     ruby rbstall.rb FILE
#
# maps FILE (on the test's FUSE file system), prints "ready" and spins in
# Object#stalled_spin > Object#stalled_leaf. A line on stdin starts the lock
# case, as tests/workloads/stall_app.c does it: one thread reads this
# process's own memory at a page of FILE nobody has touched, through
# /proc/self/mem (the kernel reads the page from the file system while it
# holds the process's memory-map lock, and the file system does not answer),
# and another maps memory in a loop (it waits for that lock, and so does every
# reader of the process's memory after it: /proc/PID/mem). Both wait without
# the GVL (IO#pread and Fiddle's calls release it); the spinning thread goes
# on, and touches no new memory (a page fault would wait for the lock too).
require "fiddle"

PAGE = 4096
PROT_READ = 1
PROT_WRITE = 2
MAP_PRIVATE = 2
MAP_ANONYMOUS = 0x20
LIBC = Fiddle::Handle::DEFAULT
MMAP = Fiddle::Function.new(LIBC["mmap"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT,
                                           Fiddle::TYPE_INT, Fiddle::TYPE_INT, Fiddle::TYPE_LONG],
                            Fiddle::TYPE_VOIDP)
MUNMAP = Fiddle::Function.new(LIBC["munmap"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T],
                              Fiddle::TYPE_INT)

def read_own_memory(mem, addr)
  mem.pread(1, addr) # waits in the file system, the memory-map lock held
rescue SystemCallError, EOFError
  nil
end

def map_once
  page = MMAP.call(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
  MUNMAP.call(page, PAGE)
end

def map_in_a_loop
  loop do
    map_once
    sleep 0.001
  end
end

def stalled_leaf(n)
  total = 0
  i = 0
  while i < n
    total += i * i
    i += 1
  end
  total
end

def stalled_spin
  while true
    stalled_leaf(20_000)
  end
end

# Once a thread waits to map memory, whatever holds the GVL and then touches the
# memory map (a thread's stack, a heap that grows, malloc's brk) waits for good and
# takes the spinning thread with it. So both threads are made, and every path they
# take warmed, before the reader starts: after it, only the mapper's call runs.
def start_lock_case(addr, size)
  cold = addr + size - PAGE # a page nobody has touched
  go_read = Queue.new
  go_map = Queue.new
  mem = File.open("/proc/self/mem", "rb")
  Thread.new do
    go_read.pop
    read_own_memory(mem, cold)
  end
  Thread.new do
    3.times { map_once }
    go_map.pop
    map_in_a_loop
  end
  sleep 0.2 # both wait at their queues by then
  GC.start
  go_read.push(true)
  sleep 0.2 # the reader holds the lock by then
  go_map.push(true)
  sleep
end

def main
  path = ARGV.fetch(0)
  file = File.open(path, "rb")
  size = file.size
  mapped = MMAP.call(0, size, PROT_READ, MAP_PRIVATE, file.fileno, 0) # kept while it spins
  abort "rbstall: mmap #{path} failed" if [0, -1, 2**64 - 1].include?(mapped.to_i)
  $stdout.puts "ready"
  $stdout.flush
  Thread.new do
    $stdin.gets
    start_lock_case(mapped.to_i, size)
  end
  stalled_spin
end

main
