// The parser's shell and the helpers every format reader shares.
#include "core/chat/tool_parse.h"

#include <algorithm>

#include "core/chat/format_impl.h"

namespace ls::chat {

using nlohmann::ordered_json;

void Message::apply(const Event& e) {
    switch (e.kind) {
    case Event::Content: content += e.text; break;
    case Event::Reasoning: reasoning += e.text; break;
    case Event::CallStart:
        if (tool_calls.size() <= e.index) tool_calls.resize(e.index + 1);
        tool_calls[e.index].id = e.id;
        tool_calls[e.index].name = e.name;
        break;
    case Event::CallArgs:
        if (tool_calls.size() <= e.index) tool_calls.resize(e.index + 1);
        tool_calls[e.index].arguments += e.text;
        break;
    }
}

namespace detail {

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t skip_ws(std::string_view s, size_t i) {
    while (i < s.size() && is_ws(s[i])) ++i;
    return i;
}

int starts(std::string_view s, std::string_view m) {
    if (s.size() >= m.size()) return s.substr(0, m.size()) == m ? 1 : -1;
    return m.substr(0, s.size()) == s ? 0 : -1;
}

Found find_first(std::string_view s, const std::vector<std::string_view>& markers, bool final) {
    Found best{npos, -1};
    for (size_t k = 0; k < markers.size(); ++k) {
        if (markers[k].empty()) continue;
        size_t at = s.find(markers[k]);
        if (at == npos) continue;
        // The earliest wins; at the same offset the longer one (a marker that begins another).
        if (at < best.at || (at == best.at && markers[k].size() > markers[best.which].size()))
            best = {at, int(k)};
    }
    if (best.which >= 0) return best;
    if (final) return {s.size(), -1};
    // Hold back the longest tail that some marker begins with.
    size_t hold = 0;
    for (std::string_view m : markers)
        for (size_t n = std::min(m.empty() ? 0 : m.size() - 1, s.size()); n > hold; --n)
            if (s.substr(s.size() - n) == m.substr(0, n)) {
                hold = n;
                break;
            }
    return {s.size() - hold, -1};
}

bool JsonScan::scan(std::string_view buf, bool final) {
    if (end != npos) return true;
    if (bad) return false;
    for (; at < buf.size(); ++at) {
        char ch = buf[at];
        if (start == npos) {
            if (is_ws(ch)) continue;
            start = at;
            if (ch == '{' || ch == '[') {
                kind = ch;
                depth = 1;
            } else if (ch == '"') {
                kind = '"';
            } else if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 't' || ch == 'f' || ch == 'n') {
                kind = 's';
            } else {
                bad = true;
                return false;
            }
            continue;
        }
        if (kind == '"') {
            if (esc) esc = false;
            else if (ch == '\\') esc = true;
            else if (ch == '"') {
                end = ++at;
                return true;
            }
            continue;
        }
        if (kind == 's') {
            if (is_ws(ch) || ch == ',' || ch == '}' || ch == ']' || ch == '<' || ch == ';') {
                end = at;
                return true;
            }
            continue;
        }
        if (in_str) {
            if (esc) esc = false;
            else if (ch == '\\') esc = true;
            else if (ch == '"') in_str = false;
        } else if (ch == '"') {
            in_str = true;
        } else if (ch == '{' || ch == '[') {
            ++depth;
        } else if (ch == '}' || ch == ']') {
            if (--depth == 0) {
                end = ++at;
                return true;
            }
        }
    }
    if (final && kind == 's') {
        end = at;
        return true;
    }
    return false;
}

std::optional<std::string> json_string(std::string_view lit) {
    auto j = ordered_json::parse(lit, nullptr, false);
    if (j.is_discarded() || !j.is_string()) return std::nullopt;
    return j.get<std::string>();
}

static std::string dump(const ordered_json& j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

std::string xml_value_json(std::string_view text, const ordered_json* prop) {
    std::string type;
    if (prop && prop->is_object() && prop->contains("type") && (*prop)["type"].is_string())
        type = (*prop)["type"].get<std::string>();
    if (type == "string") return dump(ordered_json(std::string(text)));
    auto j = ordered_json::parse(text, nullptr, false);
    if (!j.is_discarded() && (!j.is_string() || !type.empty())) return dump(j);
    return dump(ordered_json(std::string(text)));
}

static bool among(const std::vector<std::string_view>& v, std::string_view k) {
    return std::find(v.begin(), v.end(), k) != v.end();
}

// ---- Ctx ----

static void emit_text(std::vector<Event>& out, Event::Kind k, std::string_view s) {
    if (s.empty()) return;
    if (!out.empty() && out.back().kind == k) {
        out.back().text += s;
        return;
    }
    Event e;
    e.kind = k;
    e.text = std::string(s);
    out.push_back(std::move(e));
}

void Ctx::content(size_t n) {
    n = std::min(n, buf.size() - pos);
    std::string_view s = std::string_view(buf).substr(pos, n);
    pos += n;
    content_text(s);
}

void Ctx::reasoning(size_t n) {
    n = std::min(n, buf.size() - pos);
    std::string_view s = std::string_view(buf).substr(pos, n);
    pos += n;
    reasoning_text(s);
}

void Ctx::content_text(std::string_view s) {
    if (drop_ws_after_call) {
        size_t i = skip_ws(s);
        s.remove_prefix(i);
        if (s.empty()) return;
        drop_ws_after_call = false;
    }
    size_t last = s.size();
    while (last > 0 && is_ws(s[last - 1])) --last;
    if (last == 0) {
        pending_ws_ += s;
        return;
    }
    std::string text = std::move(pending_ws_);
    text += s.substr(0, last);
    pending_ws_ = std::string(s.substr(last));
    emit_text(out, Event::Content, text);
}

void Ctx::reasoning_text(std::string_view s) { emit_text(out, Event::Reasoning, s); }

void Ctx::flush_ws() {
    emit_text(out, Event::Content, pending_ws_);
    pending_ws_.clear();
}

size_t Ctx::begin_call(const std::string& name, const std::string& id) {
    pending_ws_.clear();
    drop_ws_after_call = false;
    Event e;
    e.kind = Event::CallStart;
    e.index = calls_;
    e.name = name;
    if (!id.empty()) e.id = id;
    else if (opt && opt->make_id) e.id = opt->make_id(calls_);
    else e.id = "call_" + std::to_string(calls_);
    out.push_back(std::move(e));
    open_call_ = true;
    args_.emplace_back();
    return calls_++;
}

void Ctx::args(std::string_view s) {
    if (!open_call_ || s.empty()) return;
    args_.back() += s;
    size_t idx = calls_ - 1;
    if (!out.empty() && out.back().kind == Event::CallArgs && out.back().index == idx) {
        out.back().text += s;
        return;
    }
    Event e;
    e.kind = Event::CallArgs;
    e.index = idx;
    e.text = std::string(s);
    out.push_back(std::move(e));
}

void Ctx::end_call() {
    if (!open_call_) return;
    if (args_.back().empty()) args("{}");
    open_call_ = false;
    drop_ws_after_call = true;
}

void Ctx::fail(const std::string& msg) {
    if (!error) error = ParseError{msg, calls_ ? calls_ - 1 : 0};
}

const ToolSpec* Ctx::tool(std::string_view name) const {
    if (!opt) return nullptr;
    for (const ToolSpec& t : opt->tools)
        if (t.name == name) return &t;
    return nullptr;
}

// ---- ObjCall ----

void ObjCall::maybe_announce(Ctx& c, bool at_end) {
    if (announced || !has_name) return;
    if (!at_end) {
        if (!keys->id.empty() && id.empty()) return;
        if (keys->announce_on_args && !key_is_args && !has_args) return;
    }
    c.begin_call(name, id);
    announced = true;
    if (!pending_args.empty()) {
        c.args(pending_args);
        pending_args.clear();
    }
}

bool ObjCall::member_done(Ctx& c, std::string_view text) {
    if (among(keys->name, key)) {
        auto s = json_string(text);
        if (!s || s->empty() || has_name) return false;
        if (keys->known_names_only && c.opt && !c.opt->tools.empty() && !c.tool(*s)) return false;
        name = *s;
        has_name = true;
        maybe_announce(c, false);
    } else if (among(keys->id, key)) {
        auto s = json_string(text);
        id = s ? *s : std::string(text);
        maybe_announce(c, false);
    } else if (key_is_args) {
        has_args = true;
        if (!args_streamed) {
            if (val.kind == '"') {
                auto s = json_string(text);
                if (!s) return false;
                pending_args = *s;
            } else {
                pending_args = std::string(text);
            }
            maybe_announce(c, false);
            if (announced && !pending_args.empty()) {
                c.args(pending_args);
                pending_args.clear();
            }
        }
        key_is_args = false;
    } else if (keys->strict && !among(keys->other, key)) {
        return false;
    }
    return true;
}

ObjCall::Result ObjCall::step(Ctx& c) {
    std::string_view b = c.buf;
    const Result need = c.final ? Bad : More;
    for (;;) {
        switch (st) {
        case Open:
            ++at;  // the '{'
            st = Key;
            break;
        case Key: {
            at = skip_ws(b, at);
            if (at >= b.size()) return need;
            if (b[at] == '}') {
                end = at + 1;
                goto done;
            }
            if (b[at] != '"') return Bad;
            JsonScan s(at);
            if (!s.scan(b, c.final)) return s.bad ? Bad : need;
            auto k = json_string(b.substr(s.start, s.end - s.start));
            if (!k) return Bad;
            key = *k;
            at = s.end;
            st = Colon;
            break;
        }
        case Colon:
            at = skip_ws(b, at);
            if (at >= b.size()) return need;
            if (b[at] != ':') return Bad;
            ++at;
            st = Value;
            break;
        case Value:
            at = skip_ws(b, at);
            if (at >= b.size()) return need;
            val = JsonScan(at);
            key_is_args = among(keys->args, key);
            args_sent = at;
            st = InValue;
            break;
        case InValue: {
            bool complete = val.scan(b, c.final);
            if (val.bad) return Bad;
            if (key_is_args && (val.kind == '{' || val.kind == '[')) {
                maybe_announce(c, false);
                if (announced) {
                    size_t upto = complete ? val.end : val.at;
                    c.args(b.substr(args_sent, upto - args_sent));
                    args_sent = upto;
                    args_streamed = true;
                }
            }
            if (!complete) return need;
            at = val.end;
            if (!member_done(c, b.substr(val.start, val.end - val.start))) return Bad;
            st = Next;
            break;
        }
        case Next:
            at = skip_ws(b, at);
            if (at >= b.size()) return need;
            if (b[at] == ',') {
                ++at;
                st = Key;
                break;
            }
            if (b[at] != '}') return Bad;
            end = at + 1;
            goto done;
        }
    }
done:
    if (!has_name) return Bad;
    maybe_announce(c, true);
    return Done;
}

// ---- plain ----

namespace {
struct PlainReader : Reader {
    void step(Ctx& c) override { c.content(c.rest().size()); }
};
}  // namespace

std::unique_ptr<Reader> make_plain_reader() { return std::make_unique<PlainReader>(); }

static std::unique_ptr<Reader> make_reader(Format f) {
    switch (f) {
    case Format::None: return make_plain_reader();
    case Format::Generic: return make_generic_reader();
    case Format::Hermes: return make_hermes_reader();
    case Format::Qwen3Coder:
    case Format::SeedOss:
    case Format::Glm45: return make_xml_reader(f);
    case Format::Llama3: return make_llama3_reader();
    case Format::MistralNemo:
    case Format::Granite:
    case Format::NemotronV2:
    case Format::Apriel:
    case Format::FireFunction: return make_json_array_reader(f);
    case Format::CommandR7B: return make_command_r7b_reader();
    case Format::Mistral:
    case Format::DeepSeekR1:
    case Format::DeepSeekV31:
    case Format::KimiK2:
    case Format::FunctionaryV31: return make_named_reader(f);
    case Format::Harmony: return make_harmony_reader();
    case Format::Gemma4: return make_gemma4_reader();
    case Format::FunctionaryV32: return make_functionary_v32_reader();
    }
    return make_plain_reader();
}

}  // namespace detail

struct ToolCallParser::Impl {
    Format format;
    ParserOptions opt;
    detail::Ctx c;
    std::unique_ptr<detail::Reader> reader;
    bool finished = false;

