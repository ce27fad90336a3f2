#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "core/gguf/gguf.h"
#include "tests/support/test_util.h"

using Catch::Contains;
using ls::DType;
using ls::GgufError;
using ls::GgufFile;
using ls::GgufType;
using ls::GgufWriter;

namespace {

std::unique_ptr<GgufFile> parse(const std::vector<uint8_t>& b) { return GgufFile::from_memory(b.data(), b.size()); }

std::vector<uint8_t> pattern(size_t n, int seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 31 + seed * 17) & 0xff);
    return v;
}

// Hand-assembles GGUF images, including the malformed ones the writer refuses to make.
struct Bytes {
    std::vector<uint8_t> b;
    template <class T>
    Bytes& put(T v) {
        uint8_t x[sizeof(T)];
        std::memcpy(x, &v, sizeof v);
        b.insert(b.end(), x, x + sizeof v);
        return *this;
    }
    Bytes& str(const std::string& s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        put(version).put(n_tensors).put(n_kv);
        return *this;
    }
    Bytes& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put(v); }
    Bytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
        str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
        for (auto n : ne) put(n);
        return put(type).put(offset);
    }
    Bytes& align(size_t a = 32) {
        b.resize((b.size() + a - 1) / a * a, 0);
        return *this;
    }
    Bytes& zeros(size_t n) {
        b.resize(b.size() + n, 0);
        return *this;
    }
};

GgufWriter all_types_writer() {
    GgufWriter w;
    w.set_string("general.architecture", "test");
    w.set_u8("v.u8", 250);
    w.set_i8("v.i8", -120);
    w.set_u16("v.u16", 65000);
    w.set_i16("v.i16", -32000);
    w.set_u32("v.u32", 4000000000u);
    w.set_i32("v.i32", -2000000000);
    w.set_f32("v.f32", 0.25f);
    w.set_bool("v.bool", true);
    w.set_string("v.string", std::string("with\0nul", 8));
    w.set_u64("v.u64", std::numeric_limits<uint64_t>::max());
    w.set_i64("v.i64", std::numeric_limits<int64_t>::min());
    w.set_f64("v.f64", -1e300);
    w.set_string_array("a.string", {"<s>", "", "\xe2\x96\x81hello"});
    w.set_f32_array("a.f32", {1.5f, -2.0f});
    w.set_i32_array("a.i32", {-1, 0, 1 << 30});
    w.set_array_raw("a.u8", GgufType::U8, 3, {1, 2, 255});
    w.set_array_raw("a.bool", GgufType::BOOL, 2, {0, 1});
    w.set_array_raw("a.i16", GgufType::I16, 2, {0xff, 0xff, 0x02, 0x00});  // -1, 2
    std::vector<uint8_t> u64s(16, 0xff);                                   // UINT64_MAX twice
    w.set_array_raw("a.u64", GgufType::U64, 2, u64s);
    std::vector<uint8_t> f64(8);
    const double d = 3.5;
    std::memcpy(f64.data(), &d, 8);
    w.set_array_raw("a.f64", GgufType::F64, 1, f64);
    w.set_array_raw("a.empty", GgufType::U32, 0, {});
    return w;
}

