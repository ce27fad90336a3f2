// libFuzzer target for the GGUF reader. A GgufError is the expected outcome for a bad
// file; any other exception, crash or sanitizer report is a bug in the reader.
#include <cstddef>
#include <cstdint>

#include "core/gguf/gguf.h"

namespace {

// Sums everything the reader produced so the sanitizers see every byte it points at.
uint64_t touch(const ls::GgufFile& f) {
    uint64_t sum = f.version() + f.alignment();
    for (const auto& [key, v] : f.metadata()) {
        sum += key.size() + static_cast<uint32_t>(v.type) + v.array_size();
        if (const auto* s = std::get_if<std::string>(&v.scalar))
            for (unsigned char c : *s) sum += c;
        for (const auto& s : v.strings)
            for (unsigned char c : s) sum += c;
        for (int64_t x : v.ints) sum += static_cast<uint64_t>(x);
        for (uint64_t x : v.uints) sum += x;
        for (double x : v.floats) sum += x == x ? 1 : 0;
        if (f.find(key) != &v) __builtin_trap();  // the index must agree with the list
    }
    for (const auto& t : f.tensors()) {
        if (t.data < f.base() || t.nbytes > f.size() || t.data + t.nbytes > f.base() + f.size()) __builtin_trap();
        for (size_t i = 0; i < t.nbytes; ++i) sum += t.data[i];
        if (f.find_tensor(t.name) != &t) __builtin_trap();
    }
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto f = ls::GgufFile::from_memory(data, size);
        volatile uint64_t sink = touch(*f);
        (void)sink;
    } catch (const ls::GgufError&) {
    }
    return 0;
}
