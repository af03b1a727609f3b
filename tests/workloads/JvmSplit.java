// SPDX-License-Identifier: Apache-2.0
// A Java workload with a known split, for HotSpot (JDK 17 and later), and the
// shapes a Java profiler must follow: methods of a class, a lambda, a second
// thread, deep recursion. Like tests/workloads/plsplit.pl it measures its own
// truth: each leaf's thread CPU time (ThreadMXBean), around every call.
//
//     java -cp DIR JvmSplit MODE SECONDS
//
// MODE: split (60/30/10 in the main thread), threads (that, and 20/80 of
// leafB and leafC in a thread named "worker"), recursion (1,000 frames deep,
// then the leaves 60/30/10), lambda (the leaves called through a lambda),
// deopt (the leaves called through a MutableCallSite whose target another
// thread replaces every 10 ms: each replacement deoptimizes the compiled code
// that inlined the call, a storm of deoptimizations and recompilations). At
// the end (or on SIGTERM) it appends one line per thread to $EMBER_TRUTH_FILE:
//
//     tid=TID name=main leaf_a=NS leaf_b=NS leaf_c=NS retargets=N
//
// (retargets: how many times deopt mode replaced the call site's target).
// Stacks, root first: JvmSplit.main > JvmSplit.runSplit > JvmSplit.handle >
// JvmSplit.leafA (leafB, leafC); recursion: ... > runSplit > JvmSplit.recurse
// (1,000 deep) > handle > ...; lambda: ... > runSplit > JvmSplit.lambda$... >
// handle > .... The leaves' hot loops stand on one line each (// hot-a, ...),
// calling nothing; the lines of the calls are marked too (// call-a, ...).
import java.io.FileWriter;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.MutableCallSite;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntToLongFunction;

public class JvmSplit {
    static final long UNIT_NS = 1_000_000; // one unit of work: a millisecond of CPU time
    // In deopt mode, 50 microseconds: calls through the call site come often enough for
    // the methods that make them to be compiled (and deoptimized) within seconds.
    static final long DEOPT_UNIT_NS = 50_000;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile boolean stop;
    static final List<long[]> SPENT = new ArrayList<>(); // per thread: tid, a, b, c
    static final List<String> NAMES = new ArrayList<>();
    static long sink;
    static final MethodType HANDLE_TYPE =
        MethodType.methodType(long.class, int.class, long.class, long[].class);
    static final MutableCallSite SITE = new MutableCallSite(HANDLE_TYPE);
    static final MethodHandle VIA_SITE = SITE.dynamicInvoker();
    static volatile long retargets; // SITE's targets replaced (deopt mode)

    static long cpuNs() {
        return MX.getCurrentThreadCpuTime();
    }

    static long leafA(long deadline) {
        long t = 0;
        while (true) {
            for (int i = 0; i < 4000; i++) { t += (long) i * i % 7; } // hot-a
            if (cpuNs() >= deadline) return t;
        }
    }

    static long leafB(long deadline) {
        long t = 0;
        while (true) {
            for (int i = 0; i < 4000; i++) { t = (t + i + 3) & 0xffff; } // hot-b
            if (cpuNs() >= deadline) return t;
        }
    }

    static long leafC(long deadline) {
        long t = 0;
        while (true) {
            for (int i = 0; i < 4000; i++) { t ^= (t << 3) + i; } // hot-c
            if (cpuNs() >= deadline) return t;
        }
    }

    // Runs leaf (0, 1, 2) for budgetNs of CPU time, give or take 30% at random, adding what
    // it took to spent. The jitter keeps the split's period from locking onto the
    // sampling's: compiled, the leaves meet their deadlines to the microsecond, and a
    // 10 ms round sampled every 2 ms would put the samples at the same places each round.
    static long handle(int leaf, long budgetNs, long[] spent) {
        long start = cpuNs(), r;
        long deadline = start + (long) (budgetNs * (0.7 + 0.6 * ThreadLocalRandom.current().nextDouble()));
        if (leaf == 0) r = leafA(deadline); // call-a
        else if (leaf == 1) r = leafB(deadline); // call-b
        else r = leafC(deadline); // call-c
        spent[1 + leaf] += cpuNs() - start;
        return r;
    }

