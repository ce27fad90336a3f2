#include "tools/server/api_request.h"

#include <optional>

#include "tools/server/data_url.h"

#include "core/chat/chat_format.h"
#include "core/chat/tool_grammar.h"
#include "core/grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <limits>
#include <random>

namespace ls::server {

using nlohmann::json;

using nlohmann::ordered_json;

namespace {

std::string type_name(const json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    return "an object";
}

// A field that is absent or null keeps its default.
const json* field(const json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

double number(const json& body, const char* key, double def, double lo, double hi) {
    const json* v = field(body, key);
    if (!v) return def;
    if (!v->is_number()) throw ApiError(400, std::string("'") + key + "' must be a number, got " + type_name(*v), key);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw ApiError(400, std::string("'") + key + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + v->dump(), key);
    return x;
}

int64_t integer(const json& body, const char* key, int64_t def, int64_t lo, int64_t hi) {
    const json* v = field(body, key);
    if (!v) return def;
    if (!v->is_number_integer())
        throw ApiError(400, std::string("'") + key + "' must be an integer, got " + (v->is_number() ? v->dump() : type_name(*v)), key);
    const bool neg = v->is_number_unsigned() ? false : v->get<int64_t>() < 0;
    if (!neg && v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw ApiError(400, std::string("'") + key + "' is out of range: " + v->dump(), key);
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi)
        throw ApiError(400, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v->dump(), key);
    return x;
}

bool boolean(const json& body, const char* key, bool def) {
    const json* v = field(body, key);
    if (!v) return def;
    if (!v->is_boolean()) throw ApiError(400, std::string("'") + key + "' must be a boolean, got " + type_name(*v), key);
    return v->get<bool>();
}

// Parameters of OpenAI's and llama-server's APIs that change what is generated and that this
// server does not implement (yet): a request that sets one to anything but its neutral value
// (what clients that send every field send: mirostat 0, typical_p 1, ...) is refused naming
// it, never served as if the field were absent.
struct Unimplemented {
    const char* name;
    json neutral;  // null: no value is neutral
    const char* what;
};
const Unimplemented kUnimplemented[] = {
    {"min_tokens", 0, "a minimum length"},
    {"typical_p", 1, "typical sampling"},
    {"tfs_z", 1, "tail-free sampling"},
    {"top_n_sigma", -1, "top-n-sigma sampling"},
    {"mirostat", 0, "mirostat sampling"},
    {"dry_multiplier", 0, "DRY repetition penalties"},
    {"xtc_probability", 0, "XTC sampling"},
    {"samplers", nullptr, "a custom sampler order"},
    {"n_probs", 0, "llama-server's n_probs (use logprobs / top_logprobs)"},
    {"post_sampling_probs", false, "post-sampling probabilities"},
    {"prediction", nullptr, "predicted outputs"},
    {"audio", nullptr, "audio output"},
    {"modalities", json::array({"text"}), "output modalities other than text"},
};

void refuse_unimplemented(const json& body) {
    for (const Unimplemented& u : kUnimplemented) {
        const json* v = field(body, u.name);
        if (!v) continue;
        const bool neutral = !u.neutral.is_null() && (u.neutral.is_number() && v->is_number() ? u.neutral.get<double>() == v->get<double>()
                                                                                             : *v == u.neutral);
        if (!neutral)
            throw ApiError(400, std::string("'") + u.name + "' (" + u.what + ") is not supported by this server", u.name,
                           "unsupported_parameter");
    }
}

// Bounds on what a request may ask the server to hold or check per token.
constexpr size_t kMaxLogitBias = 1024, kMaxMessages = 4096;

// Structured output: at most one of response_format (OpenAI: json_object, json_schema),
// json_schema and grammar (llama-server's: a schema, GBNF text). The grammar constrains
// sampling (core/sampling/grammar.cpp); what cannot be compiled is a 400 naming the field.
void parse_constraint(const json& body, const ApiContext& ctx, GenRequest& r) {
    std::string gbnf, from;
    auto compile_schema = [&](const json& schema, const char* param) {
        if (!schema.is_object() && !schema.is_boolean()) throw ApiError(400, std::string("'") + param + "': a JSON schema must be an object", param);
        try {
            gbnf = grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()));
        } catch (const grammar::Error& e) {
            throw ApiError(400, std::string("'") + param + "': " + e.what(), param, "invalid_schema");
        }
        from = param;
    };
    auto once = [&](const char* param) {
        if (!from.empty())
            throw ApiError(400, std::string("'") + param + "' and '" + from + "' both constrain the output: give one", param);
    };
    if (const json* rf = field(body, "response_format")) {
        if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string())
            throw ApiError(400, "'response_format' must be an object with a string 'type'", "response_format");
        const std::string type = (*rf)["type"];
        if (type == "json_object") {
            // (llama-server also takes a schema here.)
            if (const json* sc = field(*rf, "schema"))
                compile_schema(*sc, "response_format");
            else
                gbnf = grammar::json_object_gbnf(), from = "response_format";
        } else if (type == "json_schema") {
            const json* js = field(*rf, "json_schema");
            if (!js || !js->is_object()) throw ApiError(400, "'response_format': json_schema needs a 'json_schema' object", "response_format");
            const json* sc = field(*js, "schema");
            compile_schema(sc ? *sc : json::object(), "response_format");
        } else if (type != "text") {
            throw ApiError(400, "'response_format': type must be \"text\", \"json_object\" or \"json_schema\", got \"" + type + "\"",
                           "response_format");
        }
    }
    if (const json* js = field(body, "json_schema")) {
        once("json_schema");
        compile_schema(*js, "json_schema");
    }
    if (const json* g = field(body, "grammar"); g && !(g->is_string() && g->get_ref<const std::string&>().empty())) {
        once("grammar");
        if (!g->is_string()) throw ApiError(400, "'grammar' must be a string (GBNF)", "grammar");
        gbnf = g->get<std::string>();
        from = "grammar";
    }
    if (from.empty()) return;
    if (!ctx.grammar_vocab) throw ApiError(400, "structured output is not available on this server", from);
    try {
        r.job.sampling.grammar = grammar::Grammar::parse(gbnf);
    } catch (const grammar::Error& e) {
        throw ApiError(400, "'" + from + "': " + e.what(), from, "invalid_grammar");
    }
    r.job.sampling.grammar_vocab = ctx.grammar_vocab;
}

