// JSON Schema -> GBNF.
//
// Refused (Error, with the JSON pointer): keywords whose constraint the grammar would silently
// drop (not, if/then/else, dependent*, patternProperties, propertyNames, min/maxProperties,
// contains, multipleOf, uniqueItems: true, unevaluated*, minimum/maximum on "number"),
// remote or malformed $ref, `false` schemas, keywords of the wrong JSON type, pattern together
// with min/maxLength, anyOf/oneOf/$ref beside other constraining keywords, allOf of anything
// but objects. Annotations (title, description, default, examples, $comment, ...) and unknown
// `format`s are ignored, as JSON Schema treats them. oneOf is read as anyOf: exclusivity is
// not enforced.
#include "core/grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace ls::grammar {
namespace {

using json = nlohmann::ordered_json;

const char* kSpace = "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}";

struct Primitive {
    const char* name;
    const char* body;
    std::vector<const char*> deps;
};

// A string character is exactly one code point: \u escapes of surrogates are left out (a
// non-BMP character is written as UTF-8), so minLength / maxLength count what JSON decodes.
const std::vector<Primitive>& primitives() {
    static const std::vector<Primitive> p = {
        {"boolean", "(\"true\" | \"false\") space", {}},
        {"decimal-part", "[0-9]{1,16}", {}},
        {"integral-part", "[0] | [1-9] [0-9]{0,15}", {}},
        {"number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)? space", {"integral-part", "decimal-part"}},
        {"integer", "(\"-\"? integral-part) space", {"integral-part"}},
        {"value", "object | array | string | number | boolean | null", {"object", "array", "string", "number", "boolean", "null"}},
        {"object", "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? \"}\" space", {"string", "value"}},
        {"array", "\"[\" space ( value (\",\" space value)* )? \"]\" space", {"value"}},
        {"uuid", "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12} \"\\\"\" space", {}},
        {"hex", "[0-9a-fA-F]", {}},
        {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CefEF] hex hex hex | [dD] [0-7] hex hex))", {"hex"}},
        {"string", "\"\\\"\" char* \"\\\"\" space", {"char"}},
        {"null", "\"null\" space", {}},
        // Days per month, February to 28: every date written is a real one (leap days left out).
        {"date", "[0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] ) | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | \"02\" \"-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )", {}},
        {"time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )", {}},
        {"date-time", "date \"T\" time", {"date", "time"}},
        {"date-string", "\"\\\"\" date \"\\\"\" space", {"date"}},
        {"time-string", "\"\\\"\" time \"\\\"\" space", {"time"}},
        {"date-time-string", "\"\\\"\" date-time \"\\\"\" space", {"date-time"}},
    };
    return p;
}

const std::set<std::string>& refused_keywords() {
    static const std::set<std::string> k = {
        "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "patternProperties",
        "propertyNames", "minProperties", "maxProperties", "contains", "minContains", "maxContains", "multipleOf",
        "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"};
    return k;
}

// Keywords that constrain (as opposed to annotate): used to refuse $ref / anyOf with siblings.
const std::set<std::string>& constraining_keywords() {
    static const std::set<std::string> k = {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "enum", "const", "anyOf", "oneOf", "allOf", "$ref"};
    return k;
}

std::string pointer_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

// A GBNF literal for `text` (escaping what GBNF string literals need).
std::string gbnf_literal(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') { out += '\\'; out += char(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else out += char(c);
    }
    return out + "\"";
}

