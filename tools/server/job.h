// A generation request as the engine sees it, and the channel its results come back on: the
// HTTP handler that submitted it waits on the channel, the engine thread pushes to it.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/sampling/sampler.h"
#include "core/vision/image_prompt.h"
#include "tools/server/channel.h"
#include "core/text/chat_template.h"

namespace ls::server {

// A prompt's images: decoded, and where their tokens are (layout.ids is the prompt).
struct JobImages {
    std::vector<image::Rgb8> images;
    ImagePrompt layout;
};

struct JobParams {
    std::vector<int32_t> prompt;  // tokens, BOS included where the model wants it
    // Images in the prompt (null: none): their soft tokens are in `prompt` as their tags; the
    // engine encodes those its slot's cache does not already hold.
    std::shared_ptr<const JobImages> images;
    SamplerParams sampling;       // want_logprobs / n_logprobs for logprobs
    int64_t max_tokens = -1;      // -1: until end of generation or a full context
    std::vector<std::string> stop;
    // A chat whose template marks reasoning in the reply: the reply is read with its special
    // tokens through a ReplySplitter, the content is the text, the reasoning goes apart.
    const ChatTemplate* reply_template = nullptr;
    // Choices (OpenAI's n): the prompt is evaluated once and each choice samples on with its
    // own draw stream (choice k draws with sampling.stream + k). Each takes a slot.
    int n = 1;
    // Control tokens whose text the reply must show (a tool-call format's markers, read by the
    // HTTP side): every other control token stays out of the text.
    std::vector<std::string> render_markers;
};

struct TokenOut {
    int32_t id = 0;
    std::string piece;  // the token's bytes (may be part of a UTF-8 character)
    float logprob = 0;
    std::vector<TokenLogprob> top;
};

struct Usage {
    int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
};

// One message from the engine: new text (whole UTF-8 characters, stop strings held back)
// with the tokens it completes; a choice's last one has `finish` ("stop" or "length"); an
// `error` ends the whole job.
struct JobEvent {
    int choice = 0;  // which of the job's n choices this is about
    std::string text;
    std::string reasoning;  // reply_template: new reasoning text (whole UTF-8 characters)
    std::vector<TokenOut> tokens;
    std::string finish, error;
    Usage usage;  // on the last event
    bool last() const { return !finish.empty() || !error.empty(); }  // (of its choice)
};

using Job = Channel<JobParams, JobEvent>;

}  // namespace ls::server
