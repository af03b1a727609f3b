// SPDX-License-Identifier: Apache-2.0

// A Go program with a known split of its CPU time between two functions:
// main.alpha about 70%, main.beta about 30%. Both run the same loop on one
// unit of work at a time; each unit goes to alpha with probability 0.7. Units
// are short and chosen at random so that the work never falls into step with
// the sampling period. Usage: gosplit SECONDS.
//
// Ground truth, as the C workloads keep it (known_split.h): the main
// goroutine stays on one thread, whose CPU clock is read around every call;
// with EMBER_TRUTH_FILE set, one line is appended at exit:
//
//	main.alpha=NS main.beta=NS
//
// SIGTERM and SIGINT end the run early and still write the line.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const unit = 20000

// CLOCK_THREAD_CPUTIME_ID: the calling thread's CPU time.
const clockThreadCPUTime = 3

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

// threadNS is this thread's CPU time in nanoseconds.
func threadNS() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func main() {
	runtime.LockOSThread()
	seconds := 5.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	var stop int32
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		atomic.StoreInt32(&stop, 1)
	}()
	var spent [2]int64
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	rng := rand.New(rand.NewSource(1))
	for atomic.LoadInt32(&stop) == 0 && time.Now().Before(deadline) {
		for i := 0; i < 100; i++ {
			toAlpha := rng.Intn(10) < 7
			t0 := threadNS()
			if toAlpha {
				alpha(1)
				spent[0] += threadNS() - t0
			} else {
				beta(1)
				spent[1] += threadNS() - t0
			}
		}
	}
	if path := os.Getenv("EMBER_TRUTH_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintf(f, "main.alpha=%d main.beta=%d\n", spent[0], spent[1])
			f.Close()
		}
	}
	fmt.Println(sink)
}
