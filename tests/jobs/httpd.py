#!/usr/bin/env python3
"""tests/jobs/httpd.py — the HTTP server that job tests start themselves.

Run: python3 httpd.py [--host 127.0.0.1] [--port 0]. Prints the port it
bound on the first stdout line (flushed), then serves (HTTP/1.1, keep-alive,
one thread per connection) until killed, or until its stdin closes when
stdin is a pipe (so it dies with the test that started it). Everything is
kept in memory. Behaviour is chosen by the URL path:

  GET /data/<n>?seed=<s>      n bytes of the seed's stream (below), with
                              Content-Length; honours "Range: bytes=a-[b]"
                              (206 + Content-Range; 416 past the end).
      &nolength=1             no Content-Length: the body ends when the
                              connection closes.
      &norange=1              ignores Range (always 200, the whole body).
  GET /datasha/<n>?seed=<s>   {"sha256": hex, "length": n} of that body.
  GET /file/<name>            what was last PUT/POSTed to /upload/<name>
                              (Range as /data; 404 if nothing was).
  PUT|POST /upload/<name>     stores the body: 201 for PUT, 200 for POST.
  PUT|POST /slowup/<ms>/<name>
                              as /upload/<name>, but the body is read in
                              64 KiB pieces with ms milliseconds of sleep
                              before each (a slow receiver: the sender
                              stays in its delivery); the request is in
                              /log as soon as its headers arrived.
  GET /uploaded/<name>/sha256 {"sha256": hex, "length": n, "method": m}; 404
                              if nothing was uploaded.
  * /redirect/<code>?to=<url> answers <code> with Location: <url> (the
                              query value percent-decoded); any method, the
                              request body read and dropped first.
  * /flaky/<k>/<rest>         the first k requests to this exact path+query
                              answer 503; later ones are served as /<rest>.
  * /hookfail/<k>/<name>      the first k requests answer 500; later ones
                              are served as /hook/<name>.
  GET /cut/<m>/<rest>         the first request to this exact path+query
                              sends full headers (Content-Length of the
                              whole answer) but only m body bytes, then
                              closes the connection; later ones (Range
                              retries) are served as /<rest> normally.
  GET /slow/<ms>/<rest>       /<rest>, its body sent in 64 KiB pieces with
                              ms milliseconds of sleep before each.
  POST /slow/<ms>/hook/<name> as /hook/<name>, answered (and recorded) only
                              after ms milliseconds (a slow receiver).
  * /status/<code>            answers <code> (a short text body).
  POST /hook/<name>           records {"timestamp": X-Rdev-Timestamp,
                              "signature": X-Rdev-Signature, "content_type",
                              "body" (text), "body_hex"}; answers 200.
  GET /hooks/<name>           the JSON list of those records, in arrival
                              order ([] when none).
  GET /count                  {"requests": N}: requests served so far, not
                              counting /count and /log themselves.
  GET /log                    the JSON list of those requests, in order:
                              {"method", "path" (with query), "range"}.

The /data stream: byte k of seed s's stream is byte k mod 2**20 of a
1 MiB block of 131072 little-endian 64-bit words, word i being
    z = (s * 2**32 + i + 1) * 0x9E3779B97F4A7C15 mod 2**64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 mod 2**64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB mod 2**64
    word = z ^ (z >> 31)
(splitmix64; s a decimal number below 2**32, default 0).
"""
import argparse
import hashlib
import json
import os
import re
import socket
import stat
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MIB = 1 << 20
M64 = (1 << 64) - 1

LOCK = threading.Lock()
BLOCKS = {}  # seed -> 2 MiB (the block twice, so any 1 MiB slice is contiguous)
UPLOADS = {}  # name -> (bytes, method)
HOOKS = {}  # name -> [record]
COUNTS = {}  # "flaky"/"cut"/"hookfail" path -> requests seen
LOG = []


