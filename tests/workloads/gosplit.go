// SPDX-License-Identifier: Apache-2.0

// A Go program with a known split of its CPU time between two functions:
// main.alpha 70%, main.beta 30%. Both run the same loop on one unit of work
// at a time; each unit goes to alpha with probability 0.7. Units are short
// and chosen at random so that the work never falls into step with the
// sampling period. Usage: gosplit SECONDS.
package main

import (
	"fmt"
	"math/rand"
	"os"
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
	seconds := 5.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	rng := rand.New(rand.NewSource(1))
	for time.Now().Before(deadline) {
		for i := 0; i < 100; i++ {
			if rng.Intn(10) < 7 {
				alpha(1)
			} else {
				beta(1)
			}
		}
	}
	fmt.Println(sink)
}
