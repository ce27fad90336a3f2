#include "core/ir/op_times.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/quant/dtype.h"

namespace ls {
namespace {

std::string shape(const Tensor& t) {
    char buf[96];
    int len = std::snprintf(buf, sizeof buf, "%s[%lld", dtype_name(t.type), (long long)t.ne[0]);
    for (int d = 1; d < 4 && t.ne[d] > 1 && len < int(sizeof buf); ++d)
        len += std::snprintf(buf + len, sizeof buf - size_t(len), ",%lld", (long long)t.ne[d]);
    return std::string(buf) + "]";
}

std::string one_key(const Tensor& n) {
    std::string k = op_name(n.op);
    if (n.src[0]) k.append(" ").append(shape(*n.src[0]));
    if (n.src[1]) k.append(" x ").append(shape(*n.src[1]));
    return k;
}

}  // namespace

std::string op_times_key(const Tensor& node, const Tensor* fused) {
    return fused ? one_key(node) + " + " + one_key(*fused) : one_key(node);
}

void OpTimes::add(const std::string& key, double seconds) {
    Row& r = rows_[key];
    r.s += seconds;
    ++r.calls;
    total_s_ += seconds;
}

void OpTimes::print(std::FILE* f, const char* backend, const char* what) const {
    std::vector<std::pair<std::string, Row>> v(rows_.begin(), rows_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.s > b.second.s; });
    std::fprintf(f, "%s backend: %s per op and shapes (LOCKSTEP_PROFILE; %zu graphs, %.3f ms each on average)\n", backend, what,
                 graphs_, graphs_ ? 1e3 * total_s_ / double(graphs_) : 0.0);
    std::fprintf(f, "  %10s %6s %9s %10s  %s\n", "ms", "share", "calls", "us/call", "op and shapes");
    for (const auto& [k, r] : v)
        std::fprintf(f, "  %10.3f %5.1f%% %9zu %10.2f  %s\n", 1e3 * r.s, total_s_ > 0 ? 100.0 * r.s / total_s_ : 0.0, r.calls,
                     1e6 * r.s / double(r.calls ? r.calls : 1), k.c_str());
}

}  // namespace ls