    // The call through the call site, in a method of its own that the JIT compiles (and
    // inlines the site's target into) within seconds.
    static long viaSite(int leaf, long budgetNs, long[] spent) {
        try {
            return (long) VIA_SITE.invokeExact(leaf, budgetNs, spent);
        } catch (Throwable t) {
            throw new RuntimeException(t);
        }
    }

    static long recurse(int depth, long[] spent, int[] units) {
        if (depth > 0) return recurse(depth - 1, spent, units) + 1;
        long r = 0;
        for (int leaf = 0; leaf < 3; leaf++) r += handle(leaf, units[leaf] * UNIT_NS, spent);
        return r;
    }

    static void runSplit(String mode, int[] units, long[] spent) {
        IntToLongFunction viaLambda = leaf -> handle(leaf, units[leaf] * UNIT_NS, spent);
        while (!stop) {
            if (mode.equals("recursion")) {
                sink += recurse(1000, spent, units);
                continue;
            }
            for (int leaf = 0; leaf < 3; leaf++) {
                if (units[leaf] == 0) continue;
                if (mode.equals("deopt")) {
                    sink += viaSite(leaf, units[leaf] * DEOPT_UNIT_NS, spent);
                    continue;
                }
                sink += mode.equals("lambda") ? viaLambda.applyAsLong(leaf)
                                              : handle(leaf, units[leaf] * UNIT_NS, spent);
            }
        }
    }

    static long[] register(String name) throws Exception {
        String self = Files.readSymbolicLink(Paths.get("/proc/thread-self")).toString();
        long[] spent = {Long.parseLong(self.substring(self.lastIndexOf('/') + 1)), 0, 0, 0};
        synchronized (SPENT) {
            SPENT.add(spent);
            NAMES.add(name);
        }
        return spent;
    }

    static void writeTruth() {
        String path = System.getenv("EMBER_TRUTH_FILE");
        if (path == null) return;
        synchronized (SPENT) {
            try (FileWriter w = new FileWriter(path, true)) {
                for (int i = 0; i < SPENT.size(); i++) {
                    long[] s = SPENT.get(i);
                    w.write(String.format("tid=%d name=%s leaf_a=%d leaf_b=%d leaf_c=%d "
                                              + "retargets=%d%n",
                                          s[0], NAMES.get(i), s[1], s[2], s[3], retargets));
                }
            } catch (Exception e) {
                System.err.println("JvmSplit: " + path + ": " + e);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        long seconds = Long.parseLong(args[1]);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            writeTruth();
        }));
        if (mode.equals("deopt")) {
            // handle, behind a new method handle each time: replacing a call site's target
            // deoptimizes every compiled method that inlined it.
            MethodHandle handle = MethodHandles.lookup().findStatic(JvmSplit.class, "handle",
                                                                    HANDLE_TYPE);
            MethodHandle same = MethodHandles.identity(long.class);
            SITE.setTarget(handle);
            Thread storm = new Thread(() -> {
                while (!stop) {
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                    }
                    SITE.setTarget(MethodHandles.filterReturnValue(handle, same));
                    retargets++;
                }
            }, "storm");
            storm.setDaemon(true);
            storm.start();
        }
        if (mode.equals("threads")) {
            Thread worker = new Thread(() -> {
                try {
                    runSplit("split", new int[] {0, 2, 8}, register("worker"));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "worker");
            worker.setDaemon(true);
            worker.start();
        }
        Thread timer = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000);
            } catch (InterruptedException e) {
            }
            stop = true;
        });
        timer.setDaemon(true);
        timer.start();
        runSplit(mode, new int[] {6, 3, 1}, register("main"));
        System.exit(0);
    }
}
