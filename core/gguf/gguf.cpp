// GGUF reader. The file is untrusted input: every length, count, dimension and offset
// is checked against the bytes that remain before anything is allocated or read, with
// arithmetic that cannot overflow, so a hostile file ends in a GgufError and nothing else.
#include "core/gguf/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace ls {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxDims = 4;

[[noreturn]] void fail(const std::string& msg) { throw GgufError("gguf: " + msg); }

// Smallest encoded size of one value of a type: bounds element counts before allocation.
uint64_t min_encoded_size(GgufType t) {
    switch (t) {
        case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
        case GgufType::U16: case GgufType::I16: return 2;
        case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
        case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
        case GgufType::STRING: return 8;           // the length prefix
        case GgufType::ARRAY: return 4 + 8;        // element type + count
    }
    return 1;
}

bool known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::F64); }
bool is_signed_int(GgufType t) {
    return t == GgufType::I8 || t == GgufType::I16 || t == GgufType::I32 || t == GgufType::I64;
}
bool is_unsigned_int(GgufType t) {
    return t == GgufType::U8 || t == GgufType::U16 || t == GgufType::U32 || t == GgufType::U64;
}
bool is_float(GgufType t) { return t == GgufType::F32 || t == GgufType::F64; }

// A bounds-checked read position in the image. `ctx_` names the entry being read so
// truncation messages say where in the structure the file ran out.
class Cursor {
public:
    Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
    size_t pos() const { return pos_; }
    size_t left() const { return n_ - pos_; }
    void set_context(std::string c) { ctx_ = std::move(c); }

