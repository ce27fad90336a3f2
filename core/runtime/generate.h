// Generation: continue a sequence from a prompt, reusing what the session already caches.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/sampling/sampler.h"
#include "core/runtime/session.h"
#include "core/runtime/speculative.h"
#include "core/text/tokenizer.h"

namespace ls {

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated ids (an end-of-generation token is not included)
    int64_t n_reused = 0;         // prompt tokens whose K/V were already cached
    int64_t n_evaluated = 0;      // prompt tokens evaluated
    double prompt_s = 0, gen_s = 0;
    bool stopped_at_eog = false, context_full = false;
    SpecStats spec;               // this call's verification steps (speculative decoding)
};

// One slot of the generation loop (DecodeLoop, decode_loop.h), run to its end.
// Makes sequence `seq` hold `prompt` (the whole text so far, e.g. a chat transcript),
// keeping the longest cached prefix that the KV memory can restore (Session::reuse_prefix)
// and evaluating only the rest, then samples up to n_predict tokens (-1: until an
// end-of-generation token or a full context), streaming complete UTF-8 text to `on_text`.
// The logits are those of a fresh evaluation of the prompt: reuse changes the cost only.
// A prompt that leaves no room in the context is an error. Control tokens stream no text,
// except those in `reply`'s markers (a chat template's reasoning markers, for ReplySplitter).
//
// With `spec`, each step evaluates the sampled token together with the speculator's guesses
// of what follows in one ubatch, samples position after position from those logits while the
// sampler picks the guess, and rolls the sequence back past the first mismatch (seq_rm; on
// models with recurrent layers, back to a state checkpoint taken before the step and the kept
// tokens evaluated again). Sampling draws are keyed by position and the logits of a position
// do not depend on the ubatch it ran in, so the tokens, the text and what the sequence holds
// afterwards are those of plain decoding; only the speed differs.
//
GenerateResult generate(Session& s, const Tokenizer& tok, Sampler& sampler, const std::vector<int32_t>& prompt,
                        int64_t n_predict, int seq, const std::function<void(const std::string&)>& on_text,
                        const ChatTemplate* reply = nullptr, Speculator* spec = nullptr);

}  // namespace ls
