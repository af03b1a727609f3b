# SPDX-License-Identifier: Apache-2.0
# A Ruby workload with a known split, for CRuby 3.1 and later (and the shapes
# a Ruby profiler must follow: methods of a class in a module, a block called
# by a C function between two Ruby frames, threads, deep recursion, a C
# extension, objects moved by GC.compact). Like tests/workloads/pysplit.py it
# measures its own truth: the thread CPU time spent in each leaf, around
# every call.
#
#     ruby rbsplit.rb MODE SECONDS
#
# MODE: split (60/30/10 in the main thread), threads (two threads, 70/20/10
# and 10/30/60), recursion (300 frames deep, then the leaves 60/30/10), cext
# (Zlib::Deflate.deflate, a C extension's method, under a Ruby method), compact
# (the split while another thread calls GC.compact every 100 ms and the loop
# leaves garbage behind). At the end (or on SIGTERM) it appends one line per
# thread to $EMBER_TRUTH_FILE:
#
#     tid=TID name=NAME leaf_a=NS leaf_b=NS leaf_c=NS
#
# (compact mode adds compactions=N moved=N: how many objects GC.compact moved).
# With $EMBER_STACKPROF=PATH the run is also profiled by stackprof (cpu mode,
# 1 ms, raw) and its results are written to PATH as JSON at the end, for the
# test's comparison with a peer.
#
# Stacks, root first (the names rb_profile_frame_full_label gives, as
# stackprof prints them; a block's frame is "block in ..."):
#
#   split:   <main> > Object#main > Object#run_split > Integer#times (C) >
#            block in Object#run_split > Shop::Cart#handle_request > Shop::Cart#leaf_a
#   threads: block in Object#run_threads > Object#run_split > ... (the same)
#
# The leaves are plain `while` loops: no block, no method call and no C
# function runs inside the hot loop, which stands on one line (# hot-a, ...),
# so the innermost frame of nearly every leaf sample is the leaf itself at
# that line. The lines of the calls are marked too (# call-a, ...).

UNIT_NS = 1_000_000 # one unit of work: a millisecond of CPU time
$stop = false

module Shop
  def self.cpu_ns
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :nanosecond)
  end

  class Cart
    def leaf_a(deadline)
      total = 0
      while true
        i = 0
        while i < 4000 do total += i * i % 7; i += 1 end # hot-a
        return total if Shop.cpu_ns >= deadline
      end
    end

    def leaf_b(deadline)
      total = 0
      while true
        i = 0
        while i < 4000 do total = (total + i + 3) & 0xffff; i += 1 end # hot-b
        return total if Shop.cpu_ns >= deadline
      end
    end

    def leaf_c(deadline)
      total = 0
      while true
        i = 0
        while i < 4000 do total += i / 3; i += 1 end # hot-c
        return total if Shop.cpu_ns >= deadline
      end
    end

    def handle_request(kind, units)
      deadline = Shop.cpu_ns + units * UNIT_NS
      case kind
      when :leaf_a then leaf_a(deadline) # call-a
      when :leaf_b then leaf_b(deadline) # call-b
      else leaf_c(deadline) # call-c
      end
    end

    def compress(data)
      Zlib::Deflate.deflate(data, 9).bytesize # call-zlib
    end
  end
end

class Truth
  attr_reader :ns, :extra

  def initialize(name)
    @name = name
    @ns = { leaf_a: 0, leaf_b: 0, leaf_c: 0 }
    @tid = Thread.current.native_thread_id
    @extra = {}
  end

  def line
    fields = ["tid=#{@tid}", "name=#{@name}"]
    fields += @ns.sort.map { |leaf, ns| "#{leaf}=#{ns}" }
    fields += @extra.map { |k, v| "#{k}=#{v}" }
    fields.join(" ")
  end
end

TRUTHS = []
TRUTHS_LOCK = Mutex.new

def new_truth(name)
  truth = Truth.new(name)
  TRUTHS_LOCK.synchronize { TRUTHS << truth }
  truth
end

# Work of random length outside the leaves: rounds drift against the sampling
# clock. With garbage, it leaves objects behind for GC.compact to move.
def dither(rng, garbage)
  x = 0
  n = rng.rand(400)
  i = 0
  while i < n
    x += i
    i += 1
  end
  garbage << ("g" * rng.rand(64)) << [x, n] if garbage
  garbage.shift(garbage.size - 2000) if garbage && garbage.size > 4000
  x
