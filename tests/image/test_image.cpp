// Image decoding, PIL's resize and the pixels a vision encoder reads, against the HF processor
// (tools/oracle/vision_tiny.py wrote tests/data/vision/*.pixels with transformers 5.24's
// Gemma 3 processor), and hostile files.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <zlib.h>

#include "core/image/image.h"
#include "core/image/pixels.h"
#include "core/image/resize.h"
#include "tests/support/test_util.h"

using namespace ls;

namespace {

std::string read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    REQUIRE(f);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Little-endian int32s and raw bytes read in order from a golden file's bytes.
struct Reader {
    const std::string& b;
    size_t at = 0;
    int32_t i32() {
        int32_t v;
        REQUIRE(at + 4 <= b.size());
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return v;
    }
    void bytes(size_t n, void* out) {
        REQUIRE(at + n <= b.size());
        std::memcpy(out, b.data() + at, n);
        at += n;
    }
};

// vision_tiny.py's .pixels: C, H, W; the resized bytes HWC; pixel_values CHW; then the source
// size and the decoded, RGB-converted source HWC.
struct Expected {
    int h = 0, w = 0, src_h = 0, src_w = 0;
    std::vector<uint8_t> resized, src;
    std::vector<float> pixels;
};

Expected read_expected(const std::string& path) {
    const std::string b = read_bytes(path);
    Reader r{b};
    Expected e;
    REQUIRE(r.i32() == 3);
    e.h = r.i32();
    e.w = r.i32();
    const size_t n = size_t(e.h) * size_t(e.w) * 3;
    e.resized.resize(n);
    r.bytes(n, e.resized.data());
    e.pixels.resize(n);
    r.bytes(n * 4, e.pixels.data());
    e.src_h = r.i32();
    e.src_w = r.i32();
    e.src.resize(size_t(e.src_h) * size_t(e.src_w) * 3);
    r.bytes(e.src.size(), e.src.data());
    REQUIRE(r.at == b.size());
    return e;
}

int count_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    int n = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += a[i] != b[i];
    return n;
}

}  // namespace

TEST_CASE("images: decoding, PIL's bilinear resize and normalization equal the HF processor's, byte for byte", "[image]") {
    const std::vector<std::string> names = {"rgb64.png", "rgb100x37.png", "gray23x31.png", "rgba50.png",
                                            "photo120x90.jpg", "pal7x5.png", "paltrns9x6.png"};
    for (const std::string& name : names) {
        INFO(name);
        const std::string stem = name.substr(0, name.find('.'));
        const Expected e = read_expected(test::test_data("vision/" + stem + ".pixels"));
        const image::Rgb8 img = image::load_file(test::test_data("vision/" + name));
        REQUIRE(img.width == e.src_w);
        REQUIRE(img.height == e.src_h);
        CHECK(count_diff(img.px, e.src) == 0);  // decoder and RGB conversion (alpha onto white)
        const image::Rgb8 r = image::resize(img, e.w, e.h, image::Filter::Bilinear);
        CHECK(count_diff(r.px, e.resized) == 0);  // Pillow's fixed-point resampling
        const std::vector<float> px = image::normalize(r, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f});
        REQUIRE(px.size() == e.pixels.size());
        CHECK(std::memcmp(px.data(), e.pixels.data(), px.size() * 4) == 0);
    }
}

TEST_CASE("images: patches unfold in the conv kernel's order, row by row", "[image]") {
    // A 3 x 4 x 6 image (C, H, W) in 2 x 2 patches: 2 rows of 3 patches.
    std::vector<float> chw(3 * 4 * 6);
    for (size_t i = 0; i < chw.size(); ++i) chw[i] = float(i);
    const std::vector<float> p = image::unfold_patches(chw, 4, 6, 2);
    REQUIRE(p.size() == chw.size());
    // Patch 4 = row 1, column 1: pixels y 2..3, x 2..3; element kx + 2 * (ky + 2 * c).
    for (int c = 0; c < 3; ++c)
        for (int ky = 0; ky < 2; ++ky)
            for (int kx = 0; kx < 2; ++kx)
                CHECK(p[size_t(4 * 12 + kx + 2 * (ky + 2 * c))] == chw[size_t((c * 4 + 2 + ky) * 6 + 2 + kx)]);
    CHECK_THROWS_WITH(image::unfold_patches(chw, 4, 6, 4), Catch::Contains("whole number of patches"));
}

