// SPDX-License-Identifier: Apache-2.0

// Parca's intake of an OTLP profiles request, as we read it in parca-dev/parca
// pkg/normalizer/otel.go (main, commit 3b5647cd9e2a, 2026-07-27):
// OtlpRequestToArrowRecord calls ValidateOtelExportProfilesServiceRequest, which
// runs ValidateOtelDictionary and then ValidateOtelProfile on every Profile, and
// refuses the whole request on the first failure. The checks below follow that
// order; the messages are ours and name the real (not off-by-one) index.
package main

import (
	"fmt"

	collpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	prof "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

func parcaCheck(req *collpb.ExportProfilesServiceRequest) error {
	if len(req.ResourceProfiles) == 0 {
		return fmt.Errorf("no resource_profiles")
	}
	if err := parcaDictionary(req.Dictionary); err != nil {
		return fmt.Errorf("dictionary: %w", err)
	}
	d := req.Dictionary
	for i, rp := range req.ResourceProfiles {
		// Resource attributes: ValidateOtelExportProfilesServiceRequest. Parca reads
		// KeyValue.key only, so a reference-based key (key_strindex) counts as empty.
		if rp.Resource != nil {
			seen := map[string]bool{}
			for j, kv := range rp.Resource.Attributes {
				switch {
				case kv.Key == "":
					return fmt.Errorf("resource_profiles[%d]: resource attribute %d has an empty key", i, j)
				case seen[kv.Key]:
					return fmt.Errorf("resource_profiles[%d]: duplicate resource attribute key %q", i, kv.Key)
				case kv.Value == nil || kv.Value.Value == nil:
					return fmt.Errorf("resource_profiles[%d]: resource attribute %q has no value", i, kv.Key)
				}
				seen[kv.Key] = true
			}
		}
		for j, sp := range rp.ScopeProfiles {
			for k, p := range sp.Profiles {
				if err := parcaProfile(d, p); err != nil {
					return fmt.Errorf("resource_profiles[%d].scope_profiles[%d].profiles[%d]: %w", i, j, k, err)
				}
			}
		}
		// Not validation, but what the writer that follows (writeResourceProfiles,
		// getAllLabelNames) dereferences without a nil check: a panic in Parca.
		if rp.Resource == nil {
			return fmt.Errorf("resource_profiles[%d]: no resource (Parca's label writer dereferences it)", i)
		}
		for j, sp := range rp.ScopeProfiles {
			if sp.Scope == nil {
				return fmt.Errorf("resource_profiles[%d].scope_profiles[%d]: no scope (Parca's writer dereferences it)", i, j)
			}
		}
	}
	return nil
}

func inRange(i int32, n int) bool { return i >= 0 && int(i) < n }

// parcaDictionary: ValidateOtelDictionary. Every table must be non-empty and
// start with its zero entry; every index must be in range.
func parcaDictionary(d *prof.ProfilesDictionary) error {
	if d == nil {
		return fmt.Errorf("absent")
	}
	ns, na := len(d.StringTable), len(d.AttributeTable)
	if ns == 0 {
		return fmt.Errorf("string_table is empty")
	}
	if d.StringTable[0] != "" {
		return fmt.Errorf("string_table[0] is %q, not empty", d.StringTable[0])
	}

	if len(d.MappingTable) == 0 {
		return fmt.Errorf("mapping_table is empty")
	}
	if m := d.MappingTable[0]; m.MemoryStart != 0 || m.MemoryLimit != 0 || m.FileOffset != 0 ||
		m.FilenameStrindex != 0 || len(m.AttributeIndices) != 0 {
		return fmt.Errorf("mapping_table[0] is not the zero mapping")
	}
	for i, m := range d.MappingTable[1:] {
		if !inRange(m.FilenameStrindex, ns) {
			return fmt.Errorf("mapping_table[%d]: filename_strindex %d out of range", i+1, m.FilenameStrindex)
		}
		for _, a := range m.AttributeIndices {
			if !inRange(a, na) {
				return fmt.Errorf("mapping_table[%d]: attribute index %d out of range", i+1, a)
			}
		}
	}

	if len(d.FunctionTable) == 0 {
		return fmt.Errorf("function_table is empty")
	}
	if f := d.FunctionTable[0]; f.NameStrindex != 0 || f.SystemNameStrindex != 0 || f.FilenameStrindex != 0 || f.StartLine != 0 {
		return fmt.Errorf("function_table[0] is not the zero function")
	}
	for i, f := range d.FunctionTable[1:] {
		for _, s := range []int32{f.NameStrindex, f.SystemNameStrindex, f.FilenameStrindex} {
			if !inRange(s, ns) {
				return fmt.Errorf("function_table[%d]: string index %d out of range", i+1, s)
			}
		}
	}

	if na == 0 {
		return fmt.Errorf("attribute_table is empty")
	}
	// isEmptyAttribute reads as (key==0 && unit==0 && value==nil) || value.value==nil;
	// with a nil value and a non-zero key the second half dereferences nil.
	if a := d.AttributeTable[0]; a.Value == nil && (a.KeyStrindex != 0 || a.UnitStrindex != 0) {
		return fmt.Errorf("attribute_table[0] has a key or unit and no value (Parca's isEmptyAttribute dereferences nil)")
	} else if a.Value != nil && a.Value.Value != nil {
		return fmt.Errorf("attribute_table[0] has a value: not the zero attribute")
	}
	for i, a := range d.AttributeTable[1:] {
		if !inRange(a.KeyStrindex, ns) || !inRange(a.UnitStrindex, ns) {
			return fmt.Errorf("attribute_table[%d]: key or unit string index out of range", i+1)
		}
		if a.Value == nil || a.Value.Value == nil {
			return fmt.Errorf("attribute_table[%d] (%s): value not set", i+1, str(d, a.KeyStrindex))
		}
	}

	if len(d.LocationTable) == 0 {
		return fmt.Errorf("location_table is empty")
	}
	if l := d.LocationTable[0]; l.MappingIndex != 0 || l.Address != 0 || len(l.Lines) != 0 || len(l.AttributeIndices) != 0 {
		return fmt.Errorf("location_table[0] is not the zero location")
	}
	for i, l := range d.LocationTable[1:] {
		if !inRange(l.MappingIndex, len(d.MappingTable)) {
			return fmt.Errorf("location_table[%d]: mapping_index %d out of range", i+1, l.MappingIndex)
		}
		for j, ln := range l.Lines {
			// Parca checks only the upper bound here.
			if int(ln.FunctionIndex) >= len(d.FunctionTable) {
				return fmt.Errorf("location_table[%d].lines[%d]: function_index %d out of range", i+1, j, ln.FunctionIndex)
			}
		}
		for _, a := range l.AttributeIndices {
			if !inRange(a, na) {
				return fmt.Errorf("location_table[%d]: attribute index %d out of range", i+1, a)
			}
		}
	}

	// link_table[0] must have no bytes at all (isEmptyLink), although the proto
	// suggests the 16/8-zero-byte form; real links must be exactly 16 + 8 bytes.
	if len(d.LinkTable) == 0 {
		return fmt.Errorf("link_table is empty")
	}
	if l := d.LinkTable[0]; len(l.TraceId) != 0 || len(l.SpanId) != 0 {
		return fmt.Errorf("link_table[0] has trace_id %d bytes, span_id %d bytes: Parca wants both empty", len(l.TraceId), len(l.SpanId))
	}
	for i, l := range d.LinkTable[1:] {
		if len(l.TraceId) != 16 || len(l.SpanId) != 8 {
			return fmt.Errorf("link_table[%d]: trace_id %d bytes, span_id %d bytes (want 16 and 8)", i+1, len(l.TraceId), len(l.SpanId))
		}
	}

	if len(d.StackTable) == 0 {
		return fmt.Errorf("stack_table is empty")
	}
	if len(d.StackTable[0].LocationIndices) != 0 {
		return fmt.Errorf("stack_table[0] is not the empty stack")
	}
	for i, s := range d.StackTable[1:] {
		for j, li := range s.LocationIndices {
			if !inRange(li, len(d.LocationTable)) {
				return fmt.Errorf("stack_table[%d]: location index %d out of range at %d", i+1, li, j)
			}
		}
	}
	return nil
}

// parcaProfile: ValidateOtelProfile, in its order.
func parcaProfile(d *prof.ProfilesDictionary, p *prof.Profile) error {
	if p.SampleType == nil {
		return fmt.Errorf("no sample_type (Parca dereferences it without a check)")
	}
	if !inRange(p.SampleType.TypeStrindex, len(d.StringTable)) || !inRange(p.SampleType.UnitStrindex, len(d.StringTable)) {
		return fmt.Errorf("sample_type string index out of range")
	}
	if len(p.Samples) == 0 {
		return fmt.Errorf("no samples")
	}
	start, end := p.TimeUnixNano, p.TimeUnixNano+p.DurationNano
	for i, s := range p.Samples {
		if !inRange(s.StackIndex, len(d.StackTable)) {
			return fmt.Errorf("samples[%d]: stack_index %d out of range", i, s.StackIndex)
		}
		nv, nt := len(s.Values), len(s.TimestampsUnixNano)
		if nv == 0 && nt == 0 {
			return fmt.Errorf("samples[%d]: neither values nor timestamps", i)
		}
		if nv > 0 && nt > 0 && nv != nt {
			return fmt.Errorf("samples[%d]: %d values but %d timestamps", i, nv, nt)
		}
		for _, a := range s.AttributeIndices {
			if !inRange(a, len(d.AttributeTable)) {
				return fmt.Errorf("samples[%d]: attribute index %d out of range", i, a)
			}
		}
		if !inRange(s.LinkIndex, len(d.LinkTable)) {
			return fmt.Errorf("samples[%d]: link_index %d out of range", i, s.LinkIndex)
		}
		for _, ts := range s.TimestampsUnixNano {
			if ts < start || ts > end {
				return fmt.Errorf("samples[%d]: timestamp %d outside [time %d, time+duration %d]", i, ts, start, end)
			}
		}
		// Not validation: writeResourceProfiles indexes a one-entry slice by value
		// position for samples without timestamps, so a second non-zero value panics.
		if nt == 0 {
			for j, v := range s.Values[min(1, nv):] {
				if v != 0 {
					return fmt.Errorf("samples[%d]: non-zero values[%d] without timestamps (Parca's writer indexes past its one sample type)", i, j+1)
				}
			}
		}
	}
	if p.PeriodType == nil {
		return fmt.Errorf("no period_type (Parca wants one present, even empty)")
	}
	if p.Period < 0 {
		return fmt.Errorf("negative period %d", p.Period)
	}
	if len(p.ProfileId) > 0 {
		if len(p.ProfileId) != 16 {
			return fmt.Errorf("profile_id is %d bytes, not 16", len(p.ProfileId))
		}
		zero := true
		for _, b := range p.ProfileId {
			zero = zero && b == 0
		}
		if zero {
			return fmt.Errorf("profile_id is all zero")
		}
	}
	for _, a := range p.AttributeIndices {
		if !inRange(a, len(d.AttributeTable)) {
			return fmt.Errorf("profile attribute index %d out of range", a)
		}
	}
	return nil
}

// str returns string_table[i], or "" when out of range.
func str(d *prof.ProfilesDictionary, i int32) string {
	if !inRange(i, len(d.StringTable)) {
		return ""
	}
	return d.StringTable[i]
}