// The fields both endpoints share: sampling, length, stop strings, streaming.
void parse_common(const json& body, const ApiContext& ctx, GenRequest& r) {
    refuse_unimplemented(body);
    SamplerParams& s = r.job.sampling;
    // What a request leaves out comes from the server's flags, as with llama-server.
    const SamplerParams& d = ctx.defaults;
    s.temp = float(number(body, "temperature", d.temp, 0.0, 2.0));
    s.top_p = float(number(body, "top_p", d.top_p, 0.0, 1.0));
    if (s.top_p <= 0.0f) throw ApiError(400, "'top_p' must be greater than 0", "top_p");
    s.top_k = int(integer(body, "top_k", d.top_k, 0, std::numeric_limits<int32_t>::max()));
    s.min_p = float(number(body, "min_p", d.min_p, 0.0, 1.0));
    s.repeat_penalty = float(number(body, "repeat_penalty", d.repeat_penalty, 0.0, 10.0));
    if (s.repeat_penalty <= 0.0f) throw ApiError(400, "'repeat_penalty' must be greater than 0", "repeat_penalty");
    s.repeat_last_n = int(integer(body, "repeat_last_n", d.repeat_last_n, -1, std::numeric_limits<int32_t>::max()));
    s.frequency_penalty = float(number(body, "frequency_penalty", d.frequency_penalty, -2.0, 2.0));
    s.presence_penalty = float(number(body, "presence_penalty", d.presence_penalty, -2.0, 2.0));
    if (const json* seed = field(body, "seed")) {
        if (!seed->is_number_integer()) throw ApiError(400, "'seed' must be an integer, got " + type_name(*seed), "seed");
        s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : uint64_t(seed->get<int64_t>());
    } else {
        s.seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    }
    // n choices take n slots at once.
    if (const int64_t n = integer(body, "n", 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
        n < 1 || n > ctx.n_slots)
        throw ApiError(400, "'n' must be between 1 and " + std::to_string(ctx.n_slots) + " (the server's slots, --parallel), got " +
                                std::to_string(n),
                       "n");
    else
        r.job.n = int(n);
    parse_constraint(body, ctx, r);
    if (const json* bo = field(body, "best_of"); bo && !(bo->is_number_integer() && bo->get<int64_t>() == 1))
        throw ApiError(400, "only best_of = 1 is supported", "best_of");

    if (const json* lb = field(body, "logit_bias")) {
        if (!lb->is_object()) throw ApiError(400, "'logit_bias' must be an object of token id -> bias, got " + type_name(*lb), "logit_bias");
        if (lb->size() > kMaxLogitBias)
            throw ApiError(400, "'logit_bias' has " + std::to_string(lb->size()) + " entries; at most " + std::to_string(kMaxLogitBias),
                           "logit_bias");
        for (auto it = lb->begin(); it != lb->end(); ++it) {
            int64_t id = -1;
            try {
                size_t used = 0;
                id = std::stoll(it.key(), &used);
                if (used != it.key().size()) id = -1;
            } catch (const std::exception&) {
                id = -1;
            }
            if (id < 0 || id >= ctx.tok->n_vocab())
                throw ApiError(400, "'logit_bias' key '" + it.key() + "' is not a token id in [0, " + std::to_string(ctx.tok->n_vocab()) + ")",
                               "logit_bias");
            // (A value is printed only once it is known to be a number: dumping an arbitrary
            // client value would recurse as deep as its nesting.)
            if (!it->is_number())
                throw ApiError(400, "'logit_bias' values must be numbers in [-100, 100], got " + type_name(*it) + " for token " + it.key(),
                               "logit_bias");
            if (!std::isfinite(it->get<double>()) || it->get<double>() < -100 || it->get<double>() > 100)
                throw ApiError(400, "'logit_bias' values must be numbers in [-100, 100], got " + it->dump() + " for token " + it.key(),
                               "logit_bias");
            s.logit_bias.emplace_back(int32_t(id), float(it->get<double>()));
        }
    }

    // llama.cpp's extension: generate past the end-of-generation tokens (benchmarks).
    if (boolean(body, "ignore_eos", false))
        for (int32_t id : ctx.eog_ids) s.logit_bias.emplace_back(id, -std::numeric_limits<float>::infinity());

    if (const json* st = field(body, "stop")) {
        if (st->is_string()) {
            r.job.stop.push_back(st->get<std::string>());
        } else if (st->is_array()) {
            for (const json& x : *st) {
                if (!x.is_string()) throw ApiError(400, "'stop' must be a string or an array of strings", "stop");
                r.job.stop.push_back(x.get<std::string>());
            }
        } else {
            throw ApiError(400, "'stop' must be a string or an array of strings, got " + type_name(*st), "stop");
        }
        if (r.job.stop.size() > 16) throw ApiError(400, "'stop' takes at most 16 strings", "stop");
        for (const auto& x : r.job.stop) {
            if (x.empty()) throw ApiError(400, "'stop' strings must not be empty", "stop");
            // Each token's partial-match check costs the stop strings' length: keep it bounded.
            if (x.size() > 1024) throw ApiError(400, "'stop' strings may be at most 1024 bytes long", "stop");
        }
    }

    r.stream = boolean(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw ApiError(400, "'stream_options' must be an object, got " + type_name(*so), "stream_options");
        if (!r.stream) throw ApiError(400, "'stream_options' is only allowed with stream = true", "stream_options");
        r.include_usage = boolean(*so, "include_usage", false);
    }
}

void set_max_tokens(const json& body, const char* key, GenRequest& r) {
    const json* v = field(body, key);
    if (!v) return;
    // -1 (llama.cpp's "until the end") is accepted; otherwise at least one token.
    const int64_t n = integer(body, key, -1, -1, std::numeric_limits<int32_t>::max());
    if (n == 0) throw ApiError(400, std::string("'") + key + "' must be at least 1", key);
    r.job.max_tokens = n;
}

// A prompt text that cannot fit: every token is at most max_piece_bytes long, so a text of
// more than n_ctx * max_piece_bytes bytes has n_ctx tokens or more. Checked before the text is
// tokenized, so that a huge prompt costs nothing (exact: it never refuses a prompt that fits).
void check_text_fits(size_t bytes, const ApiContext& ctx, const char* param) {
    if (ctx.max_piece_bytes > 0 && bytes > size_t(ctx.n_ctx) * ctx.max_piece_bytes)
        throw ApiError(400,
                       "the prompt has " + std::to_string(bytes) + " bytes, more than a slot's context of " + std::to_string(ctx.n_ctx) +
                           " tokens can hold (the server's -c)",
                       param, "context_length_exceeded");
}

void check_prompt(const GenRequest& r, const ApiContext& ctx) {
    const int64_t n = int64_t(r.job.prompt.size());
    if (n == 0) throw ApiError(400, "the prompt is empty", r.chat ? "messages" : "prompt");
    if (n >= ctx.n_ctx)
        throw ApiError(400,
                       "the prompt has " + std::to_string(n) + " tokens, which leaves no room in a slot's context of " +
                           std::to_string(ctx.n_ctx) + " tokens (the server's -c)",
                       r.chat ? "messages" : "prompt", "context_length_exceeded");
}

}  // namespace

