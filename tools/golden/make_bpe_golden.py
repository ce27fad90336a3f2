#!/usr/bin/env python3
"""Tiny byte-level BPE vocabulary and reference encodings for tests/text/test_tokenizer.cpp,
made with the HF `tokenizers` library (independent of our implementation).

Trains a ~600-token byte-level BPE on a small fixed corpus, then encodes a set of texts
with the pre-tokenizers of the GGUF files we read, configured as their tokenizer.json files:
GPT-2 (ByteLevel's own regex), SmolLM (Digits(individual_digits) then ByteLevel's regex),
and Split with the regexes of Llama 3, Qwen 2, Qwen 3.5, o200k (gpt-4o: gpt-oss), tekken
(Mistral Nemo) and Kimi K2
(Mistral Nemo), then ByteLevel without regex; Llama 3 and tekken with ignore_merges; and
DeepSeek V3's Sequence of three Splits (deepseek3) and DeepSeek LLM / V2's of six
(deepseek-llm), with texts of their own appended.

Besides the ids, each text's pre-tokens (the pieces the regex split gives, before BPE) are
written, so a split difference that the tiny vocabulary happens to hide still shows. The o200k
pieces of every Split are checked against a second regex engine (the `regex` module)
before they are written.

Output (tests/data/bpe_tiny.txt), one record a line, fields TAB-separated, text hex-encoded:
  T <hex token>            vocabulary in id order
  M <hex left> <hex right> merges in rank order
  G <pre> <hex text> <ids separated by spaces>
  S <pre> <hex text> <hex piece> <hex piece> ...
Usage: tools/golden/make_bpe_golden.py > tests/data/bpe_tiny.txt   (pip install tokenizers regex)
"""
import json

import regex
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "I'm sure they'll say it's fine, but we've seen what you'd do.",
    "def main():\n    for i in range(10):\n        print(i ** 2)\n",
    "Numbers: 1234567890, 3.14159, 2024-06-01; prices $12.50 and €7.",
    "Über café déjà vu — naïve façade. Ελληνικά и русский текст.",
    "日本語のテキスト、中文文本。 🙂🙃 emoji!!",
    "tabs\tand\nnewlines\r\n  spaces   everywhere\n\n\n",
    "DON'T SHOUT. HelloWorld, iPhone and HTTPServer; ÉCOLE école.",
]

PRE = {
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen35": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # tiktoken's o200k_base pat_str (tiktoken_ext/openai_public.py), as in gpt-oss's tokenizer.json
    "gpt4o": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
    # Mistral Nemo's tokenizer.json (llama.cpp keeps it as a comment beside its approximation)
    "tekken": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
# Kimi K2's tiktoken pat_str (tokenization_kimi.py): o200k's, with Han runs taken first and
# Han excluded from the letter classes ([...&&[^\p{Han}]]), and no '/' after punctuation.
NOT_HAN_UP = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]"
NOT_HAN_LOW = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]"
PRE["kimi-k2"] = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?""" + NOT_HAN_UP + "*" + NOT_HAN_LOW + r"""+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?""" + NOT_HAN_UP + "+" + NOT_HAN_LOW + r"""*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
IGNORE_MERGES = {"llama3", "tekken", "kimi-k2"}  # (tiktoken takes a whole piece found in the vocabulary)
# Texts the Kimi K2 pattern gets besides TEXTS and SEQ_TEXTS: Han beside kana, Latin and
# digits, Han code points that are not letters (radicals, U+3007, Hangzhou numerals, U+3005),
# Han before a contraction.
HAN_TEXTS = [
    "中文Text漢字ABC中def 々〇〡〢 ⺀⺁⼀⼁ x⺀y 中's 文'LL",
    "日本語のテキスト漢字カナ한자漢字 1234中5 .中 ,abc中",
    "\U00020000\U0002A700 \uF900\uFA6D 丂丄 㐀㐁 㿿",
]
# DeepSeek V3 / R1's tokenizer.json: a Sequence of three isolated Splits before ByteLevel (no
# regex): digits in runs of at most three, then CJK ideograph and kana runs, then the rest.
SEQ = {
    "deepseek3": [
        r"\p{N}{1,3}",
        r"[一-龥぀-ゟ゠-ヿ]+",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    ],
}
# DeepSeek LLM / V2's cased-letter class, with its true code points where copies of it are
# often NFC-normalized to lookalikes (the Kelvin and Ohm signs, U+1FBE, the Greek Extended range
# ends U+1F7D, U+1FD3, U+1FDB).
DEEPSEEK_CASED = ("A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅ"
                  "ὐ-ὗὙὛὝὟ-\u1f7dᾀ-ᾴᾶ-ᾼ\u1fbeῂ-ῄῆ-ῌῐ-\u1fd3ῖ-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212a-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳ"
                  "Ꙁ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃")
