#include <cstdio>
#include <fstream>
#include <sstream>

#include <chrono>

#include "tools/cli/app.h"
#include "core/image/image.h"
#include "core/runtime/generate.h"
#include "core/vision/image_prompt.h"

namespace ls::cli {

int cmd_run(const Options& o) {
    if (!o.prompt_set && o.file.empty()) throw UsageError("run needs a prompt: -p TEXT or -f FILE");
    std::string prompt = o.prompt;
    if (!o.file.empty()) {
        std::ifstream f(o.file, std::ios::binary);
        if (!f) throw std::runtime_error("cannot read prompt file " + o.file);
        std::stringstream ss;
        ss << f.rdbuf();
        prompt = ss.str();
    }
    if (!o.images.empty() && o.mmproj.empty()) throw UsageError("--image needs the model's projector file: --mmproj FILE");
    if (!o.mmproj.empty() && o.images.empty()) throw UsageError("--mmproj is given but no --image");
    std::vector<image::Rgb8> images;
    for (const std::string& path : o.images) images.push_back(image::load_file(path));  // (bad files fail before the model loads)
    App app = open_app(o);
    Session s(*app.model, *app.backend, app.session_params(o));
    std::vector<int32_t> ids;
    if (!images.empty()) {
        // The prompt through its last image is evaluated here; generate then finds it cached
        // under the images' tags and evaluates the rest.
        auto enc = load_vision_encoder(o.mmproj, *app.backend);
        enc->set_image_tokens(o.image_min_tokens, o.image_max_tokens);
        enc->check_text_model(*app.model);
        const auto t0 = std::chrono::steady_clock::now();
        ImagePrompt ip = layout_image_prompt(*app.tokenizer, *enc, prompt, images, app.tokenizer->add_bos_default());
        if (int64_t(ip.ids.size()) >= s.params().n_ctx)
            throw std::runtime_error("prompt has " + std::to_string(ip.ids.size()) + " tokens with its images, more than the context of " +
                                     std::to_string(s.params().n_ctx) + " leaves room for (raise -c)");
        evaluate_image_prefix(s, 0, ip, *enc, images);
        const double enc_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "images: %zu encoded and evaluated with the prompt before them in %.2f s (%lld image tokens)\n", images.size(),
                     enc_s, (long long)ip.n_image_tokens);
        ids = std::move(ip.ids);
    } else {
        ids = app.tokenizer->encode(prompt, app.tokenizer->add_bos_default(), true);
    }
    if (int64_t(ids.size()) >= s.params().n_ctx)
        throw std::runtime_error("prompt has " + std::to_string(ids.size()) + " tokens, more than the context of " +
                                 std::to_string(s.params().n_ctx) + " leaves room for (raise -c)");
    Sampler sampler(app.sampler_params(o));
    std::unique_ptr<Speculator> spec = app.speculator(o, s);
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    GenerateResult r = generate(s, *app.tokenizer, sampler, ids, o.n_predict, 0, [](const std::string& t) {
        std::fputs(t.c_str(), stdout);
        std::fflush(stdout);
    }, nullptr, spec.get());
    std::printf("\n");
    const auto n_gen = (long long)r.tokens.size();
    std::fprintf(stderr, "\nprompt: %lld tokens in %.2f s (%.1f tokens/s); generation: %lld tokens in %.2f s (%.1f tokens/s)%s\n",
                 (long long)r.n_evaluated, r.prompt_s, r.n_evaluated / std::max(r.prompt_s, 1e-9), n_gen, r.gen_s,
                 n_gen / std::max(r.gen_s, 1e-9), r.context_full ? "; stopped: context full (raise -c)" : "");
    if (spec)
        std::fprintf(stderr, "speculation (%s): %lld of %lld guesses accepted (%.1f%%) in %lld verification steps\n",
                     spec_mode_name(spec->params().mode), (long long)r.spec.n_accepted, (long long)r.spec.n_guessed,
                     100.0 * r.spec.acceptance(), (long long)r.spec.n_steps);
    return 0;
}

}  // namespace ls::cli
