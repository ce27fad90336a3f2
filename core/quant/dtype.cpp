#include "core/quant/dtype.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace ls {
namespace {
// Block layouts are those of GGUF; sizes in bytes per block.
struct Entry { uint32_t id; DTypeTraits t; };
constexpr Entry kTable[] = {
    {0,  {"f32", 1, 4, false}},
    {1,  {"f16", 1, 2, false}},
    {2,  {"q4_0", 32, 2 + 16, true}},
    {3,  {"q4_1", 32, 2 + 2 + 16, true}},
    {6,  {"q5_0", 32, 2 + 4 + 16, true}},
    {7,  {"q5_1", 32, 2 + 2 + 4 + 16, true}},
    {8,  {"q8_0", 32, 2 + 32, true}},
    {9,  {"q8_1", 32, 4 + 32, true}},
    {10, {"q2_k", 256, 16 + 64 + 2 + 2, true}},
    {11, {"q3_k", 256, 32 + 64 + 12 + 2, true}},
    {12, {"q4_k", 256, 2 + 2 + 12 + 128, true}},
    {13, {"q5_k", 256, 2 + 2 + 12 + 32 + 128, true}},
    {14, {"q6_k", 256, 128 + 64 + 16 + 2, true}},
    {15, {"q8_k", 256, 4 + 256 + 32, true}},
    {16, {"iq2_xxs", 256, 2 + 64, true}},
    {17, {"iq2_xs", 256, 2 + 64 + 8, true}},
    {18, {"iq3_xxs", 256, 2 + 96, true}},
    {19, {"iq1_s", 256, 2 + 32 + 16, true}},
    {20, {"iq4_nl", 32, 2 + 16, true}},
    {21, {"iq3_s", 256, 2 + 64 + 8 + 32 + 4, true}},
    {22, {"iq2_s", 256, 2 + 64 + 8 + 8, true}},
    {23, {"iq4_xs", 256, 2 + 2 + 4 + 128, true}},
    {24, {"i8", 1, 1, false}},
    {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},
    {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},
    {29, {"iq1_m", 256, 32 + 16 + 8, true}},
    {30, {"bf16", 1, 2, false}},
    {34, {"tq1_0", 256, 48 + 4 + 2, true}},
    {35, {"tq2_0", 256, 64 + 2, true}},
    {39, {"mxfp4", 32, 1 + 16, true}},
};
// ggml's ids of the types lockstep does not run yet, refused by name (ids 4, 5, 31-33 and
// 36-38 were retired by ggml and are unknown).
struct NotRun { uint32_t id; const char* name; };
constexpr NotRun kNotRun[] = {{40, "nvfp4"}, {41, "q1_0"}};
}  // namespace

const char* gguf_type_name_not_run(uint32_t id) {
    for (const auto& e : kNotRun)
        if (e.id == id) return e.name;
    return nullptr;
}

std::string dtype_names() {
    std::string all;
    for (const auto& e : kTable) all += std::string(all.empty() ? "" : ", ") + e.t.name;
    return all;
}

const DTypeTraits* dtype_traits_or_null(uint32_t id) {
    for (const auto& e : kTable)
        if (e.id == id) return &e.t;
    return nullptr;
}

const DTypeTraits& traits(DType t) {
    const DTypeTraits* p = dtype_traits_or_null(static_cast<uint32_t>(t));
    if (!p) throw std::logic_error("unknown dtype id " + std::to_string(static_cast<uint32_t>(t)));
    return *p;
}

size_t row_bytes(DType t, int64_t n) {
    const DTypeTraits& tr = traits(t);
    if (n < 0 || n % tr.block != 0)
        throw std::runtime_error(std::string("row of ") + std::to_string(n) + " elements is not a multiple of the " +
                                 tr.name + " block size " + std::to_string(tr.block));
    return static_cast<size_t>(n / tr.block) * tr.block_bytes;
}

DType dtype_from_name(const std::string& s) {
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string all;
    for (const auto& e : kTable) {
        if (l == e.t.name) return static_cast<DType>(e.id);
        all += std::string(all.empty() ? "" : ", ") + e.t.name;
    }
    throw std::runtime_error("unknown type '" + s + "' (known: " + all + ")");
}

}  // namespace ls
