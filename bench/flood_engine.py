#!/usr/bin/env python3
"""flood_engine.py - an OpenAI-compatible server that floods every streaming request with
empty token events (bench/evidence_bench.sh).

    flood_engine.py --events N [--text T] --port PORT

GET /health, GET /v1/models and POST /v1/completions (or /v1/chat/completions): each
generation request gets N events whose choices[0].text is T (default "": events that carry no
text, which moeprobe's load client does not count as tokens; --text x makes every event a token
event, N - 1 inter-token gaps per request), then a usage chunk claiming max_tokens tokens and
[DONE]; the connection then closes. It measures what moeprobe keeps per event (it must keep
nothing that grows with them)."""
import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--events", type=int, default=2000000)
ap.add_argument("--text", default="")
ap.add_argument("--port", type=int, required=True)
args, _unknown = ap.parse_known_args()
MODEL = "flood/empty-events"
EVENT = (b'data: {"id":"cmpl-f","object":"text_completion","model":"%s","choices":[{"index":0,'
         b'"text":%s,"finish_reason":null}]}\n\n' % (MODEL.encode(), json.dumps(args.text).encode()))
BLOCK = 10000
CHUNK = EVENT * BLOCK


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *a):
        sys.stderr.write("INFO flood: " + (fmt % a) + "\n")

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {})
        elif self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        max_tokens = int(req.get("max_tokens") or 16)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        left = args.events
        try:
            while left >= BLOCK:
                self.wfile.write(CHUNK)
                left -= BLOCK
            self.wfile.write(EVENT * left)
            usage = {"id": "cmpl-f", "object": "text_completion", "model": MODEL, "choices": [],
                     "usage": {"prompt_tokens": 5, "completion_tokens": max_tokens,
                               "total_tokens": 5 + max_tokens}}
            self.wfile.write(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
            self.wfile.flush()
        except OSError:
            pass


print("INFO flood: serving %d empty events per request on port %d" % (args.events, args.port),
      flush=True)
ThreadingHTTPServer(("127.0.0.1", args.port), H).serve_forever()
