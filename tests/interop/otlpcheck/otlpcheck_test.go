// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	collpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	prof "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// Strings of the test dictionary, by index.
const (
	sEmpty = iota
	sSamples
	sCount
	sCPU
	sNanoseconds
	sMain
	sInlined
	sApp
	sBuildIDKey
	sBuildID
	sThreadName
	sPatch
	sOffCPU
	sLib
)

// valid builds a request both backends take: one process, one CPU Profile of
// two samples, an app mapping whose locations have functions and a library
// mapping whose location has none (left to Pyroscope's symbolizer).
func valid() *collpb.ExportProfilesServiceRequest {
	now := uint64(time.Now().UnixNano())
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	d := &prof.ProfilesDictionary{
		StringTable: []string{"", "samples", "count", "cpu", "nanoseconds", "main", "memcpy_inlined",
			"/usr/bin/app", "process.executable.build_id.gnu", "0123abcd", "thread.name", "PATCHME", "off_cpu", "/lib/libz.so"},
		MappingTable: []*prof.Mapping{{},
			{MemoryStart: 0x1000, MemoryLimit: 0x2000, FilenameStrindex: sApp, AttributeIndices: []int32{1}},
			{MemoryStart: 0x5000, MemoryLimit: 0x6000, FilenameStrindex: sLib}},
		FunctionTable: []*prof.Function{{}, {NameStrindex: sMain}, {NameStrindex: sInlined}},
		LocationTable: []*prof.Location{{},
			// lines[0] is the innermost inlined function, the last the caller.
			{MappingIndex: 1, Address: 0x1100, Lines: []*prof.Line{{FunctionIndex: 2}, {FunctionIndex: 1}}},
			{MappingIndex: 1, Address: 0x1200, Lines: []*prof.Line{{FunctionIndex: 1}}},
			{MappingIndex: 2, Address: 0x5100}},
		LinkTable: []*prof.Link{{}},
		AttributeTable: []*prof.KeyValueAndUnit{{},
			{KeyStrindex: sBuildIDKey, Value: str("0123abcd")},
			{KeyStrindex: sThreadName, Value: str("PATCHME")}},
		StackTable: []*prof.Stack{{}, {LocationIndices: []int32{1, 2}}, {LocationIndices: []int32{3, 2}}},
	}
	p := &prof.Profile{
		SampleType:   &prof.ValueType{TypeStrindex: sSamples, UnitStrindex: sCount},
		PeriodType:   &prof.ValueType{TypeStrindex: sCPU, UnitStrindex: sNanoseconds},
		Period:       10_000_000,
		TimeUnixNano: now, DurationNano: uint64(time.Second),
		Samples: []*prof.Sample{
			{StackIndex: 1, AttributeIndices: []int32{2}, Values: []int64{3}, TimestampsUnixNano: []uint64{now + 1}},
			{StackIndex: 2, Values: []int64{1}, TimestampsUnixNano: []uint64{now + 2}},
		},
	}
	return &collpb.ExportProfilesServiceRequest{
		Dictionary: d,
		ResourceProfiles: []*prof.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
				{Key: "process.executable.name", Value: str("app")},
				{Key: "process.pid", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 42}}},
			}},
			ScopeProfiles: []*prof.ScopeProfiles{{Scope: &commonpb.InstrumentationScope{Name: "ember"}, Profiles: []*prof.Profile{p}}},
		}},
	}
}

func run(t *testing.T, req *collpb.ExportProfilesServiceRequest) report {
	t.Helper()
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return check("test", data, "all", false)
}

func expect(t *testing.T, r report, parcaErr, pyroErr string) {
	t.Helper()
	if r.Decode != "ok" {
		t.Fatalf("decode: %s", r.Decode)
	}
	t.Logf("parca: %q; pyroscope: %q", r.Parca.Error, r.Pyroscope.Error)
	for _, c := range []struct {
		who, want, got string
		ok             bool
	}{{"parca", parcaErr, r.Parca.Error, r.Parca.OK}, {"pyroscope", pyroErr, r.Pyroscope.Error, r.Pyroscope.OK}} {
		if c.want == "" && !c.ok {
			t.Errorf("%s rejects: %s", c.who, c.got)
		}
		if c.want != "" && (c.ok || !strings.Contains(c.got, c.want)) {
			t.Errorf("%s: want an error with %q, got ok=%v %q", c.who, c.want, c.ok, c.got)
		}
	}
}

func TestValid(t *testing.T) {
	r := run(t, valid())
	expect(t, r, "", "")
	p := r.Pyroscope
	if len(p.Series) != 1 {
		t.Fatalf("series: %+v", p.Series)
	}
	s := p.Series[0]
	if s.ProfileType != "process_cpu:cpu:nanoseconds:cpu:nanoseconds" || s.Total != 40_000_000 {
		t.Errorf("type %s total %d", s.ProfileType, s.Total)
	}
	if s.Labels["service_name"] != "unknown_service:app" || s.Labels["process.pid"] != "42" {
		t.Errorf("labels %v", s.Labels)
	}
	// Leaf of stack 1 is location 1, whose lines[0] is the inlined function.
	if len(s.Top) != 2 || s.Top[0][0] != "memcpy_inlined" || s.Top[0][1] != 0.75 || s.Top[1][0] != "libz.so!0x5100" {
		t.Errorf("top %v", s.Top)
	}
	if len(p.Mappings) != 2 || p.Mappings[0].ServerSymbolized || !p.Mappings[1].ServerSymbolized ||
		p.Mappings[0].BuildID != "0123abcd" {
		t.Errorf("mappings %+v", p.Mappings)
	}
}

