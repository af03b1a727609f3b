#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test receivers for OTLP profiles over HTTP and gRPC, decoding with classes
generated at run time (protoc) from the upstream opentelemetry-proto schema kept
in tests/upstream (see its README), never from ember's own .proto files. Each receiver can be
scripted to misbehave (503 with Retry-After, 400, hang, partial success,
gRPC UNAVAILABLE / INVALID_ARGUMENT) and records every attempt.

Also usable by hand:  otlp_receiver.py --http 4318 | --grpc 4317  prints a
summary of each profile it receives."""
import collections
import gzip
import http.server
import importlib
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("EMBER_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
UPSTREAM = os.path.join(SRC, "tests", "upstream", "opentelemetry-proto")
GRPC_METHOD = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
HTTP_PATH = "/v1development/profiles"

_classes = None


def classes():
    """The upstream request/response classes: (ExportProfilesServiceRequest, Response)."""
    global _classes
    if _classes:
        return _classes
    out = tempfile.mkdtemp(prefix="otlp-py-")
    files = [
        "opentelemetry/proto/common/v1/common.proto",
        "opentelemetry/proto/resource/v1/resource.proto",
        "opentelemetry/proto/profiles/v1development/profiles.proto",
        "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
    ]
    subprocess.run(["protoc", f"-I{UPSTREAM}", f"--python_out={out}", *files], check=True)
    sys.path.insert(0, out)
    svc = importlib.import_module("opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2")
    _classes = (svc.ExportProfilesServiceRequest, svc.ExportProfilesServiceResponse)
    return _classes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Attempt:
    def __init__(self, request, headers, behaviour):
        self.time = time.monotonic()
        self.request = request  # decoded, or None when it did not decode
        self.headers = headers
        self.behaviour = behaviour


class Receiver:
    """What both transports share: the script of answers and the record of attempts."""

    def __init__(self):
        self.script = collections.deque()
        self.default = ("ok",)
        self.attempts = []
        self.lock = threading.Lock()
        self.port = None

    def then(self, *behaviours):
        """Queue answers for the next attempts: ("ok",), ("status", 503, retry_after_s),
        ("status", 400), ("hang", seconds), ("partial", rejected, message)."""
        self.script.extend(behaviours)
        return self

    def next_behaviour(self):
        with self.lock:
            return self.script.popleft() if self.script else self.default

    def record(self, request, headers, behaviour):
        with self.lock:
            self.attempts.append(Attempt(request, headers, behaviour))

    def delivered(self):
        """Requests that were answered with success (what the receiver kept)."""
        with self.lock:
            return [a.request for a in self.attempts if a.behaviour[0] in ("ok", "partial") and a.request]

    def wait_for(self, n, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if len(self.delivered()) >= n:
                return True
            time.sleep(0.1)
        return False


class HttpReceiver(Receiver):
    def __init__(self, port=None, tls=None, host="127.0.0.1"):
        super().__init__()
        Request, Response = classes()
        receiver = self

        self.conns = set()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                with receiver.lock:
                    receiver.conns.add(self.connection)

            def finish(self):
                with receiver.lock:
                    receiver.conns.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                behaviour = receiver.next_behaviour()
                request = None
                try:
                    if self.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    if self.path == HTTP_PATH and self.headers.get("Content-Type") == "application/x-protobuf":
                        request = Request.FromString(body)
                except Exception as e:  # noqa: BLE001 - a bad request is recorded, not fatal
                    print("receiver: cannot decode:", e, file=sys.stderr)
                receiver.record(request, dict(self.headers), behaviour)
                if behaviour[0] == "hang":
                    time.sleep(behaviour[1])
                    return
                if request is None and behaviour[0] == "ok":
                    behaviour = ("status", 400)
                if behaviour[0] == "status":
                    self.send_response(behaviour[1])
                    if len(behaviour) > 2 and behaviour[2] is not None:
                        self.send_header("Retry-After", str(behaviour[2]))
                    msg = b"scripted failure"
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                resp = Response()
                if behaviour[0] == "partial":
                    resp.partial_success.rejected_profiles = behaviour[1]
                    resp.partial_success.error_message = behaviour[2]
                out = resp.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, port or 0), Handler)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls["cert"], tls["key"])
            if tls.get("client_ca"):
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(tls["client_ca"])
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        """Like a receiver that goes away: the listener and every open connection close."""
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class GrpcReceiver(Receiver):
    def __init__(self, port=None, tls=None):
        super().__init__()
        import grpc
        Request, Response = classes()
        receiver = self

        def export(request, context):
            behaviour = receiver.next_behaviour()
            receiver.record(request, dict(context.invocation_metadata()), behaviour)
            if behaviour[0] == "hang":
                time.sleep(behaviour[1])
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "hung")
            if behaviour[0] == "grpc":
                code = getattr(grpc.StatusCode, behaviour[1])
                if len(behaviour) > 2 and behaviour[2]:
                    context.set_trailing_metadata((("grpc-status-details-bin", retry_info_status(code.value[0], behaviour[2])),))
                context.abort(code, "scripted " + behaviour[1])
            resp = Response()
            if behaviour[0] == "partial":
                resp.partial_success.rejected_profiles = behaviour[1]
                resp.partial_success.error_message = behaviour[2]
            return resp

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.profiles.v1development.ProfilesService",
            {"Export": grpc.unary_unary_rpc_method_handler(
                export, request_deserializer=Request.FromString,
                response_serializer=Response.SerializeToString)})
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((handler,))
        addr = f"127.0.0.1:{port or 0}"
        if tls:
            with open(tls["key"], "rb") as k, open(tls["cert"], "rb") as c:
                pair = [(k.read(), c.read())]
            if tls.get("client_ca"):
                with open(tls["client_ca"], "rb") as ca:
                    creds = grpc.ssl_server_credentials(pair, root_certificates=ca.read(), require_client_auth=True)
            else:
                creds = grpc.ssl_server_credentials(pair)
            self.port = self.server.add_secure_port(addr, creds)
        else:
            self.port = self.server.add_insecure_port(addr)
        self.server.start()

    def stop(self):
        self.server.stop(0).wait()


def retry_info_status(code, delay_s):
    """A google.rpc.Status with a RetryInfo detail, encoded by hand (tiny schema)."""
    def varint(n):
        out = b""
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                out += bytes([b | 0x80])
            else:
                return out + bytes([b])

    def field(num, wire, payload):
        if wire == 0:
            return varint(num << 3) + varint(payload)
        return varint(num << 3 | 2) + varint(len(payload)) + payload

    seconds, nanos = int(delay_s), int((delay_s - int(delay_s)) * 1e9)
    duration = field(1, 0, seconds) + (field(2, 0, nanos) if nanos else b"")
    retry_info = field(1, 2, duration)
    any_msg = field(1, 2, b"type.googleapis.com/google.rpc.RetryInfo") + field(2, 2, retry_info)
    return field(1, 0, code) + field(2, 2, b"retry") + field(3, 2, any_msg)


# ---- what the tests look at ---------------------------------------------------

def check_dictionary(req):
    """The dictionary rules: zero entries at index 0, no duplicates, every index in range.
    Returns a list of problems (empty when all is well)."""
    d = req.dictionary
    problems = []
    tables = {
        "mapping_table": d.mapping_table, "location_table": d.location_table,
        "function_table": d.function_table, "link_table": d.link_table,
        "attribute_table": d.attribute_table, "stack_table": d.stack_table,
    }
    if not d.string_table or d.string_table[0] != "":
        problems.append("string_table[0] is not \"\"")
    if len(set(d.string_table)) != len(d.string_table):
        problems.append("duplicate strings")
    for name, table in tables.items():
        if not len(table):
            problems.append(f"{name} has no zero entry")
            continue
        if table[0].ByteSize() != 0:
            problems.append(f"{name}[0] is not the zero value")
        encoded = [e.SerializeToString(deterministic=True) for e in table]
        if len(set(encoded)) != len(encoded):
            problems.append(f"duplicates in {name}")
    ns, nm, nl, nf, na, nst = (len(d.string_table), len(d.mapping_table), len(d.location_table),
                               len(d.function_table), len(d.attribute_table), len(d.stack_table))

    def rng(what, i, n, zero_ok=True):
        if not (0 if zero_ok else 1) <= i < n:
            problems.append(f"{what} index {i} out of range (table of {n})")

    for m in d.mapping_table:
        rng("mapping filename", m.filename_strindex, ns)
        for a in m.attribute_indices:
            rng("mapping attribute", a, na, False)
    for f in d.function_table:
        for s in (f.name_strindex, f.system_name_strindex, f.filename_strindex):
            rng("function string", s, ns)
    for loc in d.location_table:
        rng("location mapping", loc.mapping_index, nm)
        for line in loc.lines:
            rng("line function", line.function_index, nf, False)
        for a in loc.attribute_indices:
            rng("location attribute", a, na, False)
    for st in d.stack_table:
        for li in st.location_indices:
            rng("stack location", li, nl, False)
    for a in d.attribute_table:
        rng("attribute key", a.key_strindex, ns)
    for rp in req.resource_profiles:
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                rng("sample type", p.sample_type.type_strindex, ns)
                for s in p.samples:
                    rng("sample stack", s.stack_index, nst, False)
                    for a in s.attribute_indices:
                        rng("sample attribute", a, na, False)
                    if s.values and s.timestamps_unix_nano and len(s.values) != len(s.timestamps_unix_nano):
                        problems.append("values and timestamps differ in length")
    return problems


def any_value(v, d=None):
    """An attribute's value; with the dictionary d, a string given by reference
    (string_value_strindex, as a Collector re-encodes them) resolved too."""
    kind = v.WhichOneof("value")
    if kind == "string_value_strindex" and d is not None:
        return d.string_table[v.string_value_strindex]
    return getattr(v, kind) if kind else None


def resource_attrs(rp, d=None):
    """{key: value} of a resource. ember writes plain keys and values; with the dictionary d,
    reference-based ones (key_strindex) are resolved too."""
    return {(kv.key or (d.string_table[kv.key_strindex] if d is not None else "")):
            any_value(kv.value, d) for kv in rp.resource.attributes}


def attrs_of(d, indices):
    return {d.string_table[d.attribute_table[i].key_strindex]: any_value(d.attribute_table[i].value, d)
            for i in indices}


def sample_count(s):
    return sum(s.values) if s.values else len(s.timestamps_unix_nano)


def unnamed(d, loc):
    """A location without lines named as ember's other outputs name it: file+0xOFFSET (from
    the mapping, in whichever address space both are), or [unknown] without a mapping."""
    if not loc.mapping_index:
        return "[unknown]"
    m = d.mapping_table[loc.mapping_index]
    name = os.path.basename(d.string_table[m.filename_strindex]) or "[unknown]"
    return f"{name}+0x{loc.address - m.memory_start + m.file_offset:x}"


def frames(d, stack_index):
    """Function names of a stack, leaf first (inlined frames first within a location)."""
    out = []
    for li in d.stack_table[stack_index].location_indices:
        loc = d.location_table[li]
        for line in loc.lines:
            out.append(d.string_table[d.function_table[line.function_index].name_strindex])
        if not loc.lines:
            out.append(unnamed(d, loc))
    return out


def samples(req, pid=None):
    """[(resource attrs, profile, sample, frames)] of every sample (of one process)."""
    out = []
    d = req.dictionary
    for rp in req.resource_profiles:
        ra = resource_attrs(rp, d)
        if pid is not None and ra.get("process.pid") != pid:
            continue
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                for s in p.samples:
                    out.append((ra, p, s, frames(d, s.stack_index)))
    return out


def leaf_counts(reqs, pid, leaves):
    """{leaf: count} over the samples of pid, each counted for the innermost of the leaves
    in its stack (an interrupt may sit above it), and the total of those samples."""
    counts = collections.Counter()
    for req in reqs:
        for _, _, s, fr in samples(req, pid):
            leaf = next((f for f in fr if f in leaves), None)
            if leaf:
                counts[leaf] += sample_count(s)
    return counts, sum(counts.values())


def pid_total(reqs, pid):
    return sum(sample_count(s) for req in reqs for _, _, s, _ in samples(req, pid))


def summary(req):
    lines = []
    for ra, p, s, fr in samples(req)[:0]:
        lines.append(str(fr))
    per = collections.Counter()
    for ra, _, s, _ in samples(req):
        per[(ra.get("process.pid"), ra.get("process.executable.name"))] += sample_count(s)
    for (pid, name), n in per.most_common(10):
        lines.append(f"  pid {pid} {name}: {n} samples")
    return "\n".join(lines)


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--http", type=int)
    ap.add_argument("--grpc", type=int)
    a = ap.parse_args()
    r = HttpReceiver(a.http) if a.http else GrpcReceiver(a.grpc or 4317)
    print(f"listening on 127.0.0.1:{r.port}", flush=True)
    seen = 0
    try:
        while True:
            time.sleep(0.5)
            got = r.delivered()
            for req in got[seen:]:
                problems = check_dictionary(req)
                print(f"request: {len(req.resource_profiles)} resources, "
                      f"{len(req.dictionary.string_table)} strings; dictionary "
                      f"{'ok' if not problems else problems}")
                print(summary(req), flush=True)
            seen = len(got)
    except KeyboardInterrupt:
        r.stop()


if __name__ == "__main__":
    main()
