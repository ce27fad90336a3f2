// The two passes of VulkanBackend::compute, as the per-op files (ops/*.cpp) see them:
//  Plan: the host pass, before anything is recorded: it sizes the aux buffer (activation
//    rows, attention partials) and reads what a launch's shape depends on from the graph's
//    index inputs (core/ir/index_inputs.h; core has checked them before the graph runs).
//  Recorder: the recording pass, one command buffer per graph; a dispatch gets a barrier
//    only where it touches memory an earlier unfenced dispatch wrote (or writes memory one
//    read).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/vulkan/vk_context.h"
#include "core/ir/graph.h"
#include "core/ir/op_times.h"
#include "shaders/push.h"

namespace ls::vk {

struct Range {
    uint64_t lo, hi;
};

// How an attention node runs: the key blocks a query spans at most, and whether the blocks
// are spread over workgroups with a fold pass (ops/attention.cpp).
struct AttnPlan {
    uint32_t nblk = 1;
    bool split = false;
    bool tile = false;  // the query-tile form (shaders/attention_tile.comp)
};

struct Plan {
    const Graph* graph = nullptr;  // the graph planned: index data is read from its inputs
    size_t act_bytes = 0, attn_bytes = 0;
    int attn_split = -1;  // Context::attn_split: -1 by size, 0 never, 1 always (tests)
    bool attn_tile = false;  // Context::attn_tile
    std::map<const Tensor*, AttnPlan> attn;
    // set_rows nodes whose index vector names some row twice (the last writer must win).
    std::set<const Tensor*> rows_repeat;
};

class Recorder {
public:
    // prof: LOCKSTEP_PROFILE's table, or null. ts_pool (with prof): a GPU timestamp is
    // written after each dispatch into queries 1.. (at most ts_cap - 1 of them; query 0 is the
    // step's start), and take_profile adds their differences once the buffer has run; without
    // a pool each dispatch is submitted and timed on the host on its own.
    Recorder(Context& ctx, const Backend& owner, const Plan& plan, OpTimes* prof, VkQueryPool ts_pool = VK_NULL_HANDLE,
             uint32_t ts_cap = 0)
        : ctx(ctx), plan(plan), owner_(owner), prof_(prof), ts_pool_(ts_pool), ts_cap_(ts_cap) {}
    // The timestamp queries written (0: none), and their rows into prof once they have run.
    uint32_t timestamps_written() const { return ts_pool_ ? uint32_t(ts_keys_.size()) + 1 : 0; }
    void take_profile(const std::vector<double>& seconds);

    uint64_t addr(const Tensor* t) const;
    Range range(const Tensor* t) const { return {addr(t), addr(t) + std::max<size_t>(t->nbytes(), 1)}; }

    // One dispatch, with a barrier first when it depends on unfenced work.
    template <class P>
    void dispatch(const std::string& variant, const P& pc, uint32_t gx, uint32_t gy, std::initializer_list<Range> reads,
                  std::initializer_list<Range> writes) {
        static_assert(sizeof(P) <= 128);
        dispatch_bytes(variant, &pc, sizeof(P), gx, gy, reads.begin(), reads.size(), writes.begin(), writes.size());
    }
    template <class P>
    void dispatch(const std::string& variant, const P& pc, uint32_t gx, uint32_t gy, const std::vector<Range>& reads,
                  const std::vector<Range>& writes) {
        static_assert(sizeof(P) <= 128);
        dispatch_bytes(variant, &pc, sizeof(P), gx, gy, reads.data(), reads.size(), writes.data(), writes.size());
    }
    // Groups for `total` invocations of 64 (shaders fold y into the linear index).
    static std::pair<uint32_t, uint32_t> groups(uint64_t total) {
        const uint64_t g = std::max<uint64_t>((total + 63) / 64, 1);
        const uint64_t gx = std::min<uint64_t>(g, 65535);
        return {uint32_t(gx), uint32_t((g + gx - 1) / gx)};
    }
    template <class P>
    void dispatch1d(const std::string& v, const P& pc, uint64_t total, std::initializer_list<Range> r, std::initializer_list<Range> w) {
        auto [gx, gy] = groups(total);
        dispatch(v, pc, gx, gy, r, w);
    }
    template <class P>
    void dispatch1d(const std::string& v, const P& pc, uint64_t total, const std::vector<Range>& r, const std::vector<Range>& w) {
        auto [gx, gy] = groups(total);
        dispatch(v, pc, gx, gy, r, w);
    }

    Context& ctx;
    const Plan& plan;
    Range act{}, attn{};     // the aux buffer's activation rows and attention block partials
    // The activation rows in `act` are this tensor quantized to act_t, so a mul_mat on the
    // same input (q, k, v; gate, up) skips the quantizer.
    const Tensor* act_x = nullptr;
    DType act_t = DType::F32;
    const Tensor* node = nullptr;  // the node being recorded: the profile's rows name it
    size_t dispatches() const { return dispatches_; }
    size_t barriers() const { return barriers_; }
    size_t untimed() const { return untimed_; }  // dispatches past ts_cap, not in the profile

private:
    void dispatch_bytes(const std::string& variant, const void* pc, uint32_t size, uint32_t gx, uint32_t gy, const Range* reads,
                        size_t n_reads, const Range* writes, size_t n_writes);
    const Backend& owner_;
    std::vector<Range> pending_r_, pending_w_;
    size_t barriers_ = 0, dispatches_ = 0;
    OpTimes* prof_;
    VkQueryPool ts_pool_;
    uint32_t ts_cap_;
    std::vector<std::string> ts_keys_;  // the profile row of query i + 1
    size_t untimed_ = 0;
};

}  // namespace ls::vk
