"""lockstep.Llama, installed from the repaired wheel: the bugs llama-cpp-python's users met
(a second chat turn on a sliding-window Gemma, reset() that reset nothing, prefix reuse that
silently did not happen) as tests, and the interface's answers against the C++ path."""

import json
import os
import subprocess

import numpy as np
import pytest

import lockstep
from lockstep import Llama

TURNS = ["Hi! Who are you?", "Tell me a fact about cats.", "And one about dogs?",
         "Which is bigger, a cat or a dog?", "Say something about birds.", "Thank you, goodbye."]
# Gemma 4's tiny model has a context of 256 and a vocabulary of few merges: shorter turns.
SHORT_TURNS = ["Hi", "Cats?", "Dogs?", "Bigger?", "Birds?", "Bye"]


def load(path, **kw):
    return Llama(model_path=path, verbose=False, **kw)


def test_the_installed_package_is_tested():
    """The package under test is the wheel installed into the fresh environment, with its
    library inside the package folder (no LOCKSTEP_LIBRARY, nothing from the checkout)."""
    venv = os.environ.get("LOCKSTEP_TEST_VENV")
    assert venv, "LOCKSTEP_TEST_VENV is not set"
    assert "LOCKSTEP_LIBRARY" not in os.environ
    assert os.path.realpath(lockstep.__file__).startswith(os.path.realpath(venv))
    from lockstep import _capi
    lib = _capi.library_path()
    assert os.path.dirname(lib) == os.path.dirname(lockstep.__file__) and os.path.exists(lib)
    assert lockstep.library_version().count(".") == 2


@pytest.mark.parametrize("name", ["swa", "gemma4", "hybrid"])
def test_six_turns_reuse_the_prefix_and_equal_fresh_instances(tiny, name):
    """Six rounds of create_chat_completion on one instance: each turn keeps at least the
    previous turn's whole prompt from memory (usage.prompt_tokens_details.cached_tokens and
    Llama.n_reused), and each reply equals a fresh instance's answer to the same conversation.

    Gemma 4's template opens the model's turn with an empty thought channel that the next
    turn's rendering of that reply leaves out, so there no memory can keep the previous prompt
    whole: the turn keeps exactly the prefix the two renderings share (its ring can return
    that far: less than a ubatch)."""
    path, kw = tiny[name]
    max_tokens = 5 if name == "gemma4" else 12
    llm = load(path, **kw)
    msgs, prev_prompt, reused = [], 0, []
    held = []
    for k, user in enumerate(SHORT_TURNS if name == "gemma4" else TURNS):
        msgs.append({"role": "user", "content": user})
        r = llm.create_chat_completion(messages=msgs, max_tokens=max_tokens, temperature=0)
        usage = r["usage"]
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        assert cached == llm.n_reused
        if k == 0:
            assert cached == 0
        elif name == "gemma4":
            prompt = llm._input_ids.tolist()[: usage["prompt_tokens"]]
            shared = Llama.longest_token_prefix(held, prompt)
            assert shared < prev_prompt  # (the template's doing, see above)
            assert cached == shared > 0, f"{name}: turn {k + 1} reused {cached} tokens of the {shared} its memory holds"
        else:
            assert cached >= prev_prompt, f"{name}: turn {k + 1} reused {cached} tokens, less than the previous prompt's {prev_prompt}"
        held = llm._input_ids.tolist()
        reused.append(cached)
        prev_prompt = usage["prompt_tokens"]
        reply = r["choices"][0]["message"]["content"]
        fresh = load(path, **kw)
        again = fresh.create_chat_completion(messages=msgs, max_tokens=max_tokens, temperature=0)
        assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        assert again["choices"][0]["message"]["content"] == reply, f"{name}: turn {k + 1} differs from a fresh instance"
        assert again["choices"][0]["finish_reason"] == r["choices"][0]["finish_reason"]
        fresh.close()
        msgs.append({"role": "assistant", "content": reply})
    print(f"{name}: tokens reused per turn: {reused}")


