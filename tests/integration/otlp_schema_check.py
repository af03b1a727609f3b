#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks ember's own OTLP .proto files against the upstream schema: every
message ember declares must exist upstream under the same full name, and
every field must have the upstream name, number, type, label and message
type. Needs protoc and python3-protobuf (Debian: protobuf-compiler,
python3-protobuf). Usage: otlp_schema_check.py EMBER_PROTO_DIR UPSTREAM_DIR"""
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2

OTLP_FILES = ["otlp/common.proto", "otlp/resource.proto", "otlp/profiles.proto",
              "otlp/profiles_service.proto"]
UPSTREAM_FILES = ["opentelemetry/proto/common/v1/common.proto",
                  "opentelemetry/proto/resource/v1/resource.proto",
                  "opentelemetry/proto/profiles/v1development/profiles.proto",
                  "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"]


def descriptors(include, files):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "set.pb")
        subprocess.run(["protoc", f"--proto_path={include}", "--include_imports",
                        f"--descriptor_set_out={out}", *files], check=True)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    messages = {}

    def walk(prefix, msgs):
        for m in msgs:
            name = f"{prefix}.{m.name}"
            messages[name] = m
            walk(name, m.nested_type)

    for fd in fds.file:
        walk("." + fd.package, fd.message_type)
    return messages


def main():
    ours = descriptors(sys.argv[1], OTLP_FILES)
    upstream = descriptors(sys.argv[2], UPSTREAM_FILES)
    errors = []
    checked = 0
    for name, msg in sorted(ours.items()):
        up = upstream.get(name)
        if up is None:
            errors.append(f"{name}: no such message upstream")
            continue
        up_fields = {f.number: f for f in up.field}
        for f in msg.field:
            u = up_fields.get(f.number)
            checked += 1
            if u is None:
                errors.append(f"{name}.{f.name} = {f.number}: no field with that number upstream")
                continue
            for attr in ("name", "type", "label", "type_name"):
                if getattr(f, attr) != getattr(u, attr):
                    errors.append(f"{name} field {f.number}: {attr} is {getattr(f, attr)!r}, "
                                  f"upstream {getattr(u, attr)!r}")
            if f.HasField("oneof_index") != u.HasField("oneof_index"):
                errors.append(f"{name}.{f.name}: oneof membership differs from upstream")
        # Upstream fields ember leaves out are allowed; list them for the record.
        missing = sorted(set(up_fields) - {f.number for f in msg.field})
        if missing:
            print(f"  {name}: leaves out upstream fields {[up_fields[n].name for n in missing]}")
    for e in errors:
        print("MISMATCH", e)
    print(f"{len(ours)} messages, {checked} fields checked against upstream; {len(errors)} mismatches")
    if not ours or checked < 40:
        print("FAIL: too little was checked")
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
