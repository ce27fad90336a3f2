#include "tools/server/metrics.h"

#include <cstdio>

namespace ls::server {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, const std::string& value,
            const char* labels = "") {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    out += std::string(name) + labels + " " + value + "\n";
}

}  // namespace

std::string Metrics::render(int n_slots) const {
    std::string o;
    o += "# HELP lockstep_http_requests_total HTTP requests answered, by status class\n"
         "# TYPE lockstep_http_requests_total counter\n";
    for (int c = 2; c <= 5; ++c)
        o += "lockstep_http_requests_total{status=\"" + std::to_string(c) + "xx\"} " +
             std::to_string(http_by_class[size_t(c)].load()) + "\n";
    metric(o, "lockstep_requests_finished_total", "counter", "generation requests finished (stop or length)",
           std::to_string(requests_finished.load()));
    metric(o, "lockstep_requests_cancelled_total", "counter", "generation requests cancelled by a client disconnect",
           std::to_string(requests_cancelled.load()));
    metric(o, "lockstep_requests_rejected_total", "counter", "generation requests refused with 503: slots and queue full",
           std::to_string(requests_rejected.load()));
    metric(o, "lockstep_prompt_tokens_total", "counter", "prompt tokens of admitted requests", std::to_string(prompt_tokens.load()));
    metric(o, "lockstep_prompt_tokens_reused_total", "counter", "prompt tokens taken from a slot's cache instead of evaluated",
           std::to_string(prompt_tokens_reused.load()));
    metric(o, "lockstep_images_encoded_total", "counter", "prompt images run through the vision encoder",
           std::to_string(images_encoded.load()));
    metric(o, "lockstep_images_reused_total", "counter", "prompt images found encoded in a slot's cache (not encoded again)",
           std::to_string(images_reused.load()));
    metric(o, "lockstep_generated_tokens_total", "counter", "tokens generated", std::to_string(generated_tokens.load()));
    metric(o, "lockstep_spec_guessed_total", "counter", "speculation: prompt-lookup guesses checked", std::to_string(spec_guessed.load()));
    metric(o, "lockstep_spec_accepted_total", "counter", "speculation: guesses the sampler confirmed", std::to_string(spec_accepted.load()));
    metric(o, "lockstep_queue_length", "gauge", "requests waiting for a slot", std::to_string(queue_length.load()));
    metric(o, "lockstep_slots_busy", "gauge", "slots serving a request", std::to_string(slots_busy.load()));
    metric(o, "lockstep_slots_total", "gauge", "slots (-np)", std::to_string(n_slots));
    metric(o, "lockstep_steps_total", "counter", "engine steps (one batch each)", std::to_string(steps.load()));
    metric(o, "lockstep_step_tokens_total", "counter", "tokens evaluated by engine steps", std::to_string(step_tokens.load()));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", double(step_us.load()) * 1e-6);
    metric(o, "lockstep_step_seconds_total", "counter", "time spent in engine steps", buf);
    const uint64_t n = steps.load();
    std::snprintf(buf, sizeof buf, "%.6f", n ? double(step_us.load()) * 1e-6 / double(n) : 0.0);
    metric(o, "lockstep_step_seconds_mean", "gauge", "mean time of an engine step", buf);
    return o;
}

}  // namespace ls::server
