"""End-to-end tests of `lockstep serve` over HTTP on 127.0.0.1 (a free port).

usage: test_server.py SUITE BINARY MODEL [serve args...]
  concurrency  K = 1, 3, 4, 6, 8 distinct requests (-np 4, so some queue), staggered, streamed
               and not, greedy and seeded, chat and completions: every answer byte-identical
               to the same request served alone, and to it again with its prefix cached
  chat         a six-turn chat reuses its prefix from turn 2 and equals fresh evaluation
  cancel       a client that hangs up mid-stream frees its slot; the other streams are unchanged
  errors       bad requests get their status and an OpenAI-style JSON error; the server stays healthy
  hostile      500 idle and 100 slowloris connections beside 8 streams: /health within 1 s, the
               streams unchanged, every such connection closed at the read deadline; pipelining;
               SIGTERM with requests in flight answers each with an error
  openai       the official `openai` Python client drives both endpoints, streamed and not
  backends     the same requests on a second backend (--backend X in the args) or a split model
               (--device LIST -ngl N ...) give the CPU's answers
  chat_split   the six-turn chat on a split model (placement flags in the args) gives the CPU's replies
  mpi_chat     the six-turn chat served by `mpirun -np N` (--mpi-np N in the args: pipeline stages)
               gives one process's replies; SIGTERM to the job ends it cleanly (exit 0)
  embeddings   /v1/embeddings: every input shape (a string, strings, token ids, lists of them),
               base64 equal to float, dimensions, each error; every vector byte-identical alone
               and beside 1..8 concurrent generation and embedding requests; a model without
               pooling refuses (run without --pooling: that check; with it: the rest)
  embeddings_mpi  /v1/embeddings through `mpirun -np N` pipeline stages (--mpi-np N) equals one process
"""
import base64
import json
import math
import os
import struct
import re
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
import time

from harness import (TIME, WEATHER, Server, Workers, check, gen_path, generate, import_openai, mpi_wrapper, normalise_stream,
                     template_corpus, wait_for)

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


def request_for(i, max_tokens, tools=True):
    """Request i: chat every other one, seeded sampling for two in three, logprobs for some;
    i = 3, 5, 6 mod 8: a json_schema answer, a forced tool call (unless not tools), a GBNF grammar."""
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
    # Constrained and tool-calling requests among the others: their masks and forced calls
    # must depend on nothing but the request (issue 33), streamed or not.
    if i % 8 == 3:
        req["response_format"] = {"type": "json_schema", "json_schema": {"name": "pet", "strict": True, "schema": PET_SCHEMA}}
    elif i % 8 == 5 and tools:
        req.update({"tools": [WEATHER, TIME], "tool_choice": "required"})
    elif i % 8 == 6:
        req["grammar"] = CALC
    return req, chat


