// The text of a generation as a client may see it: token pieces go in, and out comes only
// text that is whole UTF-8 characters and cannot be the start of a stop string. A stop string
// is never sent: the text ends just before it. Each generated token is released together with
// the text it completes, so a token's logprobs reach the client with its text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ls {

class StopText {
public:
    StopText() = default;
    explicit StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {}

    struct Out {
        std::string text;                // newly released text
        std::vector<size_t> tokens;      // indices (in push order) of the tokens released with it
        bool stopped = false;            // a stop string matched: nothing more will be released
    };
    // Adds the bytes of the next generated token (new_token=false: more bytes of the last one).
    Out push(const std::string& piece, bool new_token = true);
    // The generation ended (end of generation, length, cancel): releases what is held back;
    // an unfinished UTF-8 sequence at the end becomes U+FFFD.
    Out finish();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string buf_;          // every byte pushed so far
    size_t sent_ = 0;          // bytes of buf_ released
    std::vector<size_t> ends_; // per token: its end offset in buf_
    size_t tokens_sent_ = 0;
    bool stopped_ = false;
    Out release(size_t upto, bool final);
};

}  // namespace ls
