// The probes that decide whether the shaders may use the device's own fma and double ->
// float conversion (NATIVE_FMA, NATIVE_D2F): they must match the host bit for bit.
#include "backends/vulkan/vk_context.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls::vk {

std::vector<float> Context::run_probe(uint32_t mode, const void* in, size_t in_bytes, uint32_t n) {
    size_t off = 0;
    const size_t bytes = in_bytes + size_t(n) * 4;
    Chunk* c = allocate(bytes, off);
    std::vector<float> out(n);
    try {
        write(c, off, in, in_bytes);
        VkPipeline p = make_pipeline("fma_probe", true, true);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
        struct {
            uint64_t in, out;
            uint32_t n, mode;
        } pc{c->addr + off, c->addr + off + in_bytes, n, mode};
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), &pc);
        vkCmdDispatch(cmd, (n + 63) / 64, 1, 1);
        check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
        submit_and_wait();
        vkDestroyPipeline(dev, p, nullptr);
        read(c, off + in_bytes, out.data(), size_t(n) * 4);
    } catch (...) {
        release(c, off, bytes);
        throw;
    }
    release(c, off, bytes);
    return out;
}

namespace {
float bits_f(uint32_t b) { float x; std::memcpy(&x, &b, 4); return x; }
uint32_t f_bits(float x) { uint32_t b; std::memcpy(&b, &x, 4); return b; }
double bits_d(uint64_t b) { double x; std::memcpy(&x, &b, 8); return x; }
// Compares a probe's results with the host's (bit for bit; any NaN matches any NaN) and says
// how it went.
bool judge(const std::vector<float>& got, const std::vector<float>& want, const std::function<std::string(size_t)>& what,
           std::string& report) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i)
        if (f_bits(got[i]) != f_bits(want[i]) && !(std::isnan(got[i]) && std::isnan(want[i])))
            if (bad++ == 0) first = i;
    if (bad == 0) {
        report = "all " + std::to_string(want.size()) + " probe cases exact";
        return true;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, " = %a, want %a", got[first], want[first]);
    report = std::to_string(bad) + "/" + std::to_string(want.size()) + " probe cases wrong (first: " + what(first) + buf + ")";
    return false;
}
}  // namespace

