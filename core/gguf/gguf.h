// GGUF v2/v3 reader (and a small writer used by tests and the test-model tool).
// The reader checks every offset, count, string length and tensor extent against the
// file size: a truncated, corrupt or hostile file raises GgufError naming the problem.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/quant/dtype.h"

namespace ls {

struct GgufError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// GGUF metadata value types, numbered as in the format.
enum class GgufType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "u32", "string", "array[f32]", ...: used in error messages.
std::string gguf_type_name(GgufType t, GgufType elem = GgufType::U8);

struct GgufValue {
    GgufType type = GgufType::U8;
    GgufType elem_type = GgufType::U8;  // for ARRAY
    // Scalars: integers widened to int64/uint64, floats to double. Arrays of numbers keep
    // every element widened the same way; arrays of strings use `strings`.
    std::variant<int64_t, uint64_t, double, bool, std::string> scalar;
    std::vector<int64_t> ints;      // ARRAY of signed ints / bool (0/1)
    std::vector<uint64_t> uints;    // ARRAY of unsigned ints
    std::vector<double> floats;     // ARRAY of F32/F64
    std::vector<std::string> strings;  // ARRAY of STRING
    size_t array_size() const;
};

struct GgufTensorInfo {
    std::string name;
    DType type;
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the innermost (contiguous) dimension
    uint64_t offset = 0;           // from the start of the data section
    size_t nbytes = 0;
    const uint8_t* data = nullptr;  // points into the mapping, bounds already checked
};

class GgufFile {
public:
    // Maps the file read-only. Throws GgufError on any inconsistency.
    static std::unique_ptr<GgufFile> open(const std::string& path);
    // Parses an in-memory image (the caller keeps `data` alive). Used by the fuzzer and tests.
    static std::unique_ptr<GgufFile> from_memory(const uint8_t* data, size_t size);
    ~GgufFile();

    uint32_t version() const { return version_; }
    size_t alignment() const { return alignment_; }
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
    const GgufValue* find(const std::string& key) const;

    // Typed getters: throw GgufError naming the key if missing or of an incompatible type.
    std::string get_string(const std::string& key) const;
    int64_t get_int(const std::string& key) const;       // any integer type (range-checked)
    double get_float(const std::string& key) const;      // F32/F64 or any integer
    bool get_bool(const std::string& key) const;
    // With defaults when the key is absent (still throws if present with a wrong type).
    std::string get_string(const std::string& key, const std::string& def) const;
    int64_t get_int(const std::string& key, int64_t def) const;
    double get_float(const std::string& key, double def) const;
    bool get_bool(const std::string& key, bool def) const;
    const std::vector<std::string>& get_string_array(const std::string& key) const;
    std::vector<double> get_float_array(const std::string& key) const;  // F32/F64/int arrays
    std::vector<int64_t> get_int_array(const std::string& key) const;   // any int array
    std::vector<bool> get_bool_array(const std::string& key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(const std::string& name) const;
    const uint8_t* base() const { return base_; }
    size_t size() const { return size_; }
    // For a loader that has copied bytes [offset, offset + n) elsewhere: lets the kernel drop
    // the whole pages inside that range from this process's memory (MADV_DONTNEED), so the
    // copy and the mapping are not both resident. The range stays mapped and valid: a later
    // read faults the bytes back in from the file. Nothing to do for from_memory images.
    void release(size_t offset, size_t n) const;

private:
    GgufFile() = default;
    void parse();
    uint32_t version_ = 0;
    size_t alignment_ = 32;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::vector<GgufTensorInfo> tensors_;
    const uint8_t* base_ = nullptr;
    size_t size_ = 0;
    void* map_ = nullptr;  // owned mapping, if opened from a path
    size_t map_size_ = 0;
    std::unordered_map<std::string, size_t> kv_index_;      // key -> index in kv_
    std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
};

// Writes GGUF v3 files. Tensors are written in the order added, each aligned.
class GgufWriter {
public:
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_u64(const std::string& key, uint64_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_string_array(const std::string& key, const std::vector<std::string>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
    // The remaining scalar types, so every GGUF value type can be written.
    void set_u8(const std::string& key, uint8_t v);
    void set_i8(const std::string& key, int8_t v);
    void set_u16(const std::string& key, uint16_t v);
    void set_i16(const std::string& key, int16_t v);
    void set_i64(const std::string& key, int64_t v);
    void set_f64(const std::string& key, double v);
    // An array of any non-array element type: `payload` holds `count` little-endian
    // elements laid out as in the file (strings as u64 length + bytes).
    void set_array_raw(const std::string& key, GgufType elem, uint64_t count, std::vector<uint8_t> payload);
    // `data` must hold exactly row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3] bytes.
    void add_tensor(const std::string& name, DType type, std::vector<int64_t> ne, std::vector<uint8_t> data);
    std::vector<uint8_t> to_bytes() const;
    void write(const std::string& path) const;  // throws GgufError on I/O failure

private:
    struct KV { std::string key; GgufType type; GgufType elem; std::vector<uint8_t> payload; uint64_t count; };
    struct T { std::string name; DType type; std::vector<int64_t> ne; std::vector<uint8_t> data; };
    std::vector<KV> kv_;
    std::vector<T> tensors_;
    uint32_t alignment_ = 32;
    void put(const std::string& key, GgufType type, GgufType elem, uint64_t count, std::vector<uint8_t> payload);
    std::vector<uint8_t> header_bytes() const;
};

}  // namespace ls
