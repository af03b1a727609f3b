<?php
// SPDX-License-Identifier: Apache-2.0
// A PHP workload with a known split, for PHP 8.2 (and the shapes a PHP
// profiler must follow: methods of a namespaced class, a closure, an internal
// function calling back into PHP between two user frames, deep recursion).
// Like tests/workloads/rbsplit.rb it measures its own truth: the CPU time
// spent in each leaf, around every call (getrusage: the CLI runs one thread,
// so the process's CPU time is the thread's).
//
//     php phpsplit.php MODE SECONDS
//
// MODE: split (60/30/10), recursion (300 frames deep, then the leaves
// 60/30/10). At the end (or on SIGTERM) it appends one line to
// $EMBER_TRUTH_FILE (or, without it, writes it out):
//
//     tid=TID name=main leaf_a=NS leaf_b=NS leaf_c=NS
//
// Under php-fpm (a web request: no arguments) it does one request's work, split
// mode for 200 ms, and answers with that line. Without opcache each request
// compiles the file again and frees its functions at its end.
//
// With $EMBER_EXCIMER=PATH the run is also profiled by Excimer (CPU time,
// 1 ms) and, at the end, each of its samples' leaf frame (name and line)
// and its count are written to PATH as JSON, for the test's comparison with a
// peer.
//
// Stacks, root first (as ember names them: a method Class::name, a closure
// {closure} qualified by the class it was made in, file-scope code by its
// file):
//
//   split:      phpsplit.php > Shop\main > Shop\run_split > array_map (C) >
//               Shop\{closure} > Shop\Cart::handle > Shop\Cart::leaf_a
//   recursion:  ... > Shop\recurse (300 deep) > Shop\run_split > ...
//
// The leaves' hot loops stand on one line each (// hot-a, ...), so the
// innermost frame of nearly every leaf sample is the leaf itself at that
// line. The lines of the calls are marked too (// call-a, ...).

namespace Shop;

const UNIT_NS = 1000000; // one unit of work: a millisecond of CPU time

function cpu_ns(): int
{
    $r = getrusage();
    return ($r['ru_utime.tv_sec'] + $r['ru_stime.tv_sec']) * 1000000000 +
        ($r['ru_utime.tv_usec'] + $r['ru_stime.tv_usec']) * 1000;
}

class Cart
{
    public function leaf_a(int $deadline): int
    {
        $t = 0;
        while (true) {
            for ($i = 0; $i < 4000; $i++) { $t += $i * $i % 7; } // hot-a
            if (cpu_ns() >= $deadline) {
                return $t;
            }
        }
    }

    public function leaf_b(int $deadline): int
    {
        $t = 0;
        while (true) {
            for ($i = 0; $i < 4000; $i++) { $t = ($t + $i + 3) & 0xffff; } // hot-b
            if (cpu_ns() >= $deadline) {
                return $t;
            }
        }
    }

    public function leaf_c(int $deadline): int
    {
        $t = 0;
        while (true) {
            for ($i = 0; $i < 4000; $i++) { $t += intdiv($i, 3); } // hot-c
            if (cpu_ns() >= $deadline) {
                return $t;
            }
        }
    }

    public function handle(string $kind, int $units): int
    {
        $deadline = cpu_ns() + $units * UNIT_NS;
        switch ($kind) {
            case 'leaf_a':
                return $this->leaf_a($deadline); // call-a
            case 'leaf_b':
                return $this->leaf_b($deadline); // call-b
            default:
                return $this->leaf_c($deadline); // call-c
        }
    }
}

$GLOBALS['stop'] = false;

// Work of random length outside the leaves: rounds drift against the sampling clock.
function dither(): int
{
    $x = 0;
    $n = mt_rand(0, 400);
    for ($i = 0; $i < $n; $i++) {
        $x += $i;
    }
    return $x;
}

// plan: [leaf => units per round]; rounds in random order until the deadline. Each unit is
// one call of Cart::handle from a closure that array_map (an internal function) calls: a
// native frame between two PHP frames.
function run_split(array $plan, float $until, array &$truth): void
{
    $cart = new Cart();
    $order = [];
    foreach ($plan as $leaf => $units) {
        $order = array_merge($order, array_fill(0, $units, $leaf));
    }
    while (!$GLOBALS['stop'] && microtime(true) < $until) {
        shuffle($order);
        array_map(function (string $kind) use ($cart, &$truth): int { // call-map
            $start = cpu_ns();
            $cart->handle($kind, 1); // call-closure
            $truth[$kind] += cpu_ns() - $start;
            return dither();
        }, $order);
    }
}

function recurse(int $depth, array $plan, float $until, array &$truth): void
{
    if ($depth > 0) {
        recurse($depth - 1, $plan, $until, $truth); // call-recurse
        return;
    }
    run_split($plan, $until, $truth);
}

function excimer_leaves(\ExcimerProfiler $prof, string $path): void
{
    $out = [];
    foreach ($prof->getLog() as $entry) {
        foreach ($entry->getTrace() as $frame) {
            $fn = ($frame['class'] ?? '') . '::' . ($frame['function'] ?? '');
            if (preg_match('/::(leaf_[abc])$/', $fn, $m)) {
                $line = $frame['line'] ?? 0;
                $out[$m[1]]['samples'] = ($out[$m[1]]['samples'] ?? 0) + $entry->getEventCount();
                $out[$m[1]]['lines'][$line] = ($out[$m[1]]['lines'][$line] ?? 0) + 1;
                $out[$m[1]]['name'] = ltrim($fn, ':');
                break;
            }
        }
    }
    file_put_contents($path, json_encode($out));
}

function main(array $argv): void
{
    $mode = $argv[1] ?? 'split';
    $until = microtime(true) + (float)($argv[2] ?? 10);
    $truth = ['leaf_a' => 0, 'leaf_b' => 0, 'leaf_c' => 0];
    $plan = ['leaf_a' => 6, 'leaf_b' => 3, 'leaf_c' => 1];
    $prof = null;
    if (function_exists('pcntl_async_signals')) { // the CLI's; php-fpm has none
        pcntl_async_signals(true);
        pcntl_signal(SIGTERM, function () {
            $GLOBALS['stop'] = true;
        });
    }
    if (getenv('EMBER_EXCIMER')) {
        $prof = new \ExcimerProfiler();
        $prof->setEventType(EXCIMER_CPU);
        $prof->setPeriod(0.001);
        $prof->setMaxDepth(1000);
        $prof->start();
    }
    if ($mode === 'recursion') {
        recurse(300, $plan, $until, $truth);
    } else {
        run_split($plan, $until, $truth);
    }
    if ($prof) {
        $prof->stop();
        excimer_leaves($prof, getenv('EMBER_EXCIMER'));
    }
    $line = sprintf("tid=%d name=main leaf_a=%d leaf_b=%d leaf_c=%d\n", getmypid(),
                    $truth['leaf_a'], $truth['leaf_b'], $truth['leaf_c']);
    if (getenv('EMBER_TRUTH_FILE')) {
        file_put_contents(getenv('EMBER_TRUTH_FILE'), $line, FILE_APPEND);
    } else {
        echo $line;
    }
}

// Under php-fpm (a request: no arguments) one request's work, 200 ms, answered with its
// truth line.
main(PHP_SAPI === 'fpm-fcgi' ? ['', 'split', '0.2'] : $argv); // call-main
