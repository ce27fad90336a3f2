#include "core/chat/reply_reader.h"

namespace ls::chat {

namespace {
Event text_event(Event::Kind k, const std::string& text) {
    Event e;
    e.kind = k;
    e.text = text;
    return e;
}
}  // namespace

ReplyReader::ReplyReader(const Tokenizer& tok, ReplyReaderOptions o) : tok_(&tok), o_(std::move(o)), text_(o_.stops) {
    if (o_.reasoning && o_.reasoning->has_reasoning()) split_.emplace(*o_.reasoning);
    if (o_.tools != Format::None) {
        for (std::string_view m : format_markers(o_.tools)) markers_.emplace_back(m);
        calls_ = std::make_unique<ToolCallParser>(o_.tools, o_.parser);
    }
}

const std::optional<ParseError>& ReplyReader::error() const {
    static const std::optional<ParseError> none;
    return calls_ ? calls_->error() : none;
}

// Reasoning first, then the visible text through the tool parser (or as content).
void ReplyReader::release(const std::string& reasoning, const std::string& text, std::vector<Event>& out) {
    if (!reasoning.empty()) out.push_back(text_event(Event::Reasoning, reasoning));
    if (text.empty()) return;
    visible_ += text;
    if (!calls_) {
        out.push_back(text_event(Event::Content, text));
        return;
    }
    for (Event& e : calls_->push(text)) out.push_back(std::move(e));
}

std::vector<Event> ReplyReader::push(int32_t id) {
    std::vector<Event> out;
    if (finished_ || text_.stopped()) return out;
    if (id < 0 || id >= tok_->n_vocab()) return out;  // (an output row past the vocabulary has no text)
    // A tool-call marker that is a control token: its text goes to the reader, as the
    // engine renders it (Engine::on_token).
    std::string marker;
    if (!markers_.empty() && tok_->token_type(id) == TokenType::Control) {
        const std::string& txt = tok_->token_text(id);
        for (const std::string& m : markers_)
            if (!txt.empty() && m.find(txt) != std::string::npos) marker = txt;
    }
    std::string content = !marker.empty() ? marker : tok_->token_to_piece(id, false), reasoning;
    if (split_) {
        ReplySplitter::Out r = split_->push(!marker.empty() ? marker : reply_piece(*tok_, id, o_.reasoning));
        content = std::move(r.content);
        reasoning = reasoning_utf8_.push(r.reasoning);
    }
    release(reasoning, text_.push(content).text, out);
    return out;
}

std::vector<Event> ReplyReader::finish() {
    std::vector<Event> out;
    if (finished_) return out;
    finished_ = true;
    std::string reasoning, text;
    if (split_ && !text_.stopped()) {
        // What the splitter held back (text that might have begun a marker) ends the reply.
        ReplySplitter::Out r = split_->finish();
        reasoning = reasoning_utf8_.push(r.reasoning);
        text = text_.push(r.content, false).text;
    }
    if (split_) reasoning += reasoning_utf8_.flush();
    text += text_.finish().text;
    release(reasoning, text, out);
    if (calls_)
        for (Event& e : calls_->finish()) out.push_back(std::move(e));
    return out;
}

}  // namespace ls::chat