// The native-math probes: shaders/fma_probe.comp with the native paths on, on inputs where
// the native and the emulated forms differ when the device's operation is not the IEEE one
// (fused vs unfused fma; double -> float rounding: ties, subnormals, overflow), plus edge
// cases, compared with the host bit for bit. A device that gets every case right runs the
// shaders with the native form; any other keeps the emulation.
void Context::probe_native() {
    auto f = bits_f;
    // fma
    std::vector<float> in;
    auto add = [&](float a, float b, float c) { in.insert(in.end(), {a, b, c}); };
    const float e23 = f(0x34000000u);  // 2^-23
    add(1.0f + e23, 1.0f + e23, -(1.0f + 2 * e23));   // fused 2^-46, unfused 0
    add(1.0f + e23, 1.0f - e23, -1.0f);               // fused -2^-46, unfused 0
    add(f(0x3f800001u), f(0x3f7ffffeu), -f(0x3f7fffffu));
    add(f(0x00800000u), 0.5f, 0.0f);                  // subnormal result
    add(f(0x00800001u), f(0x3f000001u), -f(0x00400000u));  // subnormal, product not exact in float
    add(f(0x00000001u), 0.5f, 0.0f);                  // halfway below the smallest subnormal
    add(f(0x00000003u), 0.5f, -0.0f);
    add(-0.0f, 1.0f, 0.0f);                           // +0
    add(-0.0f, 1.0f, -0.0f);                          // -0
    add(1.0f, -1.0f, 1.0f);                           // exact cancellation: +0
    add(f(0x7f7fffffu), 2.0f, -f(0x7f7fffffu));       // product overflows float: fused finite
    add(f(0x5f800000u), f(0x5f800000u), -f(0x7f7fffffu));  // 2^64 * 2^64 - max
    add(f(0x7f800000u), 0.0f, 1.0f);                  // inf * 0: NaN
    add(f(0x7f800000u), 1.0f, -f(0x7f800000u));       // inf - inf: NaN
    add(3.0f, f(0x7fc00000u), 1.0f);                  // NaN propagates
    add(f(0x7f800000u), 2.0f, 1.0f);                  // inf
    uint32_t s = 0x12345678u;
    auto rnd = [&]() { s = s * 1664525u + 1013904223u; return s >> 3; };
    for (int i = 0; i < 240; ++i) {  // random operands with cancellation: c near -a*b
        const float a = f((rnd() & 0x007fffffu) | ((rnd() & 1u) << 31) | ((rnd() % 40u + 107u) << 23));
        const float b = f((rnd() & 0x007fffffu) | ((rnd() & 1u) << 31) | ((rnd() % 40u + 107u) << 23));
        const float c = -(a * b) * (1.0f + float(int(rnd() % 64u) - 32) * e23);
        add(a, b, c);
    }
    const uint32_t nf = uint32_t(in.size() / 3);
    std::vector<float> want(nf);
    for (uint32_t i = 0; i < nf; ++i) want[i] = std::fma(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
    std::string fma_rep, d2f_rep;
    try {
        native_fma = judge(run_probe(0, in.data(), in.size() * 4, nf), want, [&](size_t i) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "fma(%a, %a, %a)", in[3 * i], in[3 * i + 1], in[3 * i + 2]);
            return std::string(buf);
        }, fma_rep);
    } catch (const std::exception& e) {
        native_fma = false;
        fma_rep = std::string("probe failed: ") + e.what();
    }
    // double -> float
    std::vector<double> din;
    for (uint64_t fb : {0x3f800000ull, 0x3f800001ull, 0x00000001ull, 0x00000002ull, 0x00000003ull, 0x007fffffull,
                        0x00800000ull, 0x7f7ffffeull, 0x7f7fffffull}) {
        const double lo = double(f(uint32_t(fb))), hi = double(std::nextafter(f(uint32_t(fb)), INFINITY));
        const double mid = (lo + hi) * 0.5;  // exact: a tie
        for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), lo}) {
            din.push_back(v);
            din.push_back(-v);
        }
    }
    for (double v : {0.0, -0.0, double(INFINITY), -double(INFINITY), bits_d(0x7ff8000000000000ull), 1e300, -1e300, 1e-300,
                     -1e-300, 0x1p-150, 0x1p-149 * 0.75, 0x1p128, 0x1.ffffffp127, 0x1.fffffefffffffp127})
        din.push_back(v);
    for (int i = 0; i < 400; ++i) {  // random mantissas over the float range and beyond
        const uint64_t m = (uint64_t(rnd()) << 24 ^ rnd()) & 0xFFFFFFFFFFFFFull;
        const uint64_t e = 1023 - 160 + rnd() % 300;
        din.push_back(bits_d((uint64_t(rnd() & 1u) << 63) | (e << 52) | m));
    }
    const uint32_t nd = uint32_t(din.size());
    std::vector<float> dwant(nd);
    for (uint32_t i = 0; i < nd; ++i) dwant[i] = float(din[i]);
    try {
        native_d2f = judge(run_probe(1, din.data(), din.size() * 8, nd), dwant, [&](size_t i) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "float(%a)", din[i]);
            return std::string(buf);
        }, d2f_rep);
    } catch (const std::exception& e) {
        native_d2f = false;
        d2f_rep = std::string("probe failed: ") + e.what();
    }
    auto over = [](const char* env, bool& flag, std::string& rep) {
        if (const char* v = std::getenv(env)) {
            if (std::string(v) == "native") flag = true, rep += "; " + std::string(env) + "=native forces native";
            else if (std::string(v) == "emulated") flag = false, rep += "; " + std::string(env) + "=emulated forces emulation";
        }
    };
    fma_rep = "fma: " + fma_rep + (native_fma ? ": native" : ": emulated");
    d2f_rep = "double->float: " + d2f_rep + (native_d2f ? ": native" : ": emulated");
    over("LOCKSTEP_VK_FMA", native_fma, fma_rep);
    over("LOCKSTEP_VK_D2F", native_d2f, d2f_rep);
    probe_report = fma_rep + "; " + d2f_rep;
    if (std::getenv("LOCKSTEP_VK_VERBOSE")) std::fprintf(stderr, "vulkan: %s: %s; memory %s\n", name.c_str(), probe_report.c_str(), host_mapped_ ? "mapped (device-local, host-cached)" : "device-local, copies through a staging buffer");
}
}  // namespace ls::vk
