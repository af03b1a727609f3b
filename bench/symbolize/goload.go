// SPDX-License-Identifier: Apache-2.0

// A Go program whose time is spread over much of the standard library
// (JSON, regular expressions, compression, hashing, sorting, formatting,
// maps), so that samples of it are real addresses across a Go binary.
// Usage: goload SECONDS.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

type record struct {
	Name  string            `json:"name"`
	Score float64           `json:"score"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
}

var sink int

func round(i int, re *regexp.Regexp) {
	recs := make([]record, 64)
	for k := range recs {
		recs[k] = record{
			Name:  fmt.Sprintf("item-%d-%d", i, k),
			Score: float64(i*k) / 7.0,
			Tags:  strings.Fields("alpha beta gamma delta " + strconv.Itoa(k)),
			Attrs: map[string]string{"k": strconv.Itoa(k), "i": strconv.Itoa(i)},
		}
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].Name < recs[b].Name })
	data, _ := json.Marshal(recs)
	var back []record
	_ = json.Unmarshal(data, &back)
	sink += len(re.FindAllString(string(data), -1))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	zr, _ := gzip.NewReader(&buf)
	out, _ := io.ReadAll(zr)
	sum := sha256.Sum256(out)
	sink += int(sum[0]) + len(back)
}

func main() {
	seconds := 5.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	re := regexp.MustCompile(`"name":"item-(\d+)-(\d+)"`)
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for i := 0; time.Now().Before(deadline); i++ {
		round(i, re)
	}
	fmt.Println(sink)
}
