<?php
// SPDX-License-Identifier: Apache-2.0
// One php-fpm request with a known split, for test_php.py: about 200 ms of CPU in
// Fpm\Cart::leaf_a, leaf_b and leaf_c (60/30/10, in units of a millisecond in random
// order), each leaf's CPU time measured around its call (getrusage: a worker runs one
// request at a time on one thread). The response is the truth, one line:
//
//     leaf_a=NS leaf_b=NS leaf_c=NS
//
// The test serves copies of this file whose namespace it renames (Alpha, Beta) from one
// worker, in turns: without opcache each request compiles its file again and frees its
// functions at its end, so the next request's functions can take the same addresses.
//
// Stacks, root first: phpfpm.php > Fpm\serve > Fpm\Cart::handle > Fpm\Cart::leaf_a.

namespace Fpm;

const UNIT_NS = 1000000;

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

function serve(): string
{
    $cart = new Cart();
    $truth = ['leaf_a' => 0, 'leaf_b' => 0, 'leaf_c' => 0];
    $order = array_merge(array_fill(0, 120, 'leaf_a'), array_fill(0, 60, 'leaf_b'),
                         array_fill(0, 20, 'leaf_c'));
    shuffle($order);
    foreach ($order as $kind) {
        $start = cpu_ns();
        $cart->handle($kind, 1); // call-handle
        $truth[$kind] += cpu_ns() - $start;
    }
    return "leaf_a={$truth['leaf_a']} leaf_b={$truth['leaf_b']} leaf_c={$truth['leaf_c']}\n";
}

echo serve(); // call-serve
