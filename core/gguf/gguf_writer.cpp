// GGUF v3 writer (little-endian). Used by tests and the test-model tool, so it checks
// its inputs as strictly as the reader does: whatever it writes, the reader accepts.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/gguf/gguf.h"

namespace ls {
namespace {

template <class T>
void append(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

void append_str(std::vector<uint8_t>& out, const std::string& s) {
    append<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

template <class T>
std::vector<uint8_t> bytes_of(T v) {
    std::vector<uint8_t> out;
    append(out, v);
    return out;
}

void pad_to(std::vector<uint8_t>& out, size_t alignment) {
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
}

}  // namespace

void GgufWriter::put(const std::string& key, GgufType type, GgufType elem, uint64_t count,
                     std::vector<uint8_t> payload) {
    if (key.empty()) throw GgufError("gguf writer: empty key");
    for (auto& kv : kv_) {
        if (kv.key == key) {  // a later set replaces the earlier value
            kv = KV{key, type, elem, std::move(payload), count};
            return;
        }
    }
    kv_.push_back(KV{key, type, elem, std::move(payload), count});
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
    // The alignment key governs the layout the writer produces, so keep the two in step.
    if (key == "general.alignment") {
        if (v == 0 || (v & (v - 1)) != 0)
            throw GgufError("gguf writer: general.alignment " + std::to_string(v) + " is not a nonzero power of two");
        alignment_ = v;
    }
    put(key, GgufType::U32, GgufType::U8, 0, bytes_of(v));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) { put(key, GgufType::I32, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { put(key, GgufType::U64, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_f32(const std::string& key, float v) { put(key, GgufType::F32, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_bool(const std::string& key, bool v) {
    put(key, GgufType::BOOL, GgufType::U8, 0, bytes_of<uint8_t>(v ? 1 : 0));
}
void GgufWriter::set_u8(const std::string& key, uint8_t v) { put(key, GgufType::U8, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_i8(const std::string& key, int8_t v) { put(key, GgufType::I8, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_u16(const std::string& key, uint16_t v) { put(key, GgufType::U16, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_i16(const std::string& key, int16_t v) { put(key, GgufType::I16, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_i64(const std::string& key, int64_t v) { put(key, GgufType::I64, GgufType::U8, 0, bytes_of(v)); }
void GgufWriter::set_f64(const std::string& key, double v) { put(key, GgufType::F64, GgufType::U8, 0, bytes_of(v)); }

void GgufWriter::set_string(const std::string& key, const std::string& v) {
    std::vector<uint8_t> p;
    append_str(p, v);
    put(key, GgufType::STRING, GgufType::U8, 0, std::move(p));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
    std::vector<uint8_t> p;
    for (const auto& s : v) append_str(p, s);
    put(key, GgufType::ARRAY, GgufType::STRING, v.size(), std::move(p));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
    std::vector<uint8_t> p;
    for (float x : v) append(p, x);
    put(key, GgufType::ARRAY, GgufType::F32, v.size(), std::move(p));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    std::vector<uint8_t> p;
    for (int32_t x : v) append(p, x);
    put(key, GgufType::ARRAY, GgufType::I32, v.size(), std::move(p));
}

void GgufWriter::set_array_raw(const std::string& key, GgufType elem, uint64_t count, std::vector<uint8_t> payload) {
    if (elem == GgufType::ARRAY || static_cast<uint32_t>(elem) > static_cast<uint32_t>(GgufType::F64))
        throw GgufError("gguf writer: invalid array element type for key '" + key + "'");
    put(key, GgufType::ARRAY, elem, count, std::move(payload));
}

void GgufWriter::add_tensor(const std::string& name, DType type, std::vector<int64_t> ne, std::vector<uint8_t> data) {
    if (name.empty()) throw GgufError("gguf writer: empty tensor name");
    for (const auto& t : tensors_)
        if (t.name == name) throw GgufError("gguf writer: duplicate tensor name '" + name + "'");
    if (ne.empty() || ne.size() > 4)
        throw GgufError("gguf writer: tensor '" + name + "' has " + std::to_string(ne.size()) + " dimensions (1 to 4)");
    size_t expect = 0;
    try {
        expect = row_bytes(type, ne[0]);
    } catch (const std::exception& e) {
        throw GgufError("gguf writer: tensor '" + name + "': " + e.what());
    }
    for (size_t d = 0; d < ne.size(); ++d) {
        if (ne[d] <= 0)
            throw GgufError("gguf writer: tensor '" + name + "' dimension " + std::to_string(d) + " is not positive");
        if (d > 0 && __builtin_mul_overflow(expect, static_cast<size_t>(ne[d]), &expect))
            throw GgufError("gguf writer: tensor '" + name + "' is too large");
    }
    if (data.size() != expect)
        throw GgufError("gguf writer: tensor '" + name + "' has " + std::to_string(data.size()) + " bytes of data, expected " +
                        std::to_string(expect));
    tensors_.push_back(T{name, type, std::move(ne), std::move(data)});
}

// Everything before the first tensor's data: magic, counts, metadata, tensor infos, padding.
std::vector<uint8_t> GgufWriter::header_bytes() const {
    std::vector<uint8_t> out;
    append<uint32_t>(out, 0x46554747);  // "GGUF"
    append<uint32_t>(out, 3);
    append<uint64_t>(out, tensors_.size());
    append<uint64_t>(out, kv_.size());
    for (const auto& kv : kv_) {
        append_str(out, kv.key);
        append<uint32_t>(out, static_cast<uint32_t>(kv.type));
        if (kv.type == GgufType::ARRAY) {
            append<uint32_t>(out, static_cast<uint32_t>(kv.elem));
            append<uint64_t>(out, kv.count);
        }
        out.insert(out.end(), kv.payload.begin(), kv.payload.end());
    }
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
        append_str(out, t.name);
        append<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
        for (int64_t n : t.ne) append<uint64_t>(out, static_cast<uint64_t>(n));
        append<uint32_t>(out, static_cast<uint32_t>(t.type));
        append<uint64_t>(out, offset);
        offset = (offset + t.data.size() + alignment_ - 1) / alignment_ * alignment_;
    }
    pad_to(out, alignment_);
    return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out = header_bytes();
    for (const auto& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        pad_to(out, alignment_);
    }
    return out;
}

// Streamed tensor by tensor: a model of several GB is written without a second copy of it.
void GgufWriter::write(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw GgufError("gguf writer: cannot create '" + path + "': " + std::strerror(errno));
    bool ok = true;
    auto put = [&](const void* p, size_t n) {
        if (ok && n && std::fwrite(p, 1, n, f) != n) ok = false;
    };
    const std::vector<uint8_t> header = header_bytes();
    put(header.data(), header.size());
    const std::vector<uint8_t> zeros(alignment_, 0);
    for (const auto& t : tensors_) {
        put(t.data.data(), t.data.size());
        put(zeros.data(), (alignment_ - t.data.size() % alignment_) % alignment_);
    }
    const int werr = errno;
    if (std::fclose(f) != 0 || !ok)
        throw GgufError("gguf writer: cannot write '" + path + "': " + std::strerror(!ok ? werr : errno));
}

}  // namespace ls
