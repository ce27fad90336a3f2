// Decoded images: 8-bit RGB pixels, rows top to bottom, as the models' HF image processors
// have them before resizing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::image {

struct Rgb8 {
    int width = 0, height = 0;
    std::vector<uint8_t> px;  // height * width * 3, row-major, R G B
    uint8_t at(int y, int x, int c) const { return px[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)]; }
};

// What a decoder accepts: each side and the pixel count (checked from the header, before any
// pixel is decoded, so a hostile header cannot make it allocate).
struct Limits {
    int max_side = 16384;
    int64_t max_pixels = int64_t(40) << 20;
};

// PNG (libpng) or JPEG (libjpeg-turbo, PIL's decoder: the same integer IDCT and upsampling, so
// the same pixels) from the file's bytes, told apart by their signatures. As the HF image
// processors convert an image to RGB through PIL: grey is copied to R, G and B, palettes are
// expanded, 16-bit samples keep their high byte, and transparency (an alpha band, a tRNS
// colour) is composited onto white. Anything else — another format, a truncated or
// corrupt file, a CMYK JPEG, an image past the limits — throws std::runtime_error naming it.
Rgb8 decode(std::string_view bytes, const Limits& limits = {});
Rgb8 load_file(const std::string& path, const Limits& limits = {});

}  // namespace ls::image
