"""Tool calls and structured output on a tiny model of every family whose tool-call format
lockstep reads, through the official openai client against a real `lockstep serve`.

usage: suite_tool_families.py LOCKSTEP MAKE_TEST_MODEL DATA_DIR WORK_DIR [FAMILY...]

For each family: a tiny random-weight model of an architecture lockstep runs, whose vocabulary
holds the template's markers as single special tokens typed as the real model's are (control,
or user-defined where the real vocabulary shows them as text), with BOS/EOS/EOT where the real
model has them, and the family's chat template from the corpus as tokenizer.chat_template
(written under WORK_DIR at test time: the corpus is not part of the project). One server per
family, driven by the openai client:
  - the server reads the template with the Jinja interpreter and names the family's format;
  - tool_choice "required" and a named function, grammar-forced: one call of an allowed
    function whose arguments validate against its JSON schema; streamed equals non-streamed;
  - the call and its result (a `tool` message) go back; the model answers in text, with
    tool_choice "none" and "auto";
  - client.beta.chat.completions.parse(response_format=PydanticModel) returns a validated object.
Random weights write garbage, so the grammar is what makes each call valid; how free text is
parsed (tool_choice auto) is tested on known model output in tests/chat/test_tool_calls.cpp.
A family whose template is refused or whose calls are not read in its format fails.
"""
import json
import os
import subprocess
import sys
import time

from harness import TIME, WEATHER, Server, check, import_openai, template_corpus

# The DeepSeek markers (fullwidth bars, U+2581 for spaces), as their vocabularies spell them.
DS = ["<｜User｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
      "<｜tool▁call▁end｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>",
      "<｜tool▁output▁end｜>", "<｜tool▁sep｜>"]
DS_ENDS = {"bos": "<｜begin▁of▁sentence｜>", "eos": "<｜end▁of▁sentence｜>"}
QWEN_TOOLS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
QWEN_TURNS = ["<|im_start|>", "<|im_end|>"]
LLAMA_TURNS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
MISTRAL = ["<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]",
           "[TOOL_CALLS]"]
MISTRAL_V7 = MISTRAL + ["[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]"]
GRANITE_ROLES = ["<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"]

# name, template (corpus file), tiny model (tests/data), format the server must name, vocabulary:
# control tokens, user-defined tokens, BOS/EOS/EOT texts (absent: the tiny model's own), a
# training context where the tiny model's is too short for a prompt with tools, and markers the
# tiny vocabulary holds already (`has`). Each of these must encode as one token.
FAMILIES = [
    ("qwen2.5", "Qwen-Qwen2.5-7B-Instruct", "qwen3_tiny", "hermes", dict(user=QWEN_TOOLS, has=QWEN_TURNS)),
    ("qwen3", "Qwen-Qwen3-0.6B", "qwen3_tiny", "hermes", dict(user=QWEN_TOOLS, has=QWEN_TURNS + ["<think>", "</think>"])),
    ("qwq", "Qwen-QwQ-32B", "qwen3moe_tiny", "hermes", dict(user=QWEN_TOOLS, has=QWEN_TURNS + ["<think>", "</think>"])),
    ("llama3.1", "meta-llama-Llama-3.1-8B-Instruct", "llama_tiny", "llama3",
     dict(control=["<|python_tag|>", "<|eom_id|>"], eos="<|eot_id|>", eot="<|eot_id|>", has=LLAMA_TURNS)),
    ("llama3.2", "meta-llama-Llama-3.2-3B-Instruct", "llama_tiny", "llama3",
     dict(control=["<|python_tag|>", "<|eom_id|>"], eos="<|eot_id|>", eot="<|eot_id|>", has=LLAMA_TURNS)),
    ("llama3.3", "meta-llama-Llama-3.3-70B-Instruct", "llama_tiny", "llama3",
     dict(control=["<|python_tag|>", "<|eom_id|>"], eos="<|eot_id|>", eot="<|eot_id|>", has=LLAMA_TURNS)),
    ("mistral-nemo", "mistralai-Mistral-Nemo-Instruct-2407", "llama_tiny", "mistral-nemo", dict(control=MISTRAL, bos="<s>", eos="</s>")),
    ("mistral-small-3.2", "Mistral-Small-3.2-24B-Instruct-2506", "llama_tiny", "mistral", dict(control=MISTRAL_V7, bos="<s>", eos="</s>")),
    # (Devstral's default system prompt is ~4700 tokens of the tiny byte-level vocabulary.)
    ("devstral", "unsloth-mistral-Devstral-Small-2507", "llama_tiny", "mistral", dict(control=MISTRAL_V7, bos="<s>", eos="</s>", ctx=8192)),
    # (The tiny gpt-oss vocabulary has harmony's tokens.)
    ("gpt-oss", "openai-gpt-oss-120b", "gptoss_tiny", "gpt-oss-harmony",
     dict(has=["<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>", "<|return|>"])),
    ("gemma2", "google-gemma-2-2b-it", "gemma2_tiny", "generic", dict(has=["<start_of_turn>", "<end_of_turn>"])),
    ("gemma4", "google-gemma-4-31B-it", "gemma4_tiny", "gemma4", dict(ctx=2048, user=['<|"|>', "<|tool>", "<tool|>"], control=["<|think|>"],
                                                               has=["<|turn>", "<turn|>", "<|tool_call>", "<tool_call|>", "<|tool_response>"])),
    ("deepseek-r1-distill-llama", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "llama_tiny", "deepseek-r1",
     dict(control=list(DS_ENDS.values()), user=DS + ["<think>", "</think>"], **DS_ENDS)),
    ("deepseek-r1-distill-qwen", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "qwen3_tiny", "deepseek-r1",
     dict(control=list(DS_ENDS.values()), user=DS, **DS_ENDS)),
    ("deepseek-v3.1", "deepseek-ai-DeepSeek-V3.1", "qwen3moe_tiny", "deepseek-v3.1",
     dict(control=list(DS_ENDS.values()), user=DS, **DS_ENDS)),
    ("granite-3.3", "ibm-granite-granite-3.3-2B-Instruct", "llama_tiny", "granite",
     dict(control=GRANITE_ROLES + ["<|tool_call|>", "<|start_of_cite|>", "<|end_of_cite|>"], bos="<|end_of_text|>",
          eos="<|end_of_text|>")),
    ("granite-4.0", "ibm-granite-granite-4.0", "llama_tiny", "hermes",
     dict(control=GRANITE_ROLES, user=QWEN_TOOLS, bos="<|end_of_text|>", eos="<|end_of_text|>")),
]

SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}


def make_model(maker, data, work, name, template, base, vocab):
    out = os.path.join(work, f"{name}.gguf")
    cmd = [maker, "--tokens-for", os.path.join(data, base + ".gguf"), "--out", out, "--chat-template", template]
    for t in vocab.get("control", []):
        cmd += ["--control", t]
    for t in vocab.get("user", []):
        cmd += ["--user-token", t]
    for k in ("bos", "eos", "eot", "ctx"):
        if k in vocab:
            cmd += ["--" + k, str(vocab[k])]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: {' '.join(cmd)}:\n{r.stdout}{r.stderr}")
    return out


def streamed_calls(client, **kw):
    """The tool calls [(id, name, arguments)], content and finish of a streamed chat, rebuilt
    from its deltas as a client does."""
    calls, content, finish = {}, "", None
    for ch in client.chat.completions.create(stream=True, **kw):
        for c in ch.choices:
            content += c.delta.content or ""
            for d in c.delta.tool_calls or []:
                if d.id is not None:
                    check(d.index not in calls, f"call {d.index} started twice")
                    calls[d.index] = [d.id, d.function.name, ""]
                calls[d.index][2] += d.function.arguments or ""
            finish = c.finish_reason or finish
    return [tuple(calls[i]) for i in sorted(calls)], content or None, finish


