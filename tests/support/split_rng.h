// splitmix64 with uniform and Box-Muller normal draws: std::normal_distribution differs
// between standard libraries, and the same seed must give the same file everywhere.
#pragma once
#include <cmath>
#include <cstdint>

namespace ls {

class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
    double normal() {
        const double u1 = 1.0 - uniform(), u2 = uniform();  // u1 in (0, 1]
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

private:
    uint64_t s_;
};

}  // namespace ls