    void need(uint64_t bytes, const char* what) const {
        if (bytes > left())
            fail("truncated file: " + std::string(what) + where() + " needs " + std::to_string(bytes) +
                 " bytes at offset " + std::to_string(pos_) + ", only " + std::to_string(left()) +
                 " left (file size " + std::to_string(n_) + ")");
    }
    template <class T>
    T get(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    std::string str(const char* what) {
        const size_t at = pos_;
        const uint64_t len = get<uint64_t>(what);
        if (len > left())
            fail("string length " + std::to_string(len) + " at offset " + std::to_string(at) + " (" + what +
                 where() + ") exceeds file size " + std::to_string(n_) + " (" + std::to_string(left()) +
                 " bytes left)");
        std::string s(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return s;
    }
    // Fails unless `count` elements of at least `min_size` bytes each can still fit.
    void check_count(uint64_t count, uint64_t min_size, const char* what, size_t at) const {
        if (count > left() / min_size)
            fail(std::string(what) + " " + std::to_string(count) + " at offset " + std::to_string(at) + where() +
                 " exceeds file size " + std::to_string(n_) + " (" + std::to_string(left()) +
                 " bytes left, each entry needs at least " + std::to_string(min_size) + ")");
    }
    std::string where() const { return ctx_.empty() ? std::string() : " of " + ctx_; }

private:
    const uint8_t* p_;
    size_t n_;
    size_t pos_ = 0;
    std::string ctx_;
};

// Reads one integer element of type t, widened.
template <class T>
T read_int_as(Cursor& c, GgufType t) {
    switch (t) {
        case GgufType::U8: return static_cast<T>(c.get<uint8_t>("u8 value"));
        case GgufType::I8: return static_cast<T>(c.get<int8_t>("i8 value"));
        case GgufType::U16: return static_cast<T>(c.get<uint16_t>("u16 value"));
        case GgufType::I16: return static_cast<T>(c.get<int16_t>("i16 value"));
        case GgufType::U32: return static_cast<T>(c.get<uint32_t>("u32 value"));
        case GgufType::I32: return static_cast<T>(c.get<int32_t>("i32 value"));
        case GgufType::U64: return static_cast<T>(c.get<uint64_t>("u64 value"));
        case GgufType::I64: return static_cast<T>(c.get<int64_t>("i64 value"));
        default: fail("internal: not an integer type");
    }
}

double read_float(Cursor& c, GgufType t) {
    if (t == GgufType::F32) return c.get<float>("f32 value");
    return c.get<double>("f64 value");
}

bool read_bool(Cursor& c) {
    const size_t at = c.pos();
    const uint8_t b = c.get<uint8_t>("bool value");
    if (b > 1) fail("bool value " + std::to_string(b) + " at offset " + std::to_string(at) + c.where() + " is not 0 or 1");
    return b != 0;
}

GgufValue read_value(Cursor& c, GgufType type) {
    GgufValue v;
    v.type = type;
    if (is_signed_int(type)) {
        v.scalar = read_int_as<int64_t>(c, type);
    } else if (is_unsigned_int(type)) {
        v.scalar = read_int_as<uint64_t>(c, type);
    } else if (is_float(type)) {
        v.scalar = read_float(c, type);
    } else if (type == GgufType::BOOL) {
        v.scalar = read_bool(c);
    } else if (type == GgufType::STRING) {
        v.scalar = c.str("string value");
    } else {  // ARRAY
        const size_t at = c.pos();
        const uint32_t et = c.get<uint32_t>("array element type");
        if (!known_type(et))
            fail("unknown array element type " + std::to_string(et) + " at offset " + std::to_string(at) + c.where());
        const GgufType elem = static_cast<GgufType>(et);
        if (elem == GgufType::ARRAY)
            fail("nested arrays are not supported (at offset " + std::to_string(at) + c.where() + ")");
        v.elem_type = elem;
        const size_t count_at = c.pos();
        const uint64_t count = c.get<uint64_t>("array length");
        c.check_count(count, min_encoded_size(elem), "array length", count_at);
        const size_t n = static_cast<size_t>(count);
        if (is_signed_int(elem)) {
            v.ints.resize(n);
            for (auto& x : v.ints) x = read_int_as<int64_t>(c, elem);
        } else if (is_unsigned_int(elem)) {
            v.uints.resize(n);
            for (auto& x : v.uints) x = read_int_as<uint64_t>(c, elem);
        } else if (is_float(elem)) {
            v.floats.resize(n);
            for (auto& x : v.floats) x = read_float(c, elem);
        } else if (elem == GgufType::BOOL) {
            v.ints.resize(n);
            for (auto& x : v.ints) x = read_bool(c) ? 1 : 0;
        } else {  // STRING
            v.strings.reserve(n);
            for (size_t i = 0; i < n; ++i) v.strings.push_back(c.str("array string"));
        }
    }
    return v;
}

// a * b, failing with `what` on overflow past INT64_MAX (all GGUF sizes fit in int64).
uint64_t mul_checked(uint64_t a, uint64_t b, const std::string& what) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(what);
    return r;
}

}  // namespace

std::string gguf_type_name(GgufType t, GgufType elem) {
    static const char* const kNames[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                         "bool", "string", "array", "u64", "i64", "f64"};
    const auto name = [](GgufType x) -> std::string {
        const auto i = static_cast<uint32_t>(x);
        return i < std::size(kNames) ? kNames[i] : "type " + std::to_string(i);
    };
    if (t == GgufType::ARRAY) return "array[" + name(elem) + "]";
    return name(t);
}

size_t GgufValue::array_size() const {
    if (type != GgufType::ARRAY) return 0;
    if (elem_type == GgufType::STRING) return strings.size();
    if (is_float(elem_type)) return floats.size();
    if (is_unsigned_int(elem_type)) return uints.size();
    return ints.size();
}

GgufFile::~GgufFile() {
    if (map_) munmap(map_, map_size_);
}