def counted_steps(srv, run):
    """Runs run() -> [(request, normalised result)] and returns (S, L): the engine steps the
    requests took, and the fewest they could have taken one request per step. A request
    evaluates its prompt (less what its slot had cached) in steps of at most a ubatch,
    samples its first token in the last of them, and then, in each step it is in, one token
    plus the guesses accepted; an end of generation is sampled but not counted as generated.
    So one request per step takes at least max(R, P / ubatch) + G + E - A - R steps (R
    requests, P prompt tokens evaluated, G tokens generated, E requests ended by end of
    generation, A guesses accepted): S < L shows that some step served two requests at once.
    E counts only the "stop" ends of requests without stop strings (a stop string ends on a
    counted token): L may be too low, never too high."""
    ubatch = int(re.search(r"ubatch (\d+)", srv.text_log()).group(1))
    m0 = srv.metrics()
    results = run()
    # The engine counts a step's accepted guesses after it has sent the step's tokens: a
    # request after the others makes sure their counts are all in (and counts itself).
    sync = {"prompt": "Hi", "max_tokens": 1, "temperature": 0}
    results.append((sync, generate(srv, sync, False, stream=False)))
    m1 = srv.metrics()
    d = lambda k: int(m1[f"lockstep_{k}"] - m0[f"lockstep_{k}"])
    check(d("requests_finished_total") == len(results) and d("requests_cancelled_total") == 0,
          f"{len(results)} requests, but {d('requests_finished_total')} finished, {d('requests_cancelled_total')} cancelled")
    r = len(results)
    p = d("prompt_tokens_total") - d("prompt_tokens_reused_total")
    e = sum(1 for req, res in results if res["finish"] == "stop" and "stop" not in req)
    return d("steps_total"), max(r, -(-p // ubatch)) + d("generated_tokens_total") + e - d("spec_accepted_total") - r


def check_as_alone(results, alone, what):
    for i, r in enumerate(results):
        check(r == alone[i], f"{what}: request {i} differs from alone:\n{r}\nvs\n{alone[i]}")


def suite_concurrency(binary, model, args, max_tokens=16, ks=(1, 3, 4, 6, 8)):
    skip_without_device(binary, args)
    n = max(ks)
    with Server(binary, model, ["-np", "4"] + args) as srv:
        # The tool request's prompt (the tools' JSON in the system prompt) is ~900 tokens of a
        # byte-level test vocabulary: left out, saying so, where a slot cannot hold it.
        n_ctx = int(re.search(r"slots of (\d+) tokens", srv.text_log()).group(1))
        tools = n_ctx >= 1024
        if not tools:
            print(f"concurrency: slots of {n_ctx} tokens cannot hold the tool-call request's prompt: it is left out", flush=True)
        alone = []
        for i in range(n):
            req, chat = request_for(i, max_tokens, tools)
            alone.append(generate(srv, req, chat, stream=False))
            check(alone[-1]["completion_tokens"] >= 1 or alone[-1]["finish"] == "stop", f"request {i} generated nothing: {alone[-1]}")
        # Again, one at a time: the prefix is now cached in some slot. Then once more at once:
        # the slot that just served it reuses all but its last prompt token, in a ring that
        # speculative guesses past the answer's end may have written (and rolled back).
        for i in range(n):
            req, chat = request_for(i, max_tokens, tools)
            again = generate(srv, req, chat, stream=True)
            check(again == alone[i], f"request {i} with its prefix cached differs:\n{again}\nvs alone\n{alone[i]}")
            again = generate(srv, req, chat, stream=False)
            check(again == alone[i], f"request {i} right after itself differs:\n{again}\nvs alone\n{alone[i]}")
        for k in ks:
            results = [None] * k

            def worker(i, k=k):
                time.sleep(0.03 * i)  # staggered: later requests join running batches
                req, chat = request_for(i, max_tokens, tools)
                results[i] = generate(srv, req, chat, stream=(i + k) % 2 == 1)

            def run(k=k):
                Workers(worker, k).join(300, f"K={k}")
                return [(request_for(i, max_tokens, tools)[0], results[i]) for i in range(k)]

            steps, one_at_a_time = counted_steps(srv, run)
            check_as_alone(results, alone, f"K={k}")
            print(f"K={k}: {k} concurrent answers identical to each served alone ({steps} engine steps; "
                  f"one at a time, {one_at_a_time} or more)", flush=True)
        # The staggered requests above need not overlap (a tiny model ends a request before the
        # next one comes). These reach a stopped server together, so their prompts are
        # submitted within a moment and they share steps, which the counters show. A correct
        # server fails this only if the machine stalls the server's HTTP threads for a whole
        # request's generation, hence a few tries; a server that serialises never passes.
        k, tries = 4, 3
        for attempt in range(1, tries + 1):
            results, sent = [None] * k, threading.Semaphore(0)

            def worker(i):
                req, chat = request_for(i, max_tokens, tools)
                results[i] = generate(srv, req, chat, stream=i % 2 == 0, on_sent=sent.release)

            def run():
                os.kill(srv.proc.pid, signal.SIGSTOP)
                try:
                    workers = Workers(worker, k)
                    for _ in range(k):
                        check(sent.acquire(timeout=60), "a request could not be sent to the stopped server")
                finally:
                    os.kill(srv.proc.pid, signal.SIGCONT)
                workers.join(300, f"{k} requests released together")
                return [(request_for(i, max_tokens, tools)[0], results[i]) for i in range(k)]

            steps, one_at_a_time = counted_steps(srv, run)
            check_as_alone(results, alone, "released together")
            print(f"{k} requests released together (try {attempt}): {steps} engine steps; one at a time, "
                  f"{one_at_a_time} or more", flush=True)
            if steps < one_at_a_time:
                break
        check(steps < one_at_a_time, f"{k} requests released together never shared an engine step in {tries} tries: "
              f"{steps} steps, and one request per step needs {one_at_a_time} (the requests were served one at a time)")
        # Seeds: 32 tokens at temperature 1, nothing cut from the distribution and end of
        # generation barred, so each answer is 32 free draws. The same seed gives the same
        # answer; two seeds giving the same text would need the model near-certain of every
        # one of 32 tokens after an open-ended story prompt, which neither Gemma 3 270M nor
        # the random-weight test models are (a chance far below one in a million).
        def sampled(seed):
            return generate(srv, {"prompt": PROMPTS[3], "max_tokens": 32, "temperature": 1.0, "top_k": 0, "top_p": 1.0,
                                  "min_p": 0.0, "ignore_eos": True, "seed": seed}, False, stream=False)

        seed_a, seed_b = 11, 12
        a, a_again, b = sampled(seed_a), sampled(seed_a), sampled(seed_b)
        check(a == a_again, f"seed {seed_a} twice gave different answers:\n{a}\nvs\n{a_again}")
        check(a["completion_tokens"] == 32 and b["completion_tokens"] == 32, f"not 32 tokens: {a}, {b}")
        check(a["text"] != b["text"], f"seeds {seed_a} and {seed_b} gave the same text: {a['text']!r}")
        print("seeds: the same seed repeats its 32 sampled tokens, another seed samples other text", flush=True)
        suite_choices(srv, sampled(seed_a))
        m = srv.metrics()
        check(m["lockstep_slots_busy"] == 0 and m["lockstep_queue_length"] == 0, f"slots or queue not empty: {m}")
        print(f"concurrency: ok ({int(m['lockstep_steps_total'])} steps, "
              f"{int(m['lockstep_prompt_tokens_reused_total'])} prompt tokens reused)", flush=True)
        return alone


def choices_of(srv, body, stream):
    """A request's choices as [(text, finish)] by index, and its usage."""
    if not stream:
        status, resp, _ = srv.post("/v1/completions", body)
        check(status == 200, f"n={body.get('n')}: HTTP {status}: {resp}")
        return [(c["text"], c["finish_reason"]) for c in sorted(resp["choices"], key=lambda c: c["index"])], resp["usage"]
    events, done = srv.stream("/v1/completions", dict(body, stream=True, stream_options={"include_usage": True}))
    check(done, "stream ended without [DONE]")
    n = body.get("n", 1)
    text, finish, usage = [""] * n, [None] * n, None
    for ev in events:
        usage = ev.get("usage") or usage
        for c in ev.get("choices", []):
            text[c["index"]] += c.get("text", "")
            if c.get("finish_reason"):
                check(finish[c["index"]] is None, f"choice {c['index']} finished twice")
                finish[c["index"]] = c["finish_reason"]
    return list(zip(text, finish)), usage


def suite_choices(srv, single):
    """n choices: the prompt is evaluated once and each choice draws its own tokens; choice 0
    is the n = 1 answer of the same seed, streamed equals whole, and beside other requests each
    is as alone."""
    body = {"prompt": PROMPTS[3], "max_tokens": 32, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
            "ignore_eos": True, "seed": 11, "n": 3}
    m0 = srv.metrics()
    whole, usage = choices_of(srv, body, False)
    m1 = srv.metrics()
    check(whole[0][0] == single["text"], f"choice 0 differs from the n = 1 answer:\n{whole[0]}\nvs\n{single}")
    check(len({t for t, _ in whole}) == 3, f"three choices, not three different texts: {whole}")
    check(usage["completion_tokens"] == 96, f"usage of 3 choices of 32 tokens: {usage}")
    # The prompt was counted and evaluated once (the copies sample the same logits).
    evaluated = (m1["lockstep_prompt_tokens_total"] - m0["lockstep_prompt_tokens_total"]) - \
        (m1["lockstep_prompt_tokens_reused_total"] - m0["lockstep_prompt_tokens_reused_total"])
    check(m1["lockstep_prompt_tokens_total"] - m0["lockstep_prompt_tokens_total"] == usage["prompt_tokens"],
          f"prompt tokens counted {m1['lockstep_prompt_tokens_total'] - m0['lockstep_prompt_tokens_total']}, usage {usage}")
    streamed, susage = choices_of(srv, body, True)
    check(streamed == whole, f"streamed choices differ from whole:\n{streamed}\nvs\n{whole}")
    results = [None] * 3

    def worker(i):
        time.sleep(0.02 * i)
        if i == 0:
            results[0] = choices_of(srv, body, i % 2 == 1)[0]
        else:
            req, chat = request_for(i, 16)
            results[i] = generate(srv, req, chat, stream=False)

    Workers(worker, 3).join(300, "choices beside others")
    check(results[0] == whole, f"n = 3 beside other requests differs:\n{results[0]}\nvs\n{whole}")
    print(f"choices: n = 3 gives 3 texts, choice 0 = the n = 1 answer, streamed = whole, the same beside others "
          f"(prompt of {usage['prompt_tokens']} tokens, {int(evaluated)} evaluated)", flush=True)


CALC = r'root ::= num (" " op " " num){0,3}' + "\nop ::= [-+*/]\nnum ::= [1-9] [0-9]{0,2}\n"
CALC_RE = r"[1-9][0-9]{0,2}( [-+*/] [1-9][0-9]{0,2}){0,3}"
PET_SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 30},
                                               "kind": {"enum": ["cat", "dog", "bird"]}},
              "required": ["name", "age", "kind"]}


def suite_structured(binary, model, args):
    """Constrained output: json_object answers parse as JSON objects, GBNF answers match the
    grammar (checked by a regular expression, not by the server's matcher), json_schema answers
    validate with Python's jsonschema; streamed equals whole; each alone equals beside others."""
    import jsonschema
    few_shot = 'Q: The cat as JSON.\nA: {"name": "Tom", "age": 3}\nQ: The dog as JSON.\nA:'
    with Server(binary, model, ["-np", "8"] + args) as srv:
        def run(k, body, chat):
            req = dict(body, seed=1000 + k, temperature=0.9, max_tokens=48)
            return generate(srv, req, chat, stream=k % 3 == 0)

        results = {}

        def worker(i):
            k, kind = i // 3, ("object", "calc", "schema")[i % 3] if i < 60 else ("object", "calc")[i % 2]
            if kind == "object":
                results[i] = (kind, run(k, {"prompt": few_shot, "response_format": {"type": "json_object"}}, False))
            elif kind == "calc":
                results[i] = (kind, run(k, {"prompt": "Write a sum: ", "grammar": CALC}, False))
            else:
                results[i] = (kind, run(k, {"messages": [{"role": "user", "content": "Describe a pet as JSON."}],
                                            "response_format": {"type": "json_schema",
                                                                "json_schema": {"name": "pet", "strict": True, "schema": PET_SCHEMA}}},
                                        True))

        t0 = time.monotonic()
        Workers(lambda j: [worker(i) for i in range(j, 120, 8)], 8).join(900, "120 constrained requests, 8 at a time")
        took = time.monotonic() - t0
        counts = {"object": 0, "calc": 0, "schema": 0}
        for i in range(120):
            kind, r = results[i]
            check(r["finish"] == "stop", f"request {i} ({kind}) did not finish: {r}")
            if kind == "object":
                check(isinstance(json.loads(r["text"]), dict), f"request {i}: not a JSON object: {r['text']!r}")
            elif kind == "calc":
                check(re.fullmatch(CALC_RE, r["text"]) is not None, f"request {i}: outside the grammar: {r['text']!r}")
            else:
                jsonschema.validate(json.loads(r["text"]), PET_SCHEMA)
            counts[kind] += 1
        check(counts == {"object": 50, "calc": 50, "schema": 20}, counts)
        print(f"structured: {counts['object']} json_object, {counts['calc']} GBNF and {counts['schema']} json_schema answers, "
              f"seeded, all valid ({took:.1f} s)", flush=True)
        # Each, alone, is what it was beside the others.
        for i in (0, 1, 2, 4, 5):
            k, kind = i // 3, results[i][0]
            again = {"object": lambda: run(k + 1, {"prompt": few_shot, "response_format": {"type": "json_object"}}, False),
                     "calc": lambda: run(k + 1, {"prompt": "Write a sum: ", "grammar": CALC}, False)}.get(kind)
            if again is None:
                continue
            check(again() == results[i + 3][1], f"request {i + 3} ({kind}) alone differs from beside others")
        print("structured: answers alone equal the same requests served beside 7 others", flush=True)


