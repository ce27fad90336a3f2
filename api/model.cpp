// Models: loading, what they are, their metadata and their tokens.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/runtime/embed.h"
#include "core/runtime/grammar_vocab.h"

namespace ls::capi {

const ModelState::Piece& ModelState::piece(int32_t id, bool render_special) const {
    std::call_once(pieces_once_, [this] {
        const int32_t n = tok->n_vocab();
        for (auto& v : pieces_) v.resize(size_t(n));
        for (int32_t id = 0; id < n; ++id) {
            const std::string plain = tok->token_to_piece(id, false), special = tok->token_to_piece(id, true);
            pieces_[0][size_t(id)] = {uint32_t(blob_.size()), uint32_t(plain.size())};
            blob_ += plain;
            if (special == plain) {
                pieces_[1][size_t(id)] = pieces_[0][size_t(id)];
            } else {
                pieces_[1][size_t(id)] = {uint32_t(blob_.size()), uint32_t(special.size())};
                blob_ += special;
            }
        }
    });
    return pieces_[render_special ? 1 : 0][size_t(id)];
}

std::shared_ptr<const grammar::TokenMask> ModelState::grammar_vocab() const {
    std::call_once(vocab_once_, [this] { vocab_ = ls::grammar_vocab(*tok); });
    return vocab_;
}

const chat::ChatFormat& ModelState::chat_format() const {
    std::lock_guard<std::mutex> lock(chat_mu_);
    if (!chat_) chat_ = std::make_unique<chat::ChatFormat>(chat::ChatFormat::from_model(gguf(), *tok, hp().arch));
    return *chat_;
}

const Model& ModelState::model() const {
    if (!opened.model)
        throw Error(LOCKSTEP_ERR_UNSUPPORTED, "the model was loaded with vocab_only: it has its vocabulary and metadata, no weights");
    return *opened.model;
}

namespace {

const ModelState& state(const lockstep_model* m) { return *need(m, "model")->m; }

std::vector<std::string> split_list(const char* s) {
    std::vector<std::string> v;
    std::string cur;
    for (const char* p = s;; ++p) {
        if (*p == ',' || *p == '\0') {
            const size_t a = cur.find_first_not_of(" \t"), b = cur.find_last_not_of(" \t");
            if (a == std::string::npos) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string("devices: an empty name in '") + s + "'");
            v.push_back(cur.substr(a, b - a + 1));
            cur.clear();
            if (*p == '\0') break;
        } else {
            cur += *p;
        }
    }
    return v;
}

ModelOpenOptions open_options(const lockstep_model_params& p) {
    ModelOpenOptions o;
    o.backend = p.backend ? p.backend : "cpu";
    bool known = false;
    std::string names;
    for (const std::string& n : backend_names()) {
        known = known || n == o.backend;
        names += (names.empty() ? "" : ", ") + n;
    }
    if (!known) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "unknown backend '" + o.backend + "' (choose " + names + ")");
    if (p.device < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "device must be >= 0, got " + std::to_string(p.device));
    o.device = p.device;
    o.threads = p.n_threads;
    if (p.devices && *p.devices) o.devices = split_list(p.devices);
    for (const std::string& d : o.devices) {
        try {
            parse_device_name(d);
        } catch (const std::exception& e) {
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string("devices: ") + e.what());
        }
    }
    if (p.n_gpu_layers < -1) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_gpu_layers must be -1 (all) or >= 0, got " + std::to_string(p.n_gpu_layers));
    o.placement.n_gpu_layers = p.n_gpu_layers < 0 ? PlacementFlags::kAll : p.n_gpu_layers;
    if (p.split_mode < 0 || p.split_mode > 2)
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "split_mode must be 0 (none), 1 (layer) or 2 (row), got " + std::to_string(p.split_mode));
    o.placement.split_layers = p.split_mode != 0;
    o.placement.split_rows = p.split_mode == 2;
    if (p.n_tensor_split < 0 || (p.n_tensor_split > 0 && !p.tensor_split))
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "tensor_split: " + std::to_string(p.n_tensor_split) + " shares at " +
                                                       (p.tensor_split ? "a pointer" : "NULL"));
    for (int32_t i = 0; i < p.n_tensor_split; ++i) {
        if (!(p.tensor_split[i] >= 0.0f)) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "tensor_split: share " + std::to_string(i) + " is negative or NaN");
        o.placement.tensor_split.push_back(double(p.tensor_split[i]));
    }
    if (p.use_mmap < -1 || p.use_mmap > 1)
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "use_mmap must be -1 (auto), 0 or 1, got " + std::to_string(p.use_mmap));
    o.mmap = p.use_mmap;
    return o;
}

