# SPDX-License-Identifier: Apache-2.0
# A Perl process whose memory cannot be read, for test_perl.py (the Perl twin
# of tests/workloads/rbstall.rb and pystall.py).
#
#     perl plstall.pl FILE
#
# maps FILE (on the test's FUSE file system), prints "ready" and spins in
# Stall::spin > Stall::leaf. A line on stdin starts the lock case, as
# tests/workloads/stall_app.c does it: one thread reads this process's own
# memory at a page of FILE nobody has touched, through /proc/self/mem (the
# kernel reads the page from the file system while it holds the process's
# memory-map lock, and the file system does not answer), and another maps
# memory in a loop (it waits for that lock, and so does every reader of the
# process's memory after it: /proc/PID/mem). The spinning thread touches no
# new memory (a page fault would wait for the lock too).
use strict;
use warnings;
use threads;

use constant { PAGE => 4096, SYS_MMAP => 9, SYS_MUNMAP => 11, PROT_READ => 1,
               PROT_WRITE => 2, MAP_PRIVATE => 2, MAP_ANONYMOUS => 0x20 };

package Stall;

sub leaf {
    my ($n) = @_;
    my $total = 0;
    for (my $i = 0; $i < $n; $i++) { $total += $i * $i; }
    return $total;
}

sub spin {
    while (1) { leaf(20_000); }
}

package main;

sub read_own_memory {
    my ($addr) = @_;
    open(my $mem, '<:raw', '/proc/self/mem') or return;
    sysseek($mem, $addr, 0) or return;
    my $byte;
    sysread($mem, $byte, 1); # waits in the file system, the memory-map lock held
}

sub map_in_a_loop {
    select(undef, undef, undef, 0.2); # the reader holds the lock by then
    while (1) {
        my $page = syscall(SYS_MMAP, 0, PAGE, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        syscall(SYS_MUNMAP, $page, PAGE) if $page > 0;
        select(undef, undef, undef, 0.001);
    }
}

my $path = shift @ARGV or die "usage: plstall.pl FILE\n";
open(my $file, '<', $path) or die "plstall: $path: $!\n";
my $size = -s $file;
my $mapped = syscall(SYS_MMAP, 0, $size, PROT_READ, MAP_PRIVATE, fileno($file), 0);
die "plstall: mmap $path failed\n" if $mapped <= 0;
$| = 1;
print "ready\n";
threads->create(sub {
    <STDIN>;
    my $cold = $mapped + $size - PAGE; # a page nobody has touched
    threads->create(\&read_own_memory, $cold)->detach;
    threads->create(\&map_in_a_loop)->detach;
})->detach;
Stall::spin();
