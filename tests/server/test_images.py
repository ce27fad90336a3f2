"""`lockstep serve --mmproj`: images in chats, as OpenAI's image_url parts with data: URLs.

usage: test_images.py BINARY DATA_DIR [--family=NAME] [serve args...]
  DATA_DIR holds NAME_tiny.gguf, NAME_tiny_mmproj.gguf and vision/ (NAME gemma3v, the default:
  tools/oracle/vision_tiny.py; qwen35v: tools/oracle/qwen35v_tiny.py, a hybrid model whose images
  take M-RoPE positions and whose next turn resumes from its recurrent checkpoint; qwen3vl:
  tools/oracle/qwen3vl_tiny.py, whose image rows carry deepstack rows for the first layers).
  - an image chat answers 200; the same request alone and beside three others (two with other
    images, one text only) is the same reply;
  - its next turn reuses the cached prefix, image included (not encoded again: counted in
    /metrics), and equals a fresh evaluation of the same conversation;
  - a remote URL, a non-data URL, a truncated PNG, a 20000x20000 PNG header, bad base64, more
    images than the prompt's markers allow: 400 naming the problem, the server still answering;
  - the Responses API's input_image part gives the chat's reply;
  - a server without --mmproj refuses image parts with 400 and serves text.
"""
import base64
import binascii
import os
import struct
import sys
import threading
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Server, check, wait_for  # noqa: E402


def data_url(raw, mime="image/png"):
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


def chat(images, text):
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in images] + [{"type": "text", "text": text}]
    return {"messages": [{"role": "user", "content": parts}], "max_tokens": 8, "temperature": 0, "logprobs": True, "top_logprobs": 3}


def answer(resp):
    """A reply with its tokens' log-probabilities (the tiny model's text alone says little)."""
    c = resp["choices"][0]
    return c["message"]["content"], c["logprobs"]


def png_with_size(raw, w, h):
    b = bytearray(raw)
    b[16:20] = struct.pack(">I", w)
    b[20:24] = struct.pack(">I", h)
    b[29:33] = struct.pack(">I", zlib.crc32(bytes(b[12:29])) & 0xFFFFFFFF)
    return bytes(b)