std::string value_text(const GgufValue& v) {
    using nlohmann::json;
    if (v.type == GgufType::ARRAY) {
        json a = json::array();
        const size_t n = v.array_size();
        for (size_t i = 0; i < n; ++i) {
            if (v.elem_type == GgufType::STRING) a.push_back(v.strings[i]);
            else if (v.elem_type == GgufType::BOOL) a.push_back(v.ints[i] != 0);
            else if (!v.floats.empty()) a.push_back(v.floats[i]);
            else if (!v.uints.empty()) a.push_back(v.uints[i]);
            else a.push_back(v.ints[i]);
        }
        return a.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    char buf[64];
    if (const auto* s = std::get_if<std::string>(&v.scalar)) return *s;
    if (const auto* b = std::get_if<bool>(&v.scalar)) return *b ? "true" : "false";
    if (const auto* i = std::get_if<int64_t>(&v.scalar)) std::snprintf(buf, sizeof buf, "%" PRId64, *i);
    else if (const auto* u = std::get_if<uint64_t>(&v.scalar)) std::snprintf(buf, sizeof buf, "%" PRIu64, *u);
    else std::snprintf(buf, sizeof buf, v.type == GgufType::F32 ? "%.9g" : "%.17g", std::get<double>(v.scalar));
    return buf;
}

}  // namespace
}  // namespace ls::capi

using namespace ls;
using namespace ls::capi;

extern "C" {

LOCKSTEP_API lockstep_model_params lockstep_model_default_params(void) {
    lockstep_model_params p;
    std::memset(&p, 0, sizeof p);
    p.backend = "cpu";
    p.n_gpu_layers = -1;
    p.split_mode = 1;
    p.use_mmap = -1;
    return p;
}

LOCKSTEP_API int lockstep_model_load(const char* path, const lockstep_model_params* params, lockstep_model** model) {
    return guarded("lockstep_model_load", [&] {
        need(model, "model");
        *model = nullptr;
        need(path, "path");
        const ModelOpenOptions o = open_options(params ? *params : lockstep_model_default_params());
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) throw Error(LOCKSTEP_ERR_IO, std::string("model file not found: ") + path);
        if (!std::filesystem::is_regular_file(path, ec)) throw Error(LOCKSTEP_ERR_IO, std::string("not a file: ") + path);
        auto st = std::make_shared<ModelState>();
        const lockstep_model_params& p = params ? *params : lockstep_model_default_params();
        if (p.vocab_only) {
            // The metadata and the tokenizer only: no device opened, no tensor read or checked
            // (llama.cpp's vocab_only), so a file of an architecture lockstep cannot run still
            // tokenizes.
            st->vocab_file = GgufFile::open(path);
            const GgufFile& f = *st->vocab_file;
            Hparams& hp = st->vocab_hp;
            hp.arch = f.get_string("general.architecture");
            hp.n_ctx_train = f.get_int(hp.arch + ".context_length", 0);
            hp.n_embd = f.get_int(hp.arch + ".embedding_length", 0);
            hp.n_layer = f.get_int(hp.arch + ".block_count", 0);
            st->tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(f));
            hp.n_vocab = st->tok->n_vocab();
        } else {
            st->opened = open_model(path, o);
            st->tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(st->model().gguf()));
        }
        *model = new lockstep_model{std::move(st)};
    });
}

LOCKSTEP_API void lockstep_model_free(lockstep_model* model) { delete model; }

LOCKSTEP_API int32_t lockstep_model_n_vocab(const lockstep_model* model) {
    return guarded_value("lockstep_model_n_vocab", int32_t(-1), [&] { return int32_t(state(model).hp().n_vocab); });
}

