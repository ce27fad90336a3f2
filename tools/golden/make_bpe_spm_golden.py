#!/usr/bin/env python3
"""Tiny SentencePiece-style BPE vocabulary (tokenizer.ggml.model "gemma4": merges by rank over
"▁"-escaped text, byte fallback) and reference encodings for tests/text/test_tokenizer.cpp, made with
the HF `tokenizers` library — independent of our implementation — configured as transformers'
GemmaTokenizer (BPE with byte_fallback behind a Replace(" ", "▁") normalizer) with the
pre-split of llama.cpp's gemma4 pre-tokenizer: runs of newlines and runs of anything else
(Split on [^\n]+|[\n]+, isolated), so that no merge crosses a newline boundary.

The trainer's alphabet is limited, so CJK, emoji and rare accented characters are missing
from the vocabulary and go through the <0xXX> byte pieces.

Output (tests/data/bpe_spm_tiny.txt), one record a line, fields TAB-separated, text hex-encoded:
  T <hex token> <type>     vocabulary in id order (type as tokenizer.ggml.token_type)
  M <hex left> <hex right> merges in rank order
  G <hex text> <ids separated by spaces>
Usage: tools/golden/make_bpe_spm_golden.py > tests/data/bpe_spm_tiny.txt   (pip install tokenizers)
"""
import json

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "I'm sure they'll say it's fine, but we've seen what you'd do.",
    "def main():\n    for i in range(10):\n        print(i ** 2)\n",
    "Numbers: 1234567890, 3.14159, 2024-06-01; prices $12.50 and 7.",
    "Über café déjà vu — naïve façade.",
    "tabs\tand\nnewlines\r\n  spaces   everywhere\n\n\n",
]

TEXTS = [
    "Hello world",
    " leading space and trailing ",
    "The quick brown fox jumps over the lazy dog.",
    "multiple     spaces\tand\t\ttabs\n\nnewlines\r\n",
    "def main():\n    print(i ** 2)\n",
    "one\ntwo\n\n\nthree\n\n",
    "\n",
    ":\n    for i in range(10):\n",
    "Über café déjà vu — naïve façade.",
    "日本語のテキスト 🙂🙃 emoji!! 👍🏽",
    "Ελληνικά и русский текст",
    "▁ already escaped ▁▁",
    "<|turn>user\nnot special without parse_special<turn|>",
    "",
]

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<turn|>"]


def main():
    norm = normalizers.Replace(" ", "▁")
    base = Tokenizer(models.BPE())
    base.normalizer = norm
    trainer = trainers.BpeTrainer(vocab_size=420, show_progress=False, limit_alphabet=70, special_tokens=[])
    base.train_from_iterator(CORPUS, trainer=trainer)
    model = json.loads(base.to_str())["model"]
    trained = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    # Vocabulary: specials (control), the 256 byte pieces, then the trained pieces.
    vocab = [(t, 3) for t in SPECIALS] + [(f"<0x{b:02X}>", 6) for b in range(256)] + [(t, 1) for t, _ in trained]
    ids = {t: i for i, (t, _) in enumerate(vocab)}
    for t, ty in vocab:
        print(f"T\t{t.encode().hex()}\t{ty}")
    for a, b in merges:
        print("M\t" + a.encode().hex() + "\t" + b.encode().hex())
    tok = Tokenizer(models.BPE(vocab=ids, merges=[tuple(m) for m in merges], byte_fallback=True, unk_token="<unk>",
                               fuse_unk=True))
    tok.normalizer = norm
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[^\n]+|[\n]+"), behavior="isolated", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    for text in TEXTS:
        out = tok.encode(text, add_special_tokens=False).ids
        assert "▁" in text or tok.decode(out) == text, (text, tok.decode(out))  # a literal ▁ decodes as a space
        assert ids["<unk>"] not in out, text
        print(f"G\t{text.encode().hex()}\t" + " ".join(map(str, out)))


if __name__ == "__main__":
    main()