// Digits of [lo, hi] for two equal-length digit strings, as a GBNF expression.
std::string same_length_range(const std::string& lo, const std::string& hi) {
    if (lo.size() == 1) return lo == hi ? "[" + lo + "]" : "[" + lo + "-" + hi + "]";
    if (lo[0] == hi[0]) return "[" + lo.substr(0, 1) + "] " + same_length_range(lo.substr(1), hi.substr(1));
    size_t n = lo.size() - 1;
    std::string zeros(n, '0'), nines(n, '9');
    std::string rest = " [0-9]" + (n > 1 ? "{" + std::to_string(n) + "}" : std::string());
    std::vector<std::string> alts;
    char a = lo[0], b = hi[0];
    if (lo.substr(1) != zeros) {
        alts.push_back("[" + std::string(1, a) + "] (" + same_length_range(lo.substr(1), nines) + ")");
        ++a;
    }
    bool hi_full = hi.substr(1) == nines;
    char top = hi_full ? b : char(b - 1);
    if (a <= top) alts.push_back((a == top ? "[" + std::string(1, a) + "]" : "[" + std::string(1, a) + "-" + std::string(1, top) + "]") + rest);
    if (!hi_full) alts.push_back("[" + std::string(1, b) + "] (" + same_length_range(zeros, hi.substr(1)) + ")");
    std::string out;
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return alts.size() > 1 ? "(" + out + ")" : out;
}

// Non-negative integers in [lo, hi], without leading zeros.
std::string nonneg_range(uint64_t lo, uint64_t hi) {
    std::vector<std::string> alts;
    std::string hs = std::to_string(hi);
    for (size_t d = std::to_string(lo).size(); d <= hs.size(); ++d) {
        uint64_t first = d == 1 ? 0 : uint64_t(std::pow(10.0, double(d - 1)));
        std::string a = std::to_string(std::max(lo, first));
        std::string b = d == hs.size() ? hs : std::string(d, '9');
        alts.push_back(same_length_range(a, b));
    }
    std::string out;
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return out;
}

class Converter {
public:
    explicit Converter(const json& root) : root_(root) { add("space", kSpace); }