LOCKSTEP_API int64_t lockstep_model_n_ctx_train(const lockstep_model* model) {
    return guarded_value("lockstep_model_n_ctx_train", int64_t(-1), [&] { return state(model).hp().n_ctx_train; });
}

LOCKSTEP_API int64_t lockstep_model_n_embd(const lockstep_model* model) {
    return guarded_value("lockstep_model_n_embd", int64_t(-1), [&] { return state(model).hp().n_embd; });
}

LOCKSTEP_API int32_t lockstep_model_n_layer(const lockstep_model* model) {
    return guarded_value("lockstep_model_n_layer", int32_t(-1), [&] { return int32_t(state(model).hp().n_layer); });
}

LOCKSTEP_API int32_t lockstep_model_has_logits(const lockstep_model* model) {
    return guarded_value("lockstep_model_has_logits", int32_t(-1), [&] { return int32_t(state(model).model().hparams().has_logits ? 1 : 0); });
}

LOCKSTEP_API int32_t lockstep_model_is_recurrent(const lockstep_model* model) {
    return guarded_value("lockstep_model_is_recurrent", int32_t(-1), [&] {
        const auto& layers = state(model).model().hparams().layers;
        return int32_t(!layers.empty() && std::all_of(layers.begin(), layers.end(), [](const LayerParams& l) { return l.recurrent; }));
    });
}

LOCKSTEP_API int32_t lockstep_model_is_hybrid(const lockstep_model* model) {
    return guarded_value("lockstep_model_is_hybrid", int32_t(-1), [&] {
        const auto& layers = state(model).model().hparams().layers;
        const auto n = std::count_if(layers.begin(), layers.end(), [](const LayerParams& l) { return l.recurrent; });
        return int32_t(n > 0 && size_t(n) < layers.size());
    });
}

LOCKSTEP_API int32_t lockstep_model_vocab_only(const lockstep_model* model) {
    return guarded_value("lockstep_model_vocab_only", int32_t(-1), [&] { return int32_t(state(model).vocab_only() ? 1 : 0); });
}

LOCKSTEP_API int32_t lockstep_model_pooling(const lockstep_model* model) {
    return guarded_value("lockstep_model_pooling", int32_t(-1), [&] { return int32_t(model_pooling(state(model).gguf(), state(model).hp().arch)); });
}

LOCKSTEP_API int64_t lockstep_model_size(const lockstep_model* model) {
    return guarded_value("lockstep_model_size", int64_t(-1), [&] { return int64_t(state(model).gguf().size()); });
}

LOCKSTEP_API int32_t lockstep_model_meta_count(const lockstep_model* model) {
    return guarded_value("lockstep_model_meta_count", int32_t(-1), [&] { return int32_t(state(model).gguf().metadata().size()); });
}

