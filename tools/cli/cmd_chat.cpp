#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

#include "core/chat/chat_format.h"
#include "core/image/image.h"
#include "core/runtime/generate.h"
#include "core/vision/image_prompt.h"
#include "tools/cli/app.h"

namespace ls::cli {

// Each turn renders the whole conversation with the chat template and hands it to
// generate(), which keeps the longest prefix already in the KV cache and evaluates only the
// rest; if the ring can no longer restore that point, the conversation is evaluated again
// from the start. Either way the logits equal a fresh evaluation of the transcript.
//
// Gemma 4's template drops a model turn's thought channel from the history (the empty one its
// generation prompt opens too), so a re-rendered transcript parts from the cache right after
// the previous "<|turn>model\n"; rolling a whole reply back is more than the sliding-window
// rings allow once it is longer than the ubatch (B + 1 positions), and every later turn would
// be evaluated from the start. Its chats therefore continue from the tokens the model saw: the
// previous prompt and reply, the close of that model turn, the new user turn and the
// generation prompt.
//
// A template whose replies hold reasoning (gpt-oss's analysis channel, Qwen 3's think block
// when "/think" asks for it) streams the reply with its marker tokens through a
// ReplySplitter: only the content is printed (the reasoning goes to stderr with
// LOCKSTEP_CHAT_STATS) and only the content joins the history, as the templates drop the
// reasoning of earlier turns.
//
// With --mmproj, "/image PATH" adds an image to the next message (where its text starts); the
// conversation's images stay in it, and each turn encodes only those its cache does not hold
// (evaluate_image_prefix), so an image is encoded once however long the chat goes on.
int cmd_chat(const Options& o) {
    if (!o.images.empty()) throw UsageError("chat takes images with /image PATH in the conversation, not --image");
    App app = open_app(o);
    std::unique_ptr<VisionEncoder> vision;
    if (!o.mmproj.empty()) {
        vision = load_vision_encoder(o.mmproj, *app.backend);
        vision->set_image_tokens(o.image_min_tokens, o.image_max_tokens);
        vision->check_text_model(*app.model);
    }
    std::vector<image::Rgb8> images;    // every image of the conversation, in order
    std::string pending;                // markers for the images of the next message
    Session s(*app.model, *app.backend, app.session_params(o));
    Sampler sampler(app.sampler_params(o));
    std::unique_ptr<Speculator> spec = app.speculator(o, s);
    std::vector<ChatMsg> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    const std::string& arch = app.model->hparams().arch;
    const Tokenizer& tok = *app.tokenizer;
    // The model's own template (tokenizer.chat_template, or --chat-template-file /
    // --chat-template-name), else the built-in one of its family.
    const chat::ChatFormat format = chat::ChatFormat::from_model(app.model->gguf(), tok, arch, o.chat_template, o.chat_template_name);
    const ChatTemplate& tmpl = format.builtin();
    const bool continue_tokens = tmpl.continue_from_seen;
    std::vector<int32_t> seen;  // continue_tokens: every token of the conversation so far, as the model saw it
    const bool tty = isatty(fileno(stdin));
    const bool verbose = std::getenv("LOCKSTEP_CHAT_STATS") != nullptr;
    std::fprintf(stderr, "lockstep chat: %s (type /exit or end input to quit)\n", app.model_path.c_str());
    std::string line;
    while (true) {
        if (tty) std::fprintf(stderr, "\n> ");
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line.empty()) continue;
        if (line.rfind("/image", 0) == 0) {
            const std::string path = line.size() > 7 ? line.substr(7) : "";
            try {
                if (!vision) throw std::runtime_error("/image needs the model's projector: start chat with --mmproj FILE");
                if (path.empty()) throw std::runtime_error("/image needs a file: /image PATH");
                images.push_back(image::load_file(path));
                pending += kMediaMarker;
                std::fprintf(stderr, "(image %zu: %dx%d, goes with your next message)\n", images.size(), images.back().width,
                             images.back().height);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "lockstep chat: %s\n", e.what());
            }
            continue;
        }
        msgs.push_back({"user", pending + line});
        pending.clear();
        std::vector<int32_t> ids;
        if (!images.empty()) {
            chat::ChatInput in;
            for (const ChatMsg& m : msgs) in.messages.push_back({{"role", m.role}, {"content", m.content}});
            const std::string text = format.render(in);
            const ImagePrompt ip = layout_image_prompt(tok, *vision, text, images, tok.add_bos_default() && !format.starts_with_bos(text));
            if (int64_t(ip.ids.size()) >= s.params().n_ctx)
                throw std::runtime_error("conversation has " + std::to_string(ip.ids.size()) + " tokens with its images, more than the context of " +
                                         std::to_string(s.params().n_ctx) + " (raise -c)");
            ImageCounts n;
            evaluate_image_prefix(s, 0, ip, *vision, images, &n);
            if (verbose) std::fprintf(stderr, "[images: %lld encoded, %lld found in the cache]\n", (long long)n.encoded, (long long)n.reused);
            ids = ip.ids;
        } else if (continue_tokens && !seen.empty()) {
            ids = seen;
            const std::vector<int32_t> more = tok.encode(std::string(tmpl.turn_close) + format_chat({{"user", line}}, true, tmpl), false, true);
            ids.insert(ids.end(), more.begin(), more.end());
        } else {
            chat::ChatInput in;
            for (const ChatMsg& m : msgs) in.messages.push_back({{"role", m.role}, {"content", m.content}});
            const std::string text = format.render(in);
            ids = tok.encode(text, tok.add_bos_default() && !format.starts_with_bos(text), true);
        }
        if (int64_t(ids.size()) >= s.params().n_ctx)
            throw std::runtime_error("conversation has " + std::to_string(ids.size()) + " tokens, more than the context of " +
                                     std::to_string(s.params().n_ctx) + " (raise -c)");
        std::string reply;
        ReplySplitter split(tmpl);
        const auto show = [&](const ReplySplitter::Out& part) {
            if (verbose && !part.reasoning.empty()) std::fputs(part.reasoning.c_str(), stderr);
            reply += part.content;
            std::fputs(part.content.c_str(), stdout);
            std::fflush(stdout);
        };
        const bool split_reply = tmpl.has_reasoning();
        GenerateResult r = generate(
            s, tok, sampler, ids, o.n_predict, 0,
            [&](const std::string& t) {
                if (split_reply) show(split.push(t));
                else show({t, {}});
            },
            split_reply ? &tmpl : nullptr, spec.get());
        if (split_reply) show(split.finish());
        std::printf("\n");
        std::fflush(stdout);
        if (verbose)
            std::fprintf(stderr, "[turn: %lld prompt tokens reused, %lld evaluated, %zu generated, %lld of %lld guesses accepted]\n",
                         (long long)r.n_reused, (long long)r.n_evaluated, r.tokens.size(), (long long)r.spec.n_accepted,
                         (long long)r.spec.n_guessed);
        msgs.push_back({"assistant", reply});
        if (continue_tokens) {
            seen = ids;
            seen.insert(seen.end(), r.tokens.begin(), r.tokens.end());
        }
    }
    return 0;
}

}  // namespace ls::cli
