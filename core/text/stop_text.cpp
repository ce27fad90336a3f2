#include "core/text/stop_text.h"

#include <algorithm>

#include "core/text/utf8.h"

namespace ls {

namespace {

// The longest suffix of s that is a proper prefix of some stop string: text that may still
// become a stop.
size_t partial_stop_len(const std::string& s, size_t from, const std::vector<std::string>& stops) {
    size_t best = 0;
    for (const std::string& st : stops) {
        const size_t max_k = std::min(st.size() - 1, s.size() - from);
        for (size_t k = max_k; k > best; --k)
            if (s.compare(s.size() - k, k, st, 0, k) == 0) {
                best = k;
                break;
            }
    }
    return best;
}

}  // namespace

StopText::Out StopText::release(size_t upto, bool final) {
    Out out;
    // Only whole characters: stop at the first sequence that is not complete yet (or, at the
    // end, replace it and any invalid byte by U+FFFD). `at`: the character boundaries passed,
    // with the text's length there.
    std::vector<std::pair<size_t, size_t>> at{{sent_, 0}};
    size_t i = sent_;
    while (i < upto) {
        const size_t n = utf8_valid_len(buf_, i);
        if (n > 0 && i + n <= upto) {
            out.text.append(buf_, i, n);
            i += n;
            at.emplace_back(i, out.text.size());
            continue;
        }
        // Not a whole valid character within [i, upto): either unfinished (wait for more
        // bytes) or never valid.
        size_t need = 0;
        const unsigned char c = static_cast<unsigned char>(buf_[i]);
        if (c >= 0xC2 && c <= 0xF4) need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        bool unfinished = need > 0 && i + need > buf_.size();
        if (unfinished) {
            // Unfinished only if the bytes so far are valid continuations.
            for (size_t k = i + 1; k < buf_.size(); ++k)
                if ((static_cast<unsigned char>(buf_[k]) & 0xC0) != 0x80) unfinished = false;
        }
        if (unfinished && !final) break;
        if (!final && n > 0) break;  // whole but crossing `upto`: wait
        utf8_append(out.text, 0xFFFD);
        i += 1;
        while (i < upto && (static_cast<unsigned char>(buf_[i]) & 0xC0) == 0x80 && unfinished) ++i;
        at.emplace_back(i, out.text.size());
    }
    if (!final && tokens_sent_ < ends_.size()) {
        // Text goes out with the tokens it belongs to: only up to the last token end that is
        // also a character boundary, so that a token's text and its logprobs share a chunk
        // (a token cut by a held-back stop prefix or an unfinished character waits whole).
        // (More bytes of a token already released go out as they come.)
        size_t k = at.size() - 1;
        while (k > 0) {
            const size_t pos = at[k].first;
            if (std::binary_search(ends_.begin() + ptrdiff_t(tokens_sent_), ends_.end(), pos)) break;
            --k;
        }
        out.text.resize(at[k].second);
        i = at[k].first;
    }
    sent_ = i;
    while (tokens_sent_ < ends_.size() && (ends_[tokens_sent_] <= sent_ || final)) out.tokens.push_back(tokens_sent_++);
    return out;
}

StopText::Out StopText::push(const std::string& piece, bool new_token) {
    if (stopped_) return {};
    const size_t before = buf_.size();
    buf_ += piece;
    if (new_token || ends_.empty()) ends_.push_back(buf_.size());
    else ends_.back() = buf_.size();
    // A stop string that ends inside the new piece (it may start in earlier bytes).
    size_t cut = std::string::npos;
    for (const std::string& st : stops_) {
        const size_t from = before >= st.size() ? before - st.size() + 1 : 0;
        const size_t at = buf_.find(st, std::max(from, sent_));
        if (at != std::string::npos) cut = std::min(cut, at);
    }
    if (cut != std::string::npos) {
        stopped_ = true;
        buf_.resize(cut);
        // Tokens that start at or after the stop string are not part of the reply; the one it
        // starts in keeps only its bytes before it.
        while (ends_.size() > tokens_sent_) {
            const size_t start = ends_.size() >= 2 ? ends_[ends_.size() - 2] : 0;
            if (start < cut) break;
            ends_.pop_back();
        }
        if (ends_.size() > tokens_sent_ && ends_.back() > cut) ends_.back() = cut;
        Out out = release(buf_.size(), true);
        out.stopped = true;
        return out;
    }
    return release(buf_.size() - partial_stop_len(buf_, sent_, stops_), false);
}

StopText::Out StopText::finish() {
    if (stopped_) return {};
    return release(buf_.size(), true);
}

}  // namespace ls