def whole_calls(client, **kw):
    r = client.chat.completions.create(**kw)
    m = r.choices[0].message
    calls = [(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or []]
    return calls, m.content, r.choices[0].finish_reason, m


def run_family(openai, binary, model, name, fmt, ctx, markers, Pet):
    import jsonschema
    t0 = time.monotonic()
    with Server(binary, model, ["-np", "2", "-c", str(ctx)]) as srv:
        log = srv.text_log()
        check("does not parse" not in log, f"{name}: the template was refused:\n{log}")
        check(f"chat template: Jinja (the model's), tool calls: {fmt}\n" in log,
              f"{name}: the server does not read the template's calls as {fmt}:\n{log}")
        for mk in markers:
            st, tok, _ = srv.post("/tokenize", {"content": mk, "with_pieces": True})
            check(st == 200 and len(tok["tokens"]) == 1 and tok["tokens"][0]["piece"] == mk,
                  f"{name}: {mk} is not one token of the vocabulary: {tok}")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="none", max_retries=0)
        mid = client.models.list().data[0].id
        ask = [{"role": "system", "content": "You help with weather and time."},
               {"role": "user", "content": "What is the weather in Paris, and the time in CET?"}]
        n = 0
        for seed, choice in ((2, "required"), (3, {"type": "function", "function": {"name": "get_time"}})):
            kw = dict(model=mid, messages=ask, tools=[WEATHER, TIME], tool_choice=choice, parallel_tool_calls=False,
                      max_tokens=400, seed=seed, temperature=0.8)
            calls, content, finish, msg = whole_calls(client, **kw)
            check(len(calls) == 1 and finish == "tool_calls", f"{name}: {choice}: not one call: {calls} {content!r} {finish}")
            streamed = streamed_calls(client, **kw)
            check(streamed == (calls, content, finish), f"{name}: {choice}: streamed differs:\n{streamed}\nvs\n{(calls, content, finish)}")
            cid, fname, arguments = calls[0]
            if isinstance(choice, dict):
                check(fname == "get_time", f"{name}: named get_time, called {fname}")
            check(fname in SCHEMAS, f"{name}: called an undeclared function {fname}")
            try:
                jsonschema.validate(json.loads(arguments), SCHEMAS[fname])
            except (ValueError, jsonschema.ValidationError) as e:
                check(False, f"{name}: {fname}({arguments}): {e}")
            n += 1
        # The loop: the call and its result go back, and the model answers in text.
        follow = ask + [msg.model_dump(exclude_none=True),
                        {"role": "tool", "tool_call_id": cid, "name": fname, "content": "Sunny, 21 C" if fname == "get_weather" else "14:05"}]
        for choice in ("none", "auto"):
            r = client.chat.completions.create(model=mid, messages=follow, tools=[WEATHER, TIME], tool_choice=choice, max_tokens=16, seed=3)
            m = r.choices[0].message
            if choice == "none":
                check(isinstance(m.content, str) and not m.tool_calls and r.choices[0].finish_reason in ("stop", "length"),
                      f"{name}: the answer after the tool result: {r}")
            else:
                check(isinstance(m.content, str) or m.tool_calls, f"{name}: tool_choice auto after the result: {r}")
        # Structured output through the client's parse().
        got = client.beta.chat.completions.parse(model=mid, messages=[{"role": "user", "content": "Describe a pet."}],
                                                 response_format=Pet, max_tokens=160, seed=4, temperature=0.9)
        check(isinstance(got.choices[0].message.parsed, Pet), f"{name}: parse(): {got}")
    print(f"{name}: {fmt}: {len(markers)} markers single tokens; {n} forced calls valid under their schemas, streamed = whole; the tool result answered "
          f"(none, auto); parse() validated ({time.monotonic() - t0:.1f} s)", flush=True)


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        sys.exit(2)
    binary, maker, data, work = sys.argv[1:5]
    only = sys.argv[5:]
    openai = import_openai()
    from pydantic import BaseModel, Field

    class Pet(BaseModel):
        name: str = Field(max_length=12)
        age: int = Field(ge=0, le=30)
        kind: str = Field(pattern="^(cat|dog|bird)$")

    corpus = template_corpus()
    if not os.path.isdir(corpus):
        print(f"SKIP: no chat template corpus at {corpus} (set LOCKSTEP_CHAT_TEMPLATES): no family is run", flush=True)
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    unknown = set(only) - {f[0] for f in FAMILIES}
    check(not unknown, f"unknown families {sorted(unknown)}")
    failed = []
    t0 = time.monotonic()
    for name, template, base, fmt, vocab in FAMILIES:
        if only and name not in only:
            continue
        path = os.path.join(corpus, template + ".jinja")
        check(os.path.exists(path), f"{name}: the corpus at {corpus} has no {template}.jinja")
        model = make_model(maker, data, work, name, path, base, vocab)
        # Every family runs; the failures are listed together at the end.
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                markers = vocab.get("control", []) + vocab.get("user", []) + vocab.get("has", [])
                run_family(openai, binary, model, name, fmt, max(2048, vocab.get("ctx", 0)), markers, Pet)
            except SystemExit as e:
                os._exit(e.code if isinstance(e.code, int) else 1)
            except BaseException:  # noqa: BLE001 - reported as this family's failure
                import traceback
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(name)
    ran = len(only) if only else len(FAMILIES)
    check(not failed, f"{len(failed)} of {ran} families failed: {', '.join(failed)}")
    print(f"tool_families: {ran} families passed in {time.monotonic() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