std::vector<uint8_t> read_file(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("gguf: every metadata value type round-trips through writer and reader", "[gguf]") {
    const auto bytes = all_types_writer().to_bytes();
    const auto f = parse(bytes);
    CHECK(f->version() == 3);
    CHECK(f->alignment() == 32);
    CHECK(f->metadata().size() == 22);
    CHECK(f->get_string("general.architecture") == "test");
    CHECK(f->get_int("v.u8") == 250);
    CHECK(f->get_int("v.i8") == -120);
    CHECK(f->get_int("v.u16") == 65000);
    CHECK(f->get_int("v.i16") == -32000);
    CHECK(f->get_int("v.u32") == 4000000000LL);
    CHECK(f->get_int("v.i32") == -2000000000);
    CHECK(f->get_float("v.f32") == 0.25);
    CHECK(f->get_bool("v.bool"));
    CHECK(f->get_string("v.string") == std::string("with\0nul", 8));
    CHECK(std::get<uint64_t>(f->find("v.u64")->scalar) == std::numeric_limits<uint64_t>::max());
    CHECK(f->get_int("v.i64") == std::numeric_limits<int64_t>::min());
    CHECK(f->get_float("v.f64") == -1e300);
    CHECK(f->find("v.u16")->type == GgufType::U16);

    CHECK(f->get_string_array("a.string") == std::vector<std::string>{"<s>", "", "\xe2\x96\x81hello"});
    CHECK(f->get_float_array("a.f32") == std::vector<double>{1.5, -2.0});
    CHECK(f->get_int_array("a.i32") == std::vector<int64_t>{-1, 0, 1 << 30});
    CHECK(f->get_float_array("a.i32") == std::vector<double>{-1, 0, 1 << 30});
    CHECK(f->get_int_array("a.u8") == std::vector<int64_t>{1, 2, 255});
    CHECK(f->find("a.bool")->ints == std::vector<int64_t>{0, 1});
    CHECK(f->get_int_array("a.i16") == std::vector<int64_t>{-1, 2});
    CHECK(f->find("a.u64")->uints == std::vector<uint64_t>(2, std::numeric_limits<uint64_t>::max()));
    CHECK(f->get_float_array("a.f64") == std::vector<double>{3.5});
    CHECK(f->find("a.empty")->array_size() == 0);
    CHECK(f->find("a.string")->array_size() == 3);
    CHECK(f->find("a.f32")->elem_type == GgufType::F32);
    CHECK(f->tensors().empty());
}

TEST_CASE("gguf: typed getters check types, ranges and defaults", "[gguf]") {
    const auto bytes = all_types_writer().to_bytes();
    const auto f = parse(bytes);
    CHECK(f->get_float("v.i32") == -2000000000.0);
    CHECK(f->get_int("missing", 7) == 7);
    CHECK(f->get_float("missing", 0.5) == 0.5);
    CHECK(f->get_string("missing", "d") == "d");
    CHECK(f->get_bool("missing", true));
    CHECK(f->get_int("v.u8", 7) == 250);
    CHECK(f->find("missing") == nullptr);
    CHECK(f->find_tensor("missing") == nullptr);

    REQUIRE_THROWS_WITH(f->get_int("missing"), Contains("missing key 'missing'"));
    REQUIRE_THROWS_WITH(f->get_int("v.u64"), Contains("'v.u64'") && Contains("does not fit in int64"));
    REQUIRE_THROWS_WITH(f->get_int("v.f32"), Contains("key 'v.f32' is f32, expected an integer"));
    REQUIRE_THROWS_WITH(f->get_int("v.string", 1), Contains("key 'v.string' is string"));
    REQUIRE_THROWS_WITH(f->get_float("v.bool"), Contains("key 'v.bool' is bool"));
    REQUIRE_THROWS_WITH(f->get_string("v.u32"), Contains("key 'v.u32' is u32, expected string"));
    REQUIRE_THROWS_WITH(f->get_bool("v.u8"), Contains("key 'v.u8' is u8, expected bool"));
    REQUIRE_THROWS_WITH(f->get_string_array("a.f32"), Contains("key 'a.f32' is array[f32], expected array[string]"));
    REQUIRE_THROWS_WITH(f->get_int_array("a.f32"), Contains("key 'a.f32' is array[f32]"));
    REQUIRE_THROWS_WITH(f->get_int_array("a.u64"), Contains("does not fit in int64"));
    REQUIRE_THROWS_WITH(f->get_float_array("a.string"), Contains("key 'a.string' is array[string]"));
    REQUIRE_THROWS_WITH(f->get_float_array("v.f32"), Contains("key 'v.f32' is f32"));
    REQUIRE_THROWS_AS(f->get_int("missing"), GgufError);
}

TEST_CASE("gguf: tensors of several types round-trip with aligned data", "[gguf]") {
    struct Spec { std::string name; DType type; std::vector<int64_t> ne; };
    const std::vector<Spec> specs = {
        {"t.f32", DType::F32, {4, 3}},
        {"t.f16", DType::F16, {8, 2}},
        {"t.q8_0", DType::Q8_0, {64, 3}},
        {"t.q4_k", DType::Q4_K, {256, 2, 2}},
        {"t.4d", DType::F32, {1, 2, 3, 5}},
    };
    GgufWriter w;
    w.set_string("general.architecture", "test");
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t i = 0; i < specs.size(); ++i) {
        size_t n = ls::row_bytes(specs[i].type, specs[i].ne[0]);
        for (size_t d = 1; d < specs[i].ne.size(); ++d) n *= static_cast<size_t>(specs[i].ne[d]);
        payloads.push_back(pattern(n, static_cast<int>(i)));
        w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, payloads.back());
    }
    const auto bytes = w.to_bytes();
    const auto f = parse(bytes);
    REQUIRE(f->tensors().size() == specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
        INFO(specs[i].name);
        const auto* t = f->find_tensor(specs[i].name);
        REQUIRE(t);
        CHECK(t == &f->tensors()[i]);
        CHECK(t->type == specs[i].type);
        CHECK(t->n_dims == static_cast<int>(specs[i].ne.size()));
        for (int d = 0; d < 4; ++d)
            CHECK(t->ne[d] == (d < t->n_dims ? specs[i].ne[static_cast<size_t>(d)] : 1));
        CHECK(t->offset % 32 == 0);
        CHECK(static_cast<size_t>(t->data - f->base()) % 32 == 0);
        REQUIRE(t->nbytes == payloads[i].size());
        CHECK(std::memcmp(t->data, payloads[i].data(), t->nbytes) == 0);
    }
    CHECK(f->find_tensor("t.q4_k")->nbytes == 4 * 144);
    CHECK(f->find_tensor("t.q8_0")->nbytes == 3 * 2 * 34);

    SECTION("every truncation before the end of the last tensor is rejected") {
        const auto& last = f->tensors().back();
        const size_t end = static_cast<size_t>(last.data - f->base()) + last.nbytes;
        for (size_t cut = 0; cut < end; ++cut) {
            std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
            INFO("cut at " << cut);
            REQUIRE_THROWS_AS(parse(part), GgufError);
        }
    }
}