LOCKSTEP_API int lockstep_model_meta_key(const lockstep_model* model, int32_t i, char* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_model_meta_key", [&] {
        const auto& kv = state(model).gguf().metadata();
        if (i < 0 || size_t(i) >= kv.size())
            throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "key " + std::to_string(i) + " outside [0, " + std::to_string(kv.size()) + ")");
        const std::string& k = kv[size_t(i)].first;
        put_bytes(k.data(), k.size(), buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_model_meta_get(const lockstep_model* model, const char* key, char* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_model_meta_get", [&] {
        const ModelState& m = state(model);
        need(key, "key");
        const GgufValue* v = m.gguf().find(key);
        if (!v) throw Error(LOCKSTEP_ERR_NOT_FOUND, std::string("the model has no key '") + key + "'");
        const std::string text = value_text(*v);
        put_bytes(text.data(), text.size(), buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_model_chat_template(const lockstep_model* model, const char* name, char* buf, size_t buf_len, size_t* n_out) {
    return guarded("lockstep_model_chat_template", [&] {
        const ModelState& m = state(model);
        const std::string key = name ? std::string("tokenizer.chat_template.") + name : std::string("tokenizer.chat_template");
        const GgufValue* v = m.gguf().find(key);
        if (!v) throw Error(LOCKSTEP_ERR_NOT_FOUND, "the model has no chat template (" + key + ")");
        const std::string src = m.gguf().get_string(key);
        put_bytes(src.data(), src.size(), buf, buf_len, n_out);
    });
}

LOCKSTEP_API int32_t lockstep_token_bos(const lockstep_model* model) {
    return guarded_value("lockstep_token_bos", int32_t(-1), [&] { return state(model).tok->bos(); });
}

LOCKSTEP_API int32_t lockstep_token_eos(const lockstep_model* model) {
    return guarded_value("lockstep_token_eos", int32_t(-1), [&] { return state(model).tok->eos(); });
}

LOCKSTEP_API int32_t lockstep_token_eot(const lockstep_model* model) {
    return guarded_value("lockstep_token_eot", int32_t(-1), [&] { return state(model).tok->eot(); });
}

LOCKSTEP_API int32_t lockstep_model_add_bos(const lockstep_model* model) {
    return guarded_value("lockstep_model_add_bos", int32_t(-1), [&] { return int32_t(state(model).tok->add_bos_default() ? 1 : 0); });
}

LOCKSTEP_API int32_t lockstep_token_is_eog(const lockstep_model* model, int32_t token) {
    return guarded_value("lockstep_token_is_eog", int32_t(-1), [&] {
        const ModelState& m = state(model);
        check_token(m, token);
        return int32_t(m.tok->is_eog(token) ? 1 : 0);
    });
}

LOCKSTEP_API int32_t lockstep_token_type(const lockstep_model* model, int32_t token) {
    return guarded_value("lockstep_token_type", int32_t(-1), [&] {
        const ModelState& m = state(model);
        check_token(m, token);
        return int32_t(m.tok->token_type(token));
    });
}

LOCKSTEP_API int lockstep_tokenize(const lockstep_model* model, const char* text, size_t text_len, int32_t add_special,
                                   int32_t parse_special, int32_t* tokens, int32_t n_tokens_max, int32_t* n_tokens) {
    return guarded("lockstep_tokenize", [&] {
        const ModelState& m = state(model);
        need(n_tokens, "n_tokens");
        *n_tokens = 0;
        if (text_len > 0) need(text, "text");
        if (n_tokens_max < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_tokens_max is negative");
        if (n_tokens_max > 0) need(tokens, "tokens");
        const std::vector<int32_t> ids = m.tok->encode(std::string_view(text ? text : "", text_len), add_special != 0, parse_special != 0);
        if (ids.size() > size_t(INT32_MAX)) throw Error(LOCKSTEP_ERR_TOO_LONG, "more than 2^31 tokens");
        *n_tokens = int32_t(ids.size());
        if (ids.size() > size_t(n_tokens_max))
            throw Error(LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs room for " + std::to_string(ids.size()) + " tokens, the buffer has " +
                                                           std::to_string(n_tokens_max));
        std::copy(ids.begin(), ids.end(), tokens);
    });
}

LOCKSTEP_API int lockstep_detokenize(const lockstep_model* model, const int32_t* tokens, int32_t n_tokens, int32_t render_special, char* buf,
                                     size_t buf_len, size_t* n_out) {
    return guarded("lockstep_detokenize", [&] {
        const ModelState& m = state(model);
        need(n_out, "n_out");
        *n_out = 0;
        if (n_tokens < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_tokens is negative");
        if (n_tokens > 0) need(tokens, "tokens");
        std::vector<int32_t> ids(tokens, tokens + n_tokens);
        for (int32_t id : ids) check_token(m, id);
        const std::string text = m.tok->decode(ids, render_special != 0);
        put_bytes(text.data(), text.size(), buf, buf_len, n_out);
    });
}

LOCKSTEP_API int lockstep_token_piece(const lockstep_model* model, int32_t token, int32_t render_special, const char** piece, int32_t* len) {
    return guarded("lockstep_token_piece", [&] {
        const ModelState& m = state(model);
        need(piece, "piece");
        need(len, "len");
        check_token(m, token);
        const ModelState::Piece& p = m.piece(token, render_special != 0);
        *piece = m.piece_data(p);
        *len = int32_t(p.len);
    });
}

}  // extern "C"
