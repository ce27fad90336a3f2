#include "core/grammar/matcher.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "core/grammar/token_mask.h"

namespace ls::grammar {
namespace detail {

using Kind = Grammar::Kind;

namespace {

bool ends_sequence(Kind k) { return k == Kind::End || k == Kind::Alt; }

// The smallest code point a sequence of `len` bytes may encode (shorter encodings are overlong).
uint32_t min_cp(uint8_t len) { return len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000; }

}  // namespace

Automaton::Automaton(std::shared_ptr<const Grammar> g, const MatcherLimits& lim) : g_(std::move(g)), lim_(lim) {
    nodes_.push_back({0, 0});
    std::vector<uint32_t> start;
    for (uint32_t a : g_->alternatives(g_->root())) {
        const auto& c = closure(a, 0);
        start.insert(start.end(), c.begin(), c.end());
    }
    std::sort(start.begin(), start.end());
    start.erase(std::unique(start.begin(), start.end()), start.end());
    initial_ = intern_state(intern_set(std::move(start)), 0, 0, 0);
}

uint32_t Automaton::node(uint32_t pos, uint32_t parent) {
    uint64_t k = (uint64_t(pos) << 32) | parent;
    auto it = node_ids_.find(k);
    if (it != node_ids_.end()) return it->second;
    if (nodes_.size() >= lim_.max_stack_nodes)
        throw Error("grammar matcher: more than " + std::to_string(lim_.max_stack_nodes) + " stack nodes (nesting too deep)");
    uint32_t id = uint32_t(nodes_.size());
    nodes_.push_back({pos, parent});
    node_ids_.emplace(k, id);
    return id;
}

// Every stack reachable from "continue at `pos` over the stack `parent`" without matching a
// code point, each topped by a character class; 0 stands for "the root has ended". Rule
// references push their return position unless it ends its sequence (a tail call), so a
// right-recursive repetition runs in constant stack depth.
const std::vector<uint32_t>& Automaton::closure(uint32_t pos, uint32_t parent) {
    uint64_t k = (uint64_t(pos) << 32) | parent;
    auto it = closures_.find(k);
    if (it != closures_.end()) return it->second;
    const auto& el = g_->elements();
    std::vector<uint32_t> out;
    std::vector<std::pair<uint32_t, uint32_t>> work{{pos, parent}};
    std::unordered_set<uint64_t> seen;
    while (!work.empty()) {
        auto [p, par] = work.back();
        work.pop_back();
        if (!seen.insert((uint64_t(p) << 32) | par).second) continue;
        const auto& e = el[p];
        if (ends_sequence(e.kind)) {
            if (par == 0) out.push_back(0);
            else work.push_back({nodes_[par].pos, nodes_[par].parent});
        } else if (e.kind == Kind::Class) {
            out.push_back(node(p, par));
        } else {
            uint32_t ret = ends_sequence(el[p + 1].kind) ? par : node(p + 1, par);
            for (uint32_t a : g_->alternatives(e.arg)) work.push_back({a, ret});
        }
        if (seen.size() > 64 * lim_.max_stacks)
            throw Error("grammar matcher: a rule expands to too many alternatives at once");
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.size() > lim_.max_stacks)
        throw Error("grammar matcher: the grammar is too ambiguous (" + std::to_string(out.size()) +
                    " parse stacks at once, limit " + std::to_string(lim_.max_stacks) + ")");
    return closures_.emplace(k, std::move(out)).first->second;
}

uint32_t Automaton::intern_set(std::vector<uint32_t>&& stacks) {
    std::string k(reinterpret_cast<const char*>(stacks.data()), stacks.size() * sizeof(uint32_t));
    auto it = set_ids_.find(k);
    if (it != set_ids_.end()) return it->second;
    uint32_t id = uint32_t(sets_.size());
    sets_.push_back(std::move(stacks));
    set_ids_.emplace(std::move(k), id);
    return id;
}

uint32_t Automaton::intern_state(uint32_t set, uint32_t cp, uint8_t need, uint8_t len) {
    uint64_t k = (uint64_t(set) << 32) | (uint64_t(cp) << 5) | (uint64_t(need) << 3) | len;
    auto it = state_ids_.find(k);
    if (it != state_ids_.end()) return it->second;
    if (states_.size() >= lim_.max_states)
        throw Error("grammar matcher: more than " + std::to_string(lim_.max_states) + " states");
    const auto& st = sets_[set];
    bool has_end = !st.empty() && st[0] == 0;
    State s{set, cp, need, len, need == 0 && has_end, need > 0 || st.size() > (has_end ? 1u : 0u), {}};
    uint32_t id = uint32_t(states_.size());
    states_.push_back(std::move(s));
    row_of_.push_back(-1);
    plain_.push_back(-1);
    state_ids_.emplace(k, id);
    return id;
}

int32_t Automaton::step_set(uint32_t set, uint32_t cp) {
    const auto& el = g_->elements();
    std::vector<uint32_t> out;
    for (uint32_t s : sets_[set]) {
        if (s == 0) continue;
        const Node n = nodes_[s];
        if (!g_->char_class(el[n.pos].arg).contains(cp)) continue;
        const auto& c = closure(n.pos + 1, n.parent);
        out.insert(out.end(), c.begin(), c.end());
    }
    if (out.empty()) return kReject;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.size() > lim_.max_stacks)
        throw Error("grammar matcher: the grammar is too ambiguous (" + std::to_string(out.size()) +
                    " parse stacks at once, limit " + std::to_string(lim_.max_stacks) + ")");
    return int32_t(intern_set(std::move(out)));
}

bool Automaton::viable(uint32_t set, uint32_t lo, uint32_t hi) const {
    const auto& el = g_->elements();
    for (uint32_t s : sets_[set])
        if (s != 0 && g_->char_class(el[nodes_[s].pos].arg).intersects(lo, hi)) return true;
    return false;
}

int32_t Automaton::compute_next(uint32_t s, uint8_t b) {
    // Copy: interning below may grow states_.
    const State st = states_[s];
    int32_t result = kReject;
    auto finish_cp = [&](uint32_t cp) {
        int32_t set = step_set(st.set, cp);
        if (set != kReject) result = int32_t(intern_state(uint32_t(set), 0, 0, 0));
    };
    auto partial = [&](uint32_t cp, uint8_t need, uint8_t len) {
        uint32_t lo = cp << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
        lo = std::max(lo, min_cp(len));
        hi = std::min(hi, 0x10FFFFu);
        if (lo <= hi && viable(st.set, lo, hi)) result = int32_t(intern_state(st.set, cp, need, len));
    };
    if (st.need == 0) {
        if (b < 0x80) finish_cp(b);
        else if (b >= 0xC2 && b <= 0xDF) partial(b & 0x1F, 1, 2);
        else if (b >= 0xE0 && b <= 0xEF) partial(b & 0x0F, 2, 3);
        else if (b >= 0xF0 && b <= 0xF4) partial(b & 0x07, 3, 4);
    } else if ((b & 0xC0) == 0x80) {
        uint32_t cp = (st.cp << 6) | (b & 0x3F);
        uint8_t need = uint8_t(st.need - 1);
        if (need == 0) {
            bool ok = cp >= min_cp(st.len) && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
            if (ok) finish_cp(cp);
        } else {
            partial(cp, need, st.len);
        }
    }
    // Memoize in the state's row; rows are a cache, dropped wholesale when too many.
    if (row_of_[s] < 0) {
        if (n_rows_ >= lim_.max_rows) {
            std::fill(row_of_.begin(), row_of_.end(), -1);
            rows_.clear();
            n_rows_ = 0;
        }
        row_of_[s] = int32_t(n_rows_++);
        rows_.resize(n_rows_ * 256, kUnknown);
    }
    rows_[size_t(row_of_[s]) * 256 + b] = result;
    return result;
}

bool Automaton::plain_loop(uint32_t s) {
    if (plain_[s] >= 0) return plain_[s];
    bool ok = states_[s].need == 0;
    // Each stack's class holds all of U+0080..U+10FFFF or none of it: then every non-ASCII
    // character moves the same stacks (a stack's successors do not depend on the character),
    // and one of them (U+0080, C2 80) stands for all.
    const auto& el = g_->elements();
    for (uint32_t st : sets_[states_[s].set]) {
        if (!ok) break;
        if (st == 0) continue;
        const CharClass& c = g_->char_class(el[nodes_[st].pos].arg);
        bool any = c.intersects(0x80, 0x10FFFF);
        bool all = true;
        if (c.negated) {
            for (const auto& r : c.ranges) all = all && !(r.first <= 0x10FFFF && 0x80 <= r.second);
        } else {
            all = false;
            for (const auto& r : c.ranges) all = all || (r.first <= 0x80 && r.second >= 0x10FFFF);
        }
        ok = all || !any;
    }
    for (int b = 0x20; ok && b < 0x7F; ++b)
        if (b != '"' && b != '\\') ok = next(s, uint8_t(b)) == int32_t(s);
    if (ok) {
        int32_t t = next(s, 0xC2);
        ok = t >= 0 && next(uint32_t(t), 0x80) == int32_t(s);
    }
    plain_[s] = ok ? 1 : 0;
    return ok;
}

const std::string& Automaton::key(uint32_t s) {
    State& st = states_[s];
    if (!st.key.empty()) return st.key;
    std::vector<std::vector<uint32_t>> stacks;
    for (uint32_t id : sets_[st.set]) {
        std::vector<uint32_t> v;
        for (uint32_t n = id; n != 0; n = nodes_[n].parent) v.push_back(nodes_[n].pos);
        stacks.push_back(std::move(v));
    }
    std::sort(stacks.begin(), stacks.end());
    std::string k;
    auto put = [&](uint32_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
    uint64_t fp = g_->fingerprint();
    k.append(reinterpret_cast<const char*>(&fp), sizeof fp);
    put(st.cp);
    put((uint32_t(st.need) << 8) | st.len);
    for (const auto& v : stacks) {
        for (uint32_t p : v) put(p);
        put(0xFFFFFFFFu);  // positions are element indices, never this
    }
    states_[s].key = std::move(k);
    return states_[s].key;
}

}  // namespace detail

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenMask> vocab, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)),
      auto_(std::make_unique<detail::Automaton>(grammar_, limits)), state_(auto_->initial()) {}

