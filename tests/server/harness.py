"""A real `lockstep serve` on 127.0.0.1 and a stdlib HTTP client for it (no packages needed):
start/stop, JSON requests, Server-Sent Events, and the normalised result of a generation that
the tests compare byte for byte."""
import ctypes
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time


class Server:
    def __init__(self, binary, model, args=(), api_key=None, log=None, ready_timeout=600):
        cmd = [binary, "serve"] + ([] if model == "default" else ["-m", model]) + ["--port", "0"] + list(args)
        if api_key:
            cmd += ["--api-key", api_key]
        self.api_key = api_key
        self.log_path = log or f"/tmp/lockstep-serve-{os.getpid()}-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "w+")
        # The server dies with this process, should a test be killed (a CTest timeout).
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # PR_SET_PDEATHSIG
        try:
            self._wait_ready(ready_timeout)
        except BaseException:
            self.proc.kill()  # never leave a server behind
            self.proc.wait()
            raise

    def _wait_ready(self, ready_timeout):
        self.port = None
        t0 = time.time()
        while self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lockstep serve exited with {self.proc.returncode}:\n{self.text_log()}")
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text_log())
            if m:
                self.port = int(m.group(1))
            elif time.time() - t0 > 30:
                raise RuntimeError("lockstep serve did not start listening:\n" + self.text_log())
            else:
                time.sleep(0.02)
        self.saw_loading = False
        while True:
            status, _ = self.get("/health")
            if status == 200:
                break
            if status == 503:
                self.saw_loading = True
            if self.proc.poll() is not None or time.time() - t0 > ready_timeout:
                raise RuntimeError("lockstep serve did not become ready:\n" + self.text_log())
            time.sleep(0.05)

    def text_log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise RuntimeError("lockstep serve did not stop within 60 s of SIGTERM")
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        rc = self.stop()
        if exc[0] is None and rc != 0:
            raise RuntimeError(f"lockstep serve exited with {rc}:\n{self.text_log()}")

    # --- HTTP -----------------------------------------------------------------------------
    def conn(self, timeout=600):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def headers(self, extra=None):
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, headers=None, raw=None):
        c = self.conn()
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=self.headers(headers))
        r = c.getresponse()
        payload = r.read()
        c.close()
        return r.status, payload, dict(r.getheaders())

    def get(self, path):
        try:
            status, payload, _ = self.request("GET", path)
        except (ConnectionError, OSError):
            return 0, b""
        return status, payload

    def post(self, path, body, headers=None):
        status, payload, hdrs = self.request("POST", path, body, headers)
        return status, json.loads(payload), hdrs

    def metrics(self):
        status, payload = self.get("/metrics")
        assert status == 200, status
        out = {}
        for line in payload.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stream(self, path, body, on_chunk=None):
        """POSTs a streamed request; returns the decoded `data:` events (without [DONE]) and
        whether [DONE] came. on_chunk(i, event) may return False to hang up."""
        c = self.conn()
        c.request("POST", path, body=json.dumps(body), headers=self.headers())
        r = c.getresponse()
        if r.status != 200:
            payload = r.read()
            c.close()
            raise AssertionError(f"stream {path}: HTTP {r.status}: {payload!r}")
        assert r.getheader("Content-Type", "").startswith("text/event-stream")
        events, done, buf = [], False, b""
        while True:
            line = r.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            if line.startswith(b":"):
                continue  # an SSE comment (keep-alive)
            assert line.startswith(b"data: "), line
            data = line[6:]
            if data == b"[DONE]":
                done = True
                break
            # Every chunk is whole UTF-8: strict decoding fails on a split character.
            ev = json.loads(data.decode("utf-8", errors="strict"))
            events.append(ev)
            if on_chunk is not None and on_chunk(len(events) - 1, ev) is False:
                c.sock.close()
                c.close()
                return events, False
        c.close()
        return events, done


def gen_path(chat):
    return "/v1/chat/completions" if chat else "/v1/completions"


def normalise_whole(resp, chat):
    ch = resp["choices"][0]
    text = ch["message"]["content"] if chat else ch["text"]
    lp = ch.get("logprobs")
    if lp is not None:
        lp = lp["content"] if chat else [list(x) for x in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])]
    return {"text": text, "finish": ch["finish_reason"], "logprobs": lp,
            "completion_tokens": resp["usage"]["completion_tokens"]}


def normalise_stream(events, chat):
    text, finish, lp, usage, finishes = "", None, None, None, 0
    for ev in events:
        if "usage" in ev and ev.get("usage"):
            usage = ev["usage"]
        for ch in ev.get("choices", []):
            if chat:
                text += ch.get("delta", {}).get("content", "") or ""
            else:
                text += ch.get("text", "")
            if ch.get("finish_reason"):
                finish = ch["finish_reason"]
                finishes += 1
            l = ch.get("logprobs")
            if l:
                lp = lp or []
                lp += l["content"] if chat else [list(x) for x in zip(l["tokens"], l["token_logprobs"], l["top_logprobs"])]
    assert finishes == 1, f"{finishes} finish_reason chunks"
    out = {"text": text, "finish": finish, "logprobs": lp}
    out["completion_tokens"] = usage["completion_tokens"] if usage else None
    return out


def generate(srv, req, chat, stream):
    body = dict(req)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        events, done = srv.stream(gen_path(chat), body)
        assert done, "stream ended without [DONE]"
        return normalise_stream(events, chat)
    status, resp, _ = srv.post(gen_path(chat), body)
    assert status == 200, (status, resp)
    return normalise_whole(resp, chat)


def check(cond, msg):
    if not cond:
        print("FAIL:", msg, flush=True)
        sys.exit(1)
