// SPDX-License-Identifier: Apache-2.0

// otlpcheck reads binary OTLP ExportProfilesServiceRequests (one per file, as
// ember writes .otlp files; gzip-compressed ones too) and says whether Grafana
// Pyroscope and Parca would take them: it decodes them as both do (protobuf-go,
// opentelemetry-proto Go v1.10.0 / profiles v0.3.0) and applies our reading of
// their intake rules (parca.go, pyroscope.go).
//
//	otlpcheck [--mode pyroscope|parca|all] [--json] [--pyroscope-sanitize-labels] FILE...
//
// Exit status: 0 every file passes, 1 a file is rejected, 2 usage or I/O error.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	collpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// Pyroscope reads at most its ingestion body limit; we cap the decompressed
// size likewise so a gzip bomb cannot exhaust memory.
const maxInput = 256 << 20

type parcaResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

type report struct {
	File      string       `json:"file"`
	Decode    string       `json:"decode"`
	Parca     *parcaResult `json:"parca,omitempty"`
	Pyroscope *pyroResult  `json:"pyroscope,omitempty"`
}

func (r *report) ok() bool {
	return r.Decode == "ok" && (r.Parca == nil || r.Parca.OK) && (r.Pyroscope == nil || r.Pyroscope.OK)
}

func readRequest(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		if data, err = io.ReadAll(io.LimitReader(zr, maxInput+1)); err != nil {
			return nil, fmt.Errorf("gunzip: %w", err)
		}
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("over %d bytes", maxInput)
	}
	return data, nil
}

// check decodes one request and runs the selected backends' rules on it.
func check(name string, data []byte, mode string, sanitize bool) report {
	r := report{File: name, Decode: "ok"}
	req := &collpb.ExportProfilesServiceRequest{}
	// Both backends decode with proto.Unmarshal (Pyroscope's HTTP handler
	// explicitly, Parca through its gRPC codec, pkg/server/grpc_codec.go, which
	// falls back to it for these types): invalid UTF-8 in any
	// string field fails here, and the whole request with it.
	if err := proto.Unmarshal(data, req); err != nil {
		r.Decode = "rejected by decode: " + err.Error()
		return r
	}
	if mode == "parca" || mode == "all" {
		r.Parca = &parcaResult{OK: true}
		if err := parcaCheck(req); err != nil {
			r.Parca = &parcaResult{Error: "invalid request: " + err.Error()}
		}
	}
	if mode == "pyroscope" || mode == "all" {
		p := pyroscopeCheck(req, sanitize)
		r.Pyroscope = &p
	}
	return r
}

func (r *report) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: decode %s", r.File, r.Decode)
	if r.Parca != nil {
		if r.Parca.OK {
			b.WriteString("; parca ok")
		} else {
			fmt.Fprintf(&b, "; parca REJECTS: %s", r.Parca.Error)
		}
	}
	if p := r.Pyroscope; p != nil {
		if p.OK {
			b.WriteString("; pyroscope ok")
		} else {
			fmt.Fprintf(&b, "; pyroscope REJECTS: %s", p.Error)
		}
		types := map[string]int{}
		var order []string
		for _, s := range p.Series {
			if types[s.ProfileType] == 0 {
				order = append(order, s.ProfileType)
			}
			types[s.ProfileType]++
		}
		parts := []string{}
		for _, t := range order {
			parts = append(parts, fmt.Sprintf("%d %s", types[t], t))
		}
		sym := 0
		for _, m := range p.Mappings {
			if m.ServerSymbolized {
				sym++
			}
		}
		fmt.Fprintf(&b, " (series: %s; %d mappings, %d left to the server's symbolizer)", strings.Join(parts, ", "), len(p.Mappings), sym)
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "\n  note: %s", n)
		}
	}
	return b.String()
}

func main() {
	fs := flag.NewFlagSet("otlpcheck", flag.ContinueOnError)
	mode := fs.String("mode", "all", "backend rules to apply: pyroscope, parca or all")
	asJSON := fs.Bool("json", false, "one JSON object per file")
	sanitize := fs.Bool("pyroscope-sanitize-labels", false,
		"apply Pyroscope's legacy label-name sanitizing (validation.disable-label-sanitization=false; the default is true)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: otlpcheck [--mode pyroscope|parca|all] [--json] [--pyroscope-sanitize-labels] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if (*mode != "pyroscope" && *mode != "parca" && *mode != "all") || fs.NArg() == 0 {
		fs.Usage()
		os.Exit(2)
	}
	status := 0
	enc := json.NewEncoder(os.Stdout)
	for _, name := range fs.Args() {
		data, err := readRequest(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "otlpcheck: %s: %v\n", name, err)
			status = 2
			continue
		}
		r := check(name, data, *mode, *sanitize)
		if *asJSON {
			_ = enc.Encode(r)
		} else {
			fmt.Println(r.line())
		}
		if !r.ok() && status == 0 {
			status = 1
		}
	}
	os.Exit(status)
}
