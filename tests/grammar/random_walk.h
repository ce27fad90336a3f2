// A seeded random walk through a grammar: from the matcher's state, pick one of the states the
// allowed bytes lead to (uniformly over states, not bytes, so a rare byte that makes progress,
// say the 'a' of an unanchored pattern "abc", is as likely as the 200 that loop), then one byte
// leading there, until it accepts (and a coin says stop). The bytes >= 0x80 count as one
// target: each lead byte opens its own unfinished-UTF-8 state, and 50 of them would drown
// the ASCII choices. Used to draw documents from a JSON-schema
// grammar, which must then validate against the schema.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "core/grammar/matcher.h"

namespace ls::grammar::testing {

// One document of at most max_bytes, or nullopt if the walk ran past it (the caller retries).
inline std::optional<std::string> random_walk(Matcher& m, std::mt19937_64& rng, size_t max_bytes = 4096,
                                              double stop = 0.25) {
    m.reset();
    std::string out;
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    while (out.size() < max_bytes) {
        if (m.is_accepting() && (!m.can_continue() || coin(rng) < stop)) return out;
        auto& a = m.automaton();
        int32_t to[256];
        int32_t targets[256];
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            to[b] = a.next(m.state(), uint8_t(b));
            if (to[b] < 0) continue;
            if (b >= 0x80) to[b] = -2;  // the one non-ASCII target
            bool seen = false;
            for (int k = 0; k < n && !seen; ++k) seen = targets[k] == to[b];
            if (!seen) targets[n++] = to[b];
        }
        if (n == 0) return std::nullopt;  // a dead end: never expected; the caller's check fails
        int32_t pick = targets[std::uniform_int_distribution<int>(0, n - 1)(rng)];
        uint8_t bytes[256];
        int nb = 0;
        for (int b = 0; b < 256; ++b)
            if (to[b] == pick) bytes[nb++] = uint8_t(b);
        char c = char(bytes[std::uniform_int_distribution<int>(0, nb - 1)(rng)]);
        m.accept_bytes(std::string_view(&c, 1));
        out += c;
    }
    return std::nullopt;
}

}  // namespace ls::grammar::testing
