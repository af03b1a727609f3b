// SPDX-License-Identifier: Apache-2.0

// Writes a CPU profile with Go's own runtime/pprof (not ember): for the tests of ember's pprof
// reader, a profile of another writer. Its work is gosplit.go's: main.alpha about 70%,
// main.beta about 30%, one unit at a time, until the process has used SECONDS of CPU time (not
// of the wall clock: a loaded host would give it few samples). Usage: gopprof SECONDS PROFILE.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
)

const unit = 20000

var sink uint64

//go:noinline
func alpha(units int) {
	for i := 0; i < units*unit; i++ {
		sink += uint64(i) ^ (sink >> 3)
	}
}

//go:noinline
func beta(units int) {
	for i := 0; i < units*unit; i++ {
		sink += uint64(i) ^ (sink >> 3)
	}
}

// cpuSeconds is the CPU time the process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 1e9
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gopprof SECONDS PROFILE")
		os.Exit(2)
	}
	seconds, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, err := os.Create(os.Args[2])
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewSource(1))
	for cpuSeconds() < seconds {
		if rng.Intn(10) < 7 {
			alpha(1)
		} else {
			beta(1)
		}
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(sink)
}
