#!/usr/bin/env python3
"""Generates the GGUF fuzz/regression corpus: a few valid small files and many broken ones.

Writes tests/fuzz/corpus/*.gguf and tests/data/gguf_corpus_expect.tsv, which maps each
file to a substring the reader's error must contain ("" for files that must parse).
Pure Python (struct only) so it runs anywhere; output is deterministic.
Usage: tools/golden/make_gguf_corpus.py [REPO_ROOT]
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
T_F32, T_F16, T_Q8_0, T_Q4_K = 0, 1, 8, 12
MAX64 = 0xFFFFFFFFFFFFFFFF

SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
              BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def val(t, v):
    return gstr(v) if t == STRING else struct.pack(SCALAR_FMT[t], v)


def kv(key, t, v):
    return gstr(key) + struct.pack("<I", t) + val(t, v)


def kv_array(key, elem, items, count=None):
    n = len(items) if count is None else count
    return gstr(key) + struct.pack("<IIQ", ARRAY, elem, n) + b"".join(val(elem, x) for x in items)


def tinfo(name, dims, ttype, offset):
    return (gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            + struct.pack("<IQ", ttype, offset))


def pad(b, align):
    return b + b"\0" * (-len(b) % align)


def gguf(kvs, tensors=(), version=3, align=32, magic=b"GGUF", n_tensors=None, n_kv=None, data=None):
    """tensors: (name, dims, type, payload bytes); offsets are laid out aligned.
    No padding follows the last tensor, so any truncation of a valid file is an error."""
    infos, blob = [], b""
    for name, dims, ttype, payload in tensors:
        blob = pad(blob, align)
        infos.append(tinfo(name, dims, ttype, len(blob)))
        blob += payload
    head = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(infos)
    if tensors:
        body = pad(body, align) + (blob if data is None else data)
    return body


def ramp(n):
    return bytes(i * 7 % 251 for i in range(n))


ALL_KVS = [
    kv("general.architecture", STRING, "test"),
    kv("general.alignment", U32, 32),
    kv("t.u8", U8, 200), kv("t.i8", I8, -100), kv("t.u16", U16, 60000), kv("t.i16", I16, -30000),
    kv("t.u32", U32, 4000000000), kv("t.i32", I32, -2000000000), kv("t.f32", F32, 1.5),
    kv("t.bool", BOOL, 1), kv("t.string", STRING, "h\u00e9llo"), kv("t.u64", U64, 1 << 63),
    kv("t.i64", I64, -(1 << 62)), kv("t.f64", F64, -2.25),
    kv_array("t.arr_u8", U8, [1, 2, 3]), kv_array("t.arr_i32", I32, [-1, 0, 7]),
    kv_array("t.arr_f32", F32, [0.5, -1.0]), kv_array("t.arr_bool", BOOL, [0, 1, 1]),
    kv_array("t.arr_str", STRING, ["a", "", "bc"]), kv_array("t.arr_u64", U64, [MAX64]),
    kv_array("t.arr_f64", F64, [3.0]), kv_array("t.arr_empty", I16, []),
]
ALL_TENSORS = [
    ("w.f32", [4, 2], T_F32, ramp(32)),
    ("w.f16", [8], T_F16, ramp(16)),
    ("w.q8_0", [32, 2], T_Q8_0, ramp(68)),
    ("w.q4_k", [256], T_Q4_K, ramp(144)),
]
KV_ARCH = [kv("general.architecture", STRING, "test")]
ONE_T = [("w", [8], T_F32, ramp(32))]


def one_tensor(name="w", dims=(8,), ttype=T_F32, offset=0, data_len=32, kvs=KV_ARCH, align=32):
    """A file with one hand-made tensor info (for infos the layout helper would not write)."""
    body = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kvs)) + b"".join(kvs) + tinfo(name, list(dims), ttype, offset)
    return pad(body, align) + ramp(data_len)


# What the reader says about each cut of ok_v3_all_types (one error per cut: the region the
# cut falls in and the bytes it left). "gguf:" alone would accept any error at all, so a
# reader that failed early on a well-formed prefix for the wrong reason would still pass.
TRUNCATION_ERRORS = {
    1: "gguf: file too small to be GGUF (1 bytes)",
    4: "gguf: truncated file: version needs 4 bytes at offset 4, only 0 left (file size 4)",
    6: "gguf: truncated file: version needs 4 bytes at offset 4, only 2 left (file size 6)",
    8: "gguf: truncated file: tensor count needs 8 bytes at offset 8, only 0 left (file size 8)",
    12: "gguf: truncated file: tensor count needs 8 bytes at offset 8, only 4 left (file size 12)",
    **{n: f"gguf: tensor count 4 at offset 8 exceeds file size {n} ({n - 16} bytes left, each entry needs at least 32)"
       for n in (20, 24, 30, 40, 60, 100)},
    **{n: f"gguf: metadata count 22 at offset 16 exceeds file size {n} ({n - 24} bytes left, each entry needs at least 13)"
       for n in (200, 300)},
    400: "gguf: truncated file: key of metadata entry 15 needs 8 bytes at offset 399, only 1 left (file size 400)",
    500: "gguf: string length 10 at offset 485 (key of metadata entry 17) exceeds file size 500 (7 bytes left)",
    600: "gguf: truncated file: value type of key 't.arr_u64' needs 4 bytes at offset 599, only 1 left (file size 600)",
    700: "gguf: truncated file: tensor name of tensor info 0 needs 8 bytes at offset 699, only 1 left (file size 700)",
}


def truncation_error(cut, size):
    if cut in TRUNCATION_ERRORS:
        return TRUNCATION_ERRORS[cut]
    # Cuts inside the tensor data (header whole): the first tensor that no longer fits.
    assert size == 1200, "ok_v3_all_types changed: recompute the truncation errors"
    if cut < 928:
        return f"gguf: tensor 'w.f32' extends past end of file (offset 896 + 0 + 32 bytes > file size {cut})"
    return f"gguf: tensor 'w.q4_k' extends past end of file (offset 896 + 160 + 144 bytes > file size {cut})"


def cases():
    good = {
        "ok_v3_all_types": gguf(ALL_KVS, ALL_TENSORS),
        "ok_v2_small": gguf(KV_ARCH + [kv_array("tokens", STRING, ["<s>", "</s>", "x"])], ONE_T, version=2),
        "ok_align64": gguf(KV_ARCH + [kv("general.alignment", U32, 64)],
                           [("a", [3], T_F32, ramp(12)), ("b", [2, 2], T_F16, ramp(8))], align=64),
        "ok_no_tensors": gguf(KV_ARCH + [kv_array("t.arr_str", STRING, ["x"] * 5)]),
        "ok_empty": gguf([]),
    }
    yield from ((k, v, "") for k, v in good.items())

    # Truncations of the full valid file at points inside every region.
    full = good["ok_v3_all_types"]
    for cut in sorted({1, 4, 6, 8, 12, 20, 24, 30, 40, 60, 100, 200, 300, 400, 500, 600, 700,
                       len(full) - 300, len(full) - 145, len(full) - 100, len(full) - 1}):
        if 0 < cut < len(full):
            yield f"bad_truncated_{cut:04d}", full[:cut], truncation_error(cut, len(full))

    yield "bad_empty_file", b"", "gguf: file too small to be GGUF (0 bytes)"
    yield "bad_magic", b"GGML" + full[4:], "bad magic 'GGML' (expected 'GGUF'): not a GGUF file"
    yield "bad_v1", gguf(KV_ARCH, version=1), "version 1 is not supported"
    yield "bad_version_99", gguf(KV_ARCH, version=99), "unsupported GGUF version 99"
    yield "bad_big_endian", gguf(KV_ARCH, version=0x03000000), "big-endian GGUF files are not supported"
    yield "bad_kv_count_huge", gguf(KV_ARCH, n_kv=1 << 60), "metadata count 1152921504606846976"
    yield "bad_kv_count_max", gguf(KV_ARCH, n_kv=MAX64), "metadata count 18446744073709551615 at offset 16 exceeds file size 68"
    yield "bad_tensor_count_huge", gguf(KV_ARCH, n_tensors=1 << 62), "tensor count 4611686018427387904 at offset 8 exceeds file size 68"
    yield "bad_kv_count_plus_one", gguf(KV_ARCH, n_kv=2), "truncated file: key of metadata entry 1 needs 8 bytes at offset 68, only 0 left"
    yield "bad_key_len_huge", b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, MAX64) + b"x" * 16, \
        "string length 18446744073709551615 at offset 24"
    yield "bad_string_len_huge", gguf([gstr("k") + struct.pack("<IQ", STRING, 1 << 40) + b"abc"]), \
        "string length 1099511627776"
    yield "bad_array_len_huge", gguf([kv_array("k", U32, [1, 2], count=1 << 61)]), "array length 2305843009213693952"
    yield "bad_array_str_len_huge", gguf([kv_array("k", STRING, ["a"], count=MAX64 // 8)]), "array length 2305843009213693951 at offset 41 of key 'k' exceeds file size 58"
    yield "bad_array_str_elem_huge", gguf([gstr("k") + struct.pack("<IIQQ", ARRAY, STRING, 1, MAX64) + b"xyz"]), \
        "string length 18446744073709551615"
    yield "bad_nested_array", gguf([gstr("k") + struct.pack("<IIQ", ARRAY, ARRAY, 1) + struct.pack("<IQ", U8, 0)]), \
        "nested arrays"
    yield "bad_value_type", gguf([gstr("k") + struct.pack("<I", 13) + b"\0" * 8]), "unknown value type 13 for key 'k'"
    yield "bad_array_elem_type", gguf([gstr("k") + struct.pack("<IIQ", ARRAY, 0xFFFF, 1) + b"\0" * 8]), \
        "unknown array element type 65535"
    yield "bad_bool", gguf([gstr("k") + struct.pack("<IB", BOOL, 2)]), "bool value 2"
    yield "bad_empty_key", gguf([kv("", U8, 1)]), "empty key"
    yield "bad_dup_key", gguf(KV_ARCH + [kv("x", U8, 1), kv("x", U32, 2)]), "duplicate key 'x'"
    yield "bad_align_zero", gguf([kv("general.alignment", U32, 0)], ONE_T), "general.alignment 0 is not a nonzero power of two"
    yield "bad_align_3", gguf([kv("general.alignment", U32, 3)]), "general.alignment 3 is not a nonzero power of two"
    yield "bad_align_type", gguf([kv("general.alignment", U64, 32)]), "general.alignment must be u32, found u64"
    yield "bad_dup_tensor", gguf(KV_ARCH, [("w", [8], T_F32, ramp(32)), ("w", [8], T_F32, ramp(32))]), \
        "duplicate tensor name 'w'"
    yield "bad_tensor_past_eof", gguf(KV_ARCH, ONE_T, data=ramp(31)), "tensor 'w' extends past end of file"
    yield "bad_tensor_offset_huge", one_tensor(offset=1 << 63), "tensor 'w' extends past end of file"
    yield "bad_tensor_offset_unaligned", one_tensor(offset=4, data_len=64), "not a multiple of the alignment 32"
    yield "bad_tensor_size_past_eof", one_tensor(dims=(1 << 40,)), "tensor 'w' extends past end of file (offset 128 + 0 + 4398046511104 bytes"
    yield "bad_dims_overflow", one_tensor(dims=(1 << 32, 1 << 32, 1 << 32)), "tensor 'w' has dimensions whose product overflows"
    yield "bad_bytes_overflow", one_tensor(dims=(1 << 62,)), "tensor 'w' has dimensions whose product overflows"
    yield "bad_dim_zero", one_tensor(dims=(8, 0)), "invalid dimension 1 = 0"
    yield "bad_dim_negative", one_tensor(dims=(MAX64,)), "invalid dimension 0 = -1"
    yield "bad_n_dims_5", one_tensor(dims=(1, 1, 1, 1, 8)), "has 5 dimensions"
    yield "bad_n_dims_0", one_tensor(dims=()), "has 0 dimensions"
    yield "bad_n_dims_huge", b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + gstr("w") + struct.pack("<I", 0xFFFFFFFF) + \
        b"\0" * 40, "has 4294967295 dimensions"
    yield "bad_tensor_type", one_tensor(ttype=4), "tensor 'w' has unknown type id 4"
    yield "bad_tensor_type_huge", one_tensor(ttype=0xFFFFFFFF), "unknown type id 4294967295"
    yield "bad_block_multiple", one_tensor(dims=(33,), ttype=T_Q8_0, data_len=64), "not a multiple of the block size 32"
    yield "bad_empty_tensor_name", one_tensor(name=""), "empty name"
    yield "bad_data_start_past_eof", gguf(KV_ARCH, ONE_T)[:-32 - 1], \
        "gguf: data section would start at offset 128, past the end of the file (size 127)"
    body = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + tinfo("w", [8], T_F32, 0)
    yield "bad_no_data_section", body, "data section would start at offset 64"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    corpus = os.path.join(root, "tests", "fuzz", "corpus")
    data = os.path.join(root, "tests", "data")
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    lines = []
    for name, blob, expect in cases():
        assert len(blob) < 4096, name
        fname = name + ".gguf"
        with open(os.path.join(corpus, fname), "wb") as f:
            f.write(blob)
        lines.append(f"{fname}\t{expect}\n")
    with open(os.path.join(data, "gguf_corpus_expect.tsv"), "w") as f:
        f.write("# file\tsubstring the reader's error must contain (empty: the file must parse)\n")
        f.writelines(lines)
    print(f"{len(lines)} files written to {corpus}")


if __name__ == "__main__":
    main()
