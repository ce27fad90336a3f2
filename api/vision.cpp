// Images through the C API: a projector handle, and prompts with images (include/lockstep.h).
#include <string>
#include <vector>

#include "api/handles.h"
#include "core/image/image.h"
#include "core/vision/image_prompt.h"

struct lockstep_vision {
    std::shared_ptr<ls::capi::ModelState> m;  // the text model it was loaded for
    std::unique_ptr<ls::VisionEncoder> enc;
};

using namespace ls;
using namespace ls::capi;

LOCKSTEP_API int lockstep_vision_load(const char* path, const lockstep_model* model, lockstep_vision** vision) {
    return guarded("lockstep_vision_load", [&] {
        need(vision, "vision");
        *vision = nullptr;
        need(path, "path");
        const auto& m = need(model, "model")->m;
        const Model& text = m->model();
        auto v = std::make_unique<lockstep_vision>();
        v->m = m;
        try {
            v->enc = load_vision_encoder(path, *text.backends().front());
        } catch (const std::exception& e) {
            const std::string what = e.what();
            throw Error(what.find("cannot open") != std::string::npos || what.find("No such file") != std::string::npos ? LOCKSTEP_ERR_IO
                                                                                                                         : LOCKSTEP_ERR_FORMAT,
                        what);
        }
        v->enc->check_text_model(text);
        *vision = v.release();
    });
}

LOCKSTEP_API void lockstep_vision_free(lockstep_vision* vision) { delete vision; }

LOCKSTEP_API int lockstep_vision_prompt(lockstep_vision* vision, lockstep_session* session, int32_t seq, const char* text, size_t text_len,
                                        int32_t add_bos, const uint8_t* const* images, const size_t* image_lens, int32_t n_images,
                                        int32_t* ids, int32_t capacity, int32_t* n_ids, int32_t* n_encoded) {
    return guarded("lockstep_vision_prompt", [&] {
        lockstep_vision& v = *need(vision, "vision");
        lockstep_session& h = *need(session, "session");
        need(n_ids, "n_ids");
        *n_ids = 0;
        if (n_encoded) *n_encoded = 0;
        if (h.m != v.m) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the session is over another model than the projector was loaded for");
        const int32_t n_seq = int32_t(h.s->params().n_seq);
        if (seq < 0 || seq >= n_seq)
            throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "sequence " + std::to_string(seq) + " outside [0, " + std::to_string(n_seq) + ")");
        if (text_len > 0) need(text, "text");
        if (n_images < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_images is negative");
        if (n_images > 0) {
            need(images, "images");
            need(image_lens, "image_lens");
        }
        if (capacity > 0) need(ids, "ids");
        std::vector<image::Rgb8> imgs;
        for (int32_t i = 0; i < n_images; ++i) {
            need(images[i], "images[i]");
            try {
                imgs.push_back(image::decode({reinterpret_cast<const char*>(images[i]), image_lens[i]}));
            } catch (const std::exception& e) {
                throw Error(LOCKSTEP_ERR_FORMAT, "image " + std::to_string(i) + ": " + e.what());
            }
        }
        ImagePrompt p;
        try {
            p = layout_image_prompt(*h.m->tok, *v.enc, std::string(text ? text : "", text_len), imgs, add_bos != 0);
        } catch (const std::exception& e) {
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, e.what());
        }
        *n_ids = int32_t(p.ids.size());
        if (int64_t(p.ids.size()) >= h.s->params().n_ctx)
            throw Error(LOCKSTEP_ERR_TOO_LONG, "the prompt has " + std::to_string(p.ids.size()) + " tokens with its images, more than the context of " +
                                                   std::to_string(h.s->params().n_ctx) + " leaves room for");
        if (int64_t(p.ids.size()) > capacity)
            throw Error(LOCKSTEP_ERR_TOO_LONG, "the prompt has " + std::to_string(p.ids.size()) + " tokens, more than ids holds (" +
                                                   std::to_string(capacity) + ")");
        ImageCounts n;
        try {
            evaluate_image_prefix(*h.s, seq, p, *v.enc, imgs, &n);
        } catch (const std::length_error& e) {
            throw Error(LOCKSTEP_ERR_TOO_LONG, e.what());
        }
        std::copy(p.ids.begin(), p.ids.end(), ids);
        if (n_encoded) *n_encoded = int32_t(n.encoded);
    });
}