def main(binary, data, args):
    family = "gemma3v"
    if args and args[0].startswith("--family="):
        family = args.pop(0).split("=", 1)[1]
    model = os.path.join(data, f"{family}_tiny.gguf")
    mmproj = os.path.join(data, f"{family}_tiny_mmproj.gguf")
    imgs = {n: open(os.path.join(data, "vision", n), "rb").read() for n in ("rgb64.png", "rgb100x37.png", "photo120x90.jpg")}
    png, png2, jpg = imgs["rgb64.png"], imgs["rgb100x37.png"], imgs["photo120x90.jpg"]
    with Server(binary, model, ["-np", "4", "-c", "256", "-ub", "32", "--mmproj", mmproj] + args) as srv:
        req = chat([data_url(png)], "Describe.")
        status, alone, _ = srv.post("/v1/chat/completions", req)
        check(status == 200, alone)
        reply = alone["choices"][0]["message"]["content"]
        want = answer(alone)
        n_prompt = alone["usage"]["prompt_tokens"]
        check(n_prompt > 16, f"the prompt holds the image's 16 tokens: {alone['usage']}")
        # Beside others: the same reply.
        others = [chat([data_url(png2)], "What is this?"), chat([data_url(jpg, "image/jpeg"), data_url(png)], "Compare."),
                  {"messages": [{"role": "user", "content": "Just text."}], "max_tokens": 8, "temperature": 0}]
        got = [None] * 4

        def run(k, body):
            got[k] = srv.post("/v1/chat/completions", body)

        srv.post("/v1/completions", {"prompt": "evict", "max_tokens": 1})
        threads = [threading.Thread(target=run, args=(k, b)) for k, b in enumerate([req] + others)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, (status, resp, _) in enumerate(got):
            check(status == 200, f"request {k}: {status} {resp}")
        check(answer(got[0][1]) == want, "the image chat beside others differs from it alone")
        check(answer(got[1][1])[1] != want[1], "another image gives the same log-probabilities: the comparison cannot tell")
        print("images: an image chat alone equals it beside three others (two with images, one text)", flush=True)

        # The next turn, here among four slots (its reuse is checked below, on one slot, where
        # which slot holds what does not depend on the order the four requests came in).
        wait_for(lambda: srv.metrics()["lockstep_slots_busy"] == 0, 30, "the slots free after the replies")
        turn2 = {"messages": req["messages"] + [{"role": "assistant", "content": reply},
                                                {"role": "user", "content": "And the colours?"}],
                 "max_tokens": 8, "temperature": 0, "logprobs": True, "top_logprobs": 3}
        status, r2, _ = srv.post("/v1/chat/completions", turn2)
        check(status == 200, r2)

        # Bad images: 400 naming the problem; the server keeps serving.
        bad = [
            ([{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}], "remote image URLs are not fetched"),
            ([{"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}], "must be a data: URL"),
            ([{"type": "image_url", "image_url": {"url": data_url(png[:200])}}], "truncated"),
            ([{"type": "image_url", "image_url": {"url": data_url(png_with_size(png, 20000, 20000))}}], "larger than allowed"),
            ([{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}}], "outside its alphabet"),
            ([{"type": "image_url", "image_url": {"url": data_url(b"GIF89a....")}}], "not a PNG or JPEG"),
            ([{"type": "image_url", "image_url": 7}], "image_url part must be"),
            ([{"type": "image_url", "image_url": {"url": data_url(png)}}, {"type": "text", "text": "<__media__><__media__>"}],
             "image markers"),
        ]
        for parts, says in bad:
            status, resp, _ = srv.post("/v1/chat/completions", {"messages": [{"role": "user", "content": parts}], "max_tokens": 4})
            msg = resp.get("error", {}).get("message", "")
            check(status == 400 and says in msg, f"{says}: {status} {resp}")
        # The Responses API's input_image part: the same image chat.
        status, resp, _ = srv.post("/v1/responses", {"input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": data_url(png)}, {"type": "input_text", "text": "Describe."}]}],
            "max_output_tokens": 8, "temperature": 0})
        check(status == 200, resp)
        text = "".join(c["text"] for o in resp["output"] if o["type"] == "message" for c in o["content"])
        check(text == reply, f"/v1/responses with the image: {text!r}, the chat API: {reply!r}")
        status, resp, _ = srv.post("/v1/responses", {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]})
        check(status == 400 and "file_id is not supported" in resp["error"]["message"], resp)
        status, again, _ = srv.post("/v1/chat/completions", req)
        check(status == 200 and answer(again) == want, "after the refusals, the image chat differs")
        print(f"images: {len(bad)} bad image requests refused with 400 naming the problem, still serving", flush=True)

    # Turn 2 evaluated fresh, on a server that has seen nothing: the same reply.
    with Server(binary, model, ["-np", "1", "-c", "256", "-ub", "32", "--mmproj", mmproj] + args) as srv:
        status, fresh, _ = srv.post("/v1/chat/completions", turn2)
        check(status == 200 and fresh["usage"]["prompt_tokens_details"]["cached_tokens"] == 0, fresh)
        check(srv.metrics()["lockstep_images_encoded_total"] == 1, "the fresh evaluation did not encode its image once")
        check(answer(fresh) == answer(r2), "turn 2 differs from its fresh evaluation")
        print("images: turn 2 equals its fresh evaluation on a new server", flush=True)

    # The next turn on the slot that served turn 1: the image's rows are in its cache, not
    # encoded again, and the reply is the fresh evaluation's.
    with Server(binary, model, ["-np", "1", "-c", "256", "-ub", "32", "--mmproj", mmproj] + args) as srv:
        status, one, _ = srv.post("/v1/chat/completions", req)
        check(status == 200 and answer(one) == want, "turn 1 on one slot differs")
        wait_for(lambda: srv.metrics()["lockstep_slots_busy"] == 0, 30, "the slot free after turn 1")
        before = srv.metrics()
        status, again2, _ = srv.post("/v1/chat/completions", turn2)
        check(status == 200, again2)
        after = srv.metrics()
        cached = again2["usage"]["prompt_tokens_details"]["cached_tokens"]
        # (Gemma 4's generation prompt opens an empty thought channel that its history leaves
        # out, so turn 2 shares turn 1's prompt up to "<|turn>model\n" only: images included.)
        want_cached = n_prompt // 2 if family == "gemma4v" else n_prompt
        check(cached >= want_cached, f"turn 2 reused {cached} tokens, less than {want_cached} of turn 1's prompt of {n_prompt}; "
                                     f"usage {again2['usage']}, metrics before {before}, after {after}")
        check(after["lockstep_images_encoded_total"] == before["lockstep_images_encoded_total"], f"turn 2 encoded its image again: {after}")
        check(after["lockstep_images_reused_total"] > before["lockstep_images_reused_total"], "turn 2's image not counted as reused")
        check(answer(again2) == answer(fresh), "turn 2 after turn 1 differs from its fresh evaluation")
        print(f"images: turn 2 reused {cached} cached tokens (its image not encoded again) and equals its fresh evaluation", flush=True)

    with Server(binary, model, ["-np", "1", "-c", "256"] + args) as srv:
        status, resp, _ = srv.post("/v1/chat/completions", chat([data_url(png)], "Describe."))
        check(status == 400 and "--mmproj" in resp["error"]["message"], f"no projector: {status} {resp}")
        status, resp, _ = srv.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
        check(status == 200, resp)
        print("images: a server without --mmproj refuses image parts with 400 and serves text", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