def block(seed):
    with LOCK:
        b = BLOCKS.get(seed)
    if b is None:
        words = bytearray(MIB)
        base = (seed << 32) + 1
        for i in range(MIB // 8):
            z = ((base + i) * 0x9E3779B97F4A7C15) & M64
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            z ^= z >> 31
            words[8 * i:8 * i + 8] = z.to_bytes(8, "little")
        b = memoryview(bytes(words) * 2)
        with LOCK:
            BLOCKS[seed] = b
    return b


def bump(key):
    with LOCK:
        COUNTS[key] = COUNTS.get(key, 0) + 1
        return COUNTS[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rdev-test-httpd"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.serve("GET")

    def do_PUT(self):
        self.serve("PUT")

    def do_POST(self):
        self.serve("POST")

    def do_DELETE(self):
        self.serve("DELETE")

    def serve(self, method):
        try:
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            if url.path not in ("/count", "/log"):
                with LOCK:
                    LOG.append({"method": method, "path": self.path, "range": self.headers.get("Range")})
            m = re.fullmatch(r"/slowup/(\d+)/([^/]+)", url.path)
            if m and method in ("PUT", "POST"):
                body = self.read_body(int(m.group(1)) / 1000.0)
                url = url._replace(path="/upload/" + m.group(2))
            else:
                body = self.read_body()
            self.route(method, url.path, url.query, query, body, {})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def read_body(self, delay=0.0):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        left = int(self.headers.get("Content-Length") or 0)
        parts = []
        while left > 0:
            if delay:
                time.sleep(delay)
            chunk = self.rfile.read(min(left, 64 << 10 if delay else MIB))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def reply(self, code, data=b"", ctype="text/plain", headers=()):
        if isinstance(data, str):
            data = data.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data and code not in (204, 304):
            self.wfile.write(data)

    def json(self, obj, code=200):
        self.reply(code, json.dumps(obj), "application/json")

    def route(self, method, path, rawq, query, body, how):
        parts = path.split("/")[1:]
        head = parts[0] if parts else ""
        rest = "/" + "/".join(parts[2:])
        key = path + "?" + rawq
        if head in ("flaky", "hookfail") and len(parts) >= 3:
            if bump(head + key) <= int(parts[1]):
                return self.reply(503 if head == "flaky" else 500, "failing on purpose\n")
            if head == "hookfail":
                rest = "/hook" + rest
            return self.route(method, rest, rawq, query, body, how)
        if head == "cut" and len(parts) >= 3:
            if bump(head + key) == 1:
                how = dict(how, cut=int(parts[1]))
            return self.route(method, rest, rawq, query, body, how)
        if head == "slow" and len(parts) >= 3:
            return self.route(method, rest, rawq, query, body, dict(how, delay=int(parts[1]) / 1000.0))
        if head == "redirect" and len(parts) == 2:
            return self.reply(int(parts[1]), "", headers=[("Location", query.get("to", ["/"])[0])])
        if head == "status" and len(parts) == 2:
            return self.reply(int(parts[1]), "status %s\n" % parts[1])
        if method == "GET" and path == "/count":
            with LOCK:
                return self.json({"requests": len(LOG)})
        if method == "GET" and path == "/log":
            with LOCK:
                return self.json(list(LOG))
        if method == "GET" and head == "data" and len(parts) == 2:
            seed = int(query.get("seed", ["0"])[0])
            b = block(seed)
            return self.send_bytes(int(parts[1]), lambda off, n: b[off % MIB:off % MIB + n], query, how)
        if method == "GET" and head == "datasha" and len(parts) == 2:
            n, b = int(parts[1]), block(int(query.get("seed", ["0"])[0]))
            h = hashlib.sha256()
            for off in range(0, n, MIB):
                h.update(b[0:min(MIB, n - off)])
            return self.json({"sha256": h.hexdigest(), "length": n})
        if method == "GET" and head == "file" and len(parts) == 2:
            with LOCK:
                up = UPLOADS.get(parts[1])
            if up is None:
                return self.reply(404, "no such file\n")
            mv = memoryview(up[0])
            return self.send_bytes(len(mv), lambda off, n: mv[off:off + n], query, how)
        if method in ("PUT", "POST") and head == "upload" and len(parts) == 2:
            with LOCK:
                UPLOADS[parts[1]] = (body, method)
            return self.reply(201 if method == "PUT" else 200, "stored %d bytes\n" % len(body))
        if method == "GET" and head == "uploaded" and len(parts) == 3 and parts[2] == "sha256":
            with LOCK:
                up = UPLOADS.get(parts[1])
            if up is None:
                return self.reply(404, "nothing uploaded\n")
            return self.json({"sha256": hashlib.sha256(up[0]).hexdigest(), "length": len(up[0]), "method": up[1]})
        if method == "POST" and head == "hook" and len(parts) == 2:
            if how.get("delay"):
                time.sleep(how["delay"])
            rec = {
                "timestamp": self.headers.get("X-Rdev-Timestamp"),
                "signature": self.headers.get("X-Rdev-Signature"),
                "content_type": self.headers.get("Content-Type"),
                "body": body.decode("utf-8", "replace"),
                "body_hex": body.hex(),
            }
            with LOCK:
                HOOKS.setdefault(parts[1], []).append(rec)
            return self.reply(200, "ok\n")
        if method == "GET" and head == "hooks" and len(parts) == 2:
            with LOCK:
                return self.json(list(HOOKS.get(parts[1], [])))
        return self.reply(404, "no such endpoint\n")

    def send_bytes(self, total, get, query, how):
        """Answers total bytes, get(off, n) giving n <= 1 MiB of them, with
        Range, and how's cut and delay."""
        start, end = 0, total - 1
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip()) if rng and "norange" not in query else None
        if m:
            start = int(m.group(1))
            if m.group(2):
                end = min(end, int(m.group(2)))
            if start >= total:
                return self.reply(416, "", headers=[("Content-Range", "bytes */%d" % total)])
        length = max(0, end + 1 - start)
        self.send_response(206 if m else 200)
        self.send_header("Content-Type", "application/octet-stream")
        if m:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, total))
        if "nolength" in query:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        delay, cut = how.get("delay"), how.get("cut")
        piece = 64 << 10 if delay else MIB
        pos, sent = start, 0
        while sent < length:
            n = min(piece, length - sent)
            if cut is not None and sent + n > cut:
                self.wfile.write(get(pos, cut - sent))
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if delay:
                time.sleep(delay)
            self.wfile.write(get(pos, n))
            pos += n
            sent += n


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, socket.timeout)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    srv = Server((args.host, args.port), Handler)
    print(srv.server_address[1], flush=True)
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        while sys.stdin.buffer.read(4096):
            pass
        srv.shutdown()
    else:
        srv.serve_forever()


if __name__ == "__main__":
    main()
