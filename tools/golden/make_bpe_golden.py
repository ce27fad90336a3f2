#!/usr/bin/env python3
"""Tiny byte-level BPE vocabulary and reference encodings for tests/text/test_tokenizer.cpp,
made with the HF `tokenizers` library (independent of our implementation).

Trains a ~600-token byte-level BPE on a small fixed corpus, then encodes a set of texts
with three pre-tokenizers: GPT-2 (ByteLevel's own regex), Llama 3 and Qwen 2 (Split with
their regexes, then ByteLevel without regex; Llama 3 with ignore_merges like its
tokenizer.json).

Output (tests/data/bpe_tiny.txt), one record a line, fields TAB-separated, text hex-encoded:
  T <hex token>            vocabulary in id order
  M <hex left> <hex right> merges in rank order
  G <pre> <hex text> <ids separated by spaces>
Usage: tools/golden/make_bpe_golden.py > tests/data/bpe_tiny.txt   (pip install tokenizers)
"""
import json

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "I'm sure they'll say it's fine, but we've seen what you'd do.",
    "def main():\n    for i in range(10):\n        print(i ** 2)\n",
    "Numbers: 1234567890, 3.14159, 2024-06-01; prices $12.50 and €7.",
    "Über café déjà vu — naïve façade. Ελληνικά и русский текст.",
    "日本語のテキスト、中文文本。 🙂🙃 emoji!!",
    "tabs\tand\nnewlines\r\n  spaces   everywhere\n\n\n",
]

PRE = {
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "I'M SURE THEY'LL SAY IT'S FINE; we'Ve SEEN you'd",
    "  leading and trailing  ",
    "multiple     spaces\tand\t\ttabs\n\nnewlines\r\nwindows\r\n",
    "   \n   x",
    "def main():\n    for i in range(10):\n        print(i ** 2)\n",
    "1234567890 12 123 1234 3.14159",
    "Ⅻ ² ٣٤٥ ½ x²",
    "Über café déjà vu — naïve façade.",
    "Ελληνικά и русский текст",
    "日本語のテキスト、中文文本。",
    "🙂🙃 emoji!! 👍🏽",
    "a\u00a0b\u3000c\u2028d",
    "!!!???...,,,;;;",
    "'s 't 're 'x '",
    "",
]


def main():
    base = Tokenizer(models.BPE())
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    base.train_from_iterator(CORPUS, trainer=trainer)
    model = json.loads(base.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    for i, (t, id_) in enumerate(vocab):
        assert i == id_
        print("T\t" + t.encode().hex())
    for a, b in merges:
        print("M\t" + a.encode().hex() + "\t" + b.encode().hex())

    vocab_d = dict(vocab)
    merge_t = [tuple(m) for m in merges]
    toks = {}
    gpt2 = Tokenizer(models.BPE(vocab=vocab_d, merges=merge_t))
    gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    toks["gpt2"] = gpt2
    for name, rx in PRE.items():
        t = Tokenizer(models.BPE(vocab=vocab_d, merges=merge_t, ignore_merges=(name == "llama3")))
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        toks[name] = t
    for name, t in toks.items():
        t.decoder = decoders.ByteLevel()
        for text in TEXTS:
            ids = t.encode(text, add_special_tokens=False).ids
            assert t.decode(ids) == text, (name, text)
            print(f"G\t{name}\t{text.encode().hex()}\t" + " ".join(map(str, ids)))


if __name__ == "__main__":
    main()