TEST_CASE("gguf: writer honours general.alignment and files open via mmap", "[gguf]") {
    GgufWriter w;
    w.set_u32("general.alignment", 64);
    w.add_tensor("a", DType::F32, {3}, pattern(12, 1));
    w.add_tensor("b", DType::F16, {5}, pattern(10, 2));
    const std::string path = ls::test::temp_path("gguf_test.gguf");
    w.write(path);
    const auto f = GgufFile::open(path);
    std::filesystem::remove(path);
    CHECK(f->alignment() == 64);
    CHECK(f->find_tensor("b")->offset == 64);
    CHECK(std::memcmp(f->find_tensor("b")->data, pattern(10, 2).data(), 10) == 0);
    REQUIRE_THROWS_WITH(w.set_u32("general.alignment", 48), Contains("not a nonzero power of two"));
    REQUIRE_THROWS_WITH(GgufFile::open(path), Contains("cannot open") && Contains(path));
}

TEST_CASE("gguf: release drops the resident pages of a copied range and keeps the bytes readable", "[gguf]") {
    GgufWriter w;
    const std::vector<uint8_t> payload = pattern(size_t(1) << 20, 3);
    w.add_tensor("big", DType::F32, {int64_t(payload.size() / 4)}, payload);
    const std::string path = ls::test::temp_path("gguf_release.gguf");
    w.write(path);
    const auto f = GgufFile::open(path);
    std::filesystem::remove(path);
    const auto* t = f->find_tensor("big");
    REQUIRE(t);
    const long long page = sysconf(_SC_PAGESIZE);
    auto touch_all = [&] {
        unsigned sum = 0;
        for (size_t i = 0; i < f->size(); ++i) sum += f->base()[i];
        return sum;
    };
    const unsigned sum = touch_all();
    const long long full = ls::test::mapping_rss(f->base());
    REQUIRE(full >= 0);  // -1: smaps unreadable
    CHECK(full >= (long long)f->size() - page);

    // Everything but the first byte: the first page holds a byte outside the range and stays.
    f->release(1, f->size() - 1);
    CHECK(ls::test::mapping_rss(f->base()) == page);
    // The bytes read back from the file, unchanged.
    CHECK(std::memcmp(t->data, payload.data(), payload.size()) == 0);
    CHECK(touch_all() == sum);
    CHECK(ls::test::mapping_rss(f->base()) == full);
    f->release(0, f->size());
    CHECK(ls::test::mapping_rss(f->base()) == 0);
    // A range inside one page releases nothing.
    CHECK(touch_all() == sum);
    f->release(size_t(page) + 1, size_t(page) - 2);
    CHECK(ls::test::mapping_rss(f->base()) == full);

    REQUIRE_THROWS_AS(f->release(f->size(), 1), std::out_of_range);
    REQUIRE_THROWS_AS(f->release(1, f->size()), std::out_of_range);
    // An in-memory image is the caller's: release leaves it alone.
    const auto bytes = w.to_bytes();
    const auto m = parse(bytes);
    m->release(0, m->size());
    CHECK(std::memcmp(m->find_tensor("big")->data, payload.data(), payload.size()) == 0);
}

