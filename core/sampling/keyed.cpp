// The draw is keyed, not streamed: the uniform number that picks the token at position `pos`
// is a hash of (seed, stream, pos), so it does not depend on how many draws came before or in
// which order positions were sampled. Speculative decoding samples a position, throws the
// result away when a guess was wrong and samples the next position again from other logits;
// with keyed draws that gives the same tokens as plain decoding, token for token.
#include "core/sampling/stages.h"

namespace ls {
namespace {
// splitmix64's finalizer: a bijection on 64 bits whose outputs pass BigCrush for counter inputs.
uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
}  // namespace

double keyed_uniform(uint64_t seed, uint64_t stream, int64_t pos) {
    const uint64_t h = mix64(mix64(mix64(seed) ^ stream) ^ uint64_t(pos));
    return double(h >> 11) * 0x1.0p-53;
}

}  // namespace ls