@pytest.mark.parametrize("name", ["swa", "hybrid"])
def test_reset_clears_the_memory(tiny, name):
    """reset() empties the sequence itself: the next prompt is evaluated whole and answers as a
    fresh instance does, also when it shares a prefix with what was there."""
    path, kw = tiny[name]
    llm = load(path, **kw)
    msgs = [{"role": "user", "content": TURNS[0]}]
    llm.create_chat_completion(messages=msgs, max_tokens=8, temperature=0)
    assert llm.n_tokens > 0
    llm.reset()
    assert llm.n_tokens == 0
    mean = load(path, pooling_type=1, **kw).embed("a b c", normalize=True)
    assert len(mean) == llm.n_embd() and abs(float(np.linalg.norm(mean)) - 1.0) < 1e-4
    with pytest.raises(NotImplementedError, match="lora_path"):
        load(path, lora_path="x.gguf")
    other = [{"role": "user", "content": "A different question entirely."}]
    r = llm.create_chat_completion(messages=other, max_tokens=8, temperature=0)
    assert r["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    fresh = load(path, **kw).create_chat_completion(messages=other, max_tokens=8, temperature=0)
    assert r["choices"][0]["message"]["content"] == fresh["choices"][0]["message"]["content"]
    # The same conversation again after reset: nothing kept, the same reply.
    first = llm.create_chat_completion(messages=msgs, max_tokens=8, temperature=0)
    llm.reset()
    second = llm.create_chat_completion(messages=msgs, max_tokens=8, temperature=0)
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert first["choices"][0]["message"]["content"] == second["choices"][0]["message"]["content"]


def chat_stream_text(chunks):
    text, finish, role = "", None, None
    for c in chunks:
        assert c["object"] == "chat.completion.chunk"
        d = c["choices"][0]["delta"]
        role = d.get("role", role)
        text += d.get("content") or ""
        finish = c["choices"][0]["finish_reason"] or finish
    return role, text, finish


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_streamed_equals_whole(tiny, seed):
    """stream=True gives the same text and finish as the whole answer (sampled, with a stop
    string), for chats and plain completions."""
    path, kw = tiny["swa"]
    llm = load(path, **kw)
    msgs = [{"role": "user", "content": "Tell me a story."}]
    args = dict(max_tokens=24, temperature=0.9, seed=seed, stop=["\u00e9"])
    whole = llm.create_chat_completion(messages=msgs, **args)
    role, text, finish = chat_stream_text(llm.create_chat_completion(messages=msgs, stream=True, **args))
    assert role == "assistant"
    assert text == whole["choices"][0]["message"]["content"]
    assert finish == whole["choices"][0]["finish_reason"]
    w = llm.create_completion("Once upon a time", max_tokens=20, temperature=0.9, seed=seed)
    chunks = list(llm.create_completion("Once upon a time", max_tokens=20, temperature=0.9, seed=seed, stream=True))
    assert "".join(c["choices"][0]["text"] for c in chunks) == w["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == w["choices"][0]["finish_reason"]
    assert all(c["object"] == "text_completion" for c in chunks)


def test_stop_strings_cut_and_are_held_back(tiny):
    path, kw = tiny["swa"]
    llm = load(path, **kw)
    base = llm.create_completion("abc", max_tokens=30, temperature=0)["choices"][0]["text"]
    assert len(base) >= 4
    stop = base[2:4]
    r = llm.create_completion("abc", max_tokens=30, temperature=0, stop=[stop])
    assert r["choices"][0]["text"] == base[: base.index(stop)]
    assert r["choices"][0]["finish_reason"] == "stop"
    streamed = "".join(c["choices"][0]["text"] for c in llm.create_completion("abc", max_tokens=30, temperature=0, stop=stop, stream=True))
    assert streamed == r["choices"][0]["text"]


def run_cli(cli, model, prompt, n):
    out = subprocess.run([cli, "run", "-m", model, "-p", prompt, "-n", str(n), "--temp", "0", "-c", "512"],
                         capture_output=True, check=True)
    return out.stdout.decode("utf-8")


@pytest.mark.parametrize("which", ["default", "llama_tiny"])
def test_greedy_equals_lockstep_run(cli, default_model, data_dir, which):
    """The prompt and a greedy completion are what `lockstep run --temp 0` prints, byte for
    byte (run writes whole UTF-8 characters, U+FFFD for invalid bytes, as Python decodes)."""
    model = default_model if which == "default" else os.path.join(data_dir, "llama_tiny.gguf")
    prompt = "The history of the printing press" if which == "default" else "once upon a time"
    n = 32
    expected = run_cli(cli, model, prompt, n)
    llm = load(model)
    r = llm.create_completion(prompt, max_tokens=n, temperature=0)
    assert prompt + r["choices"][0]["text"] + "\n" == expected
    # The streamed pieces too, and the low-level generator's tokens.
    streamed = "".join(c["choices"][0]["text"] for c in llm(prompt, max_tokens=n, temperature=0, stream=True))
    assert prompt + streamed + "\n" == expected
    toks = []
    for t in llm.generate(llm.tokenize(prompt.encode()), temp=0):
        if t == llm.token_eos() or len(toks) == n:
            break
        toks.append(t)
    assert r["usage"]["completion_tokens"] == len(toks) or r["choices"][0]["finish_reason"] == "stop"


def test_tokenizer_goldens_round_trip(default_model, data_dir):
    """Gemma 3's vocabulary against the SentencePiece reference ids (tests/data/tokenizer_golden.txt:
    hex text, ids with special tokens parsed, ids without), and back to the same bytes."""
    llm = load(default_model, n_ctx=64)
    n = 0
    with open(os.path.join(data_dir, "tokenizer_golden.txt"), encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            hex_text, special, plain = line.split("\t")
            text = bytes.fromhex(hex_text)
            ids_s = [int(x) for x in special.split()]
            ids_p = [int(x) for x in plain.split()]
            assert llm.tokenize(text, add_bos=False, special=True) == ids_s, text
            assert llm.tokenize(text, add_bos=False, special=False) == ids_p, text
            assert llm.detokenize(ids_s, special=True) == text
            assert llm.detokenize(ids_p) == text
            # Piece by piece (the streaming path) gives the same bytes too, after the first.
            if ids_s:
                assert llm.detokenize(ids_s[:1], special=True) + llm.detokenize(ids_s[1:], prev_tokens=ids_s[:1], special=True) == text
            n += 1
    assert n >= 40
    assert llm.tokenize(b"hi")[0] == llm.token_bos() == 2


def test_errors_carry_the_library_message(tiny, data_dir, tmp_path):
    path, kw = tiny["swa"]
    missing = str(tmp_path / "nosuch.gguf")
    with pytest.raises(lockstep.LockstepFileError) as e:
        load(missing)
    assert isinstance(e.value, OSError)
    assert str(e.value) == f"lockstep_model_load: model file not found: {missing}"
    assert e.value.status_name == "LOCKSTEP_ERR_IO"
    # A truncated file.
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(open(path, "rb").read()[:5000])
    with pytest.raises(lockstep.LockstepFormatError) as e:
        load(str(cut))
    assert str(e.value).startswith("lockstep_model_load: ")
    llm = load(path, **kw)
    n = llm.n_vocab()
    with pytest.raises(lockstep.LockstepValueError) as e:
        llm.detokenize([1, n])
    assert f"token id {n} outside the vocabulary [0, {n})" in str(e.value) and isinstance(e.value, ValueError)
    llm.eval(llm.tokenize(b"hello"))
    before = llm.n_tokens
    with pytest.raises(lockstep.LockstepValueError) as e:
        llm.eval([5, n + 7])
    assert str(e.value).startswith("lockstep_decode: ") and str(n + 7) in str(e.value)
    assert llm.n_tokens == before  # (a batch is evaluated whole or not at all)
    with pytest.raises(ValueError, match="exceed context window"):
        llm.create_completion([5] * 2000, max_tokens=4)
    with pytest.raises(lockstep.LockstepGrammarError):
        llm.create_completion("x", max_tokens=4, grammar=lockstep.LlamaGrammar.from_string("root ::= nosuchrule"))
    with pytest.raises(lockstep.LockstepValueError):
        Llama(model_path=path, verbose=False, backend="nosuchbackend")
    with pytest.raises(ValueError, match="not found in tools"):
        llm.create_chat_completion(messages=[{"role": "user", "content": "x"}], tools=[WEATHER],
                                   tool_choice={"type": "function", "function": {"name": "nope"}})


# (Values from enums: a random tiny model fills a free string until max_tokens.)
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
                                                           "required": ["city"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "The time in a time zone",
                                         "parameters": {"type": "object", "properties": {"tz": {"type": "string", "enum": ["CET", "UTC"]}},
                                                        "required": ["tz"], "additionalProperties": False}}}


def calls_of_stream(chunks, pieces=None):
    """Tool calls put together from streamed deltas as an OpenAI client does: the first delta
    of an index gives id and name, the later ones more arguments. pieces: a list that gets the
    number of argument deltas of each call after its first."""
    calls, content, finish, n = {}, "", None, {}
    for c in chunks:
        d = c["choices"][0]["delta"]
        content += d.get("content") or ""
        for tc in d.get("tool_calls") or []:
            i = tc["index"]
            if i not in calls:
                calls[i] = [tc["id"], tc["function"]["name"], tc["function"].get("arguments", "")]
                n[i] = 0
            else:
                assert "id" not in tc and "name" not in tc["function"], tc
                calls[i][2] += tc["function"]["arguments"]
                n[i] += 1
        finish = c["choices"][0]["finish_reason"] or finish
    if pieces is not None:
        pieces += [n[i] for i in sorted(n)]
    return [tuple(calls[i]) for i in sorted(calls)], content or None, finish


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_time"}}])
def test_forced_tool_calls(tiny, choice):
    """tool_choice required or named: a call of the tools, its arguments under the function's
    schema (the grammar of the format's call), read back as tool_calls; streamed equals whole;
    the result goes back as a tool message and the model answers."""
    path, kw = tiny["swa"]
    llm = load(path, **dict(kw, n_ctx=2048))  # (the tools' JSON in the prompt: ~1000 tokens of this tiny vocabulary)
    ask = [{"role": "user", "content": "What is the weather in Paris, and the time in CET?"}]
    for seed in range(3):
        args = dict(messages=ask, tools=[WEATHER, TIME], tool_choice=choice, parallel_tool_calls=False, max_tokens=160, temperature=0.8, seed=seed)
        r = llm.create_chat_completion(**args)
        m = r["choices"][0]["message"]
        assert r["choices"][0]["finish_reason"] == "tool_calls"
        assert len(m["tool_calls"]) == 1, m
        call = m["tool_calls"][0]
        name = call["function"]["name"]
        if isinstance(choice, dict):
            assert name == "get_time"
        params = json.loads(call["function"]["arguments"])
        required = (TIME if name == "get_time" else WEATHER)["function"]["parameters"]["required"]
        props = (TIME if name == "get_time" else WEATHER)["function"]["parameters"]["properties"]
        assert isinstance(params, dict) and set(params) == set(required) and all(params[k] in props[k]["enum"] for k in required)
        streamed = calls_of_stream(llm.create_chat_completion(stream=True, **args))
        assert [(n, a) for _, n, a in streamed[0]] == [(name, call["function"]["arguments"])] and streamed[2] == "tool_calls"
    follow = ask + [{"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": call["id"], "name": name, "content": "Sunny, 21 C"}]
    r = llm.create_chat_completion(messages=follow, tools=[WEATHER, TIME], tool_choice="none", max_tokens=8)
    assert isinstance(r["choices"][0]["message"]["content"], str) and "tool_calls" not in r["choices"][0]["message"]


def test_response_format_and_grammar(tiny):
    path, kw = tiny["swa"]
    llm = load(path, **kw)
    msgs = [{"role": "user", "content": "Give me a number."}]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
    for rf in ({"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}, {"type": "json_object", "schema": schema}):
        r = llm.create_chat_completion(messages=msgs, response_format=rf, max_tokens=64, temperature=0.7, seed=3)
        doc = json.loads(r["choices"][0]["message"]["content"])
        assert isinstance(doc["n"], int) and set(doc) == {"n"}
    g = lockstep.LlamaGrammar.from_string('root ::= ("yes" | "no") "!"')
    r = llm.create_completion("Answer: ", max_tokens=8, temperature=0.7, seed=1, grammar=g)
    assert r["choices"][0]["text"] in ("yes!", "no!")
    r = llm.create_chat_completion(messages=msgs, grammar=lockstep.LlamaGrammar.from_json_schema(json.dumps(schema)), max_tokens=64)
    assert isinstance(json.loads(r["choices"][0]["message"]["content"])["n"], int)


def test_logprobs_scores_and_callbacks(tiny):
    """logprobs from the sampler equal a log-softmax of the kept logits (logits_all), greedy
    picks the most likely; a logits processor and a stopping criterion act on each token."""
    path, kw = tiny["swa"]
    llm = load(path, logits_all=True, **kw)
    prompt = "The cat sat"
    r = llm.create_completion(prompt, max_tokens=6, temperature=0, logprobs=3)
    lp = r["choices"][0]["logprobs"]
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == r["usage"]["completion_tokens"] == 6
    prompt_tokens = llm.tokenize(prompt.encode(), special=True)
    ids = llm._input_ids.tolist()[len(prompt_tokens):] + [None]
    for k, (chosen, top) in enumerate(zip(lp["token_logprobs"], lp["top_logprobs"])):
        row = llm.scores[len(prompt_tokens) - 1 + k]
        ref = Llama.logits_to_logprobs(row)
        assert chosen == pytest.approx(float(ref.max()), abs=1e-4)
        assert max(top.values()) == pytest.approx(chosen, abs=1e-6)
        assert len(top) <= 4
        if ids[k] is not None:
            assert int(np.argmax(row)) == ids[k]
    chat = llm.create_chat_completion(messages=[{"role": "user", "content": "hi"}], max_tokens=4, temperature=0, logprobs=True, top_logprobs=2)
    content = chat["choices"][0]["logprobs"]["content"]
    assert len(content) == 4 and all(len(c["top_logprobs"]) <= 3 and c["logprob"] <= 0 for c in content)
    assert len(llm.eval_logits) == llm.n_tokens and len(llm.eval_tokens) == llm.n_tokens

    plain = load(path, **kw)
    base = plain.create_completion(prompt, max_tokens=6, temperature=0)
    same = plain.create_completion(prompt, max_tokens=6, temperature=0, logits_processor=lockstep.LogitsProcessorList([lambda ids, s: s]))
    assert same["choices"][0]["text"] == base["choices"][0]["text"]
    first = plain.tokenize(prompt.encode(), special=True)
    greedy = next(iter(plain.generate(first, temp=0)))

    def ban(input_ids, scores):
        scores[greedy] = -np.inf
        return scores

    other = next(iter(plain.generate(first, temp=0, logits_processor=lockstep.LogitsProcessorList([ban]))))
    assert other != greedy
    seen = []

    def three(input_ids, logits):
        seen.append(len(input_ids))
        return len(seen) > 3

    r = plain.create_completion(prompt, max_tokens=10, temperature=0, stopping_criteria=lockstep.StoppingCriteriaList([three]))
    assert r["choices"][0]["finish_reason"] == "stop" and r["usage"]["completion_tokens"] == 3
    assert seen[:3] == [len(first), len(first) + 1, len(first) + 2]


def test_save_and_load_state(tiny):
    path, kw = tiny["hybrid"]
    llm = load(path, **kw)
    prompt = "A state to save and load again"
    r1 = llm.create_completion(prompt, max_tokens=8, temperature=0)
    state = llm.save_state()
    assert state.n_tokens == llm.n_tokens > 0 and state.llama_state_size == len(state.llama_state)
    llm.create_completion("Something else entirely, to replace the sequence", max_tokens=4, temperature=0)
    llm.load_state(state)
    assert llm.n_tokens == state.n_tokens and llm._input_ids.tolist() == state.input_ids[: state.n_tokens].tolist()
    r2 = llm.create_completion(prompt, max_tokens=8, temperature=0)
    assert r2["choices"][0]["text"] == r1["choices"][0]["text"]
    fresh = load(path, **kw)
    fresh.load_state(state)
    assert fresh.create_completion(prompt, max_tokens=8, temperature=0)["choices"][0]["text"] == r1["choices"][0]["text"]


def test_unseeded_calls_run_on_and_state_repeats_them(tiny):
    """As llama-cpp-python's sampler RNG: calls without a seed draw differently one after
    another; set_seed, or load_state (which restores the seed), repeats them."""
    path, kw = tiny["swa"]
    llm = load(path, **kw)
    args = dict(max_tokens=12, temperature=1.5, top_k=0, top_p=1.0, min_p=0.0)
    llm.set_seed(1337)
    state = llm.save_state()
    texts = [llm.create_completion("Once upon a time", **args)["choices"][0]["text"] for _ in range(4)]
    assert len(set(texts)) > 1, texts
    llm.load_state(state)
    assert llm.create_completion("Once upon a time", **args)["choices"][0]["text"] == texts[0]
    llm.set_seed(1337)
    assert [llm.create_completion("Once upon a time", **args)["choices"][0]["text"] for _ in range(4)] == texts
    fresh = load(path, **kw)
    fresh.set_seed(1337)
    assert fresh.create_completion("Once upon a time", **args)["choices"][0]["text"] == texts[0]


def test_embeddings(data_dir, tiny):
    bert = load(os.path.join(data_dir, "bert_tiny.gguf"), n_ctx=256, embedding=True)
    v = bert.embed("hello world", normalize=True)
    assert len(v) == bert.n_embd() and abs(float(np.linalg.norm(v)) - 1.0) < 1e-4
    resp = bert.create_embedding(["one", "two three"])
    assert resp["object"] == "list" and [d["index"] for d in resp["data"]] == [0, 1]
    assert resp["usage"]["prompt_tokens"] == len(bert.tokenize(b"one")) + len(bert.tokenize(b"two three"))
    assert resp["data"][0]["embedding"] == pytest.approx(bert.embed("one"), abs=1e-6)
    # A model that names no pooling: one vector per token.
    path, kw = tiny["swa"]
    llm = load(path, **kw)
    per_token = llm.embed("a b c")
    assert len(per_token) == len(llm.tokenize(b"a b c")) and len(per_token[0]) == llm.n_embd()
    assert llm.n_tokens == 0
    mean = load(path, pooling_type=1, **kw).embed("a b c", normalize=True)
    assert len(mean) == llm.n_embd() and abs(float(np.linalg.norm(mean)) - 1.0) < 1e-4
    with pytest.raises(NotImplementedError, match="lora_path"):
        load(path, lora_path="x.gguf")


def test_facts_and_pickle(tiny):
    import pickle
    path, kw = tiny["swa"]
    llm = load(path, **kw)
    assert llm.n_ctx() == 1024 and llm.n_vocab() > 0 and llm.n_embd() > 0
    assert llm.metadata.get("general.architecture") == "gemma3"
    copy = pickle.loads(pickle.dumps(llm))
    assert copy.n_ctx() == llm.n_ctx()
    a = llm.create_completion("x", max_tokens=4, temperature=0)["choices"][0]["text"]
    assert copy.create_completion("x", max_tokens=4, temperature=0)["choices"][0]["text"] == a
    # A full context ends the generation ("length"), no exception.
    small = load(path, n_ctx=32, n_ubatch=16)
    r = small.create_completion("y", max_tokens=None, temperature=0)
    assert r["choices"][0]["finish_reason"] in ("length", "stop") and r["usage"]["total_tokens"] <= 33


def scripted(llm, text):
    """A logits processor that makes the model write `text` (special tokens parsed) and then
    its end of generation, whatever its weights say."""
    script = llm.tokenize(text.encode(), add_bos=False, special=True) + [llm.token_eos()]
    start = []

    def processor(input_ids, scores):
        if not start:
            start.append(len(input_ids))
        k = len(input_ids) - start[0]
        out = np.full_like(scores, -np.inf)
        out[script[min(k, len(script) - 1)]] = 0.0
        return out

    return processor


def test_reasoning_content_and_stops_as_the_server_reads_them(data_dir):
    """A reply with a <think> block (tiny Qwen3: its template's markers): the reasoning comes as
    reasoning_content, the rest as content, streamed the same as whole; a stop string inside
    the reasoning does not stop it, one in the content does."""
    llm = lockstep.Llama(os.path.join(data_dir, "qwen3_tiny.gguf"), n_ctx=256, verbose=False)
    ask = [{"role": "user", "content": "Hi"}]
    reply = "<think>\nThe user says hi. STOP\n</think>\n\nHello there STOP friend"
    r = llm.create_chat_completion(messages=ask, logits_processor=scripted(llm, reply), max_tokens=100)
    m = r["choices"][0]["message"]
    assert m["reasoning_content"] == "The user says hi. STOP"
    assert m["content"] == "Hello there STOP friend"
    assert r["choices"][0]["finish_reason"] == "stop"
    chunks = list(llm.create_chat_completion(messages=ask, logits_processor=scripted(llm, reply), max_tokens=100, stream=True))
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == m["reasoning_content"]
    assert "".join(d.get("content") or "" for d in deltas) == m["content"]
    assert not any("think>" in (d.get("content") or "") for d in deltas)
    stopped = llm.create_chat_completion(messages=ask, logits_processor=scripted(llm, reply), max_tokens=100, stop=["STOP"])
    assert stopped["choices"][0]["message"]["reasoning_content"] == "The user says hi. STOP"
    assert stopped["choices"][0]["message"]["content"] == "Hello there "
    assert stopped["choices"][0]["finish_reason"] == "stop"


def test_vocab_only_tokenizes_and_refuses_evaluation(tiny):
    path, kw = tiny["gemma4"]
    full = load(path, **kw)
    voc = lockstep.Llama(path, vocab_only=True, verbose=False)
    text = b"The history of the printing press"
    assert voc.tokenize(text) == full.tokenize(text)
    assert voc.detokenize(voc.tokenize(text, add_bos=False)) == text
    assert voc.n_vocab() == full.n_vocab() and voc.token_bos() == full.token_bos()
    assert voc.metadata == full.metadata
    assert voc._is_recurrent is False and voc._is_hybrid is False
    voc.reset()
    with pytest.raises(lockstep.LockstepUnsupportedError, match="vocab_only"):
        voc.create_completion("Hello", max_tokens=2)
    with pytest.raises(lockstep.LockstepUnsupportedError, match="vocab_only"):
        voc.eval([1, 2])
    with pytest.raises(lockstep.LockstepUnsupportedError, match="vocab_only"):
        voc.embed("Hello")


@pytest.mark.parametrize("name", ["swa", "gemma4", "hybrid"])
def test_ram_cache_resumes_conversations_and_equals_fresh(tiny, name):
    """llama-cpp-python's LlamaRAMCache: a Llama with the cache loads the longest cached prefix
    of a prompt that its own memory does not hold (once), and answers as a fresh instance."""
    path, kw = tiny[name]
    assert load(path, **kw)._is_hybrid is (name == "hybrid")
    assert load(path, **kw)._is_recurrent is False
    prompt = "The quick brown fox jumps over the lazy dog and then"
    fresh = load(path, **kw).create_completion(prompt, max_tokens=6, temperature=0.0)
    cache = lockstep.LlamaRAMCache()
    writer = load(path, **kw)
    writer.set_cache(cache)
    writer.create_completion(prompt, max_tokens=6, temperature=0.0)
    assert cache.cache_size > 0 and len(cache.cache_state) == 1
    cached = load(path, **kw)
    cached.set_cache(cache)
    loads = []
    real = cached.load_state
    cached.load_state = lambda st: (loads.append(1), real(st))[1]
    again = cached.create_completion(prompt, max_tokens=6, temperature=0.0)
    assert len(loads) == 1
    assert again["choices"][0]["text"] == fresh["choices"][0]["text"]
    # A second conversation, then the first again: each resumes from the cache.
    other = cached.create_completion("Once upon a time", max_tokens=4, temperature=0.0)
    assert other["choices"][0]["text"] == load(path, **kw).create_completion("Once upon a time", max_tokens=4, temperature=0.0)["choices"][0]["text"]
    assert cached.create_completion(prompt, max_tokens=6, temperature=0.0)["choices"][0]["text"] == fresh["choices"][0]["text"]
    assert len(loads) == 2 and len(cache.cache_state) == 2
    tiny_cache = lockstep.LlamaRAMCache(capacity_bytes=1)
    cached.set_cache(tiny_cache)
    cached.create_completion("Once", max_tokens=2, temperature=0.0)
    assert len(tiny_cache.cache_state) == 0  # (over capacity: dropped)


def test_tool_call_arguments_stream_as_written(data_dir):
    """Hermes calls (tiny Qwen3's template): the call is announced with its id and name, then
    its arguments come in pieces as the model writes them, and put together they equal the
    whole reply's call."""
    llm = lockstep.Llama(os.path.join(data_dir, "qwen3_tiny.gguf"), n_ctx=1024, verbose=False)
    ask = [{"role": "user", "content": "Time?"}]
    reply = 'Let me look.\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "CET"}}\n</tool_call>'
    whole = llm.create_chat_completion(messages=ask, tools=[TIME], logits_processor=scripted(llm, reply), max_tokens=200)
    m = whole["choices"][0]["message"]
    assert whole["choices"][0]["finish_reason"] == "tool_calls"
    assert m["content"].strip() == "Let me look."
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m["tool_calls"]] == [("get_time", {"tz": "CET"})]
    pieces = []
    calls, content, finish = calls_of_stream(
        llm.create_chat_completion(messages=ask, tools=[TIME], logits_processor=scripted(llm, reply), max_tokens=200, stream=True), pieces)
    assert finish == "tool_calls" and content == m["content"]
    assert [(n, a) for _, n, a in calls] == [("get_time", m["tool_calls"][0]["function"]["arguments"])]
    assert pieces[0] > 1