void GgufFile::release(size_t offset, size_t n) const {
    if (offset > size_ || n > size_ - offset) throw std::out_of_range("GgufFile::release past the end of the file");
    if (!map_ || n == 0) return;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    // Whole pages only, so that bytes outside the range keep their pages; the range that
    // reaches the end of the file takes the last, partial page too.
    const size_t begin = (offset + page - 1) / page * page;
    const size_t end = offset + n == map_size_ ? (map_size_ + page - 1) / page * page : (offset + n) / page * page;
    // Advice only: where the kernel refuses, the pages merely stay resident.
    if (begin < end) madvise(static_cast<uint8_t*>(map_) + begin, end - begin, MADV_DONTNEED);
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail("cannot stat '" + path + "': " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("'" + path + "' is not a regular file");
    }
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->size_ = static_cast<size_t>(st.st_size);
    if (f->size_ > 0) {
        void* m = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        const int e = errno;
        ::close(fd);
        if (m == MAP_FAILED) fail("cannot map '" + path + "': " + std::strerror(e));
        f->map_ = m;
        f->map_size_ = f->size_;
        f->base_ = static_cast<const uint8_t*>(m);
    } else {
        ::close(fd);
    }
    try {
        f->parse();
    } catch (const GgufError& e) {
        throw GgufError(std::string(e.what()) + " (in '" + path + "')");
    }
    return f;
}

std::unique_ptr<GgufFile> GgufFile::from_memory(const uint8_t* data, size_t size) {
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->base_ = data;
    f->size_ = data ? size : 0;
    f->parse();
    return f;
}