TEST_CASE("images: truncated, corrupt, foreign and oversized files are clear errors", "[image]") {
    const std::string png = read_bytes(test::test_data("vision/rgb100x37.png"));
    const std::string jpg = read_bytes(test::test_data("vision/photo120x90.jpg"));
    CHECK_THROWS_WITH(image::decode(png.substr(0, png.size() / 2)), Catch::Contains("PNG image"));
    CHECK_THROWS_WITH(image::decode(png.substr(0, 40)), Catch::Contains("PNG image"));
    CHECK_THROWS_WITH(image::decode(jpg.substr(0, jpg.size() / 2)), Catch::Contains("JPEG image") && Catch::Contains("truncated"));
    CHECK_THROWS_WITH(image::decode(jpg.substr(0, 200)), Catch::Contains("JPEG image"));
    CHECK_THROWS_WITH(image::decode("GIF89a........"), Catch::Contains("not a PNG or JPEG"));
    CHECK_THROWS_WITH(image::decode(""), Catch::Contains("not a PNG or JPEG"));
    std::string corrupt = png;
    for (size_t i = 60; i < corrupt.size() - 20; i += 7) corrupt[i] = char(corrupt[i] ^ 0x5A);
    CHECK_THROWS_WITH(image::decode(corrupt), Catch::Contains("PNG image"));
    CHECK_THROWS_WITH(image::load_file("/nonexistent/x.png"), Catch::Contains("cannot open"));

    // A PNG header saying 20000 x 20000 (CRC made valid): refused from the header, before any
    // pixel memory; and one within each side's limit but over the pixel count.
    auto png_of_size = [&](uint32_t w, uint32_t h) {
        std::string s = png;
        for (int k = 0; k < 4; ++k) {
            s[size_t(16 + k)] = char(w >> (24 - 8 * k));
            s[size_t(20 + k)] = char(h >> (24 - 8 * k));
        }
        const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(s.data() + 12), 17));
        for (int k = 0; k < 4; ++k) s[size_t(29 + k)] = char(crc >> (24 - 8 * k));
        return s;
    };
    CHECK_THROWS_WITH(image::decode(png_of_size(20000, 20000)), Catch::Contains("20000x20000") && Catch::Contains("larger than allowed"));
    CHECK_THROWS_WITH(image::decode(png_of_size(10000, 10000)), Catch::Contains("larger than allowed"));
    // The same for a JPEG: its SOF0 frame header's height and width.
    std::string big = jpg;
    const size_t sof = big.find("\xFF\xC0");
    REQUIRE(sof != std::string::npos);
    big[sof + 5] = char(20000 >> 8);
    big[sof + 6] = char(20000 & 0xFF);
    big[sof + 7] = char(20000 >> 8);
    big[sof + 8] = char(20000 & 0xFF);
    CHECK_THROWS_WITH(image::decode(big), Catch::Contains("JPEG image") && Catch::Contains("larger than allowed"));
    // Limits are the caller's to set.
    CHECK_THROWS_WITH(image::decode(png, {.max_side = 64, .max_pixels = 1 << 20}), Catch::Contains("100x37"));
    CHECK_NOTHROW(image::decode(png, {.max_side = 100, .max_pixels = 3700}));
}

TEST_CASE("images: Pillow's bilinear and bicubic resize, byte for byte, shrinking, stretching, one axis, to one pixel", "[image]") {
    // tools/golden/make_resize_golden.py: Image.resize of three test images to eight sizes.
    const std::string b = read_bytes(test::test_data("vision/resize_golden.bin"));
    Reader rd{b};
    const int n = rd.i32();
    REQUIRE(n >= 40);
    int bicubic = 0;
    for (int r = 0; r < n; ++r) {
        const int filter = rd.i32();
        std::string name(size_t(rd.i32()), '\0');
        rd.bytes(name.size(), name.data());
        const int w = rd.i32(), h = rd.i32();
        std::vector<uint8_t> want(size_t(w) * size_t(h) * 3);
        rd.bytes(want.size(), want.data());
        INFO(name << " to " << w << "x" << h << (filter ? " bicubic" : " bilinear"));
        const image::Rgb8 got = image::resize(image::load_file(test::test_data("vision/" + name)), w, h,
                                              filter ? image::Filter::Bicubic : image::Filter::Bilinear);
        CHECK(count_diff(got.px, want) == 0);
        bicubic += filter;
    }
    CHECK(rd.at == b.size());
    CHECK(bicubic == n / 2);
}
