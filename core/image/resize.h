// PIL's Image.resize (Pillow's Resample.c), reproduced byte for byte: a separable convolution
// whose support widens with the downscale factor (antialiasing), coefficients rounded to
// 22-bit fixed point, two passes in the order Pillow 13 picks (each pass's bytes rounded and
// clipped). The HF image processors resize with it (or with torch's
// uint8 antialiased kernels, written to give PIL's bytes), so the same filter gives the same
// pixels as transformers does.
#pragma once
#include "core/image/image.h"

namespace ls::image {

enum class Filter { Bilinear, Bicubic };

Rgb8 resize(const Rgb8& in, int width, int height, Filter f);

}  // namespace ls::image
