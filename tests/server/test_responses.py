"""POST /v1/responses (OpenAI's Responses API, stateless): each answer equals the chat
completion the request stands for (same tokens, same usage), whole and streamed alike; forced
function calls come out as function_call items and go back as function_call_output; text.format
constrains the answer; the openai client's responses.create / parse work; bad requests get a
400 naming the Responses field.

usage: test_responses.py BINARY MODEL [serve args...]
"""
import json
import sys

from harness import Server, check, generate, import_openai

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}
PET = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 30}},
       "required": ["name", "age"], "additionalProperties": False}


def whole(srv, body):
    status, resp, _ = srv.post("/v1/responses", body)
    check(status == 200, f"{body}: HTTP {status}: {resp}")
    check(resp["object"] == "response" and resp["id"].startswith("resp_"), resp)
    return resp


def streamed(srv, body):
    """The events of a streamed response, checked for order; returns the final response."""
    events, done = srv.stream("/v1/responses", dict(body, stream=True))
    check(not done, "a Responses stream ends with its last event, not [DONE]")
    types = [e["type"] for e in events]
    check(types[:2] == ["response.created", "response.in_progress"], types)
    check(types[-1] in ("response.completed", "response.incomplete"), types)
    check([e["sequence_number"] for e in events] == list(range(len(events))), "sequence numbers")
    # Each item's deltas add up to what its done event and the final response say.
    final = events[-1]["response"]
    texts, args = {}, {}
    for e in events:
        if e["type"] == "response.output_text.delta":
            texts[e["output_index"]] = texts.get(e["output_index"], "") + e["delta"]
        elif e["type"] == "response.function_call_arguments.delta":
            args[e["output_index"]] = args.get(e["output_index"], "") + e["delta"]
        elif e["type"] == "response.output_item.done":
            check(final["output"][e["output_index"]] == e["item"], f"item {e['output_index']} differs in the final response")
    for i, t in texts.items():
        check(final["output"][i]["content"][0]["text"] == t, f"output_text deltas of item {i}")
    for i, a in args.items():
        check(final["output"][i]["arguments"] == a, f"argument deltas of item {i}")
    return final


def shape(resp):
    """What must agree between a whole and a streamed response (ids are made per response)."""
    items = []
    for it in resp["output"]:
        it = {k: v for k, v in it.items() if k != "id"}
        items.append(it)
    usage = {k: v for k, v in resp["usage"].items() if k != "input_tokens_details"}  # (cached tokens: the second reuses the first's)
    return resp["status"], resp["incomplete_details"], items, usage


