// SPDX-License-Identifier: Apache-2.0

// Grafana Pyroscope's intake of an OTLP profiles request, as we read it in
// grafana/pyroscope v2.2.1 (df3c0391b7df; the rules used here read the same on
// main 3fe6a457a320, 2026-08-21):
//   - pkg/ingester/otlp/ingest_handler.go  export: one series per Profile and
//     service, its labels, the service name;
//   - pkg/ingester/otlp/convert.go         ConvertOtelToGoogle: OTLP to pprof,
//     profile-type naming, value conversion, HasFunctions per mapping;
//   - pkg/distributor/distributor.go       pushSeries: size of the pprof;
//   - pkg/validation/validate.go           ValidateProfile, ValidateLabels;
//   - pkg/model/pprofsplit/pprof_split.go  VisitSampleSeries: every distinct set
//     of sample labels is validated as series labels;
//   - pkg/pprof/pprof.go                   Normalize: samples <= 0 dropped;
//   - pkg/validation/limits.go             the defaults used below.
package main

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	collpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	prof "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/encoding/protowire"
)

// Defaults of pkg/validation/limits.go (RegisterFlags).
const (
	maxProfileSize       = 4 << 20 // validation.max-profile-size-bytes (of the converted pprof)
	maxSamples           = 16000   // validation.max-profile-stacktrace-samples
	maxStackDepth        = 1000    // validation.max-profile-stacktrace-depth (truncates)
	maxSampleLabels      = 100     // validation.max-profile-stacktrace-sample-labels
	maxLabelNames        = 30      // validation.max-label-names-per-series
	maxLabelNameLength   = 1024    // validation.max-length-label-name
	maxLabelValueLength  = 2048    // validation.max-length-label-value
	maxSymbolValueLength = 65535   // validation.max-profile-symbol-value-length (truncates)
	rejectOlderThan      = time.Hour
	rejectNewerThan      = 10 * time.Minute
)

type pyroSeries struct {
	Labels      map[string]string `json:"labels"`
	ProfileType string            `json:"profile_type"`
	Total       int64             `json:"total"`
	Top         [][]any           `json:"top"`
	// The total of the samples that carry each pprof label (by name): thread ids, a
	// link's span_id and trace_id, a goroutine's labels.
	SampleLabels map[string]int64 `json:"sample_labels"`
	PprofBytes   int              `json:"pprof_bytes"`
	Error        string           `json:"error,omitempty"`
}

type pyroMapping struct {
	Index            int32  `json:"index"`
	File             string `json:"file"`
	BuildID          string `json:"build_id"`
	Locations        int    `json:"locations"`
	Unsymbolized     int    `json:"unsymbolized_locations"`
	ServerSymbolized bool   `json:"server_symbolized"`
}

