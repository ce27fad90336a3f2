// From decoded pixels to what a vision encoder reads, as the HF image processors compute it.
#pragma once
#include <array>
#include <vector>

#include "core/image/image.h"

namespace ls::image {

// x = float(u8 * (1/255) in double) (HF's rescale), then (x - mean[c]) / std[c] in float32
// (its normalize), in channel-major order: [3][height][width].
std::vector<float> normalize(const Rgb8& img, const std::array<float, 3>& mean, const std::array<float, 3>& std);

// The image [3][h][w] cut into p x p patches, one column of 3 * p * p values per patch
// (element kx + p * (ky + p * c): a conv kernel's GGUF order), patches row by row: the input
// of a patch embedding done as a matrix product. h and w must be multiples of p.
std::vector<float> unfold_patches(const std::vector<float>& chw, int h, int w, int p);

}  // namespace ls::image