end

# plan: {leaf => units per round}; rounds in random order, until $stop. Each
# unit is one call of handle_request from a block that Integer#times (a C
# function) calls: a native frame between two Ruby frames.
def run_split(name, plan, seed, garbage: nil)
  truth = new_truth(name)
  rng = Random.new(seed)
  cart = Shop::Cart.new
  order = plan.flat_map { |leaf, units| [leaf] * units }
  until $stop
    order.shuffle!(random: rng)
    order.size.times do |i|
      kind = order[i]
      start = Shop.cpu_ns
      cart.handle_request(kind, 1) # call-block
      truth.ns[kind] += Shop.cpu_ns - start
      dither(rng, garbage)
    end
  end
  truth
end

def run_main_split
  run_split("main", { leaf_a: 6, leaf_b: 3, leaf_c: 1 }, 1)
end

def run_threads
  plans = [{ leaf_a: 7, leaf_b: 2, leaf_c: 1 }, { leaf_a: 1, leaf_b: 3, leaf_c: 6 }]
  workers = plans.each_with_index.map do |plan, i|
    Thread.new { run_split("worker-#{i}", plan, i + 1) } # call-thread
  end
  workers.each(&:join)
end

def recurse(cart, depth, kind)
  return cart.handle_request(kind, 1) if depth.zero? # call-bottom
  recurse(cart, depth - 1, kind) + 1 # call-rec
end

def run_recursion
  truth = new_truth("recursion")
  rng = Random.new(3)
  cart = Shop::Cart.new
  order = [:leaf_a] * 6 + [:leaf_b] * 3 + [:leaf_c]
  until $stop
    order.shuffle!(random: rng)
    order.each do |kind|
      start = Shop.cpu_ns
      recurse(cart, 300, kind)
      truth.ns[kind] += Shop.cpu_ns - start
    end
  end
end

# The C extension's work (zlib's deflate) is counted as leaf_a's.
def run_cext
  require "zlib"
  truth = new_truth("cext")
  rng = Random.new(7)
  data = Array.new(1 << 16) { rng.rand(16).chr }.join
  cart = Shop::Cart.new
  until $stop
    start = Shop.cpu_ns
    cart.compress(data)
    truth.ns[:leaf_a] += Shop.cpu_ns - start
  end
end

# The split while another thread compacts the heap every 100 ms: the iseqs,
# method entries, strings and classes a profiler reads move under it. GC.compact
# moves objects from the heap's end into its holes, few of them once the heap is
# settled; GC.verify_compaction_references(toward: :empty), the same compaction
# as Ruby's own tests run it, moves every object that can move to other pages.
def run_compact
  compactions = moved = 0
  every_object = GC.respond_to?(:verify_compaction_references)
  compactor = Thread.new do
    until $stop
      sleep 0.1
      every_object ? GC.verify_compaction_references(toward: :empty) : GC.compact
      compactions += 1
      moved += GC.latest_compact_info[:moved].values.sum
    end
  end
  truth = run_split("compact", { leaf_a: 6, leaf_b: 3, leaf_c: 1 }, 1, garbage: [])
  compactor.join
  truth.extra[:compactions] = compactions
  truth.extra[:moved] = moved
end

def main
  mode = ARGV.fetch(0)
  seconds = Float(ARGV.fetch(1))
  runs = { "split" => :run_main_split, "threads" => :run_threads, "recursion" => :run_recursion,
           "cext" => :run_cext, "compact" => :run_compact }
  abort "usage: rbsplit.rb #{runs.keys.join('|')} SECONDS" unless runs.key?(mode)
  Signal.trap("TERM") { $stop = true }
  timer = Thread.new { sleep seconds; $stop = true }
  stackprof = ENV["EMBER_STACKPROF"]
  if stackprof
    require "json"
    require "stackprof"
    StackProf.start(mode: :cpu, interval: 1000, raw: true)
  end
  send(runs[mode])
  if stackprof
    StackProf.stop
    File.write(stackprof, JSON.generate(StackProf.results))
  end
  timer.kill
  path = ENV["EMBER_TRUTH_FILE"]
  File.open(path, "a") { |f| TRUTHS.each { |t| f.puts(t.line) } } if path
end

main