json parse_json_object(const std::string& body) {
    // Nesting is bounded while parsing: a body nested a million deep is refused at the limit's
    // first step in, not parsed and kept.
    struct TooDeep {};
    const auto depth_limit = [](int depth, json::parse_event_t, json&) {
        if (depth > kMaxJsonDepth) throw TooDeep{};
        return true;
    };
    json j;
    try {
        j = json::parse(body, depth_limit);
    } catch (const TooDeep&) {
        throw ApiError(400, "the JSON body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", "", "json_too_deep");
    } catch (const json::exception& e) {
        // Syntax errors, and numbers no double holds (1e400: nlohmann's out_of_range.406).
        throw ApiError(400, std::string("malformed JSON: ") + e.what());
    }
    if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, got " + type_name(j));
    return j;
}

GenRequest parse_completion(const json& body, const ApiContext& ctx) {
    GenRequest r;
    parse_common(body, ctx, r);
    set_max_tokens(body, "max_tokens", r);
    set_max_tokens(body, "max_completion_tokens", r);
    set_max_tokens(body, "n_predict", r);  // llama-server's name
    // logprobs: the number of most likely alternatives to report per token (OpenAI: 0..5).
    if (const json* lp = field(body, "logprobs")) {
        if (lp->is_boolean()) {
            r.logprobs = lp->get<bool>();
        } else {
            r.top_logprobs = int(integer(body, "logprobs", 0, 0, 20));
            r.logprobs = true;
        }
    }
    const json* p = field(body, "prompt");
    if (!p) throw ApiError(400, "'prompt' is required", "prompt");
    auto from_ids = [&](const json& arr) {
        std::vector<int32_t> ids;
        for (const json& x : arr) {
            if (!x.is_number_integer()) throw ApiError(400, "a token prompt must hold integers only", "prompt");
            const int64_t id = x.get<int64_t>();
            if (id < 0 || id >= ctx.tok->n_vocab())
                throw ApiError(400, "prompt token " + x.dump() + " outside the vocabulary [0, " + std::to_string(ctx.tok->n_vocab()) + ")",
                               "prompt");
            ids.push_back(int32_t(id));
        }
        return ids;
    };
    const json* suffix = field(body, "suffix");
    if (suffix && !suffix->is_string()) throw ApiError(400, "'suffix' must be a string", "suffix");
    if (suffix && !suffix->get_ref<const std::string&>().empty()) {
        // Fill in the middle: prefix, suffix, then the model writes the middle (the
        // prefix-suffix-middle order the code models are trained on, as llama-server's infill).
        const Tokenizer::Fim fim = ctx.tok->fim();
        if (!fim.ok()) throw ApiError(400, "'suffix' needs a model with fill-in-the-middle tokens; this one has none", "suffix");
        const std::string* text = p->is_string() ? &p->get_ref<const std::string&>()
                                  : p->is_array() && p->size() == 1 && (*p)[0].is_string() ? &(*p)[0].get_ref<const std::string&>()
                                                                                             : nullptr;
        if (!text) throw ApiError(400, "with 'suffix', 'prompt' must be a string", "prompt");
        const std::string& sfx = suffix->get_ref<const std::string&>();
        check_text_fits(text->size() + sfx.size(), ctx, "prompt");
        std::vector<int32_t>& ids = r.job.prompt;
        if (ctx.tok->add_bos_default() && ctx.tok->bos() >= 0) ids.push_back(ctx.tok->bos());
        ids.push_back(fim.pre);
        for (int32_t t : ctx.tok->encode(*text, false, false)) ids.push_back(t);
        ids.push_back(fim.suf);
        for (int32_t t : ctx.tok->encode(sfx, false, false)) ids.push_back(t);
        ids.push_back(fim.mid);
    } else if (p->is_string()) {
        check_text_fits(p->get_ref<const std::string&>().size(), ctx, "prompt");
        r.job.prompt = ctx.tok->encode(p->get<std::string>(), ctx.tok->add_bos_default(), true);
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
        r.job.prompt = from_ids(*p);
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
        check_text_fits((*p)[0].get_ref<const std::string&>().size(), ctx, "prompt");
        r.job.prompt = ctx.tok->encode((*p)[0].get<std::string>(), ctx.tok->add_bos_default(), true);
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_array()) {
        r.job.prompt = from_ids((*p)[0]);
    } else if (p->is_array() && p->size() > 1) {
        throw ApiError(400, "one prompt per request: a batch of prompts is not supported", "prompt");
    } else {
        throw ApiError(400, "'prompt' must be a string or an array of token ids", "prompt");
    }
    // echo: the prompt's text before the completion's (its tokens as the tokenizer prints
    // them, without the BOS). Its log-probabilities would need logits of every prompt token,
    // which the engine does not keep: refused by name with logprobs.
    if (boolean(body, "echo", false)) {
        if (r.logprobs) throw ApiError(400, "'echo' with 'logprobs' (the prompt's log-probabilities) is not supported", "echo");
        if (suffix && !suffix->get_ref<const std::string&>().empty())
            throw ApiError(400, "'echo' with 'suffix' is not supported", "echo");
        std::vector<int32_t> shown(r.job.prompt);
        if (!shown.empty() && shown[0] == ctx.tok->bos() && ctx.tok->add_bos_default()) shown.erase(shown.begin());
        r.echo = ctx.tok->decode(shown, false);
    }
    r.job.sampling.want_logprobs = r.logprobs;
    r.job.sampling.n_logprobs = r.top_logprobs;
    check_prompt(r, ctx);
    return r;
}

