# SPDX-License-Identifier: Apache-2.0
"""A FastCGI client of one request at a time (the FastCGI 1.0 specification: records of an
8-byte header; BEGIN_REQUEST for the responder role, PARAMS and STDIN each ended by an empty
record; STDOUT until END_REQUEST), enough to ask php-fpm for a script as a web server
would."""
import socket
import struct

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7
RESPONDER = 1


def _record(kind, body, request_id=1):
    return struct.pack(">BBHHBB", VERSION, kind, request_id, len(body), 0, 0) + body


def _length(n):
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def _params(params):
    body = b"".join(_length(len(k)) + _length(len(v)) + k + v
                    for k, v in ((k.encode(), v.encode()) for k, v in params.items()))
    return _record(PARAMS, body) if body else b""


def _read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("php-fpm closed the connection mid-record")
        data += chunk
    return data


def request(socket_path, script, timeout=30):
    """Runs script (an absolute path) through the php-fpm listening on socket_path; returns
    (the response body without its headers, what the script wrote to stderr)."""
    params = {"SCRIPT_FILENAME": script, "SCRIPT_NAME": script, "REQUEST_METHOD": "GET",
              "SERVER_PROTOCOL": "HTTP/1.1", "GATEWAY_INTERFACE": "CGI/1.1",
              "QUERY_STRING": "", "CONTENT_LENGTH": "0"}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        sock.sendall(_record(BEGIN_REQUEST, struct.pack(">HB5x", RESPONDER, 0)) +
                     _params(params) + _record(PARAMS, b"") + _record(STDIN, b""))
        out, err = b"", b""
        while True:
            _, kind, _, length, padding, _ = struct.unpack(">BBHHBB", _read_exact(sock, 8))
            body = _read_exact(sock, length + padding)[:length]
            if kind == STDOUT:
                out += body
            elif kind == STDERR:
                err += body
            elif kind == END_REQUEST:
                break
    _, _, body = out.partition(b"\r\n\r\n")
    return body.decode(errors="replace"), err.decode(errors="replace")