TEST_CASE("gguf: writer rejects inconsistent tensors", "[gguf]") {
    GgufWriter w;
    REQUIRE_THROWS_WITH(w.add_tensor("x", DType::F32, {4}, pattern(15, 0)), Contains("15 bytes") && Contains("expected 16"));
    REQUIRE_THROWS_WITH(w.add_tensor("x", DType::Q8_0, {33}, pattern(34, 0)), Contains("block size 32"));
    REQUIRE_THROWS_WITH(w.add_tensor("x", DType::F32, {1, 1, 1, 1, 1}, pattern(4, 0)), Contains("5 dimensions"));
    REQUIRE_THROWS_WITH(w.add_tensor("x", DType::F32, {4, 0}, {}), Contains("not positive"));
    w.add_tensor("x", DType::F32, {1}, pattern(4, 0));
    REQUIRE_THROWS_WITH(w.add_tensor("x", DType::F32, {1}, pattern(4, 0)), Contains("duplicate tensor name 'x'"));
}

TEST_CASE("gguf: malformed headers and metadata are rejected with precise messages", "[gguf]") {
    const auto err = [](const Bytes& b) { return parse(b.b); };
    REQUIRE_THROWS_WITH(parse({}), Contains("too small"));
    Bytes magic;
    magic.b = {'G', 'G', 'M', 'L', 3, 0, 0, 0};
    REQUIRE_THROWS_WITH(err(magic), Contains("bad magic 'GGML'"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 0, 1)), Contains("version 1 is not supported"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 0, 7)), Contains("unsupported GGUF version 7"));
    CHECK(err(Bytes().header(0, 0, 2))->version() == 2);
    REQUIRE_THROWS_WITH(err(Bytes().header(0, uint64_t(1) << 60).zeros(64)),
                        Contains("metadata count 1152921504606846976") && Contains("exceeds file size"));
    REQUIRE_THROWS_WITH(err(Bytes().header(uint64_t(1) << 62, 0).zeros(64)), Contains("tensor count"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).put(~uint64_t(0)).zeros(16)),
                        Contains("string length 18446744073709551615 at offset 24 (key") && Contains("exceeds file size 48"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(1000).zeros(8)),
                        Contains("string length 1000") && Contains("key 'k'"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put(uint64_t(1) << 61).zeros(8)),
                        Contains("array length 2305843009213693952") && Contains("key 'k'"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1).put<uint32_t>(0).put<uint64_t>(0)),
                        Contains("nested arrays"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).str("k").put<uint32_t>(13).zeros(8)), Contains("unknown value type 13 for key 'k'"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(5)), Contains("bool value 5"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 2).kv_u32("k", 1).kv_u32("k", 2)), Contains("duplicate key 'k'"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 2).kv_u32("a_long_key_name", 1)), Contains("truncated file") && Contains("metadata entry 1"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).kv_u32("general.alignment", 0)), Contains("general.alignment 0 is not a nonzero power of two"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).kv_u32("general.alignment", 24)), Contains("general.alignment 24"));
    REQUIRE_THROWS_WITH(err(Bytes().header(0, 1).str("general.alignment").put<uint32_t>(5).put<int32_t>(32)),
                        Contains("general.alignment must be u32, found i32"));
}

