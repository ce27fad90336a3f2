// A context-free grammar for constrained decoding, written in llama.cpp's GBNF and compiled
// to a flat program the matcher (matcher.h) runs as a pushdown recognizer over code points.
//
// The compiled form: every rule is a list of alternatives; every alternative a sequence of
// elements, each either a character class (one code point) or a reference to a rule. The
// repetition operators are lowered to helper rules that recurse on the right (x* becomes
// R ::= x R | ε), so a matcher's stacks stay flat however long a repetition runs. Left
// recursion, which a top-down recognizer cannot run, is refused when the grammar is built.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ls::grammar {

// Every failure of this layer: a malformed grammar (with line and column), an invalid
// JSON schema (with the JSON pointer), or a limit exceeded by a hostile input.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Bounds against hostile grammars. A repetition expands to copies of its item, so the
// element limit bounds what {m,n} may expand to.
struct GrammarLimits {
    size_t max_text_bytes = 1 << 20;
    size_t max_rules = 1 << 16;        // named + helper rules
    size_t max_elements = 1 << 20;     // after the repetitions are expanded
    int max_nesting = 128;             // ( ) groups inside one another
    uint32_t max_repetition = 10000;   // the largest m or n in {m,n}
};

// A set of code points: sorted, disjoint, non-adjacent ranges, or their complement.
struct CharClass {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive
    bool negated = false;
    uint64_t ascii[2] = {0, 0};  // membership of 0..127, precomputed: most grammar text is ASCII

    bool contains(uint32_t cp) const;
    // Whether some code point in [lo, hi] is in the set: a partial UTF-8 sequence can still
    // complete to a member.
    bool intersects(uint32_t lo, uint32_t hi) const;
    void finish();  // sorts and merges the ranges, fills `ascii`
};

class Grammar {
public:
    enum class Kind : uint8_t { End, Alt, Ref, Class };
    struct Element {
        Kind kind;
        uint32_t arg;  // Ref: rule id; Class: class id
    };

    // Parses GBNF. Throws Error naming the line, column and the problem: a syntax error, an
    // undefined or twice-defined rule, left recursion (with the rule named), an empty
    // grammar, a missing start rule, or a limit exceeded.
    static std::shared_ptr<const Grammar> parse(std::string_view gbnf, std::string_view root = "root",
                                                const GrammarLimits& limits = {});

    const std::vector<Element>& elements() const { return elems_; }
    const CharClass& char_class(uint32_t id) const { return classes_[id]; }
    // The start positions of each alternative of rule `r` (an empty alternative starts on
    // its own Alt/End element).
    const std::vector<uint32_t>& alternatives(uint32_t r) const { return alts_[r]; }
    uint32_t root() const { return root_; }
    size_t n_rules() const { return names_.size(); }
    const std::string& rule_name(uint32_t r) const { return names_[r]; }
    // A hash of the compiled program: two grammars with the same program share masks in a
    // token-mask cache (the same JSON schema compiled for two requests).
    uint64_t fingerprint() const { return fingerprint_; }
    // The program written back as GBNF (helper rules included), for debugging and tests.
    std::string dump() const;

    struct Builder;

private:
    friend struct Builder;
    std::vector<Element> elems_;
    std::vector<CharClass> classes_;
    std::vector<std::vector<uint32_t>> alts_;
    std::vector<std::string> names_;
    uint32_t root_ = 0;
    uint64_t fingerprint_ = 0;
};

}  // namespace ls::grammar
