// A device of another rank (pipeline stages over processes, issue 31). Its buffers have a size
// and no memory: a model placed over ranks binds every tensor and plans every layer, but each
// rank holds only its own stage's bytes; the scheduler never runs a piece on it, it receives
// what that rank computed.
#pragma once
#include <stdexcept>
#include <string>

#include "core/ir/backend.h"

namespace ls {

class RemoteBackend : public Backend {
public:
    explicit RemoteBackend(int rank) : rank_(rank) {}
    int rank() const { return rank_; }
    std::string name() const override { return "rank" + std::to_string(rank_); }
    std::unique_ptr<Buffer> alloc(size_t bytes) override {
        auto b = std::make_unique<Buffer>();
        b->backend = this;
        b->size = bytes;
        return b;
    }
    // The owning rank writes its own memory: here there is none.
    void upload(Buffer&, size_t, const void*, size_t) override {}
    void fill(Buffer&, size_t, size_t, uint8_t) override {}
    void copy(Buffer&, size_t, size_t, size_t) override {}
    void download(const Buffer&, size_t, void*, size_t) override {
        throw std::logic_error("rank " + std::to_string(rank_) + "'s memory is not readable here");
    }
    bool supports(const Tensor&) const override { return true; }
    void compute(const Graph&) override { throw std::logic_error("rank " + std::to_string(rank_) + "'s pieces run there"); }

private:
    int rank_;
};

// The rank a backend stands for, or -1 for a local device.
inline int remote_rank(const Backend* b) {
    const auto* r = dynamic_cast<const RemoteBackend*>(b);
    return r ? r->rank() : -1;
}

}  // namespace ls