func TestInvalidUTF8(t *testing.T) {
	// proto.Marshal refuses invalid UTF-8, so marshal a placeholder and patch it.
	data, err := proto.Marshal(valid())
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte("PATCHME"), []byte("PATCH\xff\xfe"), -1)
	r := check("test", bad, "all", false)
	t.Log(r.Decode)
	if !strings.HasPrefix(r.Decode, "rejected by decode:") || !strings.Contains(r.Decode, "UTF-8") || r.ok() {
		t.Errorf("decode %q", r.Decode)
	}
}

func TestZeroSampleProfile(t *testing.T) {
	req := valid()
	req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples = nil
	r := run(t, req)
	// Parca refuses; Pyroscope answers OK and stores nothing.
	expect(t, r, "no samples", "")
	if len(r.Pyroscope.Series) != 0 || len(r.Pyroscope.Notes) == 0 {
		t.Errorf("pyroscope %+v", r.Pyroscope)
	}
}

func TestNoPeriodType(t *testing.T) {
	req := valid()
	req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].PeriodType = nil
	// Pyroscope names the profile after the period type: with none, an empty
	// __name__, which ValidateLabels refuses.
	expect(t, run(t, req), "no period_type", "invalid metric name")
}

func TestLinkZeroBytes(t *testing.T) {
	req := valid()
	req.Dictionary.LinkTable[0] = &prof.Link{TraceId: make([]byte, 16), SpanId: make([]byte, 8)}
	expect(t, run(t, req), "link_table[0]", "")
}

func TestOffCPU(t *testing.T) {
	req := valid()
	p := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0]
	p.SampleType = &prof.ValueType{TypeStrindex: sOffCPU, UnitStrindex: sNanoseconds}
	p.PeriodType, p.Period = &prof.ValueType{}, 0 // present but empty, as Parca needs
	for _, s := range p.Samples {
		s.TimestampsUnixNano = nil
	}
	r := run(t, req)
	expect(t, r, "", "")
	if s := r.Pyroscope.Series[0]; s.ProfileType != "off_cpu:off_cpu:nanoseconds::" || s.Total != 4 {
		t.Errorf("%s %d", s.ProfileType, s.Total)
	}
}

func TestSeveralValuesPerSample(t *testing.T) {
	req := valid()
	s := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples[0]
	s.Values = []int64{1, 1}
	s.TimestampsUnixNano = append(s.TimestampsUnixNano, s.TimestampsUnixNano[0]+1)
	// Valid OTLP, and Parca takes it; Pyroscope's converter wants one value.
	expect(t, run(t, req), "", "sample values length mismatch")
}

func TestTimestampOutsideProfile(t *testing.T) {
	req := valid()
	p := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0]
	p.Samples[1].TimestampsUnixNano[0] = p.TimeUnixNano + p.DurationNano + 1
	expect(t, run(t, req), "outside [time", "")
}

func TestTooManyLabelNames(t *testing.T) {
	req := valid()
	rs := req.ResourceProfiles[0].Resource
	for i := 0; i < 30; i++ {
		rs.Attributes = append(rs.Attributes, &commonpb.KeyValue{Key: fmt.Sprintf("k%02d", i),
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}})
	}
	expect(t, run(t, req), "", "label names; limit 30")
}

func TestSanitizingCollision(t *testing.T) {
	req := valid()
	rs := req.ResourceProfiles[0].Resource
	rs.Attributes = append(rs.Attributes, &commonpb.KeyValue{Key: "process_pid",
		Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "other"}}})
	data, _ := proto.Marshal(req)
	if r := check("test", data, "pyroscope", false); !r.ok() {
		t.Errorf("default (no sanitizing): %s", r.Pyroscope.Error)
	}
	if r := check("test", data, "pyroscope", true); r.ok() || !strings.Contains(r.Pyroscope.Error, "duplicate label name") {
		t.Errorf("sanitizing: %+v", r.Pyroscope)
	}
	// The same value under both spellings is merged, not refused.
	rs.Attributes[len(rs.Attributes)-1].Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "42"}}
	data, _ = proto.Marshal(req)
	if r := check("test", data, "pyroscope", true); !r.ok() {
		t.Errorf("sanitizing, same value: %s", r.Pyroscope.Error)
	}
}

func TestGzipInput(t *testing.T) {
	data, _ := proto.Marshal(valid())
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	name := filepath.Join(t.TempDir(), "r.otlp.gz")
	if err := os.WriteFile(name, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readRequest(name)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("readRequest: %v", err)
	}
}

func TestTimestampsOnly(t *testing.T) {
	req := valid()
	s := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples[0]
	s.Values = nil
	s.TimestampsUnixNano = append(s.TimestampsUnixNano, s.TimestampsUnixNano[0]+1)
	// The shape both take for a stack seen several times: Pyroscope counts the
	// timestamps (2 × period), Parca takes each as value 1.
	r := run(t, req)
	expect(t, r, "", "")
	if got := r.Pyroscope.Series[0].Total; got != 30_000_000 {
		t.Errorf("total %d", got)
	}
}