def calls_of(srv, body, stream):
    """A chat's tool calls [(id, name, arguments)], content and finish, whole or rebuilt from
    the stream's deltas."""
    if not stream:
        status, resp, _ = srv.post("/v1/chat/completions", body)
        check(status == 200, f"HTTP {status}: {resp}")
        m = resp["choices"][0]["message"]
        calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
        return calls, m.get("content"), resp["choices"][0]["finish_reason"]
    events, done = srv.stream("/v1/chat/completions", dict(body, stream=True))
    check(done, "stream ended without [DONE]")
    calls, content, finish = {}, "", None
    for ev in events:
        for ch in ev.get("choices", []):
            d = ch.get("delta", {})
            content += d.get("content") or ""
            for c in d.get("tool_calls") or []:
                if "id" in c:
                    calls[c["index"]] = [c["id"], c["function"]["name"], ""]
                calls[c["index"]][2] += c["function"].get("arguments", "")
            finish = ch.get("finish_reason") or finish
    return [tuple(calls[i]) for i in sorted(calls)], content or None, finish


def suite_tools(binary, model, args):
    """Tool calls: forced calls (tool_choice required or named) are valid calls of the named
    tools, whose arguments validate against the tools' schemas; streamed equals whole; the
    result goes back as a tool message and the model answers; bad tool requests are 400s. On
    the default model's built-in template (the Generic JSON format), then with a Qwen 2.5
    template from the corpus (Hermes <tool_call> format, rendered by the Jinja interpreter)."""
    import jsonschema
    corpus = template_corpus()
    qwen = os.path.join(corpus, "Qwen-Qwen2.5-7B-Instruct.jinja")
    variants = [("built-in (Generic)", [])]
    if os.path.exists(qwen):
        variants.append(("Qwen 2.5 template (Hermes)", ["--chat-template-file", qwen]))
    else:
        print(f"SKIP (part): no chat template corpus at {corpus}: the Hermes format is not run", flush=True)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}
    for what, extra in variants:
        with Server(binary, model, ["-np", "4"] + args + extra) as srv:
            ask = [{"role": "user", "content": "What is the weather in Paris, and the time in CET?"}]
            n = 0
            for seed in range(6):
                for choice in ("required", {"type": "function", "function": {"name": "get_time"}}):
                    body = {"messages": ask, "tools": [WEATHER, TIME], "tool_choice": choice, "parallel_tool_calls": False,
                            "max_tokens": 64, "seed": seed, "temperature": 0.8}
                    whole = calls_of(srv, body, False)
                    streamed = calls_of(srv, body, True)
                    check(whole == streamed, f"{what}: streamed tool calls differ:\n{streamed}\nvs\n{whole}")
                    calls, content, finish = whole
                    check(len(calls) == 1 and finish == "tool_calls", f"{what}: {choice}: not one call: {whole}")
                    cid, name, arguments = calls[0]
                    if isinstance(choice, dict):
                        check(name == "get_time", f"{what}: named get_time, called {name}")
                    jsonschema.validate(json.loads(arguments), schemas[name])
                    n += 1
            # The loop: the call's result goes back and the model answers in text.
            call = {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
            follow = ask + [{"role": "assistant", "content": None, "tool_calls": [call]},
                            {"role": "tool", "tool_call_id": cid, "name": name, "content": "Sunny, 21 C"}]
            st, resp, _ = srv.post("/v1/chat/completions", {"messages": follow, "tools": [WEATHER, TIME], "tool_choice": "none",
                                                            "max_tokens": 16, "seed": 1})
            check(st == 200 and isinstance(resp["choices"][0]["message"]["content"], str) and
                  not resp["choices"][0]["message"].get("tool_calls"), f"{what}: the answer after the tool result: {resp}")
            # Bad tool requests.
            for bad, param in [({"tools": [{"type": "retrieval"}]}, "tools"), ({"tools": "x"}, "tools"),
                               ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
                               ({"tool_choice": "required"}, "tool_choice"), ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
                               ({"tools": [WEATHER], "tool_choice": "required", "grammar": "root ::= \"x\""}, "tool_choice")]:
                st, resp, _ = srv.post("/v1/chat/completions", dict(bad, messages=ask))
                check(st == 400 and resp["error"]["param"] == param, f"{what}: {bad}: HTTP {st} {resp}")
            for msgs in ([{"role": "tool", "content": "x", "tool_call_id": 5}],
                         [{"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f"}}]}],
                         [{"role": "assistant", "tool_calls": [{"type": "function"}]}]):
                st, resp, _ = srv.post("/v1/chat/completions", {"messages": msgs})
                check(st == 400 and resp["error"]["param"] == "messages", f"{what}: {msgs}: HTTP {st} {resp}")
            print(f"tools ({what}): {n} forced calls valid under their schemas, streamed = whole; tool result answered; "
                  f"9 bad requests refused", flush=True)


def suite_chat(binary, model, args, see_loading=True):
    turns = ["Hi! Who are you?", "Tell me a fact about cats.", "And one about dogs?",
             "Which is bigger, a cat or a dog?", "Say something about birds.", "Thank you, goodbye."]
    with Server(binary, model, ["-np", "1"] + args, see_loading=see_loading) as srv:
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
    return [r for _, r in replies]


def suite_chat_split(binary, model, args):
    """The six-turn chat (prefix reuse, prompt-lookup speculation) on one device and split."""
    skip_without_device(binary, args)
    one = suite_chat(binary, model, [])
    split = suite_chat(binary, model, args)
    for k, (a, b) in enumerate(zip(one, split)):
        check(a == b, f"{' '.join(args)}: turn {k + 1} differs from one device's reply:\n{b!r}\nvs\n{a!r}")
    print(f"chat_split: {' '.join(args)}: six turns equal one device's replies", flush=True)


def suite_mpi_chat(binary, model, args):
    """The six-turn chat through pipeline stages over Open MPI on this machine."""
    i = args.index("--mpi-np")
    n, rest = args[i + 1], args[:i] + args[i + 2:]
    wrapper = mpi_wrapper(binary, n)
    try:
        one = suite_chat(binary, model, rest)
        staged = suite_chat(wrapper, model, rest, see_loading=False)
    finally:
        os.unlink(wrapper)
    for k, (a, b) in enumerate(zip(one, staged)):
        check(a == b, f"mpirun -np {n}: turn {k + 1} differs from one process's reply:\n{b!r}\nvs\n{a!r}")
    print(f"mpi_chat: mpirun -np {n}: six turns equal one process's replies", flush=True)


def suite_embeddings_mpi(binary, model, args):
    """/v1/embeddings through pipeline stages (--mpi-np N in the args): the vectors of one process."""
    i = args.index("--mpi-np")
    n, rest = args[i + 1], args[:i] + args[i + 2:]
    body = {"input": [PROMPTS[0], PROMPTS[3] * 2, PROMPTS[5]]}
    with Server(binary, model, ["-np", "2"] + rest) as srv:
        st, one, _ = srv.post("/v1/embeddings", body)
        check(st == 200, f"one process: {st} {one}")
    wrapper = mpi_wrapper(binary, n)
    try:
        with Server(wrapper, model, ["-np", "2"] + rest, see_loading=False) as srv:
            st, staged, _ = srv.post("/v1/embeddings", body)
    finally:
        os.unlink(wrapper)
    check(st == 200 and staged["data"] == one["data"], f"mpirun -np {n}: the vectors differ from one process's: {st}")
    print(f"embeddings_mpi: mpirun -np {n}: {len(body['input'])} vectors equal one process's", flush=True)


