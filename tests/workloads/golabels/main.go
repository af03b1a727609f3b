// SPDX-License-Identifier: Apache-2.0

// Goroutines that run under pprof labels (pprof.Do), for ember's test of goroutine labels:
// two workers each run spanA under the labels span=a, worker=N, then spanB under span=b,
// worker=N, then unlabelled with none, over and over, for SECONDS.
//
//	golabels SECONDS
package main

import (
	"context"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

var sink int

func burn(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			sink += i * i
		}
	}
}

//go:noinline
func spanA(d time.Duration) { burn(d) }

//go:noinline
func spanB(d time.Duration) { burn(d) }

//go:noinline
func unlabelled(d time.Duration) { burn(d) }

func main() {
	seconds, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			ctx := context.Background()
			for time.Now().Before(deadline) {
				pprof.Do(ctx, pprof.Labels("span", "a", "worker", worker), func(context.Context) {
					spanA(20 * time.Millisecond)
				})
				pprof.Do(ctx, pprof.Labels("span", "b", "worker", worker), func(context.Context) {
					spanB(10 * time.Millisecond)
				})
				unlabelled(5 * time.Millisecond)
			}
		}(strconv.Itoa(w))
	}
	wg.Wait()
}
