// Chat templates: a conversation rendered with the model's own Jinja template (core/chat).
#include <cstring>
#include <nlohmann/json.hpp>

#include "api/handles.h"

namespace ls::capi {
namespace {

nlohmann::ordered_json parse_json(const char* text, const char* what) {
    try {
        return nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, std::string(what) + " is not JSON: " + e.what());
    }
}

}  // namespace
}  // namespace ls::capi

using namespace ls;
using namespace ls::capi;

extern "C" {

LOCKSTEP_API lockstep_chat_params lockstep_chat_default_params(void) {
    lockstep_chat_params p;
    std::memset(&p, 0, sizeof p);
    p.add_generation_prompt = 1;
    return p;
}

LOCKSTEP_API int lockstep_chat_render(const lockstep_model* model, const lockstep_chat_params* params, char* buf, size_t buf_len, size_t* n_out,
                                      int32_t* add_bos) {
    return guarded("lockstep_chat_render", [&] {
        const ModelState& m = *need(model, "model")->m;
        need(params, "params");
        need(n_out, "n_out");
        *n_out = 0;
        if (add_bos) *add_bos = 0;
        chat::ChatInput in;
        in.messages = parse_json(need(params->messages_json, "params->messages_json"), "messages_json");
        if (!in.messages.is_array()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "messages_json is not a JSON array");
        if (params->tools_json) {
            in.tools = parse_json(params->tools_json, "tools_json");
            if (!in.tools.is_array() && !in.tools.is_null()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "tools_json is not a JSON array");
        }
        if (params->kwargs_json) {
            in.kwargs = parse_json(params->kwargs_json, "kwargs_json");
            if (!in.kwargs.is_object()) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "kwargs_json is not a JSON object");
        }
        in.add_generation_prompt = params->add_generation_prompt != 0;
        std::string text;
        bool bos_in_text = false;
        if (params->template_source || params->template_name) {
            const chat::ChatFormat f = chat::ChatFormat::from_model(m.model().gguf(), *m.tok, m.hp().arch,
                                                                    params->template_source ? params->template_source : "",
                                                                    params->template_name ? params->template_name : "");
            text = f.render(in);
            bos_in_text = f.starts_with_bos(text);
        } else {
            const chat::ChatFormat& f = m.chat_format();
            text = f.render(in);
            bos_in_text = f.starts_with_bos(text);
        }
        if (add_bos) *add_bos = m.tok->add_bos_default() && !bos_in_text ? 1 : 0;
        put_bytes(text.data(), text.size(), buf, buf_len, n_out);
    });
}

}  // extern "C"