type pyroResult struct {
	OK       bool          `json:"ok"`
	Error    string        `json:"error,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	Series   []pyroSeries  `json:"series"`
	Mappings []pyroMapping `json:"mappings"`
}

// One pprof profile as ConvertOtelToGoogle builds it (profileBuilder).
type pprofLoc struct {
	mapping int // index into builder.mappings
	address uint64
	lines   []int32 // OTLP function indices, innermost first
	lineNo  []int64
}

type pprofMapping struct {
	otlp                                 int32
	start, limit, offset                 uint64
	file, buildID                        string
	hasFuncs, hasFiles, hasLines, hasInl bool
}

type pprofSample struct {
	locs   []int // indices into builder.locs, leaf first
	values []int64
	labels [][2]string
}

type builder struct {
	p                         *prof.Profile
	d                         *prof.ProfilesDictionary
	name                      string
	sampleType, sampleUnit    string
	hasPeriodType             bool
	periodType, periodUnit    string
	conv                      int // 0 as is, 1 times period (process_cpu), 2 summed (off_cpu)
	timeNanos, durationNanos  int64
	strs                      map[string]int
	locIndex                  map[int32]int // OTLP location index -> locs
	funcs                     map[int32]bool
	curMapping                map[int32]int // OTLP mapping index -> newest pprof mapping
	locs                      []pprofLoc
	mappings                  []pprofMapping
	samples                   []pprofSample
	defaultSampleTypeStrIndex int
}

func (b *builder) addstr(s string) int {
	if i, ok := b.strs[s]; ok {
		return i
	}
	b.strs[s] = len(b.strs)
	return len(b.strs) - 1
}

func at[T any](t []T, i int32) (T, error) {
	if i >= 0 && int(i) < len(t) {
		return t[i], nil
	}
	var zero T
	return zero, fmt.Errorf("index %d out of bounds", i)
}

// anyString: stringValueFromAnyValue in ingest_handler.go. Strings and ints
// only, or a one-element array of them; anything else is "" (not a label).
func anyString(v *commonpb.AnyValue) string {
	one := func(v *commonpb.AnyValue) string {
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return x.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(x.IntValue, 10)
		}
		return ""
	}
	if s := one(v); s != "" {
		return s
	}
	if a := v.GetArrayValue(); a != nil && len(a.Values) == 1 {
		return one(a.Values[0])
	}
	return ""
}

// attrValue: getAttributeValueByKeyOrEmpty in convert.go.
func attrValue(idx []int32, d *prof.ProfilesDictionary, key string) (string, error) {
	for _, i := range idx {
		a, err := at(d.AttributeTable, i)
		if err != nil {
			return "", err
		}
		k, err := at(d.StringTable, a.KeyStrindex)
		if err != nil {
			return "", err
		}
		if k == key {
			return anyString(a.Value), nil
		}
	}
	return "", nil
}

// newBuilder: newProfileBuilder in convert.go, including the profile-type key
// "type:unit:period_type:period_unit" (the period half empty when period is 0).
func newBuilder(p *prof.Profile, d *prof.ProfilesDictionary) (*builder, error) {
	b := &builder{p: p, d: d, strs: map[string]int{}, locIndex: map[int32]int{}, funcs: map[int32]bool{},
		curMapping: map[int32]int{}, timeNanos: int64(p.TimeUnixNano), durationNanos: int64(p.DurationNano)}
	b.addstr("")
	if p.SampleType == nil {
		return nil, fmt.Errorf("sample type is missing")
	}
	var err error
	if b.sampleType, err = at(d.StringTable, p.SampleType.TypeStrindex); err != nil {
		return nil, fmt.Errorf("sample type: %w", err)
	}
	if b.sampleUnit, err = at(d.StringTable, p.SampleType.UnitStrindex); err != nil {
		return nil, fmt.Errorf("sample unit: %w", err)
	}
	b.addstr(b.sampleType)
	b.addstr(b.sampleUnit)
	if p.PeriodType != nil {
		b.hasPeriodType = true
		if b.periodType, err = at(d.StringTable, p.PeriodType.TypeStrindex); err != nil {
			return nil, fmt.Errorf("period type: %w", err)
		}
		if b.periodUnit, err = at(d.StringTable, p.PeriodType.UnitStrindex); err != nil {
			return nil, fmt.Errorf("period unit: %w", err)
		}
		b.addstr(b.periodType)
		b.addstr(b.periodUnit)
	}
	b.defaultSampleTypeStrIndex = b.addstr(b.sampleType)
	key := b.sampleType + ":" + b.sampleUnit + "::"
	if b.hasPeriodType && p.Period != 0 {
		key = b.sampleType + ":" + b.sampleUnit + ":" + b.periodType + ":" + b.periodUnit
	}
	switch {
	case key == "samples:count:cpu:nanoseconds":
		b.sampleType, b.sampleUnit = "cpu", "nanoseconds"
		b.addstr("cpu")
		b.addstr("nanoseconds")
		b.name, b.conv = "process_cpu", 1
	case key == "off_cpu:nanoseconds::":
		b.name, b.conv = "off_cpu", 2
	default:
		// The profile name is the key's third field: the period type, or "" when
		// the period is 0 (then ValidateLabels refuses the empty __name__).
		b.name = strings.Split(key, ":")[2]
	}
	if b.timeNanos == 0 {
		b.timeNanos = time.Now().UnixNano()
	}
	if b.durationNanos == 0 {
		b.durationNanos = int64(10 * time.Second)
	}
	return b, nil
}

// addSample: convertSampleBack, convertSampleAttributesToLabelsBack,
// convertMappingBack and convertLocationBack in convert.go, in their order.
func (b *builder) addSample(s *prof.Sample, d *prof.ProfilesDictionary) error {
	vals := append([]int64(nil), s.Values...)
	if len(vals) == 0 && len(s.TimestampsUnixNano) > 0 {
		vals = []int64{int64(len(s.TimestampsUnixNano))}
	}
	if len(vals) == 0 {
		return fmt.Errorf("sample value is required (no values, no timestamps)")
	}
	switch b.conv {
	case 1:
		vals[0] *= b.p.Period
	case 2:
		var sum int64
		for _, v := range vals {
			sum += v
		}
		vals = []int64{sum}
	}
	if b.p.Period != 0 && b.hasPeriodType && len(vals) != 1 {
		return fmt.Errorf("sample values length mismatch %d 1", len(vals))
	}
	ps := pprofSample{values: vals}
	for _, ai := range s.AttributeIndices {
		a, err := at(d.AttributeTable, ai)
		if err != nil {
			return fmt.Errorf("sample attribute: %w", err)
		}
		if k, err := at(d.StringTable, a.KeyStrindex); err == nil && k == "service.name" {
			continue
		}
		if v := anyString(a.Value); v != "" {
			k, err := at(d.StringTable, a.KeyStrindex)
			if err != nil {
				return fmt.Errorf("sample attribute key: %w", err)
			}
			ps.labels = append(ps.labels, [2]string{k, v})
		}
	}
	if s.LinkIndex != 0 {
		l, err := at(d.LinkTable, s.LinkIndex)
		if err != nil {
			return fmt.Errorf("link: %w", err)
		}
		ps.labels = append(ps.labels, [2]string{"span_id", fmt.Sprintf("%x", l.SpanId)})
		if len(l.TraceId) == 16 {
			ps.labels = append(ps.labels, [2]string{"trace_id", fmt.Sprintf("%x", l.TraceId)})
		}
	}
	for _, l := range ps.labels {
		b.addstr(l[0])
		b.addstr(l[1])
	}
	st, err := at(d.StackTable, s.StackIndex)
	if err != nil {
		return fmt.Errorf("invalid stack index: %d", s.StackIndex)
	}
	// A new pprof mapping for every OTLP mapping of this stack, its flags
	// computed over this stack's locations only (convertMappingBack).
	byMapping := map[int32][]*prof.Location{}
	var order []int32
	for _, li := range st.LocationIndices {
		loc, err := at(d.LocationTable, li)
		if err != nil {
			return fmt.Errorf("location: %w", err)
		}
		if _, err := at(d.MappingTable, loc.MappingIndex); err != nil {
			return fmt.Errorf("mapping: %w", err)
		}
		if byMapping[loc.MappingIndex] == nil {
			order = append(order, loc.MappingIndex)
		}
		byMapping[loc.MappingIndex] = append(byMapping[loc.MappingIndex], loc)
	}
	for _, mi := range order {
		m := d.MappingTable[mi]
		pm := pprofMapping{otlp: mi, start: m.MemoryStart, limit: m.MemoryLimit, offset: m.FileOffset,
			hasFuncs: true, hasFiles: true, hasLines: true, hasInl: true}
		for _, loc := range byMapping[mi] {
			if len(loc.Lines) == 0 {
				pm.hasFuncs, pm.hasFiles, pm.hasLines, pm.hasInl = false, false, false, false
				break
			}
			for i, ln := range loc.Lines {
				pm.hasFuncs = pm.hasFuncs && ln.FunctionIndex > 0
				pm.hasLines = pm.hasLines && ln.Line > 0
				pm.hasInl = pm.hasInl && i >= 1
				if f, err := at(d.FunctionTable, ln.FunctionIndex); ln.FunctionIndex > 0 && err == nil {
					pm.hasFiles = pm.hasFiles && f.FilenameStrindex > 0
				}
			}
		}
		pm.buildID, _ = attrValue(m.AttributeIndices, d, "process.executable.build_id.gnu")
		if pm.file, err = at(d.StringTable, m.FilenameStrindex); err != nil {
			return fmt.Errorf("mapping file name: %w", err)
		}
		b.addstr(pm.file)
		b.addstr(pm.buildID)
		b.mappings = append(b.mappings, pm)
		b.curMapping[mi] = len(b.mappings) - 1
	}
	// Locations are converted once per profile: a location keeps the pprof
	// mapping of the first sample it appeared in.
	for _, li := range st.LocationIndices {
		if k, ok := b.locIndex[li]; ok {
			ps.locs = append(ps.locs, k)
			continue
		}
		loc := d.LocationTable[li]
		pl := pprofLoc{mapping: b.curMapping[loc.MappingIndex], address: loc.Address}
		for i, ln := range loc.Lines {
			f, err := at(d.FunctionTable, ln.FunctionIndex)
			if err != nil {
				return fmt.Errorf("line %d: function: %w", i, err)
			}
			if !b.funcs[ln.FunctionIndex] {
				for _, si := range []int32{f.NameStrindex, f.SystemNameStrindex, f.FilenameStrindex} {
					s, err := at(d.StringTable, si)
					if err != nil {
						return fmt.Errorf("function string: %w", err)
					}
					b.addstr(s)
				}
				b.funcs[ln.FunctionIndex] = true
			}
			pl.lines = append(pl.lines, ln.FunctionIndex)
			pl.lineNo = append(pl.lineNo, ln.Line)
		}
		b.locs = append(b.locs, pl)
		b.locIndex[li] = len(b.locs) - 1
		ps.locs = append(ps.locs, len(b.locs)-1)
	}
	b.samples = append(b.samples, ps)
	return nil
}

// pprofSize: the encoded size of the pprof profile the builder stands for
// (what pushSeries measures with SizeVT before ValidateProfile).
func (b *builder) pprofSize() int {
	d := b.d
	vi := func(n protowire.Number, v uint64) int {
		if v == 0 {
			return 0
		}
		return protowire.SizeTag(n) + protowire.SizeVarint(v)
	}
	msg := func(n protowire.Number, l int) int { return protowire.SizeTag(n) + protowire.SizeBytes(l) }
	packed := func(n protowire.Number, vs []uint64) int {
		if len(vs) == 0 {
			return 0
		}
		l := 0
		for _, v := range vs {
			l += protowire.SizeVarint(v)
		}
		return msg(n, l)
	}
	boolean := func(n protowire.Number, v bool) int {
		if v {
			return protowire.SizeTag(n) + 1
		}
		return 0
	}
	s := func(x string) uint64 { return uint64(b.strs[x]) }
	size := msg(1, vi(1, s(b.sampleType))+vi(2, s(b.sampleUnit)))
	for _, sm := range b.samples {
		ids := make([]uint64, len(sm.locs))
		for i, l := range sm.locs {
			ids[i] = uint64(l + 1)
		}
		vals := make([]uint64, len(sm.values))
		for i, v := range sm.values {
			vals[i] = uint64(v)
		}
		n := packed(1, ids) + packed(2, vals)
		for _, l := range sm.labels {
			n += msg(3, vi(1, s(l[0]))+vi(2, s(l[1])))
		}
		size += msg(2, n)
	}
	for i, m := range b.mappings {
		size += msg(3, vi(1, uint64(i+1))+vi(2, m.start)+vi(3, m.limit)+vi(4, m.offset)+vi(5, s(m.file))+
			vi(6, s(m.buildID))+boolean(7, m.hasFuncs)+boolean(8, m.hasFiles)+boolean(9, m.hasLines)+boolean(10, m.hasInl))
	}
	fid := map[int32]int{}
	for i, l := range b.locs {
		n := vi(1, uint64(i+1)) + vi(2, uint64(l.mapping+1)) + vi(3, l.address)
		for j, fi := range l.lines {
			if _, ok := fid[fi]; !ok {
				fid[fi] = len(fid) + 1
			}
			n += msg(4, vi(1, uint64(fid[fi]))+vi(2, uint64(l.lineNo[j])))
		}
		size += msg(4, n)
	}
	for fi, id := range fid {
		f := d.FunctionTable[fi]
		size += msg(5, vi(1, uint64(id))+vi(2, s(d.StringTable[f.NameStrindex]))+
			vi(3, s(d.StringTable[f.SystemNameStrindex]))+vi(4, s(d.StringTable[f.FilenameStrindex]))+vi(5, uint64(f.StartLine)))
	}
	for x := range b.strs {
		size += msg(6, len(x))
	}
	size += vi(9, uint64(b.timeNanos)) + vi(10, uint64(b.durationNanos)) + vi(12, uint64(b.p.Period)) + vi(14, uint64(b.defaultSampleTypeStrIndex))
	if b.hasPeriodType {
		size += msg(11, vi(1, s(b.periodType))+vi(2, s(b.periodUnit)))
	}
	return size
}

// serviceName: getServiceNameFromAttributes in ingest_handler.go.
func serviceName(attrs []*commonpb.KeyValue) string {
	fallback := "unknown_service"
	for _, a := range attrs {
		if a.Key == "service.name" {
			if v := anyString(a.Value); v != "" {
				return v
			}
		}
		if a.Key == "process.executable.name" {
			if v := anyString(a.Value); v != "" {
				fallback += ":" + v
			}
		}
	}
	return fallback
}

type label struct{ name, value string }

// validateLabels: ValidateLabels in validate.go. With sanitize, the legacy rule
// (validation.disable-label-sanitization=false): names [a-zA-Z_][a-zA-Z0-9_.]*,
// dots become underscores, two names meeting with different values are an error.
// By default (true) names are only required to be non-empty UTF-8.
func validateLabels(ls []label, sanitize bool) error {
	sort.Slice(ls, func(i, j int) bool { return ls[i].name < ls[j].name })
	str := func() string {
		parts := make([]string, len(ls))
		for i, l := range ls {
			parts[i] = l.name + "=" + strconv.Quote(l.value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if len(ls) > maxLabelNames {
		return fmt.Errorf("series %s has %d label names; limit %d", str(), len(ls), maxLabelNames)
	}
	get := func(n string) string {
		for _, l := range ls {
			if l.name == n {
				return l.value
			}
		}
		return ""
	}
	if n := get("__name__"); n == "" || !utf8.ValidString(n) {
		return fmt.Errorf("series %s: invalid metric name %q (the profile type gives no name)", str(), n)
	}
	if get("service_name") == "" {
		return fmt.Errorf("series %s: service name is not provided", str())
	}
	seen := map[string]label{} // by name after sanitizing: the original label
	for _, l := range ls {
		switch {
		case len(l.name) > maxLabelNameLength:
			return fmt.Errorf("series %s: label name too long: %q", str(), l.name)
		case len(l.value) > maxLabelValueLength:
			return fmt.Errorf("series %s: value of %s is %d bytes, over %d", str(), l.name, len(l.value), maxLabelValueLength)
		case l.name == "" || !utf8.ValidString(l.name):
			return fmt.Errorf("series %s: invalid label name %q", str(), l.name)
		}
		name := l.name
		if sanitize {
			for i, c := range l.name {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '.' || c >= '0' && c <= '9' && i > 0) {
					return fmt.Errorf("series %s: invalid label name %q", str(), l.name)
				}
			}
			name = strings.ReplaceAll(l.name, ".", "_")
		}
		// handleSanitizedLabel lets "a.b" and "a_b" meet when their values agree.
		if o, ok := seen[name]; ok && (o.name == l.name || o.value != l.value) {
			return fmt.Errorf("series %s: duplicate label name %q (from %q and %q)", str(), name, o.name, l.name)
		}
		seen[name] = l
	}
	return nil
}

func pyroscopeCheck(req *collpb.ExportProfilesServiceRequest, sanitize bool) pyroResult {
	res := pyroResult{OK: true, Series: []pyroSeries{}, Mappings: []pyroMapping{}}
	fail := func(format string, a ...any) pyroResult {
		res.OK, res.Error = false, fmt.Sprintf(format, a...)
		return res
	}
	// Pyroscope refuses the whole request at the first Profile it cannot
	// convert (gRPC INVALID_ARGUMENT; over HTTP the same status error is not a
	// validation.Error, so the handler answers 500). We go on with the other
	// Profiles so that the report still lists their series and mappings.
	convErr := func(format string, a ...any) {
		if res.OK {
			res.OK, res.Error = false, fmt.Sprintf(format, a...)
		}
	}
	d := req.Dictionary
	if d == nil {
		return fail("missing profile metadata dictionary")
	}
	if req.ResourceProfiles == nil {
		return fail("missing resource profiles")
	}
	type mstate struct {
		locs  map[int32]bool // OTLP locations seen under this mapping
		unsym map[int32]bool // of which in a pprof mapping without HasFunctions
	}
	byMapping := map[int32]*mstate{}
	for ri, rp := range req.ResourceProfiles {
		svcName := serviceName(rp.Resource.GetAttributes())
		for si, sp := range rp.ScopeProfiles {
			for pi, p := range sp.Profiles {
				where := fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].profiles[%d]", ri, si, pi)
				builders := map[string]*builder{}
				var order []string
			samples:
				for _, s := range p.Samples {
					svc, err := attrValue(s.AttributeIndices, d, "service.name")
					if err != nil {
						// ConvertOtelToGoogle returns no profiles and no error.
						res.Notes = append(res.Notes, where+": dropped without an error: sample attribute "+err.Error())
						builders, order = nil, nil
						break
					}
					b := builders[svc]
					if b == nil {
						if b, err = newBuilder(p, d); err != nil {
							convErr("%s: failed to convert otel profile: %v", where, err)
							builders, order = nil, nil
							break samples
						}
						builders[svc] = b
						order = append(order, svc)
					}
					if err := b.addSample(s, d); err != nil {
						convErr("%s: failed to convert otel profile: %v", where, err)
						builders, order = nil, nil
						break samples
					}
				}
				for _, svc := range order {
					b := builders[svc]
					if svc == "" {
						svc = svcName
					}
					ser, base := b.series(rp, sp, svc)
					if err := b.validate(base, sanitize, &res.Notes, where); err != nil && ser.Error == "" {
						ser.Error = err.Error()
						if res.OK {
							res.OK, res.Error = false, where+": "+err.Error()
						}
					}
					res.Series = append(res.Series, ser)
					for li, k := range b.locIndex {
						pm := b.mappings[b.locs[k].mapping]
						st := byMapping[pm.otlp]
						if st == nil {
							st = &mstate{locs: map[int32]bool{}, unsym: map[int32]bool{}}
							byMapping[pm.otlp] = st
						}
						st.locs[li] = true
						if !pm.hasFuncs {
							st.unsym[li] = true
						}
					}
				}
			}
		}
	}
	if len(res.Series) == 0 {
		res.Notes = append(res.Notes, "no series: accepted, nothing stored")
	}
	for mi, st := range byMapping {
		m := d.MappingTable[mi]
		bid, _ := attrValue(m.AttributeIndices, d, "process.executable.build_id.gnu")
		res.Mappings = append(res.Mappings, pyroMapping{Index: mi, File: str(d, m.FilenameStrindex), BuildID: bid,
			Locations: len(st.locs), Unsymbolized: len(st.unsym), ServerSymbolized: len(st.unsym) > 0})
	}
	sort.Slice(res.Mappings, func(i, j int) bool { return res.Mappings[i].Index < res.Mappings[j].Index })
	return res
}

// series: the labels export() gives a series, and the flat shares of leaf
// functions after the depth truncation and the dropping of samples <= 0.
func (b *builder) series(rp *prof.ResourceProfiles, sp *prof.ScopeProfiles, svc string) (pyroSeries, []label) {
	base := []label{{"__delta__", "false"}, {"__otel__", "true"}, {"__name__", b.name}}
	done := map[string]bool{"__name__": true}
	for _, attrs := range [][]*commonpb.KeyValue{rp.Resource.GetAttributes(), sp.Scope.GetAttributes()} {
		for _, a := range attrs {
			if v := anyString(a.Value); !done[a.Key] && v != "" {
				base = append(base, label{a.Key, v})
				done[a.Key] = true
			}
		}
	}
	base = append(base, label{"service_name", svc})
	ser := pyroSeries{Labels: map[string]string{}, PprofBytes: b.pprofSize(),
		ProfileType: strings.Join([]string{b.name, b.sampleType, b.sampleUnit, b.periodType, b.periodUnit}, ":")}
	for _, l := range base {
		ser.Labels[l.name] = l.value
	}
	flat := map[string]int64{}
	ser.SampleLabels = map[string]int64{}
	for _, s := range b.samples {
		v, locs := s.values[0], s.locs
		if v <= 0 { // dropped by Normalize
			continue
		}
		ser.Total += v
		for _, l := range s.labels {
			ser.SampleLabels[l[0]] += v
		}
		if len(locs) > maxStackDepth { // ValidateProfile keeps the root-most frames
			locs = locs[len(locs)-maxStackDepth:]
		}
		if len(locs) == 0 {
			flat["(no stack)"] += v
		} else {
			flat[b.leafName(locs[0])] += v
		}
	}
	names := make([]string, 0, len(flat))
	for n := range flat {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if flat[names[i]] != flat[names[j]] {
			return flat[names[i]] > flat[names[j]]
		}
		return names[i] < names[j]
	})
	ser.Top = [][]any{}
	for i, n := range names {
		if i == 20 || ser.Total == 0 {
			break
		}
		share, _ := strconv.ParseFloat(strconv.FormatFloat(float64(flat[n])/float64(ser.Total), 'f', 4, 64), 64)
		ser.Top = append(ser.Top, []any{n, share})
	}
	return ser, base
}

// leafName: the function of a location's first line (lines[0] is the innermost
// inlined function, profiles.proto Location.lines), or for a location without
// lines the binary and address, as a stand-in for what the symbolizer finds.
func (b *builder) leafName(li int) string {
	l := b.locs[li]
	d := b.d
	if len(l.lines) > 0 {
		if f, err := at(d.FunctionTable, l.lines[0]); err == nil {
			return str(d, f.NameStrindex)
		}
	}
	return fmt.Sprintf("%s!0x%x", path.Base(b.mappings[l.mapping].file), l.address)
}

// validate: pushSeries (size), ValidateProfile, Normalize (notes), then
// VisitSampleSeries: the series labels plus each distinct set of sample labels
// (trace_id and span_id aside; series labels win a name clash) go through ValidateLabels.
func (b *builder) validate(base []label, sanitize bool, notes *[]string, where string) error {
	if sz := b.pprofSize(); sz > maxProfileSize { // pushSeries: Profile.SizeVT()
		return fmt.Errorf("converted pprof is %d bytes, over the %d-byte max_profile_size_bytes", sz, maxProfileSize)
	}
	t := time.Unix(0, b.timeNanos)
	if now := time.Now(); !t.After(now.Add(-rejectOlderThan)) || !t.Before(now.Add(rejectNewerThan)) {
		*notes = append(*notes, fmt.Sprintf("%s: time %s is outside the default ingestion window [now-1h, now+10m] if sent now", where, t.UTC().Format(time.RFC3339)))
	}
	if len(b.samples) > maxSamples {
		return fmt.Errorf("%d samples, over max_profile_stacktrace_samples %d", len(b.samples), maxSamples)
	}
	deep, dropped := 0, 0
	for _, s := range b.samples {
		if len(s.locs) > maxStackDepth {
			deep++
		}
		if len(s.labels) > maxSampleLabels {
			return fmt.Errorf("a sample has %d labels, over %d", len(s.labels), maxSampleLabels)
		}
		if len(s.values) != 1 {
			return fmt.Errorf("sample value length mismatch: %d values, 1 sample type", len(s.values))
		}
		if s.values[0] <= 0 {
			dropped++
		}
	}
	if deep > 0 {
		*notes = append(*notes, fmt.Sprintf("%s: %d samples deeper than %d frames, truncated at the leaf end", where, deep, maxStackDepth))
	}
	if dropped > 0 {
		*notes = append(*notes, fmt.Sprintf("%s: %d samples with value <= 0 dropped by Normalize", where, dropped))
	}
	for s := range b.strs {
		if len(s) > maxSymbolValueLength {
			*notes = append(*notes, fmt.Sprintf("%s: a string of %d bytes truncated to %d", where, len(s), maxSymbolValueLength))
			break
		}
	}
	if strings.Contains(b.sampleType, "-") {
		return fmt.Errorf("sample type %q contains -", b.sampleType)
	}
	groups := map[string][]label{}
	for _, s := range b.samples {
		ls := append([]label(nil), base...)
		have := map[string]bool{}
		for _, l := range base {
			have[l.name] = l.value != ""
		}
		var key []string
		for _, l := range s.labels {
			if l[0] == "trace_id" || l[0] == "span_id" || l[1] == "" || have[l[0]] {
				continue
			}
			ls = append(ls, label{l[0], l[1]})
			have[l[0]] = true
			key = append(key, l[0]+"\x00"+l[1])
		}
		sort.Strings(key)
		groups[strings.Join(key, "\x01")] = ls
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := validateLabels(groups[k], sanitize); err != nil {
			return err
		}
	}
	return nil
}
