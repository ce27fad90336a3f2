#!/usr/bin/env python3
"""Oracle test: every chat template in the corpus, rendered over a set of conversations by
Python's jinja2 in Hugging Face's environment and by our interpreter (jinja_render), must come
out byte-identical; where jinja2 raises, ours must raise too (with the same message when it is
the template's raise_exception).

Usage: jinja_corpus.py [--render PATH_TO_jinja_render] [--only SUBSTRING] [-v]
The corpus is $LOCKSTEP_CHAT_TEMPLATES, else <source dir>/../shared/data/chat-templates; where
absent the test skips (exit 77).
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = "2025-08-05 10:30:00"

# Templates our interpreter may not match, each with the reason. The goal is that this is empty.
ALLOW = {
}


# ---- Hugging Face's environment (transformers utils/chat_template_utils.py) ----

class AssistantTracker(jinja2.ext.Extension):
    # HF's {% generation %} marks assistant tokens; for the text it renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def hf_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.strptime(NOW, "%Y-%m-%d %H:%M:%S").strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# ---- conversations ----

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city — température actuelle, 天气",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich or 東京"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit"},
                "days": {"type": "integer", "description": "Forecast days", "minimum": 1, "maximum": 7},
                "options": {
                    "type": "object",
                    "description": "Extra options",
                    "properties": {
                        "hourly": {"type": "boolean", "description": "Hourly data"},
                        "fields": {"type": "array", "items": {"type": "string"}, "description": "Fields"},
                    },
                    "required": ["hourly"],
                },
            },
            "required": ["city"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for"},
                           "limit": {"type": "number", "description": "Max results", "default": 2.5}},
            "required": ["query"],
        },
    },
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Réponds en français si on te parle français."}
USER1 = {"role": "user", "content": "Hello! What's the weather like in Zürich? 🌤"}
ASSIST1 = {"role": "assistant", "content": "I can't check live data, but Zürich is often mild in spring."}
USER2 = {"role": "user", "content": "  Thanks — and in Tokyo?\nAnswer briefly.  "}


def tool_call_turns(args_as_string):
    args = {"city": "Zürich", "unit": "celsius", "options": {"hourly": False, "fields": ["temp", "wind"]}}
    call = {"id": "call_0001", "type": "function",
            "function": {"name": "get_weather",
                         "arguments": json.dumps(args, ensure_ascii=False) if args_as_string else args}}
    return [
        USER1,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather",
         "content": json.dumps({"temperature": 21.5, "condition": "sunny", "unit": "°C"}, ensure_ascii=False)},
        {"role": "assistant", "content": "It is 21.5 °C and sunny in Zürich."},
        USER2,
    ]


PARALLEL_CALLS = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}},
    {"id": "call_b", "type": "function", "function": {"name": "search", "arguments": {"query": "\"quotes\" & <tags>", "limit": 0.1}}},
]}
TOOL_A = {"role": "tool", "tool_call_id": "call_a", "name": "get_weather", "content": "{\"temperature\": 18}"}
TOOL_B = {"role": "tool", "tool_call_id": "call_b", "name": "search", "content": "No results."}


def conversations():
    tools = [WEATHER_TOOL, SEARCH_TOOL]
    docs = [{"title": "Zürich climate", "text": "Zürich has a temperate climate."},
            {"title": "Tokyo", "text": "Tokyo is humid in summer."}]
    return [
        ("system_user", {"messages": [SYSTEM, USER1], "add_generation_prompt": True}),
        ("multi_turn", {"messages": [SYSTEM, USER1, ASSIST1, USER2], "add_generation_prompt": True}),
        ("multi_turn_no_gen", {"messages": [USER1, ASSIST1, USER2, ASSIST1], "add_generation_prompt": False}),
        ("no_system", {"messages": [USER1], "add_generation_prompt": True}),
        ("tools", {"messages": [SYSTEM, USER1], "tools": tools, "add_generation_prompt": True}),
        ("tools_no_system", {"messages": [USER1], "tools": tools, "add_generation_prompt": True}),
        ("tool_calls_dict", {"messages": [SYSTEM] + tool_call_turns(False), "tools": tools,
                             "add_generation_prompt": True}),
        ("tool_calls_string", {"messages": tool_call_turns(True), "tools": tools, "add_generation_prompt": True}),
        ("reasoning", {"messages": [USER1, dict(ASSIST1, reasoning_content="The user asks about weather.\nBe brief."),
                                    USER2], "add_generation_prompt": True}),
        ("reasoning_last", {"messages": [USER1, dict(ASSIST1, reasoning_content="Thinking about Zürich.")],
                            "add_generation_prompt": False}),
        ("thinking_off", {"messages": [SYSTEM, USER1], "add_generation_prompt": True, "enable_thinking": False}),
        ("documents", {"messages": [USER1], "documents": docs, "add_generation_prompt": True}),
        ("not_alternating", {"messages": [USER1, USER2], "add_generation_prompt": True}),
        ("content_parts", {"messages": [
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "text", "text": "Describe Zürich"}, {"type": "text", "text": "in one line."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "A lakeside city."}]},
            {"role": "user", "content": "Thanks!"}], "add_generation_prompt": True}),
        ("parallel_tool_calls", {"messages": [USER1, PARALLEL_CALLS, TOOL_A, TOOL_B, ASSIST1], "tools": tools,
                                 "add_generation_prompt": False}),
        # Callers that pass no tools or documents at all (not None), as llama.cpp's server does.
        ("bare_system_user", {"messages": [SYSTEM, USER1], "add_generation_prompt": True, "bare": True}),
        ("bare_multi_turn", {"messages": [USER1, ASSIST1, USER2], "add_generation_prompt": True, "bare": True}),
        ("bare_tool_calls", {"messages": tool_call_turns(False), "tools": tools, "add_generation_prompt": True,
                             "bare": True}),
        ("bare_documents", {"messages": [SYSTEM, USER1], "documents": docs, "add_generation_prompt": True,
                            "bare": True}),
    ]


def context_for(conv):
    # HF passes tools and documents (None when absent), add_generation_prompt, and the
    # tokenizer's special tokens as template kwargs.
    ctx = {"messages": conv["messages"], "tools": conv.get("tools"), "documents": conv.get("documents"),
           "add_generation_prompt": conv["add_generation_prompt"], "bos_token": "<s>", "eos_token": "</s>"}
    for k, v in conv.items():
        if k not in ctx and k != "bare":
            ctx[k] = v
    if conv.get("bare"):
        ctx = {k: v for k, v in ctx.items() if v is not None}
    return ctx


def render_python(env, source, ctx, compiled={}):
    try:
        if source not in compiled:
            try:
                compiled[source] = env.from_string(source)
            except Exception as e:  # noqa: BLE001 - remembered: each render raises it again
                compiled[source] = e
        t = compiled[source]
        if isinstance(t, Exception):
            raise t
        return {"ok": True, "text": t.render(**ctx)}
    except jinja2.exceptions.TemplateError as e:
        raised = type(e) is jinja2.exceptions.TemplateError  # raise_exception's own class
        return {"ok": False, "error": f"{type(e).__name__}: {e}", "raised": raised, "message": str(e)}
    except Exception as e:  # noqa: BLE001 - a template may fail in Python itself (TypeError...)
        return {"ok": False, "error": f"{type(e).__name__}: {e}", "raised": False, "message": str(e)}


# Mutations: random edits of the corpus templates (inserted tag and operator fragments,
# deletions, spliced slices), so that both sides also meet broken and odd syntax. Agreement is
# on whether it renders and, when it does, on the text.
MUTATION_TOKENS = ["{", "}", "%", "(", ")", "[", "]", "-", "+", '"', "'", "|", ".", " is ", " not ", " if ",
                   " else ", "{% endif %}", "{% endfor %}", "{{", "}}", "{%", "%}", "#", "\\", "~", "*", "**",
                   "//", " in ", ",", "="]


def mutants(sources, n, seed=7):
    rng = random.Random(seed)
    convs = conversations()
    for i in range(n):
        s = rng.choice(sources)
        for _ in range(rng.randint(1, 4)):
            p = rng.randrange(len(s) + 1)
            r = rng.random()
            if r < 0.4:
                s = s[:p] + rng.choice(MUTATION_TOKENS) + s[p:]
            elif r < 0.8:
                s = s[:p] + s[p + rng.randint(1, 5):]
            else:
                q = rng.randrange(len(s) + 1)
                s = s[:p] + s[q:q + 40] + s[p:]
        yield f"mutant-{i}", s, rng.choice(convs)


def find_corpus():
    env = os.environ.get("LOCKSTEP_CHAT_TEMPLATES")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    return os.path.join(root, "..", "shared", "data", "chat-templates")


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--render", default=os.environ.get("JINJA_RENDER", "jinja_render"))
    ap.add_argument("--only", default="")
    ap.add_argument("--mutants", type=int, default=300, help="random template mutations to compare too")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    corpus = find_corpus()
    templates = sorted(glob.glob(os.path.join(corpus, "*.jinja")))
    if not templates:
        print(f"SKIP: no chat templates at {corpus} (set LOCKSTEP_CHAT_TEMPLATES)")
        return 77
    templates = [t for t in templates if args.only in os.path.basename(t)]

    env = hf_environment()
    convs = conversations()
    cases, expected, labels = [], [], []
    for path in templates:
        source = open(path, encoding="utf-8").read()
        for name, conv in convs:
            ctx = context_for(conv)
            cases.append({"template": os.path.abspath(path), "context": ctx, "now": NOW})
            expected.append(render_python(env, source, ctx))
            labels.append((os.path.basename(path), name))

    with tempfile.TemporaryDirectory() as tmp:
        sources = [open(p, encoding="utf-8").read() for p in templates]
        n_mut = 0
        for mname, msrc, (cname, conv) in mutants(sources, args.mutants if sources else 0):
            mpath = os.path.join(tmp, mname + ".jinja")
            with open(mpath, "w", encoding="utf-8") as f:
                f.write(msrc)
            ctx = context_for(conv)
            cases.append({"template": mpath, "context": ctx, "now": NOW})
            expected.append(render_python(env, msrc, ctx, {}))
            labels.append((mname, cname))
            n_mut += 1
        cpath, opath = os.path.join(tmp, "cases.json"), os.path.join(tmp, "out.json")
        with open(cpath, "w", encoding="utf-8") as f:
            json.dump(cases, f, ensure_ascii=False)
        subprocess.run([args.render, cpath, opath], check=True)
        with open(opath, encoding="utf-8") as f:
            got = json.load(f)

    identical = expected_errors = 0
    failures = {}
    for (tname, cname), want, have in zip(labels, expected, got):
        problem = None
        if want["ok"]:
            if not have["ok"]:
                problem = f"jinja2 rendered, ours failed: {have['error']}"
            elif have["text"] != want["text"]:
                i = first_difference(want["text"], have["text"])
                problem = (f"text differs at byte {i}: jinja2 {want['text'][max(0, i - 40):i + 40]!r}\n"
                           f"{'':>14}ours   {have['text'][max(0, i - 40):i + 40]!r}")
            else:
                identical += 1
        else:
            if have["ok"]:
                problem = f"jinja2 raised ({want['error']}), ours rendered"
            elif want["raised"] and (have.get("construct") != "raise_exception" or have.get("problem") != want["message"]):
                problem = f"raise_exception message differs: jinja2 {want['message']!r}, ours {have['error']!r}"
            else:
                expected_errors += 1
                if args.verbose:
                    print(f"  expected error {tname} × {cname}: {want['error']} | ours: {have['error']}")
        if problem:
            failures.setdefault(tname, []).append((cname, problem))

    mismatched = 0
    for tname, items in sorted(failures.items()):
        allowed = tname in ALLOW
        tag = "ALLOWED" if allowed else "MISMATCH"
        if not allowed:
            mismatched += len(items)
        print(f"{tag} {tname}" + (f" ({ALLOW[tname]})" if allowed else ""))
        for cname, problem in items[: (len(items) if args.verbose else 3)]:
            print(f"    {cname}: {problem}")
    print(f"{len(templates)} templates x {len(convs)} conversations + {n_mut} mutants = {len(cases)} renders: "
          f"{identical} identical, {expected_errors} expected errors (both raised), "
          f"{sum(len(v) for v in failures.values())} differing ({mismatched} not allowed); "
          f"allow-list: {len(ALLOW)} templates")
    unused = [t for t in ALLOW if t not in failures]
    if unused:
        print("allow-list entries that now pass (remove them): " + ", ".join(unused))
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
