// Where each tensor of a graph is last read, for the fused groups (cuda_backend.cpp): a group
// of nodes run as one kernel need not write an intermediate output that no node after the
// group reads, and must not, where the graph's allocator put a later node's output over it
// (its memory is free once its last reader ran). Built once per graph, before its launches;
// an open-addressing table over storage bases, kept from graph to graph, so that a decode
// step allocates nothing and spends a few microseconds on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace ls::cuda {

class LastReads {
public:
    void build(const Graph& g) {
        const auto& nodes = g.nodes();
        size_t cap = 64;
        while (cap < 4 * (nodes.size() * 2 + g.outputs().size())) cap *= 2;
        slots_.assign(cap, Slot{});
        for (size_t i = 0; i < nodes.size(); ++i) {
            note(nodes[i], i);
            for (const Tensor* s : nodes[i]->src)
                if (s) note(s, i);
        }
        for (const Tensor* o : g.outputs()) note(o, kEnd);
    }
    // Whether node index `after` is not t's storage's last reader: some later node reads it
    // (or a view of it), or the graph returns it. Unknown tensors count as read.
    bool read_after(const Tensor* t, size_t after) const {
        const Slot* s = find(base(t));
        return !s || s->last > after;
    }

private:
    static constexpr size_t kEnd = SIZE_MAX;
    struct Slot {
        const Tensor* t = nullptr;
        size_t last = 0;
    };
    static const Tensor* base(const Tensor* t) {
        while (t->view_src) t = t->view_src;
        return t;
    }
    size_t home(const Tensor* t) const {
        return size_t((reinterpret_cast<uintptr_t>(t) >> 4) * 0x9E3779B97F4A7C15ull) & (slots_.size() - 1);
    }
    void note(const Tensor* t, size_t i) {
        t = base(t);
        for (size_t h = home(t);; h = (h + 1) & (slots_.size() - 1)) {
            Slot& s = slots_[h];
            if (!s.t) s.t = t;
            if (s.t == t) {
                if (i > s.last) s.last = i;
                return;
            }
        }
    }
    const Slot* find(const Tensor* t) const {
        if (slots_.empty()) return nullptr;
        for (size_t h = home(t);; h = (h + 1) & (slots_.size() - 1)) {
            const Slot& s = slots_[h];
            if (!s.t) return nullptr;
            if (s.t == t) return &s;
        }
    }
    std::vector<Slot> slots_;
};

}  // namespace ls::cuda
