// The vision oracles' data files (tools/oracle/qwen35v_tiny.py, gemma4v_tiny.py): little-endian
// int32 headers and float32 rows, read whole.
#pragma once
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace ls::test {

// The seven test images both oracles ran their processors on (tests/data/vision/).
inline const std::vector<std::string> kVisionImages = {"rgb64.png", "rgb100x37.png", "gray23x31.png", "rgba50.png",
                                                       "photo120x90.jpg", "pal7x5.png", "paltrns9x6.png"};

inline std::vector<char> slurp(const std::string& name) {
    std::ifstream f(test_data(name), std::ios::binary);
    REQUIRE(f.good());
    return {std::istreambuf_iterator<char>(f), {}};
}

struct Reader {
    std::vector<char> b;
    size_t at = 0;
    int32_t i32() {
        REQUIRE(at + 4 <= b.size());
        int32_t v;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return v;
    }
    std::vector<float> f32(size_t n) {
        REQUIRE(at + 4 * n <= b.size());
        std::vector<float> v(n);
        std::memcpy(v.data(), b.data() + at, 4 * n);
        at += 4 * n;
        return v;
    }
};

// <name>.embd: n_images, then per image n_tokens, n_embd, token-grid rows, columns, the rows.
struct ImageRows {
    int32_t n_tokens = 0, n_embd = 0, gh = 0, gw = 0;
    std::vector<float> rows;
};
inline std::vector<ImageRows> read_image_rows(const std::string& file) {
    Reader r{slurp(file)};
    std::vector<ImageRows> out(size_t(r.i32()));
    for (ImageRows& e : out) {
        e.n_tokens = r.i32(), e.n_embd = r.i32(), e.gh = r.i32(), e.gw = r.i32();
        e.rows = r.f32(size_t(e.n_tokens) * size_t(e.n_embd));
    }
    return out;
}

}  // namespace ls::test