    void run() {
        if (!c.error) reader->step(c);
        if (c.error) {
            // After a broken call the rest of the reply is plain text.
            if (c.in_call()) c.open_call_ = false;
            c.content(c.rest().size());
        }
    }
    std::vector<Event> take() {
        std::vector<Event> o;
        o.swap(c.out);
        return o;
    }
};

ToolCallParser::ToolCallParser(Format f, ParserOptions opt) : impl_(std::make_unique<Impl>()) {
    impl_->format = f;
    impl_->opt = std::move(opt);
    impl_->c.opt = &impl_->opt;
    impl_->reader = detail::make_reader(f);
}
ToolCallParser::~ToolCallParser() = default;
ToolCallParser::ToolCallParser(ToolCallParser&& o) noexcept = default;
ToolCallParser& ToolCallParser::operator=(ToolCallParser&& o) noexcept = default;

std::vector<Event> ToolCallParser::push(std::string_view piece) {
    if (impl_->finished) return {};
    impl_->c.buf += piece;
    impl_->run();
    return impl_->take();
}

std::vector<Event> ToolCallParser::finish() {
    if (impl_->finished) return {};
    impl_->finished = true;
    detail::Ctx& c = impl_->c;
    c.final = true;
    impl_->run();
    if (c.in_call()) {
        c.fail("tool call " + std::to_string(c.calls() - 1) + " is not finished at the end of the reply");
        c.open_call_ = false;
    }
    if (c.pos < c.buf.size()) c.content(c.rest().size());
    for (size_t i = 0; i < c.args_.size() && !c.error; ++i) {
        auto j = ordered_json::parse(c.args_[i], nullptr, false);
        if (j.is_discarded()) {
            c.error = ParseError{"tool call " + std::to_string(i) + ": its arguments are not valid JSON", i};
        } else if (!j.is_object()) {
            c.error = ParseError{"tool call " + std::to_string(i) + ": its arguments are not a JSON object", i};
        }
    }
    c.flush_ws();
    return impl_->take();
}

const std::optional<ParseError>& ToolCallParser::error() const { return impl_->c.error; }
const std::string& ToolCallParser::raw_text() const { return impl_->c.buf; }
Format ToolCallParser::format() const { return impl_->format; }

Message parse_reply(Format f, std::string_view text, ParserOptions opt, std::optional<ParseError>* error) {
    ToolCallParser p(f, std::move(opt));
    Message m;
    m.apply(p.push(text));
    m.apply(p.finish());
    if (error) *error = p.error();
    return m;
}

}  // namespace ls::chat
