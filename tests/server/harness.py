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
import traceback


class Server:
    def __init__(self, binary, model, args=(), api_key=None, log=None, ready_timeout=600, see_loading=True):
        """see_loading: check that GET /health answers 503 while the model loads (the server
        blocks on the full pipe first); a launcher such as mpirun reads the output itself."""
        cmd = [binary, "serve"] + ([] if model == "default" else ["-m", model]) + ["--port", "0"] + list(args)
        if api_key:
            cmd += ["--api-key", api_key]
        self.api_key = api_key
        self.log_path = log or f"/tmp/lockstep-serve-{os.getpid()}-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "wb")
        # The server writes to a pipe that starts full, so its first line ("listening on",
        # printed once it answers HTTP and before it loads the model) waits until the pipe is
        # read: /health is asked while the model has certainly not loaded, however fast it
        # loads (a tiny model takes a millisecond). Reading starts once it has answered.
        rfd, wfd = os.pipe()
        self._filler = fill_pipe(wfd)
        self._pipe = rfd
        self._drainer = None
        # The server dies with this process, should a test be killed (a CTest timeout).
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        try:
            self.proc = subprocess.Popen(cmd, stdout=wfd, stderr=wfd,
                                         preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # PR_SET_PDEATHSIG
        except BaseException:
            os.close(rfd)
            raise
        finally:
            os.close(wfd)
        self.see_loading = see_loading
        try:
            self._wait_ready(ready_timeout)
        except BaseException:
            self.proc.kill()  # never leave a server behind
            self.proc.wait()
            raise

    def _drain(self):
        """Copies the server's output to the log from now on (the filler skipped)."""
        if self._drainer is not None:
            return

        def copy(fd=self._pipe, skip=self._filler):
            while True:
                b = os.read(fd, 65536)
                if not b:
                    break
                cut = min(skip, len(b))
                skip -= cut
                self.log.write(b[cut:])
                self.log.flush()
            os.close(fd)

        self._drainer = threading.Thread(target=copy, daemon=True)
        self._drainer.start()

    def _wait_ready(self, ready_timeout):
        t0 = time.time()
        # The port, from the kernel's table of listening sockets: the server cannot print it yet.
        self.port = None
        while self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lockstep serve exited with {self.proc.returncode}:\n{self.text_log()}")
            self.port = listening_port(self.proc.pid)
            if self.port is None:
                if time.time() - t0 > 30:
                    # Perhaps held up by the full pipe (an error printed before it listened):
                    # what it wrote, once it can write it.
                    self._drain()
                    try:
                        self.proc.wait(5)
                    except subprocess.TimeoutExpired:
                        pass
                    raise RuntimeError("lockstep serve did not start listening:\n" + self.text_log())
                time.sleep(0.005)
        status, _ = self.get("/health", timeout=30)
        self.saw_loading = status == 503
        self._drain()
        if not self.saw_loading and self.see_loading:
            raise RuntimeError(f"GET /health answered {status}, not 503, before the model was loaded:\n{self.text_log()}")
        while True:
            status, _ = self.get("/health", timeout=30)
            if status == 200:
                break
            if self.proc.poll() is not None or time.time() - t0 > ready_timeout:
                raise RuntimeError("lockstep serve did not become ready:\n" + self.text_log())
            time.sleep(0.05)
        # Its first lines, on the log by now or soon: the port it found, and (printed just after
        # /health turns 200) the slots and ubatch it serves with.
        t1 = time.time()
        while not (re.search(rf"listening on http://127\.0\.0\.1:{self.port}\b", log := self.text_log())
                   and "lockstep serve: ready in" in log):
            if time.time() - t1 > 10:
                raise RuntimeError(f"lockstep serve does not say it listens on port {self.port} and is ready:\n{log}")

    def text_log(self):
        self._drain()
        if self.proc.poll() is not None:
            self._drainer.join(10)  # all it wrote before it exited
        else:
            time.sleep(0.05)  # for what it wrote just now to reach the log
        with open(self.log_path, errors="replace") as f:
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

    def request(self, method, path, body=None, headers=None, raw=None, timeout=600, on_sent=None):
        """on_sent() is called once the request is on the socket, before the answer is read."""
        c = self.conn(timeout)
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=self.headers(headers))
        if on_sent is not None:
            on_sent()
        r = c.getresponse()
        payload = r.read()
        c.close()
        return r.status, payload, dict(r.getheaders())

    def get(self, path, timeout=600):
        try:
            status, payload, _ = self.request("GET", path, timeout=timeout)
        except (ConnectionError, OSError):
            return 0, b""
        return status, payload

    def post(self, path, body, headers=None, on_sent=None):
        status, payload, hdrs = self.request("POST", path, body, headers, on_sent=on_sent)
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

    def stream(self, path, body, on_chunk=None, on_sent=None):
        """POSTs a streamed request; returns the decoded `data:` events (without [DONE]) and
        whether [DONE] came. on_chunk(i, event) may return False to hang up."""
        c = self.conn()
        c.request("POST", path, body=json.dumps(body), headers=self.headers())
        if on_sent is not None:
            on_sent()
        r = c.getresponse()
        if r.status != 200:
            payload = r.read()
            c.close()
            raise AssertionError(f"stream {path}: HTTP {r.status}: {payload!r}")
        assert r.getheader("Content-Type", "").startswith("text/event-stream")
        events, done, buf, name = [], False, b"", None
        while True:
            line = r.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            if line.startswith(b":"):
                continue  # an SSE comment (keep-alive)
            if line.startswith(b"event: "):
                name = line[7:].decode()  # the Responses API's typed events: the data says the same type
                continue
            assert line.startswith(b"data: "), line
            data = line[6:]
            if data == b"[DONE]":
                done = True
                break
            # Every chunk is whole UTF-8: strict decoding fails on a split character.
            ev = json.loads(data.decode("utf-8", errors="strict"))
            if name is not None:
                assert ev.get("type") == name, (name, ev)
                name = None
            events.append(ev)
            if on_chunk is not None and on_chunk(len(events) - 1, ev) is False:
                c.sock.close()
                c.close()
                return events, False
        c.close()
        return events, done