void GgufFile::parse() {
    static const uint8_t kEmpty = 0;
    Cursor c(base_ ? base_ : &kEmpty, size_);

    if (size_ < 4) fail("file too small to be GGUF (" + std::to_string(size_) + " bytes)");
    const uint32_t magic = c.get<uint32_t>("magic");
    if (magic != kMagic) {
        std::string shown;
        for (int i = 0; i < 4; ++i) {
            const char ch = static_cast<char>(base_[i]);
            shown += (ch >= 32 && ch < 127) ? std::string(1, ch) : "\\x" + std::to_string(static_cast<uint8_t>(ch));
        }
        fail("bad magic '" + shown + "' (expected 'GGUF'): not a GGUF file");
    }
    version_ = c.get<uint32_t>("version");
    if (version_ == 1) fail("GGUF version 1 is not supported (only versions 2 and 3): re-convert the model");
    if (version_ == 0x02000000u || version_ == 0x03000000u)
        fail("big-endian GGUF files are not supported");
    if (version_ != 2 && version_ != 3) fail("unsupported GGUF version " + std::to_string(version_) + " (expected 2 or 3)");

    size_t at = c.pos();
    const uint64_t n_tensors = c.get<uint64_t>("tensor count");
    // A tensor info needs at least a name length, n_dims, one dim, a type and an offset.
    const uint64_t kMinTensorInfo = 8 + 4 + 8 + 4 + 8;
    c.check_count(n_tensors, kMinTensorInfo, "tensor count", at);
    at = c.pos();
    const uint64_t n_kv = c.get<uint64_t>("metadata count");
    // A key-value pair needs at least a key length, a type and one byte of value.
    c.check_count(n_kv, 8 + 4 + 1, "metadata count", at);

    kv_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) {
        c.set_context("metadata entry " + std::to_string(i));
        std::string key = c.str("key");
        if (key.empty()) fail("empty key in metadata entry " + std::to_string(i));
        c.set_context("key '" + key + "'");
        at = c.pos();
        const uint32_t t = c.get<uint32_t>("value type");
        if (!known_type(t))
            fail("unknown value type " + std::to_string(t) + " for key '" + key + "' at offset " + std::to_string(at));
        GgufValue v = read_value(c, static_cast<GgufType>(t));
        if (!kv_index_.emplace(key, kv_.size()).second) fail("duplicate key '" + key + "'");
        kv_.emplace_back(std::move(key), std::move(v));
    }

    if (const GgufValue* a = find("general.alignment")) {
        if (a->type != GgufType::U32)
            fail("general.alignment must be u32, found " + gguf_type_name(a->type, a->elem_type));
        const uint64_t al = std::get<uint64_t>(a->scalar);
        if (al == 0 || (al & (al - 1)) != 0)
            fail("general.alignment " + std::to_string(al) + " is not a nonzero power of two");
        alignment_ = static_cast<size_t>(al);
    }

    tensors_.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        c.set_context("tensor info " + std::to_string(i));
        GgufTensorInfo ti;
        ti.name = c.str("tensor name");
        if (ti.name.empty()) fail("empty name for tensor " + std::to_string(i));
        const std::string tn = "tensor '" + ti.name + "'";
        c.set_context(tn);
        const uint32_t nd = c.get<uint32_t>("n_dims");
        if (nd < 1 || nd > kMaxDims)
            fail(tn + " has " + std::to_string(nd) + " dimensions (expected 1 to " + std::to_string(kMaxDims) + ")");
        ti.n_dims = static_cast<int>(nd);
        for (uint32_t d = 0; d < nd; ++d) {
            const uint64_t ne = c.get<uint64_t>("dimension");
            if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(tn + " has invalid dimension " + std::to_string(d) + " = " +
                     std::to_string(static_cast<int64_t>(ne)) + " (must be positive)");
            ti.ne[d] = static_cast<int64_t>(ne);
        }
        at = c.pos();
        const uint32_t type_id = c.get<uint32_t>("type");
        const DTypeTraits* tr = dtype_traits_or_null(type_id);
        if (!tr && gguf_type_name_not_run(type_id))
            fail(tn + " has type " + gguf_type_name_not_run(type_id) + " (GGUF type id " + std::to_string(type_id) +
                 "), which lockstep cannot run yet; it runs " + dtype_names());
        if (!tr) fail(tn + " has unknown type id " + std::to_string(type_id) + " (at offset " + std::to_string(at) + ")");
        ti.type = static_cast<DType>(type_id);
        ti.offset = c.get<uint64_t>("data offset");

        const std::string overflow = tn + " has dimensions whose product overflows";
        uint64_t nel = 1;
        for (int d = 0; d < kMaxDims; ++d) nel = mul_checked(nel, static_cast<uint64_t>(ti.ne[d]), overflow);
        if (ti.ne[0] % tr->block != 0)
            fail(tn + " of type " + tr->name + " has ne[0] = " + std::to_string(ti.ne[0]) +
                 ", not a multiple of the block size " + std::to_string(tr->block));
        uint64_t nbytes = mul_checked(static_cast<uint64_t>(ti.ne[0] / tr->block), tr->block_bytes, overflow);
        for (int d = 1; d < kMaxDims; ++d) nbytes = mul_checked(nbytes, static_cast<uint64_t>(ti.ne[d]), overflow);
        ti.nbytes = static_cast<size_t>(nbytes);
        if (ti.offset % alignment_ != 0)
            fail(tn + " data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
                 std::to_string(alignment_));
        if (!tensor_index_.emplace(ti.name, tensors_.size()).second) fail("duplicate tensor name '" + ti.name + "'");
        tensors_.push_back(std::move(ti));
    }

    // The data section starts at the next multiple of the alignment after the infos.
    const uint64_t end_of_infos = c.pos();
    const uint64_t data_start = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;  // no overflow: pos <= size
    if (tensors_.empty()) return;
    if (data_start > size_)
        fail("data section would start at offset " + std::to_string(data_start) + ", past the end of the file (size " +
             std::to_string(size_) + ")");
    const uint64_t data_size = size_ - data_start;
    for (auto& ti : tensors_) {
        if (ti.offset > data_size || ti.nbytes > data_size - ti.offset)
            fail("tensor '" + ti.name + "' extends past end of file (offset " + std::to_string(data_start) + " + " +
                 std::to_string(ti.offset) + " + " + std::to_string(ti.nbytes) + " bytes > file size " +
                 std::to_string(size_) + ")");
        ti.data = base_ + data_start + ti.offset;
    }
}

