"""End-to-end tests of `lockstep serve` over HTTP on 127.0.0.1 (a free port).

usage: test_server.py SUITE BINARY MODEL [serve args...]
  concurrency  K = 1, 3, 4, 6, 8 distinct requests (-np 4, so some queue), staggered, streamed
               and not, greedy and seeded, chat and completions: every answer byte-identical
               to the same request served alone, and to it again with its prefix cached
  chat         a six-turn chat reuses its prefix from turn 2 and equals fresh evaluation
  cancel       a client that hangs up mid-stream frees its slot; the other streams are unchanged
  errors       bad requests get their status and an OpenAI-style JSON error; the server stays healthy
  openai       the official `openai` Python client drives both endpoints, streamed and not
  backends     the same requests on a second backend (--backend X in the args) give the CPU's answers
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

from harness import Server, check, gen_path, generate, normalise_stream

PROMPTS = [
    "The history of the printing press",
    "Write a short poem about the sea.",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village near the mountains, there lived an old clockmaker who",
    "List three facts about the Moon:",
    "The quick brown fox",
    "Q: What is the capital of Japan?\nA:",
    "In 1969, the first humans walked on the Moon. The mission was called",
]


def request_for(i, max_tokens):
    """Request i: chat every other one, seeded sampling for two in three, logprobs for some."""
    chat = i % 2 == 1
    req = {"max_tokens": max_tokens}
    if chat:
        req["messages"] = [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}]
    else:
        req["prompt"] = PROMPTS[i % len(PROMPTS)]
    if i % 3 == 0:
        req["temperature"] = 0
    else:
        req.update({"temperature": 0.9, "seed": 1000 + i, "top_k": 40, "top_p": 0.95})
    if i % 4 == 2:
        if chat:
            req.update({"logprobs": True, "top_logprobs": 3})
        else:
            req["logprobs"] = 3
    if i % 5 == 4:
        req["stop"] = ["\n\n", "."]
    return req, chat


def suite_concurrency(binary, model, args, max_tokens=16, ks=(1, 3, 4, 6, 8)):
    n = max(ks)
    with Server(binary, model, ["-np", "4"] + args) as srv:
        alone = []
        for i in range(n):
            req, chat = request_for(i, max_tokens)
            alone.append(generate(srv, req, chat, stream=False))
            check(alone[-1]["completion_tokens"] >= 1 or alone[-1]["finish"] == "stop", f"request {i} generated nothing: {alone[-1]}")
        # Again, one at a time: the prefix is now cached in some slot.
        for i in range(n):
            req, chat = request_for(i, max_tokens)
            again = generate(srv, req, chat, stream=True)
            check(again == alone[i], f"request {i} with its prefix cached differs:\n{again}\nvs alone\n{alone[i]}")
        for k in ks:
            results, errors = [None] * k, []

            def worker(i, k=k):
                try:
                    time.sleep(0.03 * i)  # staggered: later requests join running batches
                    req, chat = request_for(i, max_tokens)
                    results[i] = generate(srv, req, chat, stream=(i + k) % 2 == 1)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(f"request {i}: {e!r}")

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(k)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            check(not errors, f"K={k}: {errors}")
            for i in range(k):
                check(results[i] == alone[i], f"K={k}: request {i} differs from alone:\n{results[i]}\nvs\n{alone[i]}")
            print(f"K={k}: {k} concurrent answers identical to each served alone", flush=True)
        m = srv.metrics()
        check(m["lockstep_slots_busy"] == 0 and m["lockstep_queue_length"] == 0, f"slots or queue not empty: {m}")
        print(f"concurrency: ok ({int(m['lockstep_steps_total'])} steps, "
              f"{int(m['lockstep_prompt_tokens_reused_total'])} prompt tokens reused)", flush=True)
        return alone


def suite_chat(binary, model, args):
    turns = ["Hi! Who are you?", "Tell me a fact about cats.", "And one about dogs?",
             "Which is bigger, a cat or a dog?", "Say something about birds.", "Thank you, goodbye."]
    with Server(binary, model, ["-np", "1"] + args) as srv:
        msgs, replies, prev_prompt = [], [], 0
        for k, u in enumerate(turns):
            msgs.append({"role": "user", "content": u})
            status, resp, _ = srv.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 12, "temperature": 0})
            check(status == 200, resp)
            reply = resp["choices"][0]["message"]["content"]
            usage = resp["usage"]
            cached = usage["prompt_tokens_details"]["cached_tokens"]
            print(f"turn {k + 1}: prompt {usage['prompt_tokens']} tokens, cached {cached}", flush=True)
            if k > 0:
                check(cached >= prev_prompt, f"turn {k + 1} reused {cached} tokens, less than the previous prompt's {prev_prompt}")
            prev_prompt = usage["prompt_tokens"]
            replies.append((list(msgs), reply))
            msgs.append({"role": "assistant", "content": reply})
        # Fresh evaluation: each turn again after an unrelated request took the slot.
        for k, (m, reply) in enumerate(replies):
            srv.post("/v1/completions", {"prompt": "Unrelated text to evict the cache", "max_tokens": 1})
            status, resp, _ = srv.post("/v1/chat/completions", {"messages": m, "max_tokens": 12, "temperature": 0})
            check(resp["usage"]["prompt_tokens_details"]["cached_tokens"] <= 1, "the fresh evaluation reused the chat")
            check(resp["choices"][0]["message"]["content"] == reply, f"turn {k + 1} differs from its fresh evaluation")
    print("chat: six turns reuse the cached prefix and equal fresh evaluation", flush=True)


def suite_cancel(binary, model, args):
    reqs = [{"prompt": PROMPTS[i], "max_tokens": 40, "temperature": 0} for i in range(3)]
    with Server(binary, model, ["-np", "4"] + args) as srv:
        alone = [generate(srv, r, False, stream=False) for r in reqs]
        m0 = srv.metrics()
        results, hung_up = [None] * 3, {}

        def worker(i):
            body = dict(reqs[i], stream=True)
            if i == 1:
                def on_chunk(n, ev):
                    if n == 2:
                        hung_up["t"] = time.time()
                        hung_up["steps"] = srv.metrics()["lockstep_steps_total"]
                        return False
                    return True
                srv.stream("/v1/completions", body, on_chunk)
            else:
                events, done = srv.stream("/v1/completions", body)
                results[i] = normalise_stream(events, False)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        # The cancellation is seen within a few steps of the hang-up.
        seen = None
        while seen is None:
            m = srv.metrics()
            if m["lockstep_requests_cancelled_total"] > m0["lockstep_requests_cancelled_total"]:
                seen = m
            elif "t" in hung_up and time.time() - hung_up["t"] > 30:
                check(False, "the hung-up request was not cancelled within 30 s")
            time.sleep(0.005)
        steps_after = seen["lockstep_steps_total"] - hung_up["steps"]
        for t in threads:
            t.join()
        for i in (0, 2):
            results[i]["completion_tokens"] = alone[i]["completion_tokens"] if results[i]["completion_tokens"] is None else results[i]["completion_tokens"]
            check(results[i] == alone[i], f"stream {i} changed by the cancellation:\n{results[i]}\nvs\n{alone[i]}")
        m = srv.metrics()
        check(m["lockstep_slots_busy"] == 0, f"a slot is still busy: {m['lockstep_slots_busy']}")
        check(m["lockstep_generated_tokens_total"] - m0["lockstep_generated_tokens_total"] < 40 * 3,
              "the cancelled request generated all its tokens")
        # A non-streamed request whose client leaves while it generates: the keep-alive
        # spaces written before its JSON body fail, and it is cancelled too.
        before = srv.metrics()["lockstep_requests_cancelled_total"]
        s = socket.create_connection(("127.0.0.1", srv.port))
        body = json.dumps({"prompt": PROMPTS[3], "max_tokens": 400, "temperature": 0}).encode()
        # (It accepts gzip, as most clients do: the keep-alive must still reach the socket.)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n"
                  b"Content-Type: application/json\r\nContent-Length: "
                  + str(len(body)).encode() + b"\r\n\r\n" + body)
        time.sleep(0.3)
        s.close()
        t0 = time.time()
        while srv.metrics()["lockstep_requests_cancelled_total"] == before:
            check(time.time() - t0 < 30, "a non-streamed request whose client left was not cancelled")
            time.sleep(0.01)
        check(srv.metrics()["lockstep_slots_busy"] == 0, "the left request's slot is still busy")
        # The freed slot serves again.
        check(generate(srv, reqs[1], False, stream=False) == alone[1], "the cancelled prompt, asked again, differs")
        print(f"cancel: the hung-up stream was dropped {steps_after:.0f} engine steps after the hang-up; "
              "the other streams were unchanged", flush=True)


def suite_errors(binary, model, args):
    key = "s3cret"
    with Server(binary, model, ["-np", "1", "--max-queue", "1", "-c", "64"] + args, api_key=key) as srv:
        def expect(status, method, path, body=None, raw=None, headers=None, param=None, code=None):
            st, payload, hdrs = srv.request(method, path, body=body, raw=raw, headers=headers)
            check(st == status, f"{method} {path} {str(body if raw is None else raw)[:80]}: HTTP {st}, want {status}: {payload[:300]!r}")
            err = json.loads(payload)
            check("error" in err and isinstance(err["error"].get("message"), str) and err["error"]["message"],
                  f"{path}: no OpenAI-style error body: {payload[:300]!r}")
            if param is not None:
                check(err["error"].get("param") == param, f"{path}: param {err['error'].get('param')!r}, want {param!r}")
            if code is not None:
                check(err["error"].get("code") == code, f"{path}: code {err['error'].get('code')!r}, want {code!r}")
            return hdrs

        ok = {"prompt": "Hello", "max_tokens": 2}
        # authentication
        expect(401, "POST", "/v1/completions", ok, headers={"Authorization": ""})
        expect(401, "POST", "/v1/completions", ok, headers={"Authorization": "Bearer wrong"})
        expect(401, "GET", "/v1/models", headers={"Authorization": "Basic xyz"})
        st, _, _ = srv.request("GET", "/health", headers={"Authorization": ""})
        check(st == 200, "/health must not need the key")
        # malformed bodies
        expect(400, "POST", "/v1/completions", raw="{not json")
        expect(400, "POST", "/v1/completions", raw="[1, 2]")
        expect(400, "POST", "/v1/completions", raw=b'{"prompt": "\xff\xfe"}')
        expect(400, "POST", "/v1/chat/completions", raw="")
        # wrong types and values out of range
        cases = [
            ({"prompt": "x", "temperature": "hot"}, "temperature"),
            ({"prompt": "x", "temperature": -1}, "temperature"),
            ({"prompt": "x", "top_p": 2}, "top_p"),
            ({"prompt": "x", "top_k": 1.5}, "top_k"),
            ({"prompt": "x", "min_p": -0.1}, "min_p"),
            ({"prompt": "x", "max_tokens": 0}, "max_tokens"),
            ({"prompt": "x", "max_tokens": "ten"}, "max_tokens"),
            ({"prompt": "x", "max_tokens": 2 ** 70}, "max_tokens"),
            ({"prompt": "x", "n": 2}, "n"),
            ({"prompt": "x", "seed": "abc"}, "seed"),
            ({"prompt": "x", "stop": 5}, "stop"),
            ({"prompt": "x", "stop": [""]}, "stop"),
            ({"prompt": "x", "logit_bias": {"99999999": 1}}, "logit_bias"),
            ({"prompt": "x", "logit_bias": {"1": 500}}, "logit_bias"),
            ({"prompt": "x", "logit_bias": []}, "logit_bias"),
            ({"prompt": "x", "logprobs": 50}, "logprobs"),
            ({"prompt": "x", "stream": "yes"}, "stream"),
            ({"prompt": "x", "stream_options": {"include_usage": True}}, "stream_options"),
            ({"prompt": "x", "frequency_penalty": 3}, "frequency_penalty"),
            ({"prompt": [1, -5]}, "prompt"),
            ({"prompt": [10 ** 9]}, "prompt"),
            ({"prompt": ["a", "b"]}, "prompt"),
            ({"prompt": {"text": "x"}}, "prompt"),
            ({}, "prompt"),
        ]
        for body, param in cases:
            expect(400, "POST", "/v1/completions", body, param=param)
        chat_cases = [
            ({}, "messages"),
            ({"messages": []}, "messages"),
            ({"messages": "hi"}, "messages"),
            ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages"),
            ({"messages": [{"role": "user"}]}, "messages"),
            ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, "messages"),
            ({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}, "top_logprobs"),
            ({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": -7}, "max_completion_tokens"),
        ]
        for body, param in chat_cases:
            expect(400, "POST", "/v1/chat/completions", body, param=param)
        # a prompt longer than a slot's context (-c 64)
        expect(400, "POST", "/v1/completions", {"prompt": "word " * 200}, code="context_length_exceeded")
        expect(400, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "word " * 200}]},
               code="context_length_exceeded")
        # other endpoints
        expect(404, "GET", "/v1/nothing")
        expect(404, "POST", "/v1/embeddings", {"input": "x"})
        expect(400, "POST", "/tokenize", {"content": 5}, param="content")
        expect(400, "POST", "/detokenize", {"tokens": [1, 10 ** 9]}, param="tokens")
        expect(400, "POST", "/detokenize", {"tokens": "abc"}, param="tokens")
        # values nested 100000 deep (printing them would recurse that deep)
        deep = "[" * 100000 + "]" * 100000
        expect(400, "POST", "/detokenize", raw='{"tokens": [' + deep + "]}", param="tokens")
        expect(400, "POST", "/v1/completions", raw='{"prompt": "x", "logit_bias": {"5": ' + deep + "}}", param="logit_bias")
        expect(400, "POST", "/v1/completions", raw='{"prompt": "x", "stop": ' + deep + "}", param="stop")
        expect(400, "POST", "/v1/completions", {"prompt": "x", "stop": ["z" * 2000]}, param="stop")
        # garbage on the socket, and a client that leaves halfway through its body
        for raw in (b"\x00\x01garbage\r\n\r\n", b"POST /v1/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"pro"):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(raw)
            s.close()
        # every slot busy and the queue full: 503 with Retry-After
        statuses, retry = [], []

        def long_request(delay):
            time.sleep(delay)
            st, payload, hdrs = srv.request("POST", "/v1/completions", {"prompt": "Count:", "max_tokens": 60, "temperature": 0, "ignore_eos": True})
            statuses.append(st)
            if st == 503:
                retry.append(hdrs.get("Retry-After"))
                check(json.loads(payload)["error"]["message"], "503 without a message")

        threads = [threading.Thread(target=long_request, args=(0.05 * i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(sorted(statuses) == [200, 200, 503], f"statuses {statuses}, want two 200 and one 503")
        check(retry == ["1"], f"Retry-After {retry}")
        # still healthy, still right
        st, _ = srv.get("/health")
        check(st == 200, "not healthy after the bad requests")
        st, resp, _ = srv.post("/v1/completions", {"prompt": "Hello", "max_tokens": 4, "temperature": 0})
        check(st == 200 and resp["usage"]["completion_tokens"] >= 1, resp)
        st, toks, _ = srv.post("/tokenize", {"content": "Hello world", "with_pieces": True})
        check(st == 200 and "".join(t["piece"] for t in toks["tokens"]) == "Hello world", toks)
        st, detok, _ = srv.post("/detokenize", {"tokens": [t["id"] for t in toks["tokens"]]})
        check(st == 200 and detok["content"] == "Hello world", detok)
        models = json.loads(srv.request("GET", "/v1/models")[1])
        check(models["data"][0]["object"] == "model", models)
        m = srv.metrics()
        check(m['lockstep_http_requests_total{status="4xx"}'] >= len(cases) + len(chat_cases), m)
        check(m["lockstep_requests_rejected_total"] == 1, m)
    print(f"errors: {len(cases) + len(chat_cases) + 21} bad requests answered with their status and a JSON error; "
          "the server stayed healthy", flush=True)


def suite_openai(binary, model, args):
    # tools/scripts/test.sh installs the client into the cache folder fetch_model.sh uses.
    cache = os.environ.get("LOCKSTEP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lockstep")
    sys.path.insert(0, os.path.join(cache, "pyclient"))
    try:
        import openai
    except ImportError:
        print("SKIP: the openai package is not installed (tools/scripts/test.sh installs it)", flush=True)
        sys.exit(77)
    with Server(binary, model, ["-np", "2"] + args, api_key="k") as srv:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="k")
        mid = client.models.list().data[0].id
        c = client.completions.create(model=mid, prompt=PROMPTS[0], max_tokens=12, temperature=0, seed=3)
        ref = generate(srv, {"prompt": PROMPTS[0], "max_tokens": 12, "temperature": 0}, False, False)
        check(c.choices[0].text == ref["text"] and c.usage.completion_tokens == ref["completion_tokens"], (c, ref))
        text = "".join(ch.choices[0].text for ch in client.completions.create(
            model=mid, prompt=PROMPTS[0], max_tokens=12, temperature=0, stream=True) if ch.choices)
        check(text == ref["text"], (text, ref))
        msgs = [{"role": "user", "content": PROMPTS[1]}]
        r = client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0.7, seed=5,
                                           logprobs=True, top_logprobs=2)
        ref = generate(srv, {"messages": msgs, "max_tokens": 12, "temperature": 0.7, "seed": 5,
                             "logprobs": True, "top_logprobs": 2}, True, False)
        check(r.choices[0].message.content == ref["text"], (r, ref))
        check([t.logprob for t in r.choices[0].logprobs.content] == [t["logprob"] for t in ref["logprobs"]], "logprobs differ")
        parts, usage = [], None
        for ch in client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0.7, seed=5,
                                                 stream=True, stream_options={"include_usage": True}):
            if ch.usage:
                usage = ch.usage
            if ch.choices and ch.choices[0].delta.content:
                parts.append(ch.choices[0].delta.content)
        check("".join(parts) == ref["text"] and usage.completion_tokens == ref["completion_tokens"], (parts, usage, ref))
        try:
            client.completions.create(model=mid, prompt="x", max_tokens=2, n=2)
            check(False, "n=2 was accepted")
        except openai.BadRequestError as e:
            check("n = 1" in str(e), str(e))
        bad = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="wrong", max_retries=0)
        try:
            bad.models.list()
            check(False, "a wrong key was accepted")
        except openai.AuthenticationError:
            pass
    print(f"openai: the openai {openai.__version__} client drove completions and chat, streamed and not", flush=True)


def suite_backends(binary, model, args):
    """args hold --backend X: the answers must equal the CPU backend's, request for request."""
    backend = args[args.index("--backend") + 1]
    devices = subprocess.run([binary, "devices"], capture_output=True, text=True).stdout
    # Device rows are "BACKEND INDEX NAME ..."; "BACKEND needs: ..." and "BACKEND: built, but no
    # usable device" lines are not devices.
    if not any(line.split()[:1] == [backend] and line.split()[1:2] and line.split()[1].isdigit()
               for line in devices.splitlines()):
        print(f"SKIP: no {backend} device on this machine ('lockstep devices' lists none)", flush=True)
        sys.exit(77)
    reqs = [request_for(i, 8) for i in range(4)]
    with Server(binary, model, ["-np", "2"]) as cpu:
        ref = [generate(cpu, r, chat, False) for r, chat in reqs]
    with Server(binary, model, ["-np", "2"] + args) as srv:
        results, errors = [None] * len(reqs), []

        def worker(i):
            try:
                r, chat = reqs[i]
                results[i] = generate(srv, r, chat, stream=i % 2 == 0)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(reqs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not errors, errors)
        for i in range(len(reqs)):
            check(results[i] == ref[i], f"{' '.join(args)}: request {i} differs from the CPU's:\n{results[i]}\nvs\n{ref[i]}")
    print(f"backends: {' '.join(args)}, {len(reqs)} requests served two at a time equal the CPU backend's answers", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    suite, binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    {"concurrency": suite_concurrency, "chat": suite_chat, "cancel": suite_cancel, "errors": suite_errors,
     "openai": suite_openai, "backends": suite_backends}[suite](binary, model, extra)