def fill_pipe(fd):
    """Writes to the pipe until it holds no more (its last page included); returns the count."""
    os.set_blocking(fd, False)
    n = 0
    for chunk in (65536, 1):
        try:
            while True:
                n += os.write(fd, b"\0" * chunk)
        except BlockingIOError:
            pass
    os.set_blocking(fd, True)  # (the server's writes must wait, not fail)
    return n


def listening_port(pid):
    """The IPv4 TCP port the lockstep process pid (or, when pid is a launcher such as mpirun, the
    lockstep process below it) listens on, from /proc; None while it listens on none."""
    for p in [pid] + descendants(pid):
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() != "lockstep":
                    continue
        except OSError:
            continue
        port = _listening_port(p)
        if port is not None:
            return port
    return None


def descendants(pid):
    """Every process below pid, from /proc (parents first)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(0), []):
            out.append(c)
            todo.append(c)
    return out


def _listening_port(pid):
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue  # closed meanwhile
            if link.startswith("socket:["):
                inodes.add(link[len("socket:["):-1])
        with open(f"/proc/{pid}/net/tcp") as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        col = row.split()
        if col[3] == "0A" and col[9] in inodes:  # 0A: LISTEN
            return int(col[1].rsplit(":", 1)[1], 16)
    return None


def gen_path(chat):
    return "/v1/chat/completions" if chat else "/v1/completions"


def normalise_whole(resp, chat):
    ch = resp["choices"][0]
    text = (ch["message"]["content"] or "") if chat else ch["text"]
    lp = ch.get("logprobs")
    if lp is not None:
        lp = lp["content"] if chat else [list(x) for x in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])]
    out = {"text": text, "finish": ch["finish_reason"], "logprobs": lp,
           "completion_tokens": resp["usage"]["completion_tokens"]}
    if chat and ch["message"].get("tool_calls"):
        out["tool_calls"] = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in ch["message"]["tool_calls"]]
    return out


def normalise_stream(events, chat):
    text, finish, lp, usage, finishes, calls = "", None, None, None, 0, {}
    for ev in events:
        if "usage" in ev and ev.get("usage"):
            usage = ev["usage"]
        for ch in ev.get("choices", []):
            if chat:
                text += ch.get("delta", {}).get("content", "") or ""
                for c in ch.get("delta", {}).get("tool_calls") or []:
                    if "id" in c:
                        assert c["index"] not in calls, f"tool call {c['index']} opened twice"
                        calls[c["index"]] = [c["id"], c["function"]["name"], ""]
                    calls[c["index"]][2] += c["function"].get("arguments", "")
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
    if calls:
        out["tool_calls"] = [tuple(calls[i]) for i in sorted(calls)]
    return out


def generate(srv, req, chat, stream, on_sent=None):
    body = dict(req)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        events, done = srv.stream(gen_path(chat), body, on_sent=on_sent)
        assert done, "stream ended without [DONE]"
        return normalise_stream(events, chat)
    status, resp, _ = srv.post(gen_path(chat), body, on_sent=on_sent)
    assert status == 200, (status, resp)
    return normalise_whole(resp, chat)


class Workers:
    """fn(i) for i in range(n), each on a thread of its own. join() fails the test with what a
    worker raised, or when one still runs at the deadline: a hung request then fails the test
    with its name, not at the CTest timeout."""

    def __init__(self, fn, n):
        self.errors = []

        def run(i):
            try:
                fn(i)
            except BaseException:  # noqa: BLE001 - check()'s SystemExit too: reported by join()
                self.errors.append(f"worker {i}: {traceback.format_exc()}")

        # (Daemons: a stuck one must not keep the failed test's process alive.)
        self.threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def check(self, what):
        """Fails the test now if a worker has failed."""
        check(not self.errors, f"{what}:\n" + "\n".join(self.errors))

    def join(self, timeout, what):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [i for i, t in enumerate(self.threads) if t.is_alive()]
        check(not stuck, f"{what}: worker {stuck} still running after {timeout} s")
        self.check(what)


def wait_for(cond, timeout, what):
    """Polls cond() until it returns something true, and returns that; fails the test with
    `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(time.monotonic() < deadline, f"{what} (waited {timeout} s)")
        time.sleep(0.005)


def template_corpus():
    """The folder of chat templates real models ship (test data outside the project):
    $LOCKSTEP_CHAT_TEMPLATES, else ../shared/data/chat-templates beside the checkout."""
    return os.environ.get("LOCKSTEP_CHAT_TEMPLATES") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data",
                                                                      "chat-templates")


def import_openai(required=True):
    """The official openai client, from the cache folder tools/scripts/test.sh installs it
    into; where it is not installed, exits 77 (skipped), or (not required) says so and
    returns None."""
    cache = os.environ.get("LOCKSTEP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lockstep")
    sys.path.insert(0, os.path.join(cache, "pyclient"))
    try:
        import openai
    except ImportError:
        print(f"SKIP{'' if required else ' (part)'}: the openai package is not installed (tools/scripts/test.sh installs it)", flush=True)
        if not required:
            return None
        sys.exit(77)
    return openai


# Two functions for the tool-call tests: a string argument and an enum.
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                                                          "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "The time in a time zone",
                                        "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET", "PST"]}},
                                                       "required": ["zone"]}}}


def check(cond, msg):
    if not cond:
        print("FAIL:", msg, flush=True)
        sys.exit(1)


def mpi_wrapper(binary, n):
    """A script that runs `mpirun -np n binary ARGS` (pipeline stages on this machine) and that
    the harness can start and stop as it does lockstep: SIGTERM goes to rank 0 alone, which ends
    the job in order; the script exits with mpirun's code. The caller removes it."""
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,vader",
                      OMPI_MCA_mpi_yield_when_idle="1")
    path = f"/tmp/lockstep-mpi-{os.getpid()}-{time.monotonic_ns()}.sh"
    with open(path, "w") as f:
        f.write(f"""#!/bin/bash
mpirun --oversubscribe -np {n} {binary} "$@" &
job=$!
stop() {{
  for p in $(pgrep -f "^{binary} serve"); do
    grep -qz '^OMPI_COMM_WORLD_RANK=0$' /proc/$p/environ 2>/dev/null && kill -TERM $p
  done
}}
trap stop TERM INT
while kill -0 $job 2>/dev/null; do wait $job; rc=$?; done
exit $rc
""")
    os.chmod(path, 0o755)
    return path
