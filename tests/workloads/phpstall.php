<?php
// SPDX-License-Identifier: Apache-2.0
// A PHP process whose memory cannot be read, for test_php.py (the PHP twin of
// tests/workloads/plstall.pl and rbstall.rb).
//
//     php phpstall.php FILE
//
// maps FILE (on the test's FUSE file system, through FFI's mmap: PHP itself
// maps no file), prints "ready" and spins in Stall\spin > Stall\leaf. A line on
// stdin starts the lock case. The CLI has one thread, so two helper processes
// do what the other runtimes' threads do: one reads this process's memory at a
// page of FILE nobody has touched, through /proc/PID/mem (the kernel reads the
// page from the file system while it holds this process's memory-map lock, and
// the file system does not answer); the other then asks for that lock to write
// (writing /proc/PID/clear_refs takes it), and waits, and so does every reader
// of this process's memory after it. The spinning loop maps no new memory.

namespace Stall;

function leaf(int $n): int
{
    $total = 0;
    for ($i = 0; $i < $n; $i++) { $total += $i * $i; }
    return $total;
}

function spin(): void
{
    while (true) { leaf(20000); }
}

const PAGE = 4096;
const PROT_READ = 1;
const MAP_PRIVATE = 2;
const O_RDONLY = 0;

$path = $argv[1] ?? null;
if ($path === null) {
    fwrite(STDERR, "usage: phpstall.php FILE\n");
    exit(2);
}
// mmap's result declared as a number: PHP gets the address itself.
$libc = \FFI::cdef("intptr_t mmap(void *addr, size_t len, int prot, int flags, int fd, long off);
                    int open(const char *path, int flags);", "libc.so.6");
$size = filesize($path);
$fd = $libc->open($path, O_RDONLY);
if ($size === false || $fd < 0) {
    fwrite(STDERR, "phpstall: $path cannot be opened\n");
    exit(1);
}
$base = $libc->mmap(null, $size, PROT_READ, MAP_PRIVATE, $fd, 0);
if ($base <= 0) {
    fwrite(STDERR, "phpstall: mmap $path failed\n");
    exit(1);
}
echo "ready\n";
// Not yet: the test arms the file system first.
fgets(STDIN);
$pid = getmypid();
$cold = $base + $size - PAGE; // a page nobody has touched
$reader = "\$f = fopen('/proc/$pid/mem', 'r'); fseek(\$f, $cold); fread(\$f, 1);";
$writer = "usleep(200000); file_put_contents('/proc/$pid/clear_refs', '5');";
$helpers = [];
foreach ([$reader, $writer] as $code) {
    $helpers[] = proc_open([PHP_BINARY, '-n', '-r', $code], [], $pipes);
}
spin();
