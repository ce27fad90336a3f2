// The compiled grammar's own pieces: character classes, and the program written back as GBNF.
#include <algorithm>
#include <cstdio>

#include "core/grammar/grammar.h"

namespace ls::grammar {

bool CharClass::contains(uint32_t cp) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    // Ranges are few (a handful for JSON); a linear scan beats a binary search here.
    bool in = false;
    for (const auto& [lo, hi] : ranges) {
        if (cp < lo) break;
        if (cp <= hi) { in = true; break; }
    }
    return in != negated;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
    if (!negated) {
        for (const auto& r : ranges)
            if (r.first <= hi && lo <= r.second) return true;
        return false;
    }
    // The complement meets [lo, hi] unless the merged ranges cover it entirely.
    uint32_t next = lo;
    for (const auto& r : ranges) {
        if (r.second < next) continue;
        if (r.first > next) return true;
        if (r.second >= hi) return false;
        next = r.second + 1;
    }
    return true;
}

void CharClass::finish() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second + 1)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    }
    ranges = std::move(merged);
    ascii[0] = ascii[1] = 0;
    for (uint32_t c = 0; c < 128; ++c) {
        bool in = false;
        for (const auto& r : ranges)
            if (r.first <= c && c <= r.second) in = true;
        if (in != negated) ascii[c >> 6] |= uint64_t(1) << (c & 63);
    }
}

namespace {

void put_cp(std::string& out, uint32_t cp, bool in_class) {
    if (cp == '\\' || cp == '"' || (in_class && (cp == ']' || cp == '-' || cp == '^' || cp == '['))) {
        out += '\\';
        out += char(cp);
    } else if (cp < 0x20 || cp == 0x7F) {
        static const char* hexd = "0123456789ABCDEF";
        out += "\\x";
        out += hexd[cp >> 4];
        out += hexd[cp & 15];
    } else if (cp < 0x80) {
        out += char(cp);
    } else {
        char buf[12];
        std::snprintf(buf, sizeof buf, "\\U%08X", cp);
        out += buf;
    }
}

}  // namespace

std::string Grammar::dump() const {
    std::string out;
    for (size_t r = 0; r < names_.size(); ++r) {
        std::string name = names_[r];
        std::replace(name.begin(), name.end(), '/', '-');
        out += name + " ::=";
        for (size_t a = 0; a < alts_[r].size(); ++a) {
            if (a) out += " |";
            for (uint32_t p = alts_[r][a]; elems_[p].kind == Kind::Ref || elems_[p].kind == Kind::Class; ++p) {
                out += ' ';
                if (elems_[p].kind == Kind::Ref) {
                    std::string n = names_[elems_[p].arg];
                    std::replace(n.begin(), n.end(), '/', '-');
                    out += n;
                } else {
                    const CharClass& c = classes_[elems_[p].arg];
                    out += c.negated ? "[^" : "[";
                    for (const auto& [lo, hi] : c.ranges) {
                        put_cp(out, lo, true);
                        if (hi != lo) { out += '-'; put_cp(out, hi, true); }
                    }
                    out += ']';
                }
            }
        }
        out += '\n';
    }
    return out;
}

}  // namespace ls::grammar
