# SPDX-License-Identifier: Apache-2.0
# A Perl workload with a known split, for perl 5.36 (and the shapes a Perl
# profiler must follow: subs of a package, an anonymous sub, a C function
# between two Perl frames, deep recursion). Like tests/workloads/rbsplit.rb
# it measures its own truth: the thread CPU time spent in each leaf, around
# every call.
#
#     perl plsplit.pl MODE SECONDS
#
# MODE: split (60/30/10), recursion (300 frames deep, then the leaves
# 60/30/10). At the end (or on SIGTERM) it appends one line to
# $EMBER_TRUTH_FILE:
#
#     tid=TID name=main leaf_a=NS leaf_b=NS leaf_c=NS
#
# Stacks, root first (the names caller() gives):
#
#   split:     main (the file) > Shop::main > Shop::run_split >
#              List::Util::reduce (C: XS_List__Util_reduce in List/Util.so, which
#              runs its block through MULTICALL) > Shop::__ANON__ (the block) >
#              Shop::Cart::handle > Shop::Cart::leaf_a
#   recursion: ... > Shop::run_split > Shop::recurse (300 deep) > Shop::Cart::handle > ...
#
# The leaves' hot loops stand on one line each (# hot-a, ...), calling
# nothing, so the innermost frame of nearly every leaf sample is the leaf at
# that line. The lines of the calls are marked too (# call-a, ...).
use strict;
use warnings;

my $UNIT_NS = 1_000_000; # one unit of work: a millisecond of CPU time
my $stop = 0;
my %spent = (leaf_a => 0, leaf_b => 0, leaf_c => 0);

package Shop::Cart;
use Time::HiRes qw(clock_gettime CLOCK_THREAD_CPUTIME_ID);

sub new { return bless {}, shift }

sub cpu_ns { return int(clock_gettime(CLOCK_THREAD_CPUTIME_ID) * 1e9) }

sub leaf_a {
    my ($self, $deadline) = @_;
    my $total = 0;
    while (1) {
        for my $i (1 .. 4000) { $total += $i * $i % 7 } # hot-a
        return $total if cpu_ns() >= $deadline;
    }
}

sub leaf_b {
    my ($self, $deadline) = @_;
    my $total = 0;
    while (1) {
        for my $i (1 .. 4000) { $total = ($total + $i + 3) & 0xffff } # hot-b
        return $total if cpu_ns() >= $deadline;
    }
}

sub leaf_c {
    my ($self, $deadline) = @_;
    my $total = 0;
    while (1) {
        for my $i (1 .. 4000) { $total += int($i / 3) } # hot-c
        return $total if cpu_ns() >= $deadline;
    }
}

sub handle {
    my ($self, $kind, $units) = @_;
    my $start = cpu_ns();
    my $deadline = $start + $units * $UNIT_NS;
    # One statement per call: a block's only statement has no COP of its own (its line would
    # be the enclosing if's).
    my $r = 0;
    $r = $self->leaf_a($deadline) if $kind eq 'a'; # call-a
    $r = $self->leaf_b($deadline) if $kind eq 'b'; # call-b
    $r = $self->leaf_c($deadline) if $kind eq 'c'; # call-c
    $spent{"leaf_$kind"} += cpu_ns() - $start;
    return $r & 1;
}

package Shop;
use List::Util qw(reduce);
no warnings "recursion"; # 300 deep on purpose

my @SCHEDULE = qw(a a a a a a b b b c); # 60/30/10

sub recurse {
    my ($cart, $depth) = @_;
    return recurse($cart, $depth - 1) + 0 if $depth > 0; # recurse
    my $n = 0;
    $n += $cart->handle($_, 1) for @SCHEDULE;
    return $n;
}

sub run_split {
    my ($mode, $end) = @_;
    my $cart = Shop::Cart->new;
    while (!$stop && time() < $end) {
        if ($mode eq 'recursion') {
            recurse($cart, 300);
            next;
        }
        # The block is an anonymous sub, run by List::Util's C code (MULTICALL).
        my $n = reduce { $a + $cart->handle($b, 1) } 0, @SCHEDULE; # reduce
    }
}

sub main {
    my ($mode, $seconds) = @_;
    local $SIG{TERM} = sub { $stop = 1 };
    run_split($mode, time() + $seconds); # run
    if (my $path = $ENV{EMBER_TRUTH_FILE}) {
        open(my $fh, '>>', $path) or die "$path: $!";
        printf $fh "tid=%d name=main leaf_a=%d leaf_b=%d leaf_c=%d\n", $$,
            $spent{leaf_a}, $spent{leaf_b}, $spent{leaf_c};
        close($fh);
    }
}

package main;

Shop::main($ARGV[0] // 'split', $ARGV[1] // 30); # main
