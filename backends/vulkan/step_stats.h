// Where a Vulkan step's time goes (LOCKSTEP_VK_VERBOSE=1), for the GPU sessions that have
// minutes to find out: per graph, the host's time to plan and record the command buffer, the
// time from submit to the fence, the GPU's time between the buffer's first and last
// timestamps, and the host copies between graphs (inputs up, logits down; where the memory
// is not mapped, a read is a submit of its own, and small writes go with the next graph).
// Whether a step is bound by the host, by the copies, or by the GPU; and the last graph's
// dispatches and barriers. The first graph is left out of the averages: it builds the
// pipelines, and the weights' copies come before it.
#pragma once
#include <cstddef>
#include <cstdio>

namespace ls::vk {

struct StepStats {
    struct Copies {
        size_t uploads = 0, downloads = 0, fills = 0;
        size_t up_bytes = 0, down_bytes = 0;
        double up_s = 0, down_s = 0, fill_s = 0;
    };
    size_t graphs = 0, timed = 0;  // counted after the first graph
    double record_s = 0, submit_s = 0, gpu_s = 0;
    Copies copies, pending;  // pending: since the last graph
    size_t last_dispatches = 0, last_barriers = 0, last_nodes = 0;  // set by every graph
    bool first = true;

    // One graph ran (LOCKSTEP_VK_VERBOSE): rec_s host seconds to plan and record, sub_s to its
    // fence, gpu seconds between its timestamps (< 0: none).
    void add_graph(double rec_s, double sub_s, double gpu) {
        const Copies c = pending;
        pending = Copies{};
        if (first) {
            first = false;
            return;
        }
        ++graphs;
        record_s += rec_s, submit_s += sub_s;
        if (gpu >= 0) gpu_s += gpu, ++timed;
        copies.uploads += c.uploads, copies.downloads += c.downloads, copies.fills += c.fills;
        copies.up_bytes += c.up_bytes, copies.down_bytes += c.down_bytes;
        copies.up_s += c.up_s, copies.down_s += c.down_s, copies.fill_s += c.fill_s;
    }

    void print(std::FILE* f, bool mapped) const {
        std::fprintf(f, "vulkan backend: %zu dispatches and %zu barriers in the last graph (%zu nodes)\n", last_dispatches,
                     last_barriers, last_nodes);
        if (graphs == 0) return;
        const Copies& c = copies;
        const double g = double(graphs), us = 1e6;
        std::fprintf(f, "vulkan backend: %zu graphs after the first; a graph: host plan and record %.1f us, submit to fence %.1f us", graphs,
                     record_s / g * us, submit_s / g * us);
        if (timed) std::fprintf(f, " (GPU %.1f us, timestamps)", gpu_s / double(timed) * us);
        std::fprintf(f, "\n");
        std::fprintf(f, "vulkan backend: copies per graph (%s): %.2f up (%.0f bytes, %.1f us), %.2f down (%.0f bytes, %.1f us), %.2f fills (%.1f us)\n",
                     mapped ? "mapped memory" : "through the staging buffer: small writes go with the next graph, the rest a submit each", double(c.uploads) / g,
                     double(c.up_bytes) / g, c.up_s / g * us, double(c.downloads) / g, double(c.down_bytes) / g, c.down_s / g * us,
                     double(c.fills) / g, c.fill_s / g * us);
    }
};

}  // namespace ls::vk
