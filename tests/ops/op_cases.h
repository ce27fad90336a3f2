// The op-test table: each case builds one small graph from seeded random inputs. The same
// table runs on every backend against the reference backend (tests/ops/test_ops.cpp); bench
// tools can reuse it.
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/ir/backend.h"

namespace ls::test {

// Persistent tensors (weights, caches, set_rows destinations) a case allocates on a backend.
struct Keep {
    std::deque<Tensor> tensors;
    std::vector<std::unique_ptr<Buffer>> buffers;
    Tensor* persistent(Backend& be, DType type, std::initializer_list<int64_t> ne, const std::vector<uint8_t>& bytes);
};

// A case's name is generated from its parameters (as ggml's test-backend-ops prints them);
// `kind` names the table it came from, so tests that single out one op need not parse names.
struct OpCase {
    std::string name;
    std::string kind;   // "elementwise", "rope", "mul_mat", "get_rows", "set_rows", "attention", ...
    bool view = false;  // an input is a strided view (not every backend takes one)
    // Builds the graph on `be` from random inputs drawn from `rng` (seeded identically for
    // every backend); returns the tensors to compare after compute.
    // Every output must equal the reference's byte for byte on every backend (README: "bit
    // for bit"); there is no tolerance to set.
    std::function<std::vector<Tensor*>(Graph&, Backend&, Keep&, std::mt19937&)> build;
};

std::vector<OpCase> op_cases();

// Random data helpers.
std::vector<float> randn(std::mt19937& rng, size_t n, float scale = 1.0f);
std::vector<uint8_t> quantized_random(std::mt19937& rng, DType t, int64_t k, int64_t rows, float scale = 1.0f);
template <class T> std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
    return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

}  // namespace ls::test