bool Matcher::accept_bytes(std::string_view bytes) {
    if (state_ == kEnded) return false;
    uint32_t s = state_;
    for (char c : bytes) {
        int32_t t = auto_->next(s, uint8_t(c));
        if (t < 0) return false;
        s = uint32_t(t);
    }
    history_.push_back(state_);
    state_ = s;
    return true;
}

bool Matcher::accept_token(int32_t id) {
    if (!vocab_) throw Error("grammar matcher: accept_token needs a vocabulary (construct the Matcher with a TokenMask)");
    if (id < 0 || id >= vocab_->n_vocab() || state_ == kEnded) return false;
    if (vocab_->is_eog(id)) {
        if (!is_accepting()) return false;
        history_.push_back(state_);
        state_ = kEnded;
        return true;
    }
    if (vocab_->is_special(id)) return false;
    const std::string& b = vocab_->token_bytes(id);
    if (b.empty()) return false;
    return accept_bytes(b);
}

bool Matcher::is_accepting() const { return state_ != kEnded && auto_->accepting(state_); }

bool Matcher::can_continue() const { return state_ != kEnded && auto_->can_continue(state_); }

void Matcher::rollback(size_t n) {
    if (n > history_.size())
        throw Error("grammar matcher: rollback of " + std::to_string(n) + " with only " + std::to_string(history_.size()) +
                    " accepted");
    if (n == 0) return;
    state_ = history_[history_.size() - n];
    history_.resize(history_.size() - n);
}

void Matcher::reset() {
    history_.clear();
    state_ = auto_->initial();
}

}  // namespace ls::grammar
