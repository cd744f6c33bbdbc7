#!/usr/bin/env python3
"""hostile_engine.py - an OpenAI-compatible server that misbehaves on purpose.

Used by tests/integration/q_server_errors.sh to check that moeprobe never turns
a wrong answer from a live server (or a Python death) into a CUDA verdict, and
by q_done_open.sh, q_escapee.sh and q_unknown_error.sh (modes donehold, daemon,
unknownerr).

    hostile_engine.py --mode MODE [--good N] [--token-delay S] --port PORT

It serves GET /health, GET /v1/models and POST /v1/completions (streaming SSE
like vLLM). The first N generation requests (default 2) are answered well;
from then on every one gets MODE:

  http500    HTTP 500 with a vLLM-style error body (the server stays up)
  cut        a few events, then the connection closes without [DONE]
  nonsse     HTTP 200 with a JSON body instead of an event stream
  chunked    a broken chunked transfer encoding (invalid chunk size)
  oversized  one event larger than 1 MiB
  garbage    an event whose data is not JSON
  empty      every request: 200 events with empty text and a usage chunk
             claiming max_tokens tokens (nothing was generated)
  pytrace    a Python traceback (no CUDA error) on stderr, then exit 1
  cuda       a torch CUDA illegal-memory-access traceback, then exit 1;
             with CUDA_LAUNCH_BLOCKING=1 in the environment it never fails
  donehold   every request: a good stream and [DONE], then the response is
             held open (no terminating chunk, no close) until the client
             hangs up
  daemon     before serving, daemonises a child: double fork, setsid, stdio
             on /dev/null, exec with an EMPTY environment (no marker
             variables), ignores SIGTERM and sleeps; it writes its pid to
             --pidfile (required) before the engine goes on
  unknownerr before serving, prints error lines no vLLM signature matches
             (and an INFO line that mentions a failure), then exits 2
  echoauth   HTTP 401 whose error message echoes the request's Authorization
             header and the secret-named variables of its environment (a
             proxy or plugin that quotes credentials back: secrets_channels.sh),
             then logs the same message and exits 1
  announce   prints vLLM's "Starting vLLM API server 0 on
             http://0.0.0.0:ANNOUNCE" (--announce, default PORT+1) and listens
             there, not on PORT (an engine listening somewhere else)
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--mode", required=True)
ap.add_argument("--good", type=int, default=2)
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--announce", type=int, default=0)
ap.add_argument("--pidfile", default="")
ap.add_argument("--token-delay", type=float, default=0.0)  # seconds before each good token
args, _unknown = ap.parse_known_args()

MODEL = "test/hostile-NVFP4"
lock = threading.Lock()
served = 0
blocking = os.environ.get("CUDA_LAUNCH_BLOCKING") == "1"


def log(msg):
    sys.stderr.write("INFO %s [hostile_engine.py] %s\n" % (time.strftime("%m-%d %H:%M:%S"), msg))
    sys.stderr.flush()


def die(text):
    sys.stderr.write(text)
    sys.stderr.flush()
    os._exit(1)


def event(obj):
    return ("data: %s\n\n" % json.dumps(obj)).encode()


def token(i):
    return event({"id": "cmpl-1", "object": "text_completion", "model": MODEL,
                  "choices": [{"index": 0, "text": " word%d" % i, "finish_reason": None}]})


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def send_plain(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.send_plain(200, "application/json", b"")
        elif self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            self.send_plain(200, "application/json", body.encode())
        else:
            self.send_plain(404, "application/json", b'{"detail":"Not Found"}')

    def do_POST(self):
        global served
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        max_tokens = int(req.get("max_tokens", 16))
        with lock:
            served += 1
            bad = served > args.good
        mode = args.mode
        if mode == "empty":
            self.stream_empty(max_tokens)
            return
        if mode == "donehold":
            self.stream_done_then_hold(max_tokens)
            return
        if not bad or (mode == "cuda" and blocking):
            self.stream_good(max_tokens)
            return
        if mode == "http500":
            body = json.dumps({"error": {"message": "internal failure in the scheduler",
                                         "type": "InternalServerError", "param": None,
                                         "code": 500}}).encode()
            self.send_plain(500, "application/json", body)
        elif mode == "echoauth":
            env = "; ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                            if k in ("HF_TOKEN", "MY_API_KEY", "DB_PASS", "SMTP_PWD", "GITHUB_PAT"))
            msg = "invalid credentials (Authorization: %s; %s)" % (
                self.headers.get("Authorization", "none"), env)
            body = json.dumps({"error": {"message": msg, "type": "AuthenticationError",
                                         "param": None, "code": 401}}).encode()
            self.send_plain(401, "application/json", body)
            self.wfile.flush()
            die("ERROR %s\n" % msg)
        elif mode == "nonsse":
            body = json.dumps({"choices": [{"text": "hello", "index": 0}]}).encode()
            self.send_plain(200, "application/json", body)
        elif mode == "cut":
            self.start_sse(chunked=False)
            self.wfile.write(token(0) + token(1))
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "chunked":
            self.start_sse(chunked=True)
            self.wfile.write(b"zz\r\nnot a chunk\r\n")
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "oversized":
            self.start_sse(chunked=False)
            big = "x" * (1 << 20 | 4096)
            self.wfile.write(event({"choices": [{"index": 0, "text": big}]}))
            self.close_connection = True
        elif mode == "garbage":
            self.start_sse(chunked=False)
            self.wfile.write(token(0) + b"data: {\"choices\": [{\"text\": \x01garbage\n\n")
            self.close_connection = True
        elif mode == "pytrace":
            die("ERROR %s [core.py:123] EngineCore failed\n"
                "Traceback (most recent call last):\n"
                '  File "/opt/app/scheduler.py", line 42, in schedule\n'
                "    raise ValueError(\"bad block table\")\n"
                "ValueError: bad block table\n" % time.strftime("%m-%d %H:%M:%S"))
        elif mode == "cuda":
            die("ERROR %s [core.py:812] EngineCore encountered a fatal error.\n"
                "Traceback (most recent call last):\n"
                '  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", '
                "line 1712, in execute_model\n"
                "    valid = sampled.item()\n"
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
                % time.strftime("%m-%d %H:%M:%S"))
        else:
            self.stream_good(max_tokens)

    def start_sse(self, chunked):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def stream_good(self, max_tokens):
        self.start_sse(chunked=True)
        for i in range(max_tokens):
            if args.token_delay:
                time.sleep(args.token_delay)  # a slow engine (resume_escapee.sh)
            self.chunk(token(i))
        self.chunk(event({"choices": [], "usage": {"prompt_tokens": 5,
                                                   "completion_tokens": max_tokens,
                                                   "total_tokens": 5 + max_tokens}}))
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def stream_done_then_hold(self, max_tokens):
        self.start_sse(chunked=True)
        for i in range(max_tokens):
            self.chunk(token(i))
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.flush()
        # no terminating chunk: wait for the client to leave
        try:
            while self.connection.recv(4096):
                pass
        except OSError:
            pass
        self.close_connection = True

    def stream_empty(self, max_tokens):
        self.start_sse(chunked=True)
        for _ in range(200):
            self.chunk(event({"choices": [{"index": 0, "text": "", "finish_reason": None}]}))
        self.chunk(event({"choices": [], "usage": {"prompt_tokens": 5,
                                                   "completion_tokens": max_tokens,
                                                   "total_tokens": 5 + max_tokens}}))
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


DAEMON = r'''
import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
path, ready = sys.argv[1], int(sys.argv[2])
with open(path + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(path + ".tmp", path)
os.write(ready, b"x")
os.close(ready)
while True:
    signal.pause()
'''


def daemonise(pidfile):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.set_inheritable(w, True)
            os.execve(sys.executable, [sys.executable, "-c", DAEMON, pidfile, str(w)], {})
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    os.read(r, 1)  # the daemon wrote its pid file
    os.close(r)
    log("daemon started")


if args.mode == "unknownerr":
    log("loading plugins; 0 plugins failed so far")
    sys.stderr.write("plugin frobnicator: load failed: libfoo.so.3 missing\n")
    log("retrying")
    sys.stderr.write("quux subsystem reported a FATAL condition (code 7)\n")
    sys.stderr.write("giving up\n")
    sys.stderr.flush()
    sys.exit(2)

if args.mode == "daemon":
    if not args.pidfile:
        sys.exit("hostile_engine.py: --mode daemon needs --pidfile")
    daemonise(args.pidfile)

port = args.port
if args.mode == "announce":
    port = args.announce or args.port + 1
log("non-default args: {'model': '%s', 'port': %d}" % (MODEL, args.port))
srv = ThreadingHTTPServer(("127.0.0.1", port), H)
srv.daemon_threads = True
if args.mode == "announce":
    log("Starting vLLM API server 0 on http://0.0.0.0:%d" % port)
log("Application startup complete.")
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