def skip_without_device(binary, args):
    """Exits 77 (skipped) when the GPU backend the args name (--backend X, or --device's first
    GPU name) has no device here."""
    if "--backend" in args:
        backend = args[args.index("--backend") + 1]
    elif "--device" not in args:
        return  # the CPU
    else:
        names = [n for n in args[args.index("--device") + 1].split(",") if n.lower() != "cpu"]
        backend = re.sub(r"[0-9]+$", "", names[0].lower())
    devices = subprocess.run([binary, "devices"], capture_output=True, text=True).stdout
    # Device rows are "BACKEND INDEX NAME ..."; "BACKEND needs: ..." and "BACKEND: built, but no
    # usable device" lines are not devices.
    if not any(line.split()[:1] == [backend] and line.split()[1:2] and line.split()[1].isdigit()
               for line in devices.splitlines()):
        print(f"SKIP: no {backend} device on this machine ('lockstep devices' lists none)", flush=True)
        sys.exit(77)


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
                        hung_up["steps"] = srv.metrics()["lockstep_steps_total"]
                        return False
                    return True
                srv.stream("/v1/completions", body, on_chunk)
            else:
                events, done = srv.stream("/v1/completions", body)
                if not done:
                    raise AssertionError(f"stream {i} ended without [DONE]")
                results[i] = normalise_stream(events, False)

        streams = Workers(worker, 3)

        def cancelled():
            streams.check("streams")  # a stream that failed before its hang-up fails the test now
            m = srv.metrics()
            return m if m["lockstep_requests_cancelled_total"] > m0["lockstep_requests_cancelled_total"] else None

        seen = wait_for(cancelled, 120, "the hung-up stream was not cancelled")
        # The server notices the hang-up when it next writes to the stream (a chunk a step;
        # perhaps the one after, should the first only draw the client's reset), and the
        # engine drops the request before its next step: with one under way, within 3 steps.
        steps_after = seen["lockstep_steps_total"] - hung_up["steps"]
        check(steps_after <= 3, f"the hung-up stream was dropped {steps_after:.0f} engine steps after the hang-up, not within 3")
        streams.join(300, "streams")
        for i in (0, 2):
            results[i]["completion_tokens"] = alone[i]["completion_tokens"] if results[i]["completion_tokens"] is None else results[i]["completion_tokens"]
            check(results[i] == alone[i], f"stream {i} changed by the cancellation:\n{results[i]}\nvs\n{alone[i]}")
        m = srv.metrics()
        check(m["lockstep_slots_busy"] == 0, f"a slot is still busy: {m['lockstep_slots_busy']}")
        check(m["lockstep_generated_tokens_total"] - m0["lockstep_generated_tokens_total"] < 40 * 3,
              "the cancelled request generated all its tokens")
        # A non-streamed request whose client leaves while it generates: the keep-alive
        # spaces written before its JSON body fail, and it is cancelled too. (It cannot end
        # first: end of generation is barred and 400 tokens take hundreds of steps.)
        before = srv.metrics()
        s = socket.create_connection(("127.0.0.1", srv.port))
        body = json.dumps({"prompt": PROMPTS[3], "max_tokens": 400, "temperature": 0, "ignore_eos": True}).encode()
        # (It accepts gzip, as most clients do: the keep-alive must still reach the socket.)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n"
                  b"Content-Type: application/json\r\nContent-Length: "
                  + str(len(body)).encode() + b"\r\n\r\n" + body)
        wait_for(lambda: srv.metrics()["lockstep_generated_tokens_total"] > before["lockstep_generated_tokens_total"], 60,
                 "the non-streamed request did not start generating")
        s.close()
        wait_for(lambda: srv.metrics()["lockstep_requests_cancelled_total"] > before["lockstep_requests_cancelled_total"], 30,
                 "a non-streamed request whose client left was not cancelled")
        wait_for(lambda: srv.metrics()["lockstep_slots_busy"] == 0, 30, "the left request's slot is still busy")
        # The freed slot serves again.
        check(generate(srv, reqs[1], False, stream=False) == alone[1], "the cancelled prompt, asked again, differs")
        print(f"cancel: the hung-up stream was dropped {steps_after:.0f} engine steps after the hang-up; "
              "the other streams were unchanged", flush=True)


