// Inside the tool-call parser: the reply buffer and the events a format's reader emits into
// it, the helpers readers share (marker search with hold-back, a resumable JSON value scanner,
// a call object reader), and one factory per reader. Not a public header.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/tool_parse.h"

namespace ls::chat::detail {

constexpr size_t npos = std::string::npos;

// The reply so far and what has been released of it. A reader consumes buf from pos; it
// returns when what follows cannot be decided without more text (never when final).
struct Ctx {
    std::string buf;
    size_t pos = 0;
    bool final = false;  // no more text comes: decide everything
    std::vector<Event> out;
    const ParserOptions* opt = nullptr;
    std::optional<ParseError> error;

    std::string_view rest() const { return std::string_view(buf).substr(pos); }
    bool at_end() const { return pos >= buf.size(); }

    // Releases n bytes from pos as content / reasoning, or drops them.
    void content(size_t n);
    void reasoning(size_t n);
    void skip(size_t n) { pos += n; }
    void content_text(std::string_view s);
    void reasoning_text(std::string_view s);

    // Tool calls. begin_call announces the next call (id: the format's, else made); args
    // appends argument text to the open call; end_call closes it ("{}" if it got none).
    size_t begin_call(const std::string& name, const std::string& id = {});
    void args(std::string_view s);
    void end_call();
    bool in_call() const { return open_call_; }
    size_t calls() const { return calls_; }
    void fail(const std::string& msg);  // the first failure is kept
    const ToolSpec* tool(std::string_view name) const;

    // Content whitespace is held until other content follows; a call opening drops it, so
    // "text\n\n<tool_call>" gives content "text".
    void flush_ws();
    bool drop_ws_after_call = false;  // whitespace right after a call is dropped

    std::string pending_ws_;
    bool open_call_ = false;
    size_t calls_ = 0;
    std::vector<std::string> args_;  // per call: the argument text given (checked at finish)
};

// The earliest of the markers in s: {offset, index}. Where none is whole, index is -1 and
// offset is how much of s surely holds no marker start (all of s when final).
struct Found {
    size_t at = 0;
    int which = -1;
};
Found find_first(std::string_view s, const std::vector<std::string_view>& markers, bool final);
// s begins with m: 1; s is a proper prefix of m (may still become it): 0; neither: -1.
int starts(std::string_view s, std::string_view m);
size_t skip_ws(std::string_view s, size_t i = 0);
bool is_ws(char c);

// Finds the end of one JSON value in buf, resumably: scan(buf, final) advances `at` (an
// offset into buf) and says whether the value is complete (end = one past it). Checks only
// the structure that finds the end; nlohmann judges the text.
struct JsonScan {
    size_t start = npos, at = 0, end = npos;
    char kind = 0;  // '{', '[', '"', or 's' (a scalar)
    int depth = 0;
    bool in_str = false, esc = false, bad = false;
    explicit JsonScan(size_t from = 0) : at(from) {}
    bool scan(std::string_view buf, bool final);
};

// Reads one call object {"name": .., "arguments": {..}, "id": ..} (the key names per format)
// starting at its '{', announcing the call once its name is known and streaming the
// arguments' text as it comes.
struct CallKeys {
    std::vector<std::string_view> name{"name"};
    std::vector<std::string_view> args{"arguments", "parameters"};
    std::vector<std::string_view> id{};          // the format's own id
    std::vector<std::string_view> other{};       // other keys allowed when strict
    bool strict = false;              // another key: not a call
    bool announce_on_args = false;    // announce only when the arguments start (Llama 3)
    bool known_names_only = false;    // a name not among the declared tools: not a call
};
struct ObjCall {
    enum Result { More, Done, Bad };
    ObjCall(const CallKeys& k, size_t open_brace) : keys(&k), at(open_brace) {}
    Result step(Ctx& c);  // c.pos is left alone; the reader moves it on Done
    size_t end = npos;    // one past the '}' once Done
    bool announced = false;

private:
    const CallKeys* keys;
    size_t at;
    enum St { Open, Key, Colon, Value, InValue, Next } st = Open;
    std::string key, name, id, pending_args;
    bool has_name = false, has_args = false, args_streamed = false, key_is_args = false;
    size_t key_start = 0, args_sent = 0;
    JsonScan val;
    bool member_done(Ctx& c, std::string_view text);
    void maybe_announce(Ctx& c, bool at_end);
};

// Decodes a JSON string literal ("..."); nullopt if it is not one.
std::optional<std::string> json_string(std::string_view lit);
// A parameter value written as text (XML formats) as JSON: by the declared type where the
// schema gives one, else JSON if it parses as a number, true/false/null, object or array, else
// a string.
std::string xml_value_json(std::string_view text, const nlohmann::ordered_json* prop_schema);

// A "python" call whose argument is the code: {"code": ...}.
void python_code_call(Ctx& c, std::string_view code);

struct Reader {
    virtual ~Reader() = default;
    virtual void step(Ctx& c) = 0;
};

// Content only, no calls.
std::unique_ptr<Reader> make_plain_reader();
// format_hermes.cpp: a call object between tags.
std::unique_ptr<Reader> make_hermes_reader();
// format_json_array.cpp: a JSON array of call objects after a marker.
std::unique_ptr<Reader> make_json_array_reader(Format f);
// format_named.cpp: marker, name, separator, JSON arguments, closer (Mistral, DeepSeek,
// Kimi K2, Functionary v3.1).
std::unique_ptr<Reader> make_named_reader(Format f);
// format_xml.cpp: parameters as XML elements (Qwen3-Coder, Seed-OSS, GLM 4.5).
std::unique_ptr<Reader> make_xml_reader(Format f);
std::unique_ptr<Reader> make_llama3_reader();
std::unique_ptr<Reader> make_harmony_reader();
std::unique_ptr<Reader> make_gemma4_reader();
std::unique_ptr<Reader> make_generic_reader();
std::unique_ptr<Reader> make_functionary_v32_reader();
std::unique_ptr<Reader> make_command_r7b_reader();

}  // namespace ls::chat::detail
