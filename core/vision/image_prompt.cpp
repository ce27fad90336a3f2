#include "core/vision/image_prompt.h"

#include <stdexcept>

namespace ls {

int32_t image_tag(const image::Rgb8& img) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the size and the pixels
    auto mix = [&](uint8_t b) { h = (h ^ b) * 1099511628211ull; };
    for (int v : {img.width, img.height})
        for (int k = 0; k < 4; ++k) mix(uint8_t(uint32_t(v) >> (8 * k)));
    for (uint8_t b : img.px) mix(b);
    return -1 - int32_t(h & 0x3FFFFFFF);
}

ImagePrompt layout_image_prompt(const Tokenizer& tok, const VisionEncoder& enc, const std::string& text,
                                const std::vector<image::Rgb8>& images, bool add_bos) {
    // The text with each marker (or, without markers, the start) holding an image's expansion.
    const std::string marker = kMediaMarker;
    std::vector<size_t> at;
    for (size_t p = text.find(marker); p != std::string::npos; p = text.find(marker, p + marker.size())) at.push_back(p);
    if (!at.empty() && at.size() != images.size())
        throw std::invalid_argument("the prompt has " + std::to_string(at.size()) + " image markers (" + marker + ") for " +
                                    std::to_string(images.size()) + " images");
    std::vector<int64_t> n_rows;
    for (const image::Rgb8& img : images) n_rows.push_back(enc.n_tokens(img));
    std::string full;
    if (at.empty()) {
        for (int64_t n : n_rows) full += enc.image_text(n);
        full += text;
    } else {
        size_t from = 0;
        for (size_t i = 0; i < at.size(); ++i) {
            full += text.substr(from, at[i] - from) + enc.image_text(n_rows[i]);
            from = at[i] + marker.size();
        }
        full += text.substr(from);
    }
    const std::vector<int32_t> soft = tok.encode(enc.soft_token(), false, true);
    if (soft.size() != 1) throw std::runtime_error("the vocabulary has no single token '" + enc.soft_token() + "' for image rows");
    ImagePrompt p;
    p.ids = tok.encode(full, add_bos, true);
    // The soft tokens in order: image k's n_rows[k] of them, in one run each.
    size_t k = 0, i = 0;
    while (i < p.ids.size()) {
        if (p.ids[i] != soft[0]) {
            ++i;
            continue;
        }
        if (k >= images.size()) throw std::runtime_error("the prompt's text holds an image token '" + enc.soft_token() + "' of its own");
        const int64_t n = n_rows[k];
        for (int64_t j = 0; j < n; ++j)
            if (i + size_t(j) >= p.ids.size() || p.ids[i + size_t(j)] != soft[0])
                throw std::runtime_error("image " + std::to_string(k) + "'s tokens are not one run (the text around it holds '" +
                                         enc.soft_token() + "')");
        const int32_t tag = image_tag(images[k]);
        for (int64_t j = 0; j < n; ++j) p.ids[i + size_t(j)] = tag;
        p.spans.push_back({i, n, k});
        p.n_image_tokens += n;
        i += size_t(n);
        ++k;
    }
    if (k != images.size()) throw std::logic_error("layout_image_prompt: an image was not placed");
    return p;
}

size_t image_start_at(const ImagePrompt& p, size_t i) {
    for (const ImageSpan& s : p.spans)
        if (i > s.first && i < s.first + size_t(s.n)) return s.first;
    return i;
}

Batch image_prompt_batch(const ImagePrompt& p, const VisionEncoder& enc, const std::vector<image::Rgb8>& images, int seq,
                         size_t from, size_t to, bool last_logits, int64_t* n_encoded) {
    if (from > to || to > p.ids.size() || image_start_at(p, from) != from || image_start_at(p, to) != to)
        throw std::invalid_argument("image_prompt_batch: [" + std::to_string(from) + ", " + std::to_string(to) + ") cuts an image");
    Batch b;
    const int64_t E = enc.n_embd_out();
    size_t i = from;
    for (const ImageSpan& s : p.spans) {
        if (s.first + size_t(s.n) <= from || s.first >= to) continue;
        for (; i < s.first; ++i) b.add(p.ids[i], seq, int32_t(i), false);
        const std::vector<float> rows = enc.encode(images.at(s.image));
        if (n_encoded) ++*n_encoded;
        const int32_t last = enc.sees_whole_image() ? int32_t(s.first + size_t(s.n) - 1) : -1;
        const int64_t cols = enc.token_grid(images.at(s.image))[1];
        for (int64_t j = 0; j < s.n; ++j, ++i)
            b.add_row(rows.data() + size_t(j * E), E, p.ids[i], seq, int32_t(i), last, false, int32_t(j / cols), int32_t(j % cols));
    }
    for (; i < to; ++i) b.add(p.ids[i], seq, int32_t(i), false);
    if (last_logits && !b.logits.empty()) b.logits.back() = 1;
    return b;
}

int64_t evaluate_image_prefix(Session& s, int seq, const ImagePrompt& p, const VisionEncoder& enc, const std::vector<image::Rgb8>& images,
                              ImageCounts* counts) {
    if (p.spans.empty()) return -1;
    const ImageSpan& last = p.spans.back();
    const size_t head = last.first + size_t(last.n);  // through the last image
    if (head >= p.ids.size()) throw std::invalid_argument("the prompt ends with an image: text must follow it");
    const std::vector<int32_t>& have = s.seq_tokens(seq);
    size_t common = 0;
    while (common < have.size() && common < p.ids.size() && have[common] == p.ids[common]) ++common;
    size_t kept;
    if (common > head) {
        // The sequence holds every image: keep what the caller's own reuse keeps (a hybrid
        // model can go back only to its checkpoint, which may lie before an image, or to 0).
        kept = size_t(s.reuse_prefix(seq, p.ids));
        if (kept >= head) {
            if (counts) counts->reused += int64_t(p.spans.size());
            return -1;
        }
    } else {
        const std::vector<int32_t> upto(p.ids.begin(), p.ids.begin() + std::ptrdiff_t(head + 1));
        kept = size_t(s.reuse_prefix(seq, upto));
    }
    if (const size_t at = image_start_at(p, kept); at != kept) {
        // (a recurrent state cannot go back inside an image: start over then)
        if (!s.seq_rm(seq, int64_t(at))) s.seq_rm(seq, 0);
        kept = size_t(s.seq_len(seq));
    }
    if (counts)
        for (const ImageSpan& sp : p.spans) counts->reused += sp.first + size_t(sp.n) <= kept;
    if (kept < head) s.decode(image_prompt_batch(p, enc, images, seq, kept, head, false, counts ? &counts->encoded : nullptr));
    return int64_t(kept);
}

}  // namespace ls
