#include "core/models/arch_keys.h"

#include <stdexcept>

namespace ls {

namespace {
constexpr const char* kSuffix[] = {
#define LS_X(e, s) s,
    LS_ARCH_KEYS(LS_X)
#undef LS_X
};
}  // namespace

std::string ArchKeys::name(ArchKey k) const { return prefix_ + kSuffix[size_t(k)]; }

std::vector<int64_t> ArchKeys::per_layer(ArchKey k, int64_t n_layer, std::optional<int64_t> def) const {
    const std::string key = name(k);
    const GgufValue* v = f_->find(key);
    if (!v) {
        if (!def) throw std::runtime_error("missing key '" + key + "'");
        return std::vector<int64_t>(size_t(n_layer), *def);
    }
    if (v->type != GgufType::ARRAY) return std::vector<int64_t>(size_t(n_layer), f_->get_int(key));
    std::vector<int64_t> arr = f_->get_int_array(key);
    if (int64_t(arr.size()) != n_layer)
        throw std::runtime_error("'" + key + "' has " + std::to_string(arr.size()) + " entries for " + std::to_string(n_layer) + " layers");
    return arr;
}

}  // namespace ls
