// SPDX-License-Identifier: Apache-2.0

// Writes a CPU profile with Go's own runtime/pprof (not ember): for the tests of ember's pprof
// reader, a profile of another writer. Its work is gosplit.go's: main.alpha about 70%,
// main.beta about 30%, one unit at a time. Usage: gopprof SECONDS PROFILE.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
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
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	rng := rand.New(rand.NewSource(1))
	for time.Now().Before(deadline) {
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
