// A pushdown recognizer for a Grammar over UTF-8 bytes, with rollback.
//
// The recognizer holds the set of possible parse stacks (an ambiguous grammar keeps several
// alive at once). Stacks are interned in an arena as (position, parent) nodes, so a stack is
// one integer and a set of stacks a sorted list of integers; each distinct (stack set, unfinished
// UTF-8 sequence) becomes a numbered state, and the transition on each byte is memoized per
// state. The matcher's position is therefore one state number, which makes a rollback of n tokens
// a pop of n entries from a history, and makes a token-mask walk (token_mask.h) mostly table
// lookups. A state depends only on the bytes accepted since reset(), never on how they were
// split into calls, so the answers do not depend on batching or on speculation.
//
// Code points, not bytes, are what the grammar's classes match: a multi-byte character split
// across two tokens is held as an unfinished sequence, allowed while some stack's class still
// contains a code point it can complete to.
//
// Not thread-safe: the memo tables grow on every query. Use one Matcher per sequence; the
// Grammar it runs is immutable and may be shared.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/grammar/grammar.h"

namespace ls::grammar {

class TokenMask;

struct MatcherLimits {
    size_t max_stacks = 1024;        // stacks alive at once (an ambiguous grammar); beyond: Error
    size_t max_states = 1 << 20;     // distinct states memoized; beyond: Error
    size_t max_stack_nodes = 1 << 22;
    size_t max_rows = 1 << 14;       // transition rows of 1 KiB kept; beyond: the rows are dropped
};

namespace detail {

// The memo tables behind a Matcher: interned stacks, stack sets, states and their transitions.
class Automaton {
public:
    static constexpr int32_t kReject = -1;

    Automaton(std::shared_ptr<const Grammar> g, const MatcherLimits& lim);

    uint32_t initial() const { return initial_; }
    // The state after `byte`, or kReject. The common case is one table lookup.
    int32_t next(uint32_t s, uint8_t byte) {
        int32_t r = row_of_[s];
        if (r >= 0) {
            int32_t t = rows_[size_t(r) * 256 + byte];
            if (t != kUnknown) return t;
        }
        return compute_next(s, byte);
    }
    bool accepting(uint32_t s) const { return states_[s].accepting; }
    // Whether state s stays s on every "plain" character: printable ASCII but '"' and '\', and
    // every non-ASCII character (the inside of a JSON string). From such a state every token of
    // plain characters is allowed without walking it (token_mask.cpp). Memoized.
    bool plain_loop(uint32_t s);
    bool can_continue(uint32_t s) const { return states_[s].can_continue; }
    // The state's content, independent of this arena's numbering: the grammar's fingerprint,
    // the unfinished UTF-8 sequence and the stacks as position lists, sorted. Equal keys mean
    // equal futures, so a token-mask cache shared by matchers can key on it. The reference
    // lasts until the next state is made.
    const std::string& key(uint32_t s);
    const Grammar& grammar() const { return *g_; }
    size_t n_states() const { return states_.size(); }

private:
    static constexpr int32_t kUnknown = -2;
    struct Node {
        uint32_t pos, parent;  // parent 0: the bottom of the stack
    };
    struct State {
        uint32_t set;
        uint32_t cp;   // the unfinished code point's bits so far
        uint8_t need;  // continuation bytes still to come (0: none pending)
        uint8_t len;   // the sequence's total length
        bool accepting, can_continue;
        std::string key;
    };

    int32_t compute_next(uint32_t s, uint8_t byte);
    uint32_t node(uint32_t pos, uint32_t parent);
    const std::vector<uint32_t>& closure(uint32_t pos, uint32_t parent);
    int32_t step_set(uint32_t set, uint32_t cp);  // the set after code point cp, or kReject
    bool viable(uint32_t set, uint32_t lo, uint32_t hi) const;
    uint32_t intern_set(std::vector<uint32_t>&& stacks);
    uint32_t intern_state(uint32_t set, uint32_t cp, uint8_t need, uint8_t len);

    std::shared_ptr<const Grammar> g_;
    MatcherLimits lim_;
    std::vector<Node> nodes_;  // [0] unused: id 0 in a set is "the root has ended"
    std::unordered_map<uint64_t, uint32_t> node_ids_;
    std::unordered_map<uint64_t, std::vector<uint32_t>> closures_;
    std::vector<std::vector<uint32_t>> sets_;
    std::unordered_map<std::string, uint32_t> set_ids_;  // the id list's bytes -> set id
    std::vector<State> states_;
    std::vector<int32_t> row_of_;  // per state: its transition row, or -1 (apart: the walk's hot read)
    std::vector<int8_t> plain_;    // per state: plain_loop, -1 not yet known
    std::unordered_map<uint64_t, uint32_t> state_ids_;
    std::vector<int32_t> rows_;
    size_t n_rows_ = 0;
    uint32_t initial_ = 0;
};

}  // namespace detail

class Matcher {
public:
    // `vocab` is needed only by accept_token.
    explicit Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenMask> vocab = nullptr,
                     const MatcherLimits& limits = {});

    // Advances over `bytes` if the grammar allows all of them; otherwise returns false and
    // leaves the matcher unchanged. Each successful call (even an empty one) is one history
    // entry for rollback.
    bool accept_bytes(std::string_view bytes);
    // The token's bytes, as accept_bytes. An end-of-generation token is accepted only where
    // the root may end, and ends the matcher (is_ended()); a special/control token or an empty
    // one is never accepted. Throws Error if no vocabulary was given.
    bool accept_token(int32_t id);

    bool is_accepting() const;  // the root may end here (no unfinished UTF-8 sequence)
    bool can_continue() const;  // some non-empty continuation exists
    bool is_ended() const { return state_ == kEnded; }

    // Undoes the last n accepted calls (speculative decoding drops rejected guesses). Throws
    // Error if n exceeds history_size().
    void rollback(size_t n);
    size_t history_size() const { return history_.size(); }
    void reset();

    const Grammar& grammar() const { return *grammar_; }
    const std::shared_ptr<const TokenMask>& vocab() const { return vocab_; }

    // For TokenMask: the current state and the memo tables it is a state of. The automaton is
    // a cache, which is why a const Matcher hands it out mutable.
    static constexpr uint32_t kEnded = 0xFFFFFFFFu;
    uint32_t state() const { return state_; }
    detail::Automaton& automaton() const { return *auto_; }

private:
    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const TokenMask> vocab_;
    std::unique_ptr<detail::Automaton> auto_;
    uint32_t state_;
    std::vector<uint32_t> history_;  // the state before each accepted call
};

}  // namespace ls::grammar