namespace {

// An image_url part ({"type": "image_url", "image_url": {"url": "data:..."}} or the URL as a
// string): its image, decoded; every problem a 400 naming the part.
image::Rgb8 read_image_part(const json& part, const std::string& where, const ApiContext& ctx) {
    if (!ctx.vision)
        throw ApiError(400, where + ".content: this server takes no images (it was started without the model's projector, --mmproj)",
                       "messages");
    const json* iu = field(part, "image_url");
    const json* url = iu && iu->is_object() ? field(*iu, "url") : iu;
    if (!url || !url->is_string())
        throw ApiError(400, where + ".content: an image_url part must be {\"type\": \"image_url\", \"image_url\": {\"url\": \"data:...\"}}",
                       "messages");
    try {
        return image::decode(decode_data_url(url->get<std::string>()), ctx.image_limits);
    } catch (const std::exception& e) {
        throw ApiError(400, where + ".content: " + e.what(), "messages", "invalid_image");
    }
}

}  // namespace

GenRequest parse_chat(const json& body, const ApiContext& ctx) {
    GenRequest r;
    r.chat = true;
    parse_common(body, ctx, r);
    set_max_tokens(body, "max_tokens", r);
    set_max_tokens(body, "max_completion_tokens", r);
    set_max_tokens(body, "n_predict", r);  // llama-server's name
    r.logprobs = boolean(body, "logprobs", false);
    r.top_logprobs = int(integer(body, "top_logprobs", 0, 0, 20));
    if (r.top_logprobs > 0 && !r.logprobs) throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs");
    if (const json* f = field(body, "functions"); f && !(f->is_array() && f->empty()))
        throw ApiError(400, "'functions' (the deprecated form of tools) is not supported: use 'tools'", "functions");

    // Tools, and which of them the model must call.
    std::vector<chat::ToolSpec> tools;
    ordered_json tools_json;
    if (const json* t = field(body, "tools"); t && !(t->is_array() && t->empty())) {
        if (!t->is_array()) throw ApiError(400, "'tools' must be an array of tool definitions", "tools");
        tools_json = ordered_json::parse(t->dump());
        try {
            tools = chat::tools_from_json(tools_json);
        } catch (const std::invalid_argument& e) {
            throw ApiError(400, std::string("'tools': ") + e.what(), "tools");
        }
    }
    std::string choice = tools.empty() ? "none" : "auto", forced;
    if (const json* tc = field(body, "tool_choice")) {
        if (tc->is_string() && (*tc == "none" || *tc == "auto" || *tc == "required")) {
            choice = tc->get<std::string>();
        } else if (tc->is_object() && tc->value("type", "") == "function" && tc->contains("function") && (*tc)["function"].is_object() &&
                   (*tc)["function"].contains("name") && (*tc)["function"]["name"].is_string()) {
            choice = "function";
            forced = (*tc)["function"]["name"].get<std::string>();
            bool known = false;
            for (const auto& t : tools) known = known || t.name == forced;
            if (!known) throw ApiError(400, "'tool_choice' names the function '" + forced + "', which is not in 'tools'", "tool_choice");
        } else {
            throw ApiError(400, "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                           "tool_choice");
        }
        if (choice != "none" && tools.empty()) throw ApiError(400, "'tool_choice' asks for a tool call, but 'tools' is empty", "tool_choice");
    }
    const bool parallel = boolean(body, "parallel_tool_calls", true);

    const json* msgs = field(body, "messages");
    if (!msgs) throw ApiError(400, "'messages' is required", "messages");
    if (!msgs->is_array() || msgs->empty()) throw ApiError(400, "'messages' must be a non-empty array", "messages");
    if (msgs->size() > kMaxMessages)
        throw ApiError(400, "'messages' has " + std::to_string(msgs->size()) + " entries; at most " + std::to_string(kMaxMessages),
                       "messages");
    size_t text_bytes = 0;
    std::vector<ChatMsg> chat;
    std::vector<image::Rgb8> images;  // the image_url parts, in order
    ordered_json messages = ordered_json::array();
    for (size_t i = 0; i < msgs->size(); ++i) {
        const json& m = (*msgs)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw ApiError(400, where + " must be an object", "messages");
        const json* role = field(m, "role");
        if (!role || !role->is_string()) throw ApiError(400, where + ".role must be a string", "messages");
        std::string rn = role->get<std::string>();
        if (rn == "developer") rn = "system";
        if (rn != "system" && rn != "user" && rn != "assistant" && rn != "tool")
            throw ApiError(400, where + ".role '" + rn + "' is not one of system, developer, user, assistant, tool", "messages");
        const json* calls = field(m, "tool_calls");
        if (calls && !calls->is_null()) {
            if (rn != "assistant") throw ApiError(400, where + ".tool_calls: only an assistant message makes tool calls", "messages");
            if (!calls->is_array()) throw ApiError(400, where + ".tool_calls must be an array", "messages");
            for (const json& c : *calls) {
                const json* fn = c.is_object() ? field(c, "function") : nullptr;
                if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string() ||
                    (fn->contains("arguments") && !(*fn)["arguments"].is_string() && !(*fn)["arguments"].is_object()))
                    throw ApiError(400, where + ".tool_calls entries must be {\"type\": \"function\", \"function\": {\"name\": ..., \"arguments\": ...}}",
                                   "messages");
            }
        }
        if (rn == "tool") {
            const json* id = field(m, "tool_call_id");
            if (id && !id->is_string()) throw ApiError(400, where + ".tool_call_id must be a string", "messages");
        }
        std::string text;
        std::optional<std::string> content_text;  // an array with images: the template gets this text instead
        const json* content = field(m, "content");
        if (!content || content->is_null()) {
            if (rn != "assistant") throw ApiError(400, where + ".content is required", "messages");
        } else if (content->is_string()) {
            text = content->get<std::string>();
        } else if (content->is_array()) {
            bool has_image = false;
            for (const json& part : *content) {
                if (part.is_object() && part.value("type", "") == "image_url") {
                    images.push_back(read_image_part(part, where, ctx));
                    text += kMediaMarker;  // (where the image goes: the template sees text)
                    has_image = true;
                    continue;
                }
                if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") || !part["text"].is_string())
                    throw ApiError(400, where + ".content parts must be {\"type\": \"text\", \"text\": ...} or {\"type\": \"image_url\", \"image_url\": {\"url\": ...}}",
                                   "messages");
                text += part["text"].get<std::string>();
            }
            if (has_image) content_text = text;
        } else {
            throw ApiError(400, where + ".content must be a string or an array of text parts", "messages");
        }
        text_bytes += text.size();
        check_text_fits(text_bytes, ctx, "messages");
        chat.push_back({rn, text});
        ordered_json om = ordered_json::parse(m.dump());
        om["role"] = rn;
        if (!content || content->is_null()) om["content"] = nullptr;
        if (content_text) om["content"] = *content_text;
        messages.push_back(std::move(om));
    }
    // Thinking and reasoning effort, as llama.cpp and vLLM take them: chat_template_kwargs
    // {"enable_thinking": bool, "reasoning_effort": ...} or OpenAI's top-level reasoning_effort.
    ChatOptions opt;
    ordered_json kwargs = ordered_json::object();
    const auto effort = [&](const json& obj, const char* key) {
        if (const json* e = field(obj, key)) {
            if (!e->is_string() || (*e != "low" && *e != "medium" && *e != "high"))
                throw ApiError(400, std::string("'") + key + "' must be \"low\", \"medium\" or \"high\"", key);
            opt.reasoning_effort = e->get<std::string>();
            kwargs["reasoning_effort"] = opt.reasoning_effort;
        }
    };
    effort(body, "reasoning_effort");
    if (const json* kw = field(body, "chat_template_kwargs")) {
        if (!kw->is_object()) throw ApiError(400, "'chat_template_kwargs' must be an object", "chat_template_kwargs");
        for (const auto& [k, v] : kw->items()) kwargs[k] = ordered_json::parse(v.dump());
        if (field(*kw, "enable_thinking")) opt.thinking = boolean(*kw, "enable_thinking", false) ? 1 : 0;
        effort(*kw, "reasoning_effort");
    }
    const bool call_tools = choice != "none";
    std::string text;
    bool add_bos = ctx.tok->add_bos_default();
    const ChatTemplate* reply_markers = nullptr;
    if (ctx.format) {
        chat::ChatInput in;
        in.messages = std::move(messages);
        if (call_tools) in.tools = tools_json;
        in.parallel_tool_calls = parallel;
        in.kwargs = std::move(kwargs);
        in.builtin = opt;
        try {
            text = ctx.format->render(in);
        } catch (const chat::TemplateError& e) {
            throw ApiError(400, std::string("the model's chat template failed on this conversation: ") + e.what(), "messages", "template_error");
        }
        // (A template that writes the BOS itself: not a second one.)
        if (ctx.format->starts_with_bos(text)) add_bos = false;
        reply_markers = &ctx.format->builtin();
    } else {
        if (call_tools) throw ApiError(400, "tool calls need the model's chat template, which this server has not loaded", "tools");
        reply_markers = ctx.chat ? ctx.chat : &chat_template_for(ctx.arch);
        text = format_chat(chat, true, *reply_markers, opt);
    }
    if (images.empty()) {
        r.job.prompt = ctx.tok->encode(text, add_bos, true);
    } else {
        auto ji = std::make_shared<JobImages>();
        try {
            ji->layout = layout_image_prompt(*ctx.tok, *ctx.vision, text, images, add_bos);
        } catch (const std::exception& e) {
            throw ApiError(400, std::string("the conversation's images: ") + e.what(), "messages");
        }
        ji->images = std::move(images);
        if (ctx.encode_images)
            for (const image::Rgb8& im : ji->images) ctx.vision->encode(im);  // (kept by the encoder: only new images take time)
        r.job.prompt = ji->layout.ids;
        r.job.images = std::move(ji);
    }
    if (reply_markers->has_reasoning()) r.job.reply_template = reply_markers;
    if (call_tools) {
        const chat::Format f = ctx.format->tool_format();
        r.tool_format = f == chat::Format::None ? chat::Format::Generic : f;
        r.tools = tools;
        r.parallel_tool_calls = parallel;
        for (std::string_view mk : chat::format_markers(r.tool_format)) r.job.render_markers.emplace_back(mk);
        // Harmony's calls live in its channel headers, which the reasoning splitter would
        // take apart: the tool-call reader splits the reply itself.
        if (r.tool_format == chat::Format::Harmony) r.job.reply_template = nullptr;
        if (choice == "required" || choice == "function") {
            if (r.job.sampling.grammar) throw ApiError(400, "'tool_choice' forces a tool call: it cannot be combined with a grammar or response_format", "tool_choice");
            std::vector<chat::ToolSpec> allowed;
            for (const auto& t : tools)
                if (choice == "required" || t.name == forced) allowed.push_back(t);
            try {
                const std::string gbnf = chat::tool_call_gbnf(r.tool_format, allowed, parallel && choice == "required", chat::schema_rules);
                r.job.sampling.grammar = grammar::Grammar::parse(gbnf);
            } catch (const grammar::Error& e) {
                throw ApiError(400, std::string("'tools': a function's parameters cannot be enforced: ") + e.what(), "tools", "invalid_schema");
            }
            if (!ctx.grammar_vocab) throw ApiError(400, "forced tool calls are not available on this server", "tool_choice");
            r.job.sampling.grammar_vocab = ctx.tool_grammar_vocab ? ctx.tool_grammar_vocab : ctx.grammar_vocab;
        }
    }
    r.job.sampling.want_logprobs = r.logprobs;
    r.job.sampling.n_logprobs = r.top_logprobs;
    check_prompt(r, ctx);
    return r;
}

}  // namespace ls::server
