#!/usr/bin/env python3
"""hostile_text_engine.py - a test-only engine whose words are hostile text.

Used by tests/integration/hostile_text.sh to check that what an engine says
reaches report.md, the terminal summaries and `moeprobe scan` escaped:
Markdown links and images, raw HTML, table-breaking pipes, backticks,
terminal escape sequences (ESC, BEL, CR), a C1 control and a bidi override.

    hostile_text_engine.py --port PORT [--good N] [--http500]

It logs like vLLM (version and model line, the NvFp4 MoE backend line with
its candidate list), serves GET /health, GET /v1/models and streaming POST
/v1/completions; the first N generation requests (default 2) are answered,
then it prints a CUDA illegal-memory-access traceback carrying the hostile
text and exits 1 (with --http500: answers HTTP 500 with the hostile text as
the error message and stays up, like vLLM's JSON error bodies).
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--good", type=int, default=2)
ap.add_argument("--http500", action="store_true")
args, _unknown = ap.parse_known_args()

LINK = "[x](javascript:alert(1))"
IMAGE = "![img](http://evil/x.png)"
HTML = "<script>alert(1)</script><img src=x onerror=alert(1)>"
TERM = "\x1b]0;pwned\x07\x1b[2J\x7f\u009b\u202e"
# no spaces: the model and version fields of the log are \S+
MODEL = "org/" + LINK + IMAGE + HTML + "|cell|`tick`" + TERM
lock = threading.Lock()
served = 0


def stamp():
    return time.strftime("%m-%d %H:%M:%S")


def log(msg):
    sys.stderr.write("INFO %s [api_server.py:1] %s\n" % (stamp(), msg))
    sys.stderr.flush()


def event(obj):
    return ("data: %s\n\n" % json.dumps(obj)).encode()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def send_plain(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.send_plain(200, b"")
        elif self.path == "/v1/models":
            self.send_plain(200, json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode())
        else:
            self.send_plain(404, b'{"detail":"Not Found"}')

    def do_POST(self):
        global served
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        with lock:
            served += 1
            bad = served > args.good
        if bad and args.http500:
            body = {"error": {"message": "scheduler failed " + LINK + " " + HTML + " " + TERM,
                              "type": "InternalServerError", "param": None, "code": 500}}
            self.send_plain(500, json.dumps(body).encode())
            return
        if bad:
            sys.stderr.write(
                "ERROR %s [core.py:812] EngineCore encountered a fatal error.\n"
                "Traceback (most recent call last):\n"
                '  File "/opt/%s%s/gpu_model_runner.py", line 1712, in execute_model\n'
                "    valid = sampled.item()\n"
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered "
                "%s %s %s |a|b| `tick` %s\n" % (stamp(), LINK, IMAGE, LINK, IMAGE, HTML, TERM))
            sys.stderr.flush()
            os._exit(1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        for i in range(int(req.get("max_tokens", 8))):
            self.wfile.write(event({"choices": [{"index": 0, "text": " w%d" % i,
                                                 "finish_reason": None}]}))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


log("vLLM API server version 0.19.0, serving model %s" % MODEL)
sys.stderr.write("INFO %s [nvfp4.py:1] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of "
                 "potential backends: ['FLASHINFER_CUTLASS', '%s', '|cell|', '`tick`', '%s']\n"
                 % (stamp(), HTML, TERM))
srv = ThreadingHTTPServer(("127.0.0.1", args.port), H)
srv.daemon_threads = True
log("Application startup complete.")
srv.serve_forever()