const GgufValue* GgufFile::find(const std::string& key) const {
    const auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

[[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* wanted) {
    fail("key '" + key + "' is " + gguf_type_name(v.type, v.elem_type) + ", expected " + wanted);
}

const GgufValue& require(const GgufFile& f, const std::string& key) {
    const GgufValue* v = f.find(key);
    if (!v) fail("missing key '" + key + "'");
    return *v;
}

int64_t as_int(const std::string& key, const GgufValue& v) {
    if (is_signed_int(v.type)) return std::get<int64_t>(v.scalar);
    if (is_unsigned_int(v.type)) {
        const uint64_t u = std::get<uint64_t>(v.scalar);
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            fail("key '" + key + "' value " + std::to_string(u) + " does not fit in int64");
        return static_cast<int64_t>(u);
    }
    wrong_type(key, v, "an integer");
}

double as_float(const std::string& key, const GgufValue& v) {
    if (is_float(v.type)) return std::get<double>(v.scalar);
    if (is_signed_int(v.type)) return static_cast<double>(std::get<int64_t>(v.scalar));
    if (is_unsigned_int(v.type)) return static_cast<double>(std::get<uint64_t>(v.scalar));
    wrong_type(key, v, "a number");
}

const std::string& as_string(const std::string& key, const GgufValue& v) {
    if (v.type != GgufType::STRING) wrong_type(key, v, "string");
    return std::get<std::string>(v.scalar);
}

bool as_bool(const std::string& key, const GgufValue& v) {
    if (v.type != GgufType::BOOL) wrong_type(key, v, "bool");
    return std::get<bool>(v.scalar);
}

}  // namespace

std::string GgufFile::get_string(const std::string& key) const { return as_string(key, require(*this, key)); }
int64_t GgufFile::get_int(const std::string& key) const { return as_int(key, require(*this, key)); }
double GgufFile::get_float(const std::string& key) const { return as_float(key, require(*this, key)); }
bool GgufFile::get_bool(const std::string& key) const { return as_bool(key, require(*this, key)); }

std::string GgufFile::get_string(const std::string& key, const std::string& def) const {
    const GgufValue* v = find(key);
    return v ? as_string(key, *v) : def;
}
int64_t GgufFile::get_int(const std::string& key, int64_t def) const {
    const GgufValue* v = find(key);
    return v ? as_int(key, *v) : def;
}
double GgufFile::get_float(const std::string& key, double def) const {
    const GgufValue* v = find(key);
    return v ? as_float(key, *v) : def;
}
bool GgufFile::get_bool(const std::string& key, bool def) const {
    const GgufValue* v = find(key);
    return v ? as_bool(key, *v) : def;
}

const std::vector<std::string>& GgufFile::get_string_array(const std::string& key) const {
    const GgufValue& v = require(*this, key);
    if (v.type != GgufType::ARRAY || v.elem_type != GgufType::STRING) wrong_type(key, v, "array[string]");
    return v.strings;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
    const GgufValue& v = require(*this, key);
    if (v.type != GgufType::ARRAY) wrong_type(key, v, "a numeric array");
    if (is_float(v.elem_type)) return v.floats;
    if (is_signed_int(v.elem_type)) return std::vector<double>(v.ints.begin(), v.ints.end());
    if (is_unsigned_int(v.elem_type)) return std::vector<double>(v.uints.begin(), v.uints.end());
    wrong_type(key, v, "a numeric array");
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
    const GgufValue& v = require(*this, key);
    if (v.type != GgufType::ARRAY) wrong_type(key, v, "an integer array");
    if (is_signed_int(v.elem_type)) return v.ints;
    if (is_unsigned_int(v.elem_type)) {
        std::vector<int64_t> out;
        out.reserve(v.uints.size());
        for (uint64_t u : v.uints) {
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail("key '" + key + "' element " + std::to_string(u) + " does not fit in int64");
            out.push_back(static_cast<int64_t>(u));
        }
        return out;
    }
    wrong_type(key, v, "an integer array");
}

std::vector<bool> GgufFile::get_bool_array(const std::string& key) const {
    const GgufValue& v = require(*this, key);
    if (v.type != GgufType::ARRAY || v.elem_type != GgufType::BOOL) wrong_type(key, v, "a bool array");
    return std::vector<bool>(v.ints.begin(), v.ints.end());
}

}  // namespace ls