SEQ["deepseek-llm"] = [
    r"[\r\n]",
    r"\s?[" + DEEPSEEK_CASED + r"]+",
    r"\s?[!-/:-~！-／：-～‘-‟　-。]+",
    r"\s+$",
    r"[一-龥ࠀ-一가-퟿]+",
    r"\p{N}+",
]

# Texts for the Sequence pre-tokenizers only (appended, so every other record stays as it was):
# punctuation before ASCII letters and before others, format and control characters (no
# alternative takes them: the gaps between matches are pieces too), CJK beside Latin and
# digits, marks, symbols.
SEQ_TEXTS = [
    ".Hello 'élan ,x ;;Abc ${var} @user #tag",
    "a\u200db x\u00adyz \x01\x02ab \x7f",
    "日本語abc中文123456ひらがなカタカナ한국어",
    "Hello,world!!\n\n  end.\r\n\t\tx",
    " \u0301x e\u0301 \u0301\u0301 ++ -- ==>",
    "$100 and 1,234.56 €7 ¥8 ½ ²",
    "Ωhm \u2126 K \u212a ι\u1fbe ὼ\u1f7d ΐ\u1fd3 Ί\u1fdb ﬀ Ｆｕｌｌ！？ “quoted” 　。 x\u3001y",
    "ࠀ한국어 ⅫⅢ ٣٤ 12345 end   \n  \n\t",
]

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
    # letter case (o200k and tekken split where lower case ends and upper case starts)
    "HelloWorld iPhone HTTPServer getHTTPResponse ABCdef abcDEF A1b2C3",
    "DON'T I'M THEY'LL we'RE You'Ve SHE'D it's McDonald's O'Neil 'S 'Re",
    "ÉCOLE école Ærø ÀÉÎõü ǅungla ǈ ʰello ʰ ǅ",
    # marks: decomposed accents, Devanagari, Thai, a mark after punctuation or alone
    "e\u0301cole Cafe\u0301 नमस्ते दुनिया ภาษาไทย !\u0301 \u0301x \u0301",
    "中文Text日本語テキストABC한국어abc",
    "x/y//z/\n/\n\npath/to/file.txt\r\n\r\n",
    "1234567 12345678901 ٣٤٥٦ ①②③④ 3.14 1,000,000 v2.0.1",
    "🙂🙃🙂 emoji!!👍🏽👨‍👩‍👧 ok",
    "a  b   c\t\td \n \n e\n\n\n  f   ",
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
    smollm = Tokenizer(models.BPE(vocab=vocab_d, merges=merge_t))
    smollm.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    toks["smollm"] = smollm
    for name, rx in PRE.items():
        t = Tokenizer(models.BPE(vocab=vocab_d, merges=merge_t, ignore_merges=(name in IGNORE_MERGES)))
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        toks[name] = t
    for name, rxs in SEQ.items():
        t = Tokenizer(models.BPE(vocab=vocab_d, merges=merge_t))
        t.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(rx), behavior="isolated", invert=False) for rx in rxs] +
            [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        toks[name] = t
    unmap = {c: b for b, c in bytes_to_unicode().items()}
    for name, t in toks.items():
        t.decoder = decoders.ByteLevel()
        texts = TEXTS + (SEQ_TEXTS if name in SEQ else []) + (SEQ_TEXTS + HAN_TEXTS if name == "kimi-k2" else [])
        for text in texts:
            ids = t.encode(text, add_special_tokens=False).ids
            assert t.decode(ids) == text, (name, text)
            print(f"G\t{name}\t{text.encode().hex()}\t" + " ".join(map(str, ids)))
        for text in texts:
            pieces = [bytes(unmap[c] for c in p) for p, _ in t.pre_tokenizer.pre_tokenize_str(text)]
            assert b"".join(pieces) == text.encode(), (name, text)
            if name in PRE:  # a second regex engine agrees
                other = [m.encode() for m in regex.findall(PRE[name], text, flags=regex.V1)]
                assert other == pieces, (text, other, pieces)
            if name in SEQ:  # the same, split after split, gaps between matches kept as pieces
                other = [text]
                for rx in SEQ[name]:
                    nxt = []
                    for piece in other:
                        at = 0
                        for m in regex.finditer(rx, piece):
                            if m.start() > at:
                                nxt.append(piece[at:m.start()])
                            nxt.append(m.group())
                            at = m.end()
                        if at < len(piece):
                            nxt.append(piece[at:])
                    other = nxt
                assert [o.encode() for o in other] == pieces, (text, other, pieces)
            print(f"S\t{name}\t{text.encode().hex()}" + "".join("\t" + p.hex() for p in pieces))


def bytes_to_unicode():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


if __name__ == "__main__":
    main()
