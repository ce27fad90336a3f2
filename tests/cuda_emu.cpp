#include "tests/cuda_emu.h"

#include <ucontext.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LS_EMU_ASAN 1
#endif

namespace ls::emu {

Dim3 thread_idx, block_idx, block_dim, grid_dim;

// The CUDA threads of a block are fibers on the calling thread (ucontext), switched only at
// barriers: a block of 256 threads as OS threads spent its time waking threads in the
// kernel (futexes), not running them.
namespace {

struct Barrier {
    unsigned expected = 0, arrived = 0;
    uint64_t phase = 0;
    void complete_if_full() {
        if (arrived > 0 && arrived == expected) {
            arrived = 0;
            ++phase;
        }
    }
};

struct Fiber {
    ucontext_t ctx;
    Dim3 idx;
    bool done = false;
#if LS_EMU_ASAN
    void* fake_stack = nullptr;
#endif
};

struct Block {
    const std::function<void()>* body = nullptr;
    std::vector<Fiber> fibers;
    std::vector<Barrier> warp_bars;
    std::vector<uint64_t> warp_slots;  // 32 per warp
    Barrier block_bar;
    unsigned cur = 0, live = 0;
    ucontext_t sched;
#if LS_EMU_ASAN
    const void* sched_stack = nullptr;
    size_t sched_stack_size = 0;
    void* sched_fake_stack = nullptr;
#endif
};

Block* g_block = nullptr;
constexpr size_t kStackBytes = size_t(256) << 10;
std::vector<std::unique_ptr<char[]>> g_stacks;  // kept from launch to launch

char* stack_of(unsigned i) { return g_stacks[i].get(); }

// Back to the scheduler; returns when the scheduler resumes this fiber.
void yield_to_scheduler(bool exiting) {
    Block& b = *g_block;
    Fiber& f = b.fibers[b.cur];
#if LS_EMU_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, b.sched_stack, b.sched_stack_size);
#endif
    if (exiting) {
        setcontext(&b.sched);
        return;  // not reached
    }
    swapcontext(&f.ctx, &b.sched);
#if LS_EMU_ASAN
    __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

void wait(Barrier& bar) {
    const uint64_t phase = bar.phase;
    ++bar.arrived;
    bar.complete_if_full();
    while (bar.phase == phase) yield_to_scheduler(false);
}

void fiber_entry() {
    Block& b = *g_block;
#if LS_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &b.sched_stack, &b.sched_stack_size);
#endif
    (*b.body)();
    // An exited thread no longer holds up the others' barriers (sm_70 and later).
    const unsigned me = b.cur;
    Barrier& wb = b.warp_bars[me / 32];
    --wb.expected;
    wb.complete_if_full();
    --b.block_bar.expected;
    b.block_bar.complete_if_full();
    b.fibers[me].done = true;
    --b.live;
    yield_to_scheduler(true);
}

}  // namespace

void syncthreads() { wait(g_block->block_bar); }

uint64_t warp_exchange(uint64_t bits, unsigned src_lane) {
    Block& b = *g_block;
    const unsigned me = b.cur, w = me / 32;
    uint64_t* slots = &b.warp_slots[size_t(w) * 32];
    slots[me % 32] = bits;
    wait(b.warp_bars[w]);  // every lane has written
    const uint64_t r = slots[src_lane];
    wait(b.warp_bars[w]);  // every lane has read before the next exchange writes
    return r;
}

void launch(Dim3 grid, Dim3 block, const std::function<void()>& body) {
    const unsigned n = block.x * block.y * block.z;
    if (n == 0 || n > 1024) throw std::invalid_argument("cuda_emu: a block of " + std::to_string(n) + " threads");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) throw std::invalid_argument("cuda_emu: an empty grid");
    if (g_block) throw std::logic_error("cuda_emu: a launch inside a launch");
    block_dim = block;
    grid_dim = grid;
    while (g_stacks.size() < n) g_stacks.push_back(std::make_unique<char[]>(kStackBytes));
    const unsigned n_warps = (n + 31) / 32;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                Block b;
                b.body = &body;
                b.fibers.resize(n);
                b.warp_bars.resize(n_warps);
                for (unsigned w = 0; w < n_warps; ++w) b.warp_bars[w].expected = std::min(32u, n - w * 32);
                b.warp_slots.assign(size_t(n_warps) * 32, 0);
                b.block_bar.expected = n;
                b.live = n;
                for (unsigned i = 0; i < n; ++i) {
                    Fiber& f = b.fibers[i];
                    f.idx = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = stack_of(i);
                    f.ctx.uc_stack.ss_size = kStackBytes;
                    f.ctx.uc_link = nullptr;
                    makecontext(&f.ctx, fiber_entry, 0);
                }
                block_idx = {bx, by, bz};
                g_block = &b;
                // Round robin over the live threads; a thread runs until it waits at a barrier
                // or exits. A full round in which every live thread waits on an incomplete
                // barrier is a deadlock (a barrier some thread never reaches).
                while (b.live > 0) {
                    const uint64_t before = b.block_bar.phase;
                    uint64_t warp_before = 0;
                    for (auto& wb : b.warp_bars) warp_before += wb.phase;
                    const unsigned live_before = b.live;
                    for (unsigned i = 0; i < n; ++i) {
                        if (b.fibers[i].done) continue;
                        b.cur = i;
                        thread_idx = b.fibers[i].idx;
#if LS_EMU_ASAN
                        __sanitizer_start_switch_fiber(&b.sched_fake_stack, stack_of(i), kStackBytes);
#endif
                        swapcontext(&b.sched, &b.fibers[i].ctx);
#if LS_EMU_ASAN
                        __sanitizer_finish_switch_fiber(b.sched_fake_stack, nullptr, nullptr);
#endif
                    }
                    uint64_t warp_after = 0;
                    for (auto& wb : b.warp_bars) warp_after += wb.phase;
                    if (b.live == live_before && b.block_bar.phase == before && warp_after == warp_before) {
                        g_block = nullptr;
                        throw std::logic_error("cuda_emu: deadlock: threads wait at a barrier that others never reach");
                    }
                }
                g_block = nullptr;
            }
}

}  // namespace ls::emu