TEST_CASE("gguf: malformed tensor infos are rejected with precise messages", "[gguf]") {
    const auto one = [](std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data) {
        Bytes b;
        b.header(1, 0).tensor("blk.0.attn_q.weight", std::move(ne), type, offset).align().zeros(data);
        return GgufFile::from_memory(b.b.data(), b.b.size());
    };
    CHECK(one({8}, 0, 0, 32)->tensors()[0].nbytes == 32);
    REQUIRE_THROWS_WITH(one({8}, 0, 0, 31), Contains("tensor 'blk.0.attn_q.weight' extends past end of file") &&
                                                Contains("+ 32 bytes > file size 127"));
    REQUIRE_THROWS_WITH(one({8}, 0, uint64_t(1) << 63, 32), Contains("extends past end of file"));
    REQUIRE_THROWS_WITH(one({8}, 0, 8, 64), Contains("offset 8 is not a multiple of the alignment 32"));
    REQUIRE_THROWS_WITH(one({1ull << 32, 1ull << 32, 1ull << 32}, 0, 0, 32), Contains("product overflows"));
    REQUIRE_THROWS_WITH(one({1ull << 62}, 0, 0, 32), Contains("product overflows"));
    REQUIRE_THROWS_WITH(one({8, 0}, 0, 0, 32), Contains("invalid dimension 1 = 0"));
    REQUIRE_THROWS_WITH(one({~uint64_t(0)}, 0, 0, 32), Contains("invalid dimension 0 = -1"));
    REQUIRE_THROWS_WITH(one({1, 1, 1, 1, 8}, 0, 0, 32), Contains("'blk.0.attn_q.weight' has 5 dimensions"));
    REQUIRE_THROWS_WITH(one({8}, 4, 0, 32), Contains("tensor 'blk.0.attn_q.weight' has unknown type id 4"));
    // A type llama.cpp writes but lockstep does not run is named, with what lockstep runs.
    REQUIRE_THROWS_WITH(one({64}, 40, 0, 64), Contains("tensor 'blk.0.attn_q.weight' has type nvfp4 (GGUF type id 40), "
                                                       "which lockstep cannot run yet; it runs f32, f16, q4_0") &&
                                                  Contains("q6_k") && Contains("iq2_xxs") && Contains("mxfp4"));
    REQUIRE_THROWS_WITH(one({128}, 41, 0, 64), Contains("has type q1_0 (GGUF type id 41)"));
    // The types added by issue 19 load, with their block sizes.
    CHECK(one({32}, 20, 0, 32)->tensors()[0].nbytes == 18);   // iq4_nl
    CHECK(one({32}, 39, 0, 32)->tensors()[0].nbytes == 17);   // mxfp4
    CHECK(one({256}, 23, 0, 160)->tensors()[0].nbytes == 136);  // iq4_xs
    CHECK(one({256}, 34, 0, 64)->tensors()[0].nbytes == 54);  // tq1_0
    CHECK(one({256}, 35, 0, 96)->tensors()[0].nbytes == 66);  // tq2_0
    CHECK(one({256}, 16, 0, 96)->tensors()[0].nbytes == 66);  // iq2_xxs
    CHECK(one({256}, 29, 0, 64)->tensors()[0].nbytes == 56);  // iq1_m
    REQUIRE_THROWS_WITH(one({33}, 8, 0, 64), Contains("q8_0 has ne[0] = 33, not a multiple of the block size 32"));
    REQUIRE_THROWS_WITH(one({1ull << 40}, 0, 0, 32), Contains("extends past end of file"));

    Bytes dup;
    dup.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).align().zeros(64);
    REQUIRE_THROWS_WITH(parse(dup.b), Contains("duplicate tensor name 'w'"));
    Bytes nodata;
    nodata.header(1, 0).tensor("w", {8}, 0, 0);
    REQUIRE_THROWS_WITH(parse(nodata.b), Contains("data section would start at offset 64"));
}

TEST_CASE("gguf: the fuzz corpus parses or fails as recorded", "[gguf]") {
    const std::string corpus = ls::test::source_dir() + "/tests/fuzz/corpus/";
    std::ifstream manifest(ls::test::test_data("gguf_corpus_expect.tsv"));
    REQUIRE(manifest);
    std::string line;
    int good = 0, bad = 0;
    while (std::getline(manifest, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        const std::string file = line.substr(0, tab), expect = line.substr(tab + 1);
        INFO(file);
        const auto bytes = read_file(corpus + file);
        if (expect.empty()) {
            REQUIRE_NOTHROW(parse(bytes));
            ++good;
        } else {
            REQUIRE_THROWS_WITH(parse(bytes), Contains(expect));
            ++bad;
        }
    }
    CHECK(good >= 4);
    CHECK(bad >= 40);
    // The valid v3 sample holds every value type and four tensor types.
    const auto all = read_file(corpus + "ok_v3_all_types.gguf");
    const auto f = parse(all);
    CHECK(f->get_string("t.string") == "h\xc3\xa9llo");
    CHECK(f->get_string_array("t.arr_str") == std::vector<std::string>{"a", "", "bc"});
    CHECK(f->find_tensor("w.q4_k")->type == DType::Q4_K);
    CHECK(parse(read_file(corpus + "ok_v2_small.gguf"))->version() == 2);
}

TEST_CASE("gguf: the default model's metadata and tensors", "[gguf][model]") {
    const auto f = GgufFile::open(ls::test::default_model_path());
    CHECK(f->get_string("general.architecture") == "gemma3");
    CHECK(f->tensors().size() == 236);
    const auto* emb = f->find_tensor("token_embd.weight");
    REQUIRE(emb);
    CHECK(emb->type == DType::Q8_0);
    CHECK(emb->n_dims == 2);
    CHECK(emb->ne[0] == 640);
    CHECK(emb->ne[1] == 262144);
    CHECK(emb->nbytes == size_t(640) / 32 * 34 * 262144);
    CHECK(f->get_string_array("tokenizer.ggml.tokens").size() == 262144);
    CHECK(f->get_int("gemma3.attention.sliding_window") == 512);
    for (const auto& t : f->tensors()) {
        INFO(t.name);
        CHECK(t.data + t.nbytes <= f->base() + f->size());
    }
}