def main(binary, model, args):
    with Server(binary, model, ["-np", "2"] + args) as srv:
        # Text: the chat completion's answer, whole and streamed.
        for body, chat in [({"input": "Tell me about the sea.", "max_output_tokens": 12, "temperature": 0},
                            {"messages": [{"role": "user", "content": "Tell me about the sea."}], "max_tokens": 12, "temperature": 0}),
                           ({"instructions": "Be brief.", "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi!"}]}],
                             "max_output_tokens": 48, "temperature": 0.8, "seed": 4},
                            {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}],
                             "max_tokens": 48, "temperature": 0.8, "seed": 4})]:
            w, s = whole(srv, body), streamed(srv, body)
            check(shape(w) == shape(s), f"streamed differs from whole:\n{shape(s)}\nvs\n{shape(w)}")
            ref = generate(srv, chat, True, False)
            msg = [it for it in w["output"] if it["type"] == "message"]
            check(len(msg) == 1 and msg[0]["content"][0]["text"] == ref["text"], f"not the chat answer: {w['output']} vs {ref}")
            check(w["usage"]["output_tokens"] == ref["completion_tokens"], (w["usage"], ref))
            check(w["status"] == ("incomplete" if ref["finish"] == "length" else "completed"), (w["status"], ref["finish"]))
        print("responses: text answers equal the chat completions they stand for, whole = streamed", flush=True)

        # A forced function call, whole = streamed, then its output goes back.
        ask = {"input": "What is the weather in Paris?", "tools": [WEATHER], "tool_choice": "required", "max_output_tokens": 64, "parallel_tool_calls": False,
               "seed": 2, "temperature": 0.7}
        w, s = whole(srv, ask), streamed(srv, ask)
        check(shape(w) == shape(s), f"tool call: streamed differs:\n{shape(s)}\nvs\n{shape(w)}")
        calls = [it for it in w["output"] if it["type"] == "function_call"]
        check(len(calls) == 1 and calls[0]["name"] == "get_weather" and isinstance(json.loads(calls[0]["arguments"])["city"], str), w)
        named = whole(srv, dict(ask, tool_choice={"type": "function", "name": "get_weather"}))
        check([it["type"] for it in named["output"]] == ["function_call"], named)
        c = calls[0]
        follow = whole(srv, {"input": [{"role": "user", "content": "What is the weather in Paris?"},
                                       {"type": "function_call", "call_id": c["call_id"], "name": c["name"], "arguments": c["arguments"]},
                                       {"type": "function_call_output", "call_id": c["call_id"], "output": "Sunny, 21 C"}],
                             "tools": [WEATHER], "tool_choice": "none", "max_output_tokens": 16, "seed": 1})
        check([it["type"] for it in follow["output"]] == ["message"], follow)
        print("responses: a forced function call (whole = streamed), its output sent back, answered", flush=True)

        # Structured output.
        import jsonschema
        for seed in range(3):
            r = whole(srv, {"input": "Describe a pet as JSON.", "max_output_tokens": 64, "seed": seed, "temperature": 0.9,
                            "text": {"format": {"type": "json_schema", "name": "pet", "schema": PET, "strict": True}}})
            jsonschema.validate(json.loads(r["output"][0]["content"][0]["text"]), PET)
        print("responses: text.format json_schema answers validate", flush=True)

        # The openai client, where installed.
        openai = import_openai(required=False)
        if openai:
            from pydantic import BaseModel

            client = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="x")
            r = client.responses.create(model="m", input="Tell me about the sea.", max_output_tokens=12, temperature=0)
            check(r.output_text == whole(srv, {"input": "Tell me about the sea.", "max_output_tokens": 12, "temperature": 0})["output"][0]["content"][0]["text"], r)
            events = list(client.responses.create(model="m", input="Tell me about the sea.", max_output_tokens=12, temperature=0, stream=True))
            check(events[-1].response.output_text == r.output_text, events[-1])

            class Pet(BaseModel):
                name: str
                age: int

            p = client.responses.parse(model="m", input="Describe a pet.", text_format=Pet, max_output_tokens=64, extra_body={"seed": 3})
            check(isinstance(p.output_parsed, Pet), p)
            print(f"responses: the openai {openai.__version__} client's responses.create (whole, streamed) and parse()", flush=True)

        # Bad requests: 400 naming the Responses field.
        for body, param in [({"input": "x", "previous_response_id": "resp_1"}, "previous_response_id"),
                            ({"input": "x", "frobnicate": 1}, "frobnicate"),
                            ({}, "input"), ({"input": 5}, "input"),
                            ({"input": [{"type": "item_reference", "id": "x"}]}, "input"),
                            ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input"),
                            ({"input": [{"role": "wizard", "content": "x"}]}, "input"),
                            ({"input": [{"type": "function_call", "name": "f"}]}, "input"),
                            ({"input": "x", "tools": [{"type": "web_search"}]}, "tools"),
                            ({"input": "x", "text": {"format": {"type": "xml"}}}, "text.format"),
                            ({"input": "x", "text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "wat"}}}}, "text.format"),
                            ({"input": "x", "max_output_tokens": -5}, "max_output_tokens"),
                            ({"input": "x", "truncation": "auto"}, "truncation"),
                            ({"input": "x", "background": True}, "background")]:
            status, resp, _ = srv.post("/v1/responses", body)
            check(status == 400 and resp["error"]["param"] == param, f"{body}: HTTP {status} {resp}")
        check(srv.get("/health")[0] == 200, "unhealthy after the errors")
        print("responses: 14 bad requests refused with 400 naming the field", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
