#include "backends/cuda/emu/cuda_emu.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LS_EMU_ASAN 1
#endif

namespace ls::emu {

Dim3 thread_idx, block_idx, block_dim, grid_dim;

// The CUDA threads of a block are fibers on the calling thread, switched only at barriers
// (as OS threads, a block of 256 spent its time in futex wake-ups, not in the kernel). On
// x86-64 the switch is a few instructions (ls_emu_switch below): a decode step of a tiny
// model makes millions of them (every warp shuffle is a barrier of 32 fibers), and
// swapcontext makes two system calls per switch.
namespace {

#if defined(__x86_64__)
// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack,
// stores the stack pointer in *from, and resumes the context whose stack pointer is `to`.
extern "C" void ls_emu_switch(void** from, void* to);
asm(R"(
    .text
    .globl ls_emu_switch
    .type ls_emu_switch, @function
ls_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ls_emu_switch, .-ls_emu_switch
    .section .note.GNU-stack, "", @progbits
    .text
)");

struct Context {
    void* sp = nullptr;
};
// A fresh context on [stack, stack + bytes) that starts in entry() (which never returns).
void make_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
    auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15);
    auto* p = reinterpret_cast<uint64_t*>(top);
    *--p = 0;                                     // entry()'s return address: never used
    *--p = reinterpret_cast<uint64_t>(entry);     // where ls_emu_switch's ret goes
    for (int i = 0; i < 6; ++i) *--p = 0;         // rbp rbx r12 r13 r14 r15
    *--p = uint64_t(0x037F) << 32 | 0x1F80;       // x87 control word, MXCSR: the defaults
    c.sp = p;
}
void switch_context(Context& from, Context& to) { ls_emu_switch(&from.sp, to.sp); }
#else
struct Context {
    ucontext_t uc;
};
void make_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = bytes;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}
void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

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
    Context ctx;
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
    std::vector<unsigned char> gather_slots;  // 32 x kGatherBytes per warp
    Barrier block_bar;
    unsigned cur = 0, live = 0;
    Context sched;
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

// Back to the scheduler; returns when the scheduler resumes this fiber (never if exiting).
void yield_to_scheduler(bool exiting) {
    Block& b = *g_block;
    Fiber& f = b.fibers[b.cur];
#if LS_EMU_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, b.sched_stack, b.sched_stack_size);
#endif
    switch_context(f.ctx, b.sched);
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
    __builtin_trap();  // an exited fiber is never resumed
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

void warp_gather(const void* mine, unsigned bytes, void* all) {
    if (bytes > kGatherBytes) throw std::invalid_argument("cuda_emu: warp_gather of " + std::to_string(bytes) + " bytes");
    Block& b = *g_block;
    const unsigned me = b.cur, w = me / 32;
    unsigned char* slots = &b.gather_slots[size_t(w) * 32 * kGatherBytes];
    std::memcpy(slots + (me % 32) * kGatherBytes, mine, bytes);
    wait(b.warp_bars[w]);  // every lane has written
    for (unsigned l = 0; l < 32; ++l) std::memcpy(static_cast<unsigned char*>(all) + l * bytes, slots + l * kGatherBytes, bytes);
    wait(b.warp_bars[w]);  // every lane has read
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
    Block b;
    b.body = &body;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                b.fibers.assign(n, Fiber{});
                b.warp_bars.assign(n_warps, Barrier{});
                for (unsigned w = 0; w < n_warps; ++w) b.warp_bars[w].expected = std::min(32u, n - w * 32);
                b.warp_slots.assign(size_t(n_warps) * 32, 0);
                b.gather_slots.assign(size_t(n_warps) * 32 * kGatherBytes, 0);
                b.block_bar = Barrier{};
                b.block_bar.expected = n;
                b.live = n;
                for (unsigned i = 0; i < n; ++i) {
                    b.fibers[i].idx = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
                    make_context(b.fibers[i].ctx, stack_of(i), kStackBytes, fiber_entry);
                }
                block_idx = {bx, by, bz};
                g_block = &b;
                // Round robin over the live threads; a thread runs until it waits at a barrier
                // or exits. A full round in which no barrier completes and no thread exits is
                // a deadlock (a barrier some thread never reaches).
                while (b.live > 0) {
                    uint64_t before = b.block_bar.phase;
                    for (auto& wb : b.warp_bars) before += wb.phase;
                    const unsigned live_before = b.live;
                    for (unsigned i = 0; i < n; ++i) {
                        if (b.fibers[i].done) continue;
                        b.cur = i;
                        thread_idx = b.fibers[i].idx;
#if LS_EMU_ASAN
                        __sanitizer_start_switch_fiber(&b.sched_fake_stack, stack_of(i), kStackBytes);
#endif
                        switch_context(b.sched, b.fibers[i].ctx);
#if LS_EMU_ASAN
                        __sanitizer_finish_switch_fiber(b.sched_fake_stack, nullptr, nullptr);
#endif
                    }
                    uint64_t after = b.block_bar.phase;
                    for (auto& wb : b.warp_bars) after += wb.phase;
                    if (b.live == live_before && after == before) {
                        g_block = nullptr;
                        throw std::logic_error("cuda_emu: deadlock: threads wait at a barrier that others never reach");
                    }
                }
                g_block = nullptr;
            }
}

}  // namespace ls::emu
