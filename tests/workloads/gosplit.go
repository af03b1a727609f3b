// SPDX-License-Identifier: Apache-2.0

// A Go program with a known split of its CPU time between two functions:
// main.alpha 70%, main.beta 30%. Both run the same loop; the split comes
// from how many units each is asked for. Usage: gosplit SECONDS.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

const unit = 200000

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
	seconds := 5.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for time.Now().Before(deadline) {
		alpha(7)
		beta(3)
	}
	fmt.Println(sink)
}
