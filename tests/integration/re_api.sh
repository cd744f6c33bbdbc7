#!/bin/bash
# refengine HTTP API: endpoints, SSE chunk shapes, usage chunk, errors,
# deterministic text, metrics, keep-alive, SIGTERM shutdown with exit 0.
. "$(dirname "$0")/re_lib.sh"
re_start api "$ROOT/tests/worlds/fast.ini" --served-model-name fast --seed 3
re_ready

code=$(curl -s -o /dev/null -w '%{http_code}' "$(re_url /health)")
[ "$code" = 200 ] || fail "/health $code"
curl -s "$(re_url /version)" | grep -q '"version":"0.19.0"' || fail "/version"
curl -s "$(re_url /v1/models)" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["data"][0]["id"]=="fast", d' ||
    fail "/v1/models"

python3 - "$RE_PORT" <<'PY' || fail "SSE shapes"
import http.client, json, sys
port = int(sys.argv[1])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)   # one keep-alive connection

def stream(path, body):
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, r.status
    assert r.getheader("content-type").startswith("text/event-stream"), r.getheader("content-type")
    events = []
    for raw in r.read().decode().split("\n\n"):
        if not raw:
            continue
        assert raw.startswith("data: "), raw
        events.append(raw[6:])
    assert events[-1] == "[DONE]", events[-1]
    return [json.loads(e) for e in events[:-1]]

# completions, usage chunk, exact length with ignore_eos
ev = stream("/v1/completions", {"model": "fast", "prompt": "Tell me a story", "max_tokens": 12,
                                "ignore_eos": True, "stream": True,
                                "stream_options": {"include_usage": True}})
content = [e for e in ev if e["choices"]]
assert len(content) == 12, len(content)
for e in content:
    assert e["object"] == "text_completion" and e["id"].startswith("cmpl-")
    assert set(e["choices"][0]) >= {"index", "text", "logprobs", "finish_reason", "stop_reason"}
assert all(e["choices"][0]["finish_reason"] is None for e in content[:-1])
assert content[-1]["choices"][0]["finish_reason"] == "length"
usage = ev[-1]
assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 12, usage
text1 = "".join(e["choices"][0]["text"] for e in content)

# same prompt again: the same text (deterministic, greedy)
ev2 = stream("/v1/completions", {"prompt": "Tell me a story", "max_tokens": 12, "ignore_eos": True,
                                 "stream": True})
assert "".join(e["choices"][0]["text"] for e in ev2) == text1
assert all(e["choices"] for e in ev2)  # no usage chunk without stream_options

# sanity prompt: correct answer, then EOS
ev3 = stream("/v1/completions", {"prompt": "The capital of France is", "max_tokens": 8, "stream": True})
assert "".join(e["choices"][0]["text"] for e in ev3) == " Paris", ev3
assert ev3[-1]["choices"][0]["finish_reason"] == "stop"

# chat: role chunk first, then content, finish chunk with stop_reason, usage
ev4 = stream("/v1/chat/completions", {"messages": [{"role": "user", "content": "2 + 2 ="}],
                                      "stream": True, "stream_options": {}})
assert ev4[0]["object"] == "chat.completion.chunk"
assert ev4[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}, ev4[0]
assert "".join(e["choices"][0]["delta"].get("content", "") for e in ev4 if e["choices"]) == " 4"
fin = [e for e in ev4 if e["choices"] and e["choices"][0]["finish_reason"]][0]
assert "stop_reason" in fin["choices"][0]
assert ev4[-1]["choices"] == [] and "usage" in ev4[-1]

# non-streaming
conn.request("POST", "/v1/completions", json.dumps({"prompt": "Tell me a story", "max_tokens": 12,
             "ignore_eos": True}), {"Content-Type": "application/json"})
r = conn.getresponse(); d = json.loads(r.read())
assert r.status == 200 and d["choices"][0]["text"] == text1 and d["usage"]["completion_tokens"] == 12, d

def err(method, path, body, headers=None):
    conn.request(method, path, body, headers or {"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, json.loads(r.read() or b"null")

s, d = err("POST", "/v1/completions", "{not json")
assert s == 400 and d["error"]["code"] == 400 and d["error"]["type"] == "Bad Request", (s, d)
s, d = err("POST", "/v1/completions", json.dumps({"model": "nope", "prompt": "x"}))
assert s == 404 and "does not exist" in d["error"]["message"], (s, d)
s, d = err("POST", "/v1/completions", json.dumps({"prompt": "x"}), {"Content-Type": "text/plain"})
assert s == 400 and "Unsupported Media Type" in d["error"]["message"], (s, d)
s, d = err("GET", "/nowhere", None)
assert s == 404 and d == {"detail": "Not Found"}, (s, d)
s, d = err("GET", "/v1/completions", None)
assert s == 405 and d == {"detail": "Method Not Allowed"}, (s, d)
print("api ok")
PY

m=$(curl -s "$(re_url /metrics)")
for name in vllm:num_requests_running vllm:num_requests_waiting vllm:generation_tokens_total \
    vllm:prompt_tokens_total vllm:request_success_total vllm:time_to_first_token_seconds_bucket; do
    grep -q "^$name{" <<<"$m" || fail "metric $name missing"
done
grep -q 'vllm:request_success_total{engine="0",finished_reason="length",model_name="fast"} 3.0' <<<"$m" ||
    fail "request_success_total wrong: $(grep success_total <<<"$m")"
grep -qE '"POST /v1/completions HTTP/1.1" 200 OK' "$RE_LOG" || fail "no access log line"

kill -TERM "$RE_PID"
re_wait_exit
[ "$RE_RC" = 0 ] || fail "exit status $RE_RC after SIGTERM"
grep -q 'INFO:     Application shutdown complete.' "$RE_LOG" || fail "no shutdown lines"
[ -z "$(re_marked_pids)" ] || fail "processes left after shutdown"
echo ok