def suite_errors(binary, model, args):
    key = "s3cret"
    n_ctx = 512
    with Server(binary, model, ["-np", "1", "--max-queue", "1", "-c", str(n_ctx), "--cors-origin", "https://app.example",
                                "--max-body", "1"] + args, api_key=key) as srv:
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
            ({"prompt": "x", "n": 0}, "n"),
            ({"prompt": "x", "n": 1000}, "n"),
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
        # a prompt longer than a slot's context (-c n_ctx)
        expect(400, "POST", "/v1/completions", {"prompt": "word " * 2 * n_ctx}, code="context_length_exceeded")
        expect(400, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "word " * 2 * n_ctx}]},
               code="context_length_exceeded")
        # other endpoints
        expect(404, "GET", "/v1/nothing")
        expect(400, "POST", "/v1/embeddings", {"input": "x"}, code="model_not_embedding")  # no pooling without --pooling
        expect(400, "POST", "/tokenize", {"content": 5}, param="content")
        expect(400, "POST", "/detokenize", {"tokens": [1, 10 ** 9]}, param="tokens")
        expect(400, "POST", "/detokenize", {"tokens": "abc"}, param="tokens")
        # values nested 100000 deep, in a known field or not: refused while parsing, at depth 65
        deep = "[" * 100000 + "]" * 100000
        expect(400, "POST", "/detokenize", raw='{"tokens": [' + deep + "]}", code="json_too_deep")
        expect(400, "POST", "/v1/completions", raw='{"prompt": "x", "logit_bias": {"5": ' + deep + "}}", code="json_too_deep")
        expect(400, "POST", "/v1/completions", raw='{"prompt": "x", "unknown": ' + deep + "}", code="json_too_deep")
        # a number no double holds, anywhere in the body: a parse error, not an internal one
        expect(400, "POST", "/v1/completions", raw='{"prompt": "x", "temperature": 1e400}')
        expect(400, "POST", "/v1/completions", raw='{"prompt": "x", "whatever": [1e400]}')
        # parameters that change the output and are not implemented: refused by name; their
        # neutral values (what clients that send every field send) accepted
        for body, param in [({"mirostat": 2}, "mirostat"), ({"typical_p": 0.5}, "typical_p"),
                            ({"dry_multiplier": 0.8}, "dry_multiplier"), ({"min_tokens": 5}, "min_tokens"),
                            ({"xtc_probability": 0.5}, "xtc_probability"), ({"samplers": ["top_k"]}, "samplers")]:
            expect(400, "POST", "/v1/completions", dict(body, prompt="x"), param=param, code="unsupported_parameter")
        # structured output that does not compile, or two constraints at once
        hi = [{"role": "user", "content": "hi"}]
        for body, param, code in [
                ({"grammar": "root ::= ("}, "grammar", "invalid_grammar"),
                ({"grammar": "root ::= undefined-rule"}, "grammar", "invalid_grammar"),
                ({"grammar": 5}, "grammar", None),
                ({"json_schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}, "json_schema", "invalid_schema"),
                ({"json_schema": {"type": "strin"}}, "json_schema", "invalid_schema"),
                ({"json_schema": "not a schema"}, "json_schema", None),
                ({"response_format": {"type": "xml"}}, "response_format", None),
                ({"response_format": {"type": "json_schema"}}, "response_format", None),
                ({"response_format": {"type": "json_schema", "json_schema": {"schema": {"not": {}}}}}, "response_format", "invalid_schema"),
                ({"response_format": {"type": "json_object"}, "grammar": "root ::= \"a\""}, "grammar", None)]:
            expect(400, "POST", "/v1/chat/completions", dict(body, messages=hi), param=param, code=code)
        # fill-in-the-middle on a model without its markers; echo with the prompt's logprobs
        expect(400, "POST", "/v1/completions", {"prompt": "x", "suffix": "end"}, param="suffix")
        expect(400, "POST", "/v1/completions", {"prompt": "x", "echo": True, "logprobs": 1}, param="echo")
        st, resp, _ = srv.post("/v1/completions", {"prompt": "Hello there", "max_tokens": 3, "temperature": 0, "echo": True})
        check(st == 200 and resp["choices"][0]["text"].startswith("Hello there"), f"echo: {resp}")
        events, done = srv.stream("/v1/completions", {"prompt": "Hello there", "max_tokens": 3, "temperature": 0, "echo": True,
                                                      "stream": True})
        check(done and "".join(c.get("text", "") for e in events for c in e.get("choices", [])) == resp["choices"][0]["text"],
              f"echo streamed differs: {events}")
        neutral = {"prompt": "Hello", "max_tokens": 2, "mirostat": 0, "typical_p": 1.0, "tfs_z": 1, "dry_multiplier": 0,
                   "xtc_probability": 0, "min_tokens": 0, "response_format": {"type": "text"}, "n_probs": 0}
        st, resp, _ = srv.post("/v1/completions", neutral)
        check(st == 200, f"neutral values of unimplemented parameters: HTTP {st}: {resp}")
        # max_completion_tokens and n_predict bound a completion too (they ran on to the context)
        for k, n in (("max_completion_tokens", 3), ("n_predict", 2)):
            st, resp, _ = srv.post("/v1/completions", {"prompt": "Hello", k: n, "ignore_eos": True, "temperature": 0})
            check(st == 200 and resp["usage"]["completion_tokens"] == n, f"{k} {n}: {resp}")
        # a NUL in what the client sent does not cut the message short
        st, payload, _ = srv.request("POST", "/v1/completions", {"prompt": "x", "logit_bias": {"a\u0000tail": 1}})
        check(st == 400 and "tail' is not a token id" in json.loads(payload)["error"]["message"],
              f"NUL in a logit_bias key: HTTP {st}: {payload[:200]!r}")
        # limits: logit_bias entries, messages, the body's size, a prompt too long to tokenize
        expect(400, "POST", "/v1/completions", {"prompt": "x", "logit_bias": {str(i): 1 for i in range(2000)}}, param="logit_bias")
        expect(400, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}] * 5000}, param="messages")
        t0 = time.monotonic()
        expect(413, "POST", "/v1/completions", {"prompt": "word " * 300000})
        big = time.monotonic() - t0
        t0 = time.monotonic()
        expect(400, "POST", "/v1/completions", {"prompt": "w" * 900000}, code="context_length_exceeded")
        expect(400, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "w" * 900000}]},
               code="context_length_exceeded")
        long_prompt = time.monotonic() - t0
        check(big < 1 and long_prompt < 2, f"a 1.5 MB body took {big:.2f} s to refuse, two 0.9 MB prompts {long_prompt:.2f} s")
        # CORS: the allowed origin's preflight is answered before the key check; others get no header
        c = srv.conn(30)
        c.request("OPTIONS", "/v1/chat/completions", headers={"Origin": "https://app.example",
                                                              "Access-Control-Request-Method": "POST",
                                                              "Access-Control-Request-Headers": "authorization, content-type"})
        r = c.getresponse()
        r.read()
        c.close()
        check(r.status == 204 and r.getheader("Access-Control-Allow-Origin") == "https://app.example"
              and "POST" in (r.getheader("Access-Control-Allow-Methods") or "")
              and "Authorization" in (r.getheader("Access-Control-Allow-Headers") or ""),
              f"preflight: HTTP {r.status}, {r.getheaders()}")
        st, _, h = srv.request("GET", "/v1/models", headers={"Origin": "https://app.example"})
        check(st == 200 and h.get("Access-Control-Allow-Origin") == "https://app.example", f"GET with Origin: {st} {h}")
        st, _, h = srv.request("GET", "/v1/models", headers={"Origin": "https://evil.example"})
        check(st == 200 and "Access-Control-Allow-Origin" not in h, f"another origin got CORS headers: {h}")
        # the port is this server's alone: a second server on it fails at once, saying so
        second = subprocess.run([binary, "serve", "--port", str(srv.port)] + ([] if model == "default" else ["-m", model]),
                                capture_output=True, timeout=60)
        check(second.returncode != 0 and b"in use" in second.stderr,
              f"a second server on port {srv.port}: exit {second.returncode}, {second.stderr[-300:]!r}")
        expect(400, "POST", "/v1/completions", {"prompt": "x", "stop": ["z" * 2000]}, param="stop")
        # garbage on the socket, and a client that leaves halfway through its body
        for raw in (b"\x00\x01garbage\r\n\r\n", b"POST /v1/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"pro"):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(raw)
            s.close()
        # Every slot busy and the queue full: 503 with Retry-After. A holds the one slot and
        # cannot end on its own before the others are asked (end of generation barred, the
        # slot's whole context to fill: hundreds of steps); B waits in the queue; C is refused.
        # Each is sent once the counters show the one before in place, and A ends by its
        # client hanging up.
        release, b_status = threading.Event(), []

        def hold(n, ev):
            release.wait(120)
            return False  # A's client hangs up: that ends A

        m0 = srv.metrics()
        a = Workers(lambda i: srv.stream("/v1/completions", {"prompt": "Count:", "temperature": 0, "ignore_eos": True,
                                                             "stream": True}, hold), 1)
        try:
            wait_for(lambda: a.check("A") or srv.metrics()["lockstep_generated_tokens_total"] > m0["lockstep_generated_tokens_total"],
                     60, "A did not start generating")
            b = Workers(lambda i: b_status.append(srv.request("POST", "/v1/completions", {"prompt": "Hello", "max_tokens": 2})[0]), 1)
            wait_for(lambda: b.check("B") or srv.metrics()["lockstep_queue_length"] == 1, 60, "B did not queue")
            m = srv.metrics()
            check(m["lockstep_slots_busy"] == 1 and m["lockstep_queue_length"] == 1
                  and m["lockstep_requests_finished_total"] == m0["lockstep_requests_finished_total"],
                  f"before C: {m['lockstep_slots_busy']:.0f} slots busy, {m['lockstep_queue_length']:.0f} queued, "
                  f"{m['lockstep_requests_finished_total'] - m0['lockstep_requests_finished_total']:.0f} finished; want 1, 1, 0")
            st, payload, hdrs = srv.request("POST", "/v1/completions", {"prompt": "Count:", "max_tokens": 60, "temperature": 0})
        finally:
            release.set()  # (also when a check above fails: the server then stops without waiting for A)
        check(st == 503, f"C: HTTP {st}, want 503: {payload[:300]!r}")
        check(hdrs.get("Retry-After") == "1", f"Retry-After {hdrs.get('Retry-After')!r}, want '1'")
        check(json.loads(payload)["error"]["message"], "503 without a message")
        a.join(120, "A")
        b.join(120, "B")
        check(b_status == [200], f"B, once A's slot was free: HTTP {b_status}, want 200")
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
    print(f"errors: {len(cases) + len(chat_cases) + 40} bad requests answered with their status and a JSON error; "
          "the server stayed healthy", flush=True)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def suite_hostile(binary, model, args):
    """Hostile and careless clients (issue 32): 500 idle and 100 slowloris connections (headers or
    a small body a byte a second) held open
    while 8 streams run; pipelined requests; SIGTERM with requests in flight."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    deadline_s = 5
    reqs = [{"prompt": f"Story number {i}:", "max_tokens": 24, "temperature": 0, "ignore_eos": True} for i in range(8)]
    srv = Server(binary, model, ["-np", "4", "--max-queue", "8", "--read-timeout", str(deadline_s), "-c", "512"] + args)
    try:
        quiet = [generate(srv, r, False, True) for r in reqs]
        rss0 = rss_mib(srv.proc.pid)
        t_open = time.monotonic()
        idle = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(500)]
        slow = []
        for k in range(100):
            c = socket.create_connection(("127.0.0.1", srv.port))
            # Half of them slow in their headers, half in a small body after whole headers.
            c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" +
                      (b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{" if k % 2 else b""))
            slow.append(c)
        stop = threading.Event()

        def drip():  # a header byte a second on every slow connection, never the end of the head
            while not stop.wait(1.0):
                for c in slow:
                    try:
                        c.send(b"X")
                    except OSError:
                        pass

        worst, failures = [0.0], []

        def probe():
            while not stop.is_set():
                t0 = time.monotonic()
                st, _ = srv.get("/health", timeout=10)
                worst[0] = max(worst[0], time.monotonic() - t0)
                if st != 200:
                    failures.append(st)
                time.sleep(0.05)

        # One address may hold 256 waiting connections: its oldest beyond that are closed at once
        # (well before the read deadline).
        def closed_now():
            n = 0
            for c in idle + slow:
                c.setblocking(False)
                try:
                    n += c.recv(1) == b""
                except (BlockingIOError, InterruptedError):
                    pass
                except (ConnectionResetError, BrokenPipeError):
                    n += 1
                c.setblocking(True)
            return n

        t_early = time.monotonic()
        early = closed_now()
        while early < 600 - 256 and time.monotonic() - t_early < 2:
            time.sleep(0.1)
            early = closed_now()
        check(early >= 600 - 256, f"{early} of 600 connections from one address closed at once; want at least {600 - 256}")
        threads = [threading.Thread(target=drip, daemon=True), threading.Thread(target=probe, daemon=True)]
        for t in threads:
            t.start()
        results = [None] * len(reqs)
        w = Workers(lambda i: results.__setitem__(i, generate(srv, reqs[i], False, True)), len(reqs))
        w.join(120, "the streams beside the hostile connections")
        # Past the read deadline the server has closed every idle and slow connection.
        time.sleep(max(0.0, t_open + deadline_s + 1.5 - time.monotonic()))
        stop.set()
        for t in threads:
            t.join(10)
        check(not failures, f"/health answered {failures} beside the hostile connections")
        check(worst[0] < 1.0, f"/health took {worst[0]:.2f} s beside 500 idle and 100 slow connections (want < 1 s)")
        check(results == quiet, "streams beside the hostile connections differ from the quiet run")
        closed = 0
        for c in idle + slow:
            c.settimeout(2)
            try:
                closed += c.recv(1) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed += 1
            except socket.timeout:
                pass
            c.close()
        check(closed == 600, f"{closed} of 600 idle and slow connections closed by the server after its {deadline_s} s read deadline")
        rss1 = rss_mib(srv.proc.pid)
        check(rss1 - rss0 < 100, f"RSS grew from {rss0:.0f} to {rss1:.0f} MiB")
        m = srv.metrics()
        gate = (m['lockstep_http_connections_closed_total{reason="gate_full"}'],
                m['lockstep_http_connections_closed_total{reason="read_deadline"}'])
        check(gate[0] >= 600 - 256 and sum(gate) >= 600, f"/metrics: the gate closed {gate[0]:.0f} to make room and "
              f"{gate[1]:.0f} at the deadline; want at least 344 and 600 in all")
        # A 50 MB body (over the default --max-body of 16 MiB): refused at its headers, at once,
        # without the server taking it in; JSON nested 10^6 deep: refused while parsing.
        rss_a = rss_mib(srv.proc.pid)
        t0 = time.monotonic()
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        body = b'{"prompt": "' + b"w" * (50 << 20) + b'"}'
        c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        try:
            c.sendall(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before taking it all
        try:
            answer = c.recv(65536)
        except ConnectionResetError:
            answer = b""
        c.close()
        big_s = time.monotonic() - t0
        st, payload, _ = srv.request("POST", "/v1/completions", raw='{"prompt": "x", "a": ' + "[" * 10 ** 6 + "]" * 10 ** 6 + "}")
        rss_b = rss_mib(srv.proc.pid)
        check(answer.startswith(b"HTTP/1.1 413") and big_s < 1, f"a 50 MB body: {answer[:80]!r} after {big_s:.2f} s")
        check(st == 400 and json.loads(payload)["error"]["code"] == "json_too_deep", f"JSON 10^6 deep: HTTP {st} {payload[:120]!r}")
        check(rss_b - rss_a < 100, f"RSS {rss_a:.0f} -> {rss_b:.0f} MiB over a 50 MB body and a 2 MB deep JSON")
        # Two requests in one write (HTTP/1.1 pipelining): both answered, in order.
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.rstrip().endswith(b"}") or b'"list"' not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        c.close()
        check(data.count(b"HTTP/1.1 200") == 2 and data.index(b'"ok"') < data.index(b'"list"'),
              f"pipelined requests: {data[:400]!r}")
        # SIGTERM with requests in flight: every whole answer a non-2xx status, every stream an
        # error event, then a clean exit.
        m0 = srv.metrics()
        long = {"prompt": "Count:", "max_tokens": 400, "temperature": 0, "ignore_eos": True}
        whole, streams = [], []

        def whole_req(i):
            st, payload, _ = srv.request("POST", "/v1/completions", long)
            whole.append((st, payload))

        def stream_req(i):
            events, done = srv.stream("/v1/completions", dict(long, stream=True))
            streams.append((events, done))

        ww = Workers(whole_req, 2)
        ws = Workers(stream_req, 2)
        wait_for(lambda: srv.metrics()["lockstep_generated_tokens_total"] > m0["lockstep_generated_tokens_total"] + 8, 60,
                 "the requests did not start generating")
        srv.proc.send_signal(signal.SIGTERM)
        ww.join(60, "whole requests at SIGTERM")
        ws.join(60, "streams at SIGTERM")
        check(len(whole) == 2 and all(not (200 <= st < 300) and json.loads(p)["error"]["message"] for st, p in whole),
              f"whole requests at SIGTERM: {[(st, p[:120]) for st, p in whole]}")
        check(len(streams) == 2 and all(any("error" in ev for ev in events) for events, _ in streams),
              f"streams at SIGTERM: {[events[-1:] for events, _ in streams]}")
        check(srv.proc.wait(60) == 0, f"exit code {srv.proc.returncode} after SIGTERM")
    finally:
        srv.stop()
    print(f"hostile: /health within {worst[0]:.2f} s beside 500 idle and 100 slowloris connections, 8 streams as when "
          f"quiet, {early} of them closed at once (256 may wait per address), all 600 by the {deadline_s} s read deadline, RSS {rss0:.0f} -> {rss1:.0f} MiB; "
          f"a 50 MB body refused in {big_s:.2f} s (RSS {rss_a:.0f} -> {rss_b:.0f} MiB); pipelining; "
          "SIGTERM in flight answered with errors", flush=True)


def suite_openai(binary, model, args):
    openai = import_openai()
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
        # Structured output through the client's parse(): a pydantic model's strict schema.
        from pydantic import BaseModel, Field

        class Pet(BaseModel):
            name: str = Field(max_length=12)
            age: int = Field(ge=0, le=30)
            kind: str = Field(pattern="^(cat|dog|bird)$")

        for seed in range(5):
            got = client.beta.chat.completions.parse(model=mid, messages=[{"role": "user", "content": "Describe a pet."}],
                                                     response_format=Pet, max_tokens=64, seed=seed, temperature=0.9)
            check(isinstance(got.choices[0].message.parsed, Pet), got)
        # A tool-calling loop through the client: a forced call, its result, the answer.
        ask = [{"role": "user", "content": "What is the weather in Paris?"}]
        r = client.chat.completions.create(model=mid, messages=ask, tools=[WEATHER], tool_choice="required",
                                           parallel_tool_calls=False, max_tokens=64, seed=2)
        call = r.choices[0].message.tool_calls[0]
        check(r.choices[0].finish_reason == "tool_calls" and call.function.name == "get_weather" and
              isinstance(json.loads(call.function.arguments)["city"], str), r)
        streamed = {}
        for ch in client.chat.completions.create(model=mid, messages=ask, tools=[WEATHER], tool_choice="required",
                                                 parallel_tool_calls=False, max_tokens=64, seed=2, stream=True):
            for d in (ch.choices[0].delta.tool_calls or []) if ch.choices else []:
                got = streamed.setdefault(d.index, {"id": d.id, "name": d.function.name, "arguments": ""})
                got["arguments"] += d.function.arguments or ""
        check(streamed == {0: {"id": call.id, "name": "get_weather", "arguments": call.function.arguments}}, (streamed, call))
        answer = client.chat.completions.create(model=mid, max_tokens=16, seed=2, tools=[WEATHER], tool_choice="none", messages=ask + [
            r.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 C"}])
        check(isinstance(answer.choices[0].message.content, str), answer)
        two = client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0.7, seed=5, n=2)
        check([c.index for c in two.choices] == [0, 1] and two.choices[0].message.content == ref["text"], two)
        try:
            client.completions.create(model=mid, prompt="x", max_tokens=2, n=3)
            check(False, "n=3 was accepted by a server of 2 slots")
        except openai.BadRequestError as e:
            check("'n' must be between 1 and 2" in str(e), str(e))
        bad = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="wrong", max_retries=0)
        try:
            bad.models.list()
            check(False, "a wrong key was accepted")
        except openai.AuthenticationError:
            pass
    print(f"openai: the openai {openai.__version__} client drove completions and chat, streamed and not, n = 2, parse() "
          f"with a pydantic model, and a tool-calling loop", flush=True)


def suite_backends(binary, model, args):
    """args hold --backend X or placement flags: the answers must equal the CPU backend's,
    request for request."""
    skip_without_device(binary, args)
    reqs = [request_for(i, 8) for i in (0, 1, 2, 3, 5, 6)]  # 3, 5, 6: json_schema, a forced tool call, GBNF
    with Server(binary, model, ["-np", "2"]) as cpu:
        ref = [generate(cpu, r, chat, False) for r, chat in reqs]
    with Server(binary, model, ["-np", "2"] + args) as srv:
        results = [None] * len(reqs)

        def worker(i):
            r, chat = reqs[i]
            results[i] = generate(srv, r, chat, stream=i % 2 == 0)

        Workers(worker, len(reqs)).join(300, f"{' '.join(args)}: two at a time")
        for i in range(len(reqs)):
            check(results[i] == ref[i], f"{' '.join(args)}: request {i} differs from the CPU's:\n{results[i]}\nvs\n{ref[i]}")
    print(f"backends: {' '.join(args)}, {len(reqs)} requests served two at a time equal the CPU backend's answers", flush=True)


def suite_embeddings(binary, model, args):
    """args: serve flags, --pooling among them unless the model's GGUF sets pooling_type."""
    skip_without_device(binary, args)
    with Server(binary, model, ["-np", "4"] + args) as srv:
        def emb(body, path="/v1/embeddings"):
            status, resp, _ = srv.post(path, body)
            check(status == 200, f"{body}: status {status}: {resp}")
            return resp

        r = emb({"input": PROMPTS[0], "model": "my-model"})
        check(r["object"] == "list" and r["model"] == "my-model" and len(r["data"]) == 1, f"shape: {r}")
        d0 = r["data"][0]
        check(d0["object"] == "embedding" and d0["index"] == 0, f"item: {d0}")
        v0 = d0["embedding"]
        n_embd = len(v0)
        check(abs(math.sqrt(sum(x * x for x in v0)) - 1) < 1e-5, "not L2-normalized by default")
        status, tok, _ = srv.post("/tokenize", {"content": PROMPTS[0], "add_special": True})
        ids = tok["tokens"]
        check(r["usage"] == {"prompt_tokens": len(ids), "total_tokens": len(ids)}, f"usage {r['usage']} for {len(ids)} tokens")
        r2 = emb({"input": PROMPTS[0]}, "/embeddings")
        check(r2["data"][0]["embedding"] == v0 and r2["model"] != "my-model", "/embeddings differs, or the model was not the server's")
        # Token ids: the same tokens as the text, the same vector.
        check(emb({"input": ids})["data"][0]["embedding"] == v0, "token ids differ from their text")
        # Several inputs in one request: each as if alone, in order.
        alone = [emb({"input": p})["data"][0]["embedding"] for p in PROMPTS]
        many = emb({"input": PROMPTS})
        check([d["index"] for d in many["data"]] == list(range(len(PROMPTS))), "indices")
        for i, d in enumerate(many["data"]):
            check(d["embedding"] == alone[i], f"input {i} of a list differs from it alone")
        lists = [srv.post("/tokenize", {"content": p, "add_special": True})[1]["tokens"] for p in PROMPTS[:3]]
        for i, d in enumerate(emb({"input": lists})["data"]):
            check(d["embedding"] == alone[i], f"token list {i} differs from its text")
        check(len({tuple(v) for v in alone}) == len(alone), "two different texts gave the same vector")
        # base64: the little-endian float32 bytes of the float answer, exactly.
        b = emb({"input": PROMPTS[:2], "encoding_format": "base64"})
        for i, d in enumerate(b["data"]):
            raw = base64.b64decode(d["embedding"])
            check(raw == struct.pack(f"<{n_embd}f", *alone[i]), f"base64 {i} is not the float answer's bytes")
        # dimensions: the first k values, normalized again.
        k = max(1, n_embd // 4)
        t = emb({"input": PROMPTS[0], "dimensions": k})["data"][0]["embedding"]
        norm = math.sqrt(sum(x * x for x in v0[:k]))
        check(len(t) == k and all(abs(a - x / norm) < 1e-6 for a, x in zip(t, v0[:k])), "dimensions: not the renormalized prefix")
        check(len(emb({"input": PROMPTS[0], "dimensions": n_embd})["data"][0]["embedding"]) == n_embd, "dimensions = n_embd")
        print(f"embeddings: shapes ok (n_embd {n_embd}; strings, ids, lists, base64, dimensions)", flush=True)

        # Beside concurrent generation and other embedding requests: the same bytes.
        def raw_emb(i):
            status, payload, _ = srv.request("POST", "/v1/embeddings", {"input": PROMPTS[i % len(PROMPTS)]})
            check(status == 200, f"embedding {i}: {status} {payload[:200]}")
            return json.loads(payload)["data"][0]["embedding"]

        gen_alone = [generate(srv, *request_for(i, 12), stream=False) for i in range(4)]
        for n in (1, 2, 4, 8):
            results = [None] * n

            def worker(i, n=n):
                time.sleep(0.01 * i)
                if i % 2 == 0:
                    results[i] = raw_emb(i)
                else:
                    req, chat = request_for(i // 2 % 4, 12)
                    results[i] = generate(srv, req, chat, stream=i % 4 == 1)

            Workers(worker, n).join(300, f"{n} mixed requests")
            for i in range(n):
                if i % 2 == 0:
                    check(results[i] == alone[i % len(PROMPTS)], f"{n} concurrent: embedding {i} differs from alone")
                else:
                    check(results[i] == gen_alone[i // 2 % 4], f"{n} concurrent: generation {i} differs from alone")
            print(f"embeddings: {n} concurrent requests (embeddings and generations) identical to alone", flush=True)
        # Eight embeddings of a long input at once, beside two generations: every chunk interleaves.
        n_ctx = int(re.search(r"slots of (\d+) tokens", srv.text_log()).group(1))
        long_text = " ".join(PROMPTS) * 3  # as long as a slot holds: many chunks at -ub 4
        while len(srv.post("/tokenize", {"content": long_text, "add_special": True})[1]["tokens"]) > n_ctx:
            long_text = long_text[: len(long_text) * 3 // 4]
        long_alone = emb({"input": long_text})["data"][0]["embedding"]
        results = [None] * 10

        def worker(i):
            if i < 8:
                results[i] = emb({"input": [long_text, PROMPTS[i]]})["data"]
            else:
                results[i] = generate(srv, *request_for(i - 8, 12), stream=False)

        Workers(worker, 10).join(300, "8 long embeddings beside 2 generations")
        for i in range(8):
            check(results[i][0]["embedding"] == long_alone and results[i][1]["embedding"] == alone[i], f"long embedding {i} differs")
        check(results[8] == gen_alone[0] and results[9] == gen_alone[1], "generation beside long embeddings differs")
        print("embeddings: 8 long two-input requests beside 2 generations identical to alone", flush=True)

        bad = [
            ({"input": ""}, "empty string"),
            ({"input": []}, "empty list"),
            ({"input": [[]]}, "empty token list"),
            ({}, "no input"),
            ({"input": 5}, "a number"),
            ({"input": ["a", [1]]}, "mixed list"),
            ({"input": [-1]}, "negative token id"),
            ({"input": [10 ** 9]}, "token id past the vocabulary"),
            ({"input": [[1, 2], [1, "x"]]}, "a string among token ids"),
            ({"input": [1] * (n_ctx + 1)}, "longer than the context"),
            ({"input": "hi", "encoding_format": "int8"}, "bad encoding_format"),
            ({"input": "hi", "dimensions": 0}, "dimensions 0"),
            ({"input": "hi", "dimensions": n_embd + 1}, "dimensions past n_embd"),
            ({"input": "hi", "dimensions": "8"}, "dimensions a string"),
            ({"input": "hi", "model": 3}, "model a number"),
        ]
        for body, what in bad:
            status, resp, _ = srv.post("/v1/embeddings", body)
            check(status == 400 and "error" in resp and resp["error"]["message"], f"{what}: {status} {resp}")
        status, _, _ = srv.request("POST", "/v1/embeddings", raw="{not json")
        check(status == 400, f"malformed JSON: {status}")
        check(srv.get("/health")[0] == 200, "unhealthy after the errors")
        m = srv.metrics()
        check(m["lockstep_slots_busy"] == 0 and m["lockstep_queue_length"] == 0, f"slots or queue not empty: {m}")
        print(f"embeddings: {len(bad) + 1} bad requests refused with 400", flush=True)
    # Without --pooling (and a GGUF without the key): refused, naming the flag.
    plain = [a for i, a in enumerate(args) if a != "--pooling" and (i == 0 or args[i - 1] != "--pooling")]
    if plain != args:
        with Server(binary, model, plain) as srv:
            status, resp, _ = srv.post("/v1/embeddings", {"input": "hi"})
            check(status == 400 and "no pooling" in resp["error"]["message"] and "--pooling" in resp["error"]["message"],
                  f"a model without pooling: {status} {resp}")
            print("embeddings: a model without pooling refuses with 400, naming --pooling", flush=True)


def suite_embeddings_encoder(binary, model, args):
    """An encoder-only model (bert, nomic-bert: tests/data/bert_tiny.gguf, whose GGUF sets mean
    pooling): /v1/embeddings answers, each input of a list as alone; generation requests get a
    400 naming the reason; an input longer than the ubatch (a non-causal model evaluates an
    input whole) gets an error naming -ub; the server keeps serving after each refusal."""
    with Server(binary, model, ["-np", "2"] + args) as srv:
        def emb(body):
            status, resp, _ = srv.post("/v1/embeddings", body)
            check(status == 200, f"{body}: status {status}: {resp}")
            return resp

        texts = ["Hello world!", "The quick brown fox jumped over the lazy dog.", "Café naïve EMBEDDINGS (search_query)"]
        alone = [emb({"input": t})["data"][0]["embedding"] for t in texts]
        for v in alone:
            check(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5, "not L2-normalized")
        check(len({tuple(v) for v in alone}) == len(alone), "two different texts gave the same vector")
        many = emb({"input": texts})["data"]
        check([d["embedding"] for d in many] == alone, "inputs of a list differ from each alone")
        status, tok, _ = srv.post("/tokenize", {"content": texts[0], "add_special": True})
        ids = tok["tokens"]
        check(status == 200 and ids[0] == 2 and ids[-1] == 3, f"WordPiece: [CLS] ... [SEP] expected, got {ids}")
        check(emb({"input": ids})["data"][0]["embedding"] == alone[0], "token ids differ from their text")
        print(f"embeddings_encoder: {len(texts)} vectors, lists and ids as alone, [CLS]..[SEP] tokens {ids}", flush=True)
        for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}),
                           ("/v1/completions", {"prompt": "hello", "max_tokens": 4})):
            status, resp, _ = srv.post(path, body)
            check(status == 400 and "embedding model" in resp["error"]["message"], f"{path} on an encoder: {status} {resp}")
        status, resp, _ = srv.post("/v1/embeddings", {"input": " ".join(["the quick brown fox"] * 12)})
        check(status == 400 and "ubatch" in json.dumps(resp) and "-ub" in json.dumps(resp), f"an input longer than the ubatch: {status} {resp}")
        check(emb({"input": texts[1]})["data"][0]["embedding"] == alone[1], "after the refusals, a vector differs")
        print("embeddings_encoder: generation refused with 400, a too-long input refused naming -ub, still serving", flush=True)


def suite_rerank(binary, model, args):
    """A reranker (tests/data/bert_rerank_tiny.gguf, pooling rank; F32 K/V: an F16 cache is
    2e-3 off in a raw score): /v1/rerank (and /rerank) answer the float64 oracle's scores (tests/data/bert_rerank_tiny.oracle, written by
    tools/oracle/bert_tiny.py), highest first, top_n kept; two requests at once answer as each
    alone; /v1/embeddings and a bad request get a 400 naming the problem; still serving."""
    oracle = os.path.join(os.path.dirname(model), "bert_rerank_tiny.oracle")
    query, docs, scores = None, [], []
    with open(oracle, encoding="utf-8") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "query":
                query = json.loads(rest)
            elif kind == "document":
                docs.append(json.loads(rest))
            elif kind == "score":
                scores.append(float(rest))
    want = sorted(range(len(docs)), key=lambda i: -scores[i])
    with Server(binary, model, ["-np", "2"] + args) as srv:
        def rerank(body, path="/v1/rerank"):
            status, resp, _ = srv.post(path, body)
            check(status == 200, f"{body}: status {status}: {resp}")
            return resp

        resp = rerank({"query": query, "documents": docs})
        got = [r["index"] for r in resp["results"]]
        check(got == want, f"order {got}, the oracle's {want}")
        for r in resp["results"]:
            i = r["index"]
            check(abs(r["relevance_score"] - scores[i]) <= 1e-4 * (1 + abs(scores[i])), f"document {i}: {r['relevance_score']} vs {scores[i]}")
        top = rerank({"query": query, "documents": docs, "top_n": 2, "return_documents": True}, "/rerank")
        check([r["index"] for r in top["results"]] == want[:2] and top["results"][0]["document"]["text"] == docs[want[0]],
              f"top_n 2 with documents: {top}")
        # Two at once, each as alone (a pair's score does not depend on what runs beside it).
        with ThreadPoolExecutor(2) as ex:
            pair = list(ex.map(lambda b: rerank(b), [{"query": query, "documents": docs}, {"query": query, "documents": docs[::-1]}]))
        check(pair[0]["results"] == resp["results"], "beside another request, the scores differ")
        back = {len(docs) - 1 - r["index"]: r["relevance_score"] for r in pair[1]["results"]}
        check(all(back[r["index"]] == r["relevance_score"] for r in resp["results"]), "reversed documents scored differently")
        print(f"rerank: {len(docs)} documents in the oracle's order {want}, top_n, side by side as alone", flush=True)
        for body, needle in (({"documents": docs}, "'query' is required"), ({"query": query}, "'documents' is required"),
                             ({"query": query, "documents": []}, "empty list"), ({"query": query, "documents": docs, "top_n": -1}, "top_n")):
            status, r, _ = srv.post("/v1/rerank", body)
            check(status == 400 and needle in r["error"]["message"], f"{body}: {status} {r}")
        status, r, _ = srv.post("/v1/embeddings", {"input": "hi"})
        check(status == 400 and "/v1/rerank" in r["error"]["message"], f"embeddings of a reranker: {status} {r}")
        check(rerank({"query": query, "documents": docs})["results"] == resp["results"], "after the refusals, the scores differ")
        print("rerank: bad requests and /v1/embeddings refused with 400 naming the problem, still serving", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    suite, binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    {"concurrency": suite_concurrency, "chat": suite_chat, "cancel": suite_cancel, "errors": suite_errors, "hostile": suite_hostile,
     "openai": suite_openai, "backends": suite_backends,
     "chat_split": suite_chat_split, "mpi_chat": suite_mpi_chat, "embeddings": suite_embeddings,
     "embeddings_encoder": suite_embeddings_encoder, "rerank": suite_rerank,
     "embeddings_mpi": suite_embeddings_mpi, "structured": suite_structured, "tools": suite_tools}[suite](binary, model, extra)
