#!/usr/bin/env python3
"""Reference token ids for tests/text/test_tokenizer.cpp.

Builds a SentencePiece ModelProto (BPE, byte fallback, identity normalizer with
whitespace escaping, no dummy prefix) from the tokenizer.ggml.* arrays of a GGUF file and
encodes a fixed set of texts with the `sentencepiece` library, an implementation
independent of ours. Special pieces are split out of the raw text first (see encode()).

Output lines: <hex of the UTF-8 text> TAB <ids, parse_special=true> TAB <ids, parse_special=false>
(ids separated by spaces, no BOS).

Usage: tools/golden/make_tokenizer_golden.py MODEL.gguf > tests/data/tokenizer_golden.txt
Needs: pip install gguf sentencepiece protobuf
"""
import sys

import sentencepiece as spm
from gguf import GGUFReader
from sentencepiece import sentencepiece_model_pb2 as pb

TEXTS = [
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "trailing space ",
    "  two leading spaces",
    "multiple   spaces    between     words",
    "     ",
    " ",
    "a",
    "",
    "line one\nline two\n\nline four\n\n\n",
    "tabs\tand\t\ttabs\t",
    "\tindented\n\t\tdouble",
    "mixed \t \n whitespace \n\t ",
    "Café naïve résumé façade Ångström",
    "Zürich, São Paulo, Kraków, Île-de-France",
    "日本語のテキストです。",
    "中文分词测试，你好世界！",
    "한국어 텍스트",
    "Привет, мир! Это тест.",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "Emoji: 😀🎉👍🏽 🇫🇷 👨‍👩‍👧‍👦",
    "🦙🦙🦙",
    "def foo(x):\n    return x * 2\n\nif __name__ == \"__main__\":\n    print(foo(21))\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    "<div class=\"x\">&nbsp;</div>",
    "12345 67890 3.14159 1,000,000 2024-01-01",
    "0123456789",
    "x^2 + y^2 = z^2; ∑ ∫ √ ∞ ≠ ≤",
    "rare chars: \u0001\u0007 \u00ff \U0001f9ff \U000e0001 \ufffd",
    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text after bos<eos>",
    "<start_of_turn><end_of_turn>",
    "not special: <start_of_turn",
    "[multimodal] user defined",
    "unusual <unused0> token",
    "URL https://example.com/path?q=1&r=2#frag",
    "email someone@example.org",
    "ALL CAPS AND lowercase AND MiXeD",
    "don't won't it's I'm we'll they've",
    "a" * 300,
    "a  b and    c",
    "    indented by four\n        by eight",
    "<code>x</code> <b>bold</b>",
    "The tokenizer must handle long text. " * 20,
]


def arr(r, k):
    f = r.fields[k]
    return [f.parts[i] for i in f.data]


def main():
    path = sys.argv[1]
    r = GGUFReader(path)
    toks = [bytes(x).decode("utf-8") for x in arr(r, "tokenizer.ggml.tokens")]
    scores = [float(x[0]) for x in arr(r, "tokenizer.ggml.scores")]
    types = [int(x[0]) for x in arr(r, "tokenizer.ggml.token_type")]
    unk = int(r.fields["tokenizer.ggml.unknown_token_id"].parts[-1][0])

    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.vocab_size = len(toks)
    m.trainer_spec.unk_id = unk
    m.trainer_spec.bos_id = int(r.fields["tokenizer.ggml.bos_token_id"].parts[-1][0])
    m.trainer_spec.eos_id = int(r.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])
    m.trainer_spec.pad_id = int(r.fields["tokenizer.ggml.padding_token_id"].parts[-1][0])
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    for i, (t, s, ty) in enumerate(zip(toks, scores, types)):
        p = m.pieces.add()
        p.piece = t
        p.score = s
        p.type = pb.ModelProto.SentencePiece.UNKNOWN if i == unk else ty
    sp = spm.SentencePieceProcessor(model_proto=m.SerializeToString())

    # Pieces matched literally in the raw text before normalization (leftmost, longest):
    # user-defined ones always (Gemma's "\n\n", runs of spaces/tabs, "<code>", ...: this is
    # what HF tokenizers' added tokens and llama.cpp do, and how the model was trained;
    # sentencepiece's own matcher would miss the space runs after escaping them to U+2581)
    # and control ones (<start_of_turn>, <bos>, ...) with parse_special.
    user = {t: i for i, (t, ty) in enumerate(zip(toks, types)) if ty == 4 and t}
    ctrl = {t: i for i, (t, ty) in enumerate(zip(toks, types)) if ty == 3 and t}
    lens = sorted({len(t) for t in list(user) + list(ctrl)}, reverse=True)

    def encode(text, parse_special):
        table = dict(user)
        if parse_special:
            for t, i in ctrl.items():
                table.setdefault(t, i)
        out, pos, start = [], 0, 0
        while pos < len(text):
            hit = None
            for n in lens:
                t = text[pos:pos + n]
                if len(t) == n and t in table:
                    hit = t
                    break
            if hit is None:
                pos += 1
                continue
            if start < pos:
                out += sp.encode(text[start:pos])
            out.append(table[hit])
            pos += len(hit)
            start = pos
        if start < len(text):
            out += sp.encode(text[start:])
        return out

    for t in TEXTS:
        a = encode(t, True)
        b = encode(t, False)
        print(t.encode("utf-8").hex() + "\t" + " ".join(map(str, a)) + "\t" + " ".join(map(str, b)))


if __name__ == "__main__":
    main()