    std::string run() {
        std::string root_rule = visit(root_, "root", "#");
        if (root_rule != "root") add_exact("root", root_rule);
        std::string out;
        auto it = index_.find("root");
        out += "root ::= " + rules_[it->second].second + "\n";
        for (const auto& [name, body] : rules_)
            if (name != "root") out += name + " ::= " + body + "\n";
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const {
        throw Error("json schema: at " + path + ": " + what);
    }

    static std::string sanitize(const std::string& name) {
        std::string out;
        for (char c : name) out += (std::isalnum((unsigned char)c) || c == '-') ? c : '-';
        return out.empty() ? "r" : out;
    }

    // Adds a rule under a name derived from `name` (numbered if the name holds another body).
    std::string add(const std::string& name, const std::string& body) {
        std::string base = sanitize(name), n = base;
        for (int k = 0;; ++k) {
            if (k) n = base + std::to_string(k);
            auto it = index_.find(n);
            if (it == index_.end()) {
                index_.emplace(n, rules_.size());
                rules_.push_back({n, body});
                return n;
            }
            if (rules_[it->second].second == body) return n;
        }
    }
    void add_exact(const std::string& name, const std::string& body) {
        auto it = index_.find(name);
        if (it == index_.end()) {
            index_.emplace(name, rules_.size());
            rules_.push_back({name, body});
        } else {
            rules_[it->second].second = body;
        }
    }
    std::string reserve(const std::string& name) {
        std::string base = sanitize(name), n = base;
        for (int k = 1; index_.count(n) || primitive(n) || n == "root"; ++k) n = base + std::to_string(k);
        index_.emplace(n, rules_.size());
        rules_.push_back({n, ""});
        return n;
    }
    static const Primitive* primitive(const std::string& name) {
        for (const auto& p : primitives())
            if (name == p.name) return &p;
        return nullptr;
    }
    std::string prim(const std::string& name) {
        const Primitive* p = primitive(name);
        if (!index_.count(name)) {
            add_exact(name, p->body);
            for (const char* d : p->deps) prim(d);
        }
        return name;
    }

    // The rule for schema `s` at JSON pointer `path`; `name` suggests the rule's name.
    std::string visit(const json& s, const std::string& name, const std::string& path) {
        if (++depth_ > 256) fail(path, "schema nested deeper than 256");
        struct Leave { int& d; ~Leave() { --d; } } leave{depth_};
        if (s.is_boolean()) {
            if (!s.get<bool>()) fail(path, "the schema false allows nothing");
            return prim("value");
        }
        if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
        for (const auto& [k, v] : s.items()) {
            if (refused_keywords().count(k)) fail(path + "/" + pointer_escape(k), "the keyword '" + k + "' is not supported");
        }
        if (s.contains("uniqueItems")) {
            if (!s["uniqueItems"].is_boolean()) fail(path + "/uniqueItems", "expected a boolean");
            if (s["uniqueItems"].get<bool>()) fail(path + "/uniqueItems", "uniqueItems: true is not supported");
        }
        auto others = [&](const char* self) {
            for (const auto& [k, v] : s.items())
                if (k != self && constraining_keywords().count(k)) return k;
            return std::string();
        };

        if (s.contains("$ref")) {
            std::string o = others("$ref");
            if (!o.empty()) fail(path + "/" + pointer_escape(o), "'" + o + "' beside $ref is not supported");
            return ref(s["$ref"], path + "/$ref");
        }
        if (s.contains("const")) return add(name, const_literal(s["const"]) + " space");
        if (s.contains("enum")) {
            const json& e = s["enum"];
            if (!e.is_array() || e.empty()) fail(path + "/enum", "expected a non-empty array");
            std::string body = "(";
            for (size_t i = 0; i < e.size(); ++i) body += (i ? " | " : "") + const_literal(e[i]);
            return add(name, body + ") space");
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!s.contains(key)) continue;
            std::string o = others(key);
            if (!o.empty()) fail(path + "/" + pointer_escape(o), "'" + o + "' beside " + key + " is not supported");
            const json& alts = s[key];
            if (!alts.is_array() || alts.empty()) fail(path + "/" + key, "expected a non-empty array of schemas");
            std::string body;
            for (size_t i = 0; i < alts.size(); ++i)
                body += (i ? " | " : "") + visit(alts[i], name + "-" + std::to_string(i), path + "/" + key + "/" + std::to_string(i));
            return add(name, body);
        }
        if (s.contains("allOf")) return all_of(s, name, path);

        const json* type = s.contains("type") ? &s["type"] : nullptr;
        if (type && type->is_array()) {
            if (type->empty()) fail(path + "/type", "an empty type list allows nothing");
            std::string body;
            for (size_t i = 0; i < type->size(); ++i) {
                if (!(*type)[i].is_string()) fail(path + "/type/" + std::to_string(i), "expected a type name");
                json copy = s;
                copy["type"] = (*type)[i];
                body += (i ? " | " : "") + visit(copy, name + "-" + (*type)[i].get<std::string>(), path);
            }
            return add(name, body);
        }
        std::string t;
        if (type) {
            if (!type->is_string()) fail(path + "/type", "expected a string or an array of strings");
            t = type->get<std::string>();
        } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
            t = "object";
        } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) {
            t = "array";
        } else if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength")) {
            t = "string";
        }
        if (t.empty()) return prim("value");
        if (t == "object") return object(s, name, path);
        if (t == "array") return array(s, name, path);
        if (t == "string") return string(s, name, path);
        if (t == "integer") return integer(s, name, path);
        if (t == "number") {
            for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
                if (s.contains(k)) fail(path + "/" + k, std::string("'") + k + "' on a number is not supported (only on integers)");
            return prim("number");
        }
        if (t == "boolean") return prim("boolean");
        if (t == "null") return prim("null");
        fail(path + "/type", "unknown type '" + t + "'");
    }

    std::string const_literal(const json& v) { return gbnf_literal(v.dump()); }

    const json& resolve(const json& refv, const std::string& path) {
        if (!refv.is_string()) fail(path, "expected a string");
        std::string r = refv.get<std::string>();
        if (r.empty() || r[0] != '#') fail(path, "only local references (#/...) are supported, not '" + r + "'");
        try {
            json::json_pointer ptr(r.substr(1));
            if (!root_.contains(ptr)) fail(path, "'" + r + "' does not resolve");
            return root_.at(ptr);
        } catch (const nlohmann::json::exception&) {
            fail(path, "'" + r + "' is not a valid JSON pointer or does not resolve");
        }
    }

    std::string ref(const json& refv, const std::string& path) {
        const json& target = resolve(refv, path);
        std::string r = refv.get<std::string>();
        auto it = refs_.find(r);
        if (it != refs_.end()) return it->second;
        // Named before it is visited, so a recursive schema refers to itself.
        std::string n = reserve(r == "#" ? "root-ref" : r.substr(r.rfind('/') + 1));
        refs_.emplace(r, n);
        std::string body = visit(target, n + "-body", r);
        add_exact(n, body);
        return n;
    }

    // allOf: one component (after its own keywords) is visited as is; several must all be
    // objects, and are merged: properties in order of appearance, required and
    // additionalProperties: false combined.
    std::string all_of(const json& s, const std::string& name, const std::string& path) {
        const json& parts = s["allOf"];
        if (!parts.is_array() || parts.empty()) fail(path + "/allOf", "expected a non-empty array of schemas");
        json rest = s;
        rest.erase("allOf");
        bool rest_constrains = false;
        for (const auto& [k, v] : rest.items())
            if (constraining_keywords().count(k)) rest_constrains = true;
        if (parts.size() == 1 && !rest_constrains) return visit(parts[0], name, path + "/allOf/0");
        json merged = {{"type", "object"}, {"properties", json::object()}, {"required", json::array()}};
        bool closed = false;
        auto merge = [&](const json& part, const std::string& ppath) {
            const json* p = &part;
            std::string at = ppath;
            for (int hops = 0; p->is_object() && p->contains("$ref"); ++hops) {
                if (hops > 32) fail(at, "a $ref chain longer than 32");
                at = (*p)["$ref"].is_string() ? (*p)["$ref"].get<std::string>() : at;
                p = &resolve((*p)["$ref"], ppath + "/$ref");
            }
            if (!p->is_object()) fail(at, "allOf components must be object schemas");
            for (const auto& [k, v] : p->items()) {
                if (k == "properties") {
                    if (!v.is_object()) fail(at + "/properties", "expected an object");
                    for (const auto& [pk, pv] : v.items()) {
                        if (merged["properties"].contains(pk) && merged["properties"][pk] != pv)
                            fail(at + "/properties/" + pointer_escape(pk), "property '" + pk + "' defined differently by two allOf components");
                        merged["properties"][pk] = pv;
                    }
                } else if (k == "required") {
                    if (!v.is_array()) fail(at + "/required", "expected an array");
                    for (const auto& r : v) merged["required"].push_back(r);
                } else if (k == "additionalProperties") {
                    if (v.is_boolean() && !v.get<bool>()) closed = true;
                    else if (!v.is_boolean()) fail(at + "/additionalProperties", "a schema here is not supported inside allOf");
                } else if (k == "type") {
                    if (v != "object") fail(at + "/type", "allOf components must be objects");
                } else if (k == "allOf") {
                    fail(at + "/allOf", "nested allOf is not supported");
                } else if (constraining_keywords().count(k)) {
                    fail(at + "/" + pointer_escape(k), "'" + k + "' inside allOf is not supported (only objects merge)");
                }
            }
        };
        if (rest_constrains) merge(rest, path);
        for (size_t i = 0; i < parts.size(); ++i) merge(parts[i], path + "/allOf/" + std::to_string(i));
        if (closed) merged["additionalProperties"] = false;
        // Pointers inside the merged schema still resolve against the root.
        return object(merged, name, path);
    }

    // A rule for object keys other than `taken`: JSON strings without escapes (so no escaped
    // spelling of a taken name gets through), built as a trie over the taken names.
    std::string other_key(const std::vector<std::string>& taken, const std::string& name) {
        std::string kchar = add("key-char", "[^\"\\\\\\x7F\\x00-\\x1F]");
        struct TrieNode {
            std::map<unsigned char, size_t> next;
            bool end = false;
        };
        std::vector<TrieNode> trie(1);
        for (const auto& k : taken) {
            size_t n = 0;
            bool plain = true;
            for (unsigned char c : k)
                if (c == '"' || c == '\\' || c < 0x20 || c == 0x7F) plain = false;
            if (!plain) continue;  // never written by this rule anyway
            for (unsigned char c : k) {
                auto it = trie[n].next.find(c);
                if (it == trie[n].next.end()) {
                    trie.push_back({});
                    it = trie[n].next.emplace(c, trie.size() - 1).first;
                }
                n = it->second;
            }
            trie[n].end = true;
        }
        // Bytes, not code points: a deviation inside a multi-byte character is a deviation too,
        // but must still complete a valid character, so deviating bytes >= 0x80 are refused and
        // the alternative "any other character" is written over code points below 0x80 only.
        std::vector<std::string> names(trie.size());
        for (size_t i = 0; i < trie.size(); ++i) names[i] = reserve(name + "-key-" + std::to_string(i));
        for (size_t i = 0; i < trie.size(); ++i) {
            std::vector<std::string> alts;
            std::string excluded = "\"\\\\\\x7F\\x00-\\x1F";
            bool multibyte_child = false;
            for (const auto& [c, child] : trie[i].next) {
                if (c >= 0x80) { multibyte_child = true; continue; }
                std::string ch(1, char(c));
                alts.push_back(gbnf_literal(ch) + " " + names[child]);
                if (c == '-' || c == ']' || c == '^' || c == '[') excluded += "\\" + ch;
                else excluded += ch;
            }
            if (multibyte_child) {
                // Followed byte by byte, a name with non-ASCII letters would need classes over
                // bytes; keep it simple: after such a prefix only ASCII deviations are allowed.
                excluded += "\\x80-\\U0010FFFF";
            }
            alts.push_back("[^" + excluded + "] " + kchar + "* \"\\\"\"");
            if (!trie[i].end) alts.push_back("\"\\\"\"");
            std::string body;
            for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
            add_exact(names[i], body);
        }
        return add(name + "-other-key", "\"\\\"\" " + names[0] + " space");
    }

    std::string object(const json& s, const std::string& name, const std::string& path) {
        std::vector<std::pair<std::string, const json*>> props;
        if (s.contains("properties")) {
            if (!s["properties"].is_object()) fail(path + "/properties", "expected an object");
            for (const auto& [k, v] : s["properties"].items()) props.push_back({k, &v});
        }
        std::set<std::string> required;
        if (s.contains("required")) {
            if (!s["required"].is_array()) fail(path + "/required", "expected an array of property names");
            for (size_t i = 0; i < s["required"].size(); ++i) {
                const json& r = s["required"][i];
                if (!r.is_string()) fail(path + "/required/" + std::to_string(i), "expected a property name");
                std::string rn = r.get<std::string>();
                bool found = false;
                for (const auto& p : props) found = found || p.first == rn;
                if (!found) fail(path + "/required/" + std::to_string(i), "required property '" + rn + "' is not in properties");
                required.insert(rn);
            }
        }
        const json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
        if (extra && !extra->is_boolean() && !extra->is_object()) fail(path + "/additionalProperties", "expected a boolean or a schema");
        if (props.empty() && (!extra || (extra->is_boolean() && extra->get<bool>()))) return prim("object");

        std::vector<std::string> kv;
        std::vector<std::string> keys;
        for (const auto& [k, v] : props) {
            std::string value = visit(*v, name + "-" + k, path + "/properties/" + pointer_escape(k));
            kv.push_back(add(name + "-" + k + "-kv", gbnf_literal(json(k).dump()) + " space \":\" space " + value));
            keys.push_back(k);
        }
        // The tail after the declared properties: more keys, or none.
        std::string tail_first, tail_after;
        bool open = extra && !(extra->is_boolean() && !extra->get<bool>());
        if (open) {
            std::string value = extra->is_object() ? visit(*extra, name + "-additional", path + "/additionalProperties") : prim("value");
            std::string kvx = add(name + "-additional-kv", other_key(keys, name) + " \":\" space " + value);
            tail_after = add(name + "-additional-rest", "( \",\" space " + kvx + " )*");
            tail_first = add(name + "-additional-first", "( " + kvx + " " + tail_after + " )?");
        }
        // seq(i, after): properties i.. given whether one was written already (a comma comes
        // first then). An optional property is a rule "present | absent"; required ones inline.
        std::map<std::pair<size_t, bool>, std::string> memo;
        std::function<std::string(size_t, bool)> seq = [&](size_t i, bool after) -> std::string {
            if (i == props.size()) return after ? tail_after : tail_first;
            std::string present = (after ? "\",\" space " : "") + kv[i];
            std::string next = seq(i + 1, true);
            if (!next.empty()) present += " " + next;
            if (required.count(props[i].first)) return present;
            auto key = std::make_pair(i, after);
            auto it = memo.find(key);
            if (it != memo.end()) return it->second;
            std::string absent = seq(i + 1, after);
            std::string r = add(name + "-" + props[i].first + (after ? "-rest" : "-first"),
                                present + " | " + (absent.empty() ? std::string("\"\"") : absent));
            memo.emplace(key, r);
            return r;
        };
        std::string body = seq(0, false);
        return add(name, "\"{\" space " + (body.empty() ? std::string() : body + " ") + "\"}\" space");
    }

    static int64_t count(const json& s, const char* k, const std::string& path, Converter& c) {
        const json& v = s[k];
        if (!v.is_number_integer() || v.get<int64_t>() < 0) c.fail(path + "/" + k, "expected a non-negative integer");
        return v.get<int64_t>();
    }

    // item ("," space item){min-1,max-1}, optional when min is 0.
    std::string repetition(const std::string& item, int64_t min, int64_t max, const std::string& path) {
        if (max == 0) return "";
        if (min > 10000 || (max != INT64_MAX && max > 10000)) fail(path, "item or length bounds above 10000 are not supported");
        std::string more;
        int64_t lo = min > 0 ? min - 1 : 0, hi = max == INT64_MAX ? -1 : max - 1;
        if (hi == 0) more = "";
        else if (hi < 0) more = " ( \",\" space " + item + " )" + (lo == 0 ? "*" : "{" + std::to_string(lo) + ",}");
        else more = " ( \",\" space " + item + " ){" + std::to_string(lo) + "," + std::to_string(hi) + "}";
        std::string r = item + more;
        return min == 0 ? "( " + r + " )?" : r;
    }

    std::string array(const json& s, const std::string& name, const std::string& path) {
        int64_t min = s.contains("minItems") ? count(s, "minItems", path, *this) : 0;
        int64_t max = s.contains("maxItems") ? count(s, "maxItems", path, *this) : INT64_MAX;
        if (min > max) fail(path + "/minItems", "minItems above maxItems");
        const json* items = s.contains("items") ? &s["items"] : nullptr;
        const json* prefix = s.contains("prefixItems") ? &s["prefixItems"] : nullptr;
        std::string ipath = path + "/items";
        if (items && items->is_array()) {  // draft 4-2019 tuples
            prefix = items;
            items = s.contains("additionalItems") ? &s["additionalItems"] : nullptr;
            ipath = path + "/additionalItems";
        }
        if (prefix && prefix->is_array() && prefix->empty()) prefix = nullptr;
        if (prefix) {
            if (!prefix->is_array()) fail(path + "/prefixItems", "expected an array of schemas");
            int64_t n = int64_t(prefix->size());
            if (n > max) fail(path + "/maxItems", "maxItems below the number of prefixItems");
            std::string body = "\"[\" space";
            for (int64_t i = 0; i < n; ++i) {
                if (i) body += " \",\" space";
                body += " " + visit((*prefix)[size_t(i)], name + "-" + std::to_string(i), path + "/prefixItems/" + std::to_string(i));
            }
            // Every prefix item is written; more follow only if `items` is a schema.
            bool more = items && !(items->is_boolean() && !items->get<bool>());
            if (!more && min > n) fail(path + "/minItems", "minItems above the number of items allowed");
            if (more) {
                std::string it = visit(*items, name + "-item", ipath);
                int64_t lo = std::max<int64_t>(0, min - n), hi = max == INT64_MAX ? -1 : max - n;
                if (hi != 0) {
                    std::string rep = hi < 0 ? (lo == 0 ? "*" : "{" + std::to_string(lo) + ",}")
                                             : "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
                    body += " ( \",\" space " + it + " )" + rep;
                }
            }
            return add(name, body + " \"]\" space");
        }
        std::string item = items ? visit(*items, name + "-item", ipath) : prim("value");
        std::string rep = repetition(item, min, max, path);
        return add(name, "\"[\" space " + (rep.empty() ? std::string() : rep + " ") + "\"]\" space");
    }

    std::string string(const json& s, const std::string& name, const std::string& path) {
        bool has_len = s.contains("minLength") || s.contains("maxLength");
        if (s.contains("pattern")) {
            if (!s["pattern"].is_string()) fail(path + "/pattern", "expected a string");
            if (has_len) fail(path + "/pattern", "pattern together with minLength/maxLength is not supported");
            std::string body;
            try {
                body = regex_to_gbnf(s["pattern"].get<std::string>(), prim("char"));
            } catch (const Error& e) {
                fail(path + "/pattern", e.what());
            }
            return add(name, "\"\\\"\" " + body + " \"\\\"\" space");
        }
        if (s.contains("format")) {
            if (!s["format"].is_string()) fail(path + "/format", "expected a string");
            std::string f = s["format"].get<std::string>();
            if (has_len && (f == "uuid" || f == "date" || f == "time" || f == "date-time"))
                fail(path + "/format", "format together with minLength/maxLength is not supported");
            if (f == "uuid") return prim("uuid");
            if (f == "date" || f == "time" || f == "date-time") return prim(f + "-string");
        }
        if (has_len) {
            int64_t min = s.contains("minLength") ? count(s, "minLength", path, *this) : 0;
            int64_t max = s.contains("maxLength") ? count(s, "maxLength", path, *this) : INT64_MAX;
            if (min > max) fail(path + "/minLength", "minLength above maxLength");
            if (min > 10000 || (max != INT64_MAX && max > 10000)) fail(path, "length bounds above 10000 are not supported");
            std::string c = prim("char");
            std::string rep = max == INT64_MAX ? (min == 0 ? c + "*" : c + "{" + std::to_string(min) + ",}")
                                               : c + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
            return add(name, "\"\\\"\" " + rep + " \"\\\"\" space");
        }
        return prim("string");
    }

    std::string integer(const json& s, const std::string& name, const std::string& path) {
        // Unbounded sides stop at 16 digits, as integral-part does.
        const int64_t kBig = 9999999999999999;
        int64_t lo = -kBig, hi = kBig;
        bool bounded = false;
        auto bound = [&](const char* k, bool is_min, bool exclusive) {
            if (!s.contains(k)) return;
            const json& v = s[k];
            if (!v.is_number()) fail(path + "/" + k, "expected a number");
            double d = v.get<double>();
            if (std::fabs(d) > double(kBig)) fail(path + "/" + k, "bound beyond 16 digits");
            int64_t b = is_min ? int64_t(std::ceil(d)) : int64_t(std::floor(d));
            if (exclusive && double(b) == d) b += is_min ? 1 : -1;
            if (is_min) lo = std::max(lo, b);
            else hi = std::min(hi, b);
            bounded = true;
        };
        bound("minimum", true, false);
        bound("exclusiveMinimum", true, true);
        bound("maximum", false, false);
        bound("exclusiveMaximum", false, true);
        if (!bounded) return prim("integer");
        if (lo > hi) fail(path, "no integer lies within the bounds");
        std::vector<std::string> alts;
        if (lo < 0) {
            uint64_t a = uint64_t(hi < 0 ? -hi : 1), b = uint64_t(-lo);
            alts.push_back("\"-\" (" + nonneg_range(a, b) + ")");
        }
        if (hi >= 0) alts.push_back(nonneg_range(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(hi)));
        std::string body = "(";
        for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
        return add(name, body + ") space");
    }

    const json& root_;
    std::vector<std::pair<std::string, std::string>> rules_;
    std::unordered_map<std::string, size_t> index_;
    std::unordered_map<std::string, std::string> refs_;
    int depth_ = 0;
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) { return Converter(schema).run(); }

std::string json_object_gbnf() { return json_schema_to_gbnf(nlohmann::ordered_json{{"type", "object"}}); }

}  // namespace ls::grammar
