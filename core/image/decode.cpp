// PNG through libpng and JPEG through libjpeg-turbo (the libraries PIL decodes with, so the
// pixels are PIL's). Both report errors by longjmp: each decoder keeps every C++ object it
// owns outside the jumping frame, and turns the library's message into an exception after.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "core/image/image.h"

namespace ls::image {
namespace {

void check_size(const char* kind, uint64_t w, uint64_t h, const Limits& lim) {
    if (w == 0 || h == 0) throw std::runtime_error(std::string(kind) + " image: zero width or height");
    if (w > uint64_t(lim.max_side) || h > uint64_t(lim.max_side) || w * h > uint64_t(lim.max_pixels))
        throw std::runtime_error(std::string(kind) + " image: " + std::to_string(w) + "x" + std::to_string(h) +
                                 " is larger than allowed (each side at most " + std::to_string(lim.max_side) + ", at most " +
                                 std::to_string(lim.max_pixels) + " pixels)");
}

// ---- PNG
// A colour c of alpha a composited onto opaque white, in Pillow's integers
// (Image.alpha_composite, libImaging/AlphaComposite.c): what HF's convert_to_rgb does with
// transparency (PIL's convert("RGB") alone would drop the alpha instead).
uint8_t over_white(uint32_t c, uint32_t a) {
    const uint32_t coef1 = a * 128, coef2 = 255 * 128 - coef1;
    const uint32_t t = c * coef1 + 255 * coef2 + (128 << 7);
    return uint8_t((((t >> 8) + t) >> 8) >> 7);
}

struct PngSrc {
    std::string_view bytes;
    size_t at = 0;
};
struct PngErr {
    char msg[200] = "";
};

void png_read_mem(png_structp p, png_bytep out, png_size_t n) {
    auto* s = static_cast<PngSrc*>(png_get_io_ptr(p));
    if (n > s->bytes.size() - s->at) png_error(p, "the file ends early (truncated)");
    std::memcpy(out, s->bytes.data() + s->at, n);
    s->at += n;
}
void png_on_error(png_structp p, png_const_charp msg) {
    auto* e = static_cast<PngErr*>(png_get_error_ptr(p));
    std::snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(p, 1);
}
void png_on_warning(png_structp, png_const_charp) {}

Rgb8 decode_png(std::string_view bytes, const Limits& lim) {
    PngSrc src{bytes};
    PngErr err;
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, png_on_error, png_on_warning);
    if (!p) throw std::runtime_error("PNG image: out of memory");
    png_infop info = png_create_info_struct(p);
    // What changes after setjmp lives behind a pointer that does not (a longjmp leaves the
    // frame's own locals indeterminate).
    struct State {
        Rgb8 img;
        std::vector<png_bytep> rows;
        std::vector<uint8_t> raw;  // RGB or RGBA rows as libpng gives them
    };
    const auto st = std::make_unique<State>();
    Rgb8& img = st->img;
    std::vector<png_bytep>& rows = st->rows;
    uint32_t w = 0, h = 0;
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_read_struct(&p, &info, nullptr);
        throw std::runtime_error(std::string("PNG image: ") + err.msg);
    }
    if (!info) png_error(p, "out of memory");
    png_set_read_fn(p, &src, png_read_mem);
    png_read_info(p, info);
    int depth = 0, color = 0;
    png_get_IHDR(p, info, &w, &h, &depth, &color, nullptr, nullptr, nullptr);
    if (w == 0 || h == 0 || w > uint32_t(lim.max_side) || h > uint32_t(lim.max_side) || uint64_t(w) * h > uint64_t(lim.max_pixels)) {
        png_destroy_read_struct(&p, &info, nullptr);
        check_size("PNG", w, h, lim);
    }
    // As the HF processors' convert_to_rgb sees the image through PIL: 16-bit samples keep
    // their high byte, palettes and low bit depths are expanded, grey is copied to three
    // channels; an alpha band or a tRNS transparency is composited onto white (below).
    if (depth == 16) png_set_strip_16(p);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(p);
    if (png_get_valid(p, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(p);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(p);
    png_set_interlace_handling(p);
    png_read_update_info(p, info);
    const int channels = png_get_channels(p, info);
    if ((channels != 3 && channels != 4) || png_get_rowbytes(p, info) != size_t(w) * size_t(channels))
        png_error(p, "unexpected row layout after conversion to RGB");
    img.width = int(w);
    img.height = int(h);
    std::vector<uint8_t>& raw = st->raw;
    raw.resize(size_t(w) * h * size_t(channels));
    rows.resize(h);
    for (uint32_t y = 0; y < h; ++y) rows[y] = raw.data() + size_t(y) * w * size_t(channels);
    png_read_image(p, rows.data());
    png_read_end(p, nullptr);
    png_destroy_read_struct(&p, &info, nullptr);
    if (channels == 3) {
        img.px = std::move(raw);
    } else {
        img.px.resize(size_t(w) * h * 3);
        for (size_t i = 0, n = size_t(w) * h; i < n; ++i)
            for (size_t c = 0; c < 3; ++c) img.px[i * 3 + c] = over_white(raw[i * 4 + c], raw[i * 4 + 3]);
    }
    return std::move(img);
}

// ---- JPEG
struct JpegErr {
    jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX] = "";
    bool ended_early = false;  // libjpeg only warns, and pads with grey
    const char* fail = nullptr;
};
void jpeg_on_error(j_common_ptr c) {
    auto* e = reinterpret_cast<JpegErr*>(c->err);
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jump, 1);
}
void jpeg_on_message(j_common_ptr c, int level) {
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) reinterpret_cast<JpegErr*>(c->err)->ended_early = true;
}

Rgb8 decode_jpeg(std::string_view bytes, const Limits& lim) {
    jpeg_decompress_struct d;
    JpegErr err;
    d.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = jpeg_on_error;
    err.mgr.emit_message = jpeg_on_message;
    const auto img_owner = std::make_unique<Rgb8>();  // (see decode_png's State)
    const auto line_owner = std::make_unique<std::vector<uint8_t>>();
    Rgb8& img = *img_owner;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&d);
        throw std::runtime_error(err.fail ? std::string(err.fail) : std::string("JPEG image: ") + err.msg);
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&d, TRUE);
    if (d.image_width == 0 || d.image_height == 0 || d.image_width > uint32_t(lim.max_side) || d.image_height > uint32_t(lim.max_side) ||
        uint64_t(d.image_width) * d.image_height > uint64_t(lim.max_pixels)) {
        const uint32_t w = d.image_width, h = d.image_height;
        jpeg_destroy_decompress(&d);
        check_size("JPEG", w, h, lim);
    }
    if (d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&d);
        throw std::runtime_error("JPEG image: CMYK JPEGs are not supported (convert it to RGB)");
    }
    // PIL's defaults: the integer slow IDCT, fancy upsampling; grey is decoded as grey and
    // copied to three channels, as convert("RGB") does.
    d.dct_method = JDCT_ISLOW;
    d.do_fancy_upsampling = TRUE;
    d.out_color_space = d.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&d);
    const uint32_t w = d.output_width, h = d.output_height;
    const int nc = d.output_components;
    img.width = int(w);
    img.height = int(h);
    img.px.resize(size_t(w) * h * 3);
    std::vector<uint8_t>& line = *line_owner;
    line.resize(size_t(w) * size_t(nc));
    while (d.output_scanline < h) {
        const uint32_t y = d.output_scanline;
        JSAMPROW row = line.data();
        if (jpeg_read_scanlines(&d, &row, 1) != 1 || err.ended_early) {
            err.fail = "JPEG image: the file ends early (truncated)";
            longjmp(err.jump, 1);
        }
        uint8_t* o = img.px.data() + size_t(y) * w * 3;
        for (uint32_t x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c) o[x * 3 + uint32_t(c)] = line[x * uint32_t(nc) + uint32_t(nc == 1 ? 0 : c)];
    }
    jpeg_finish_decompress(&d);
    if (err.ended_early) {  // PIL refuses a truncated file too
        err.fail = "JPEG image: the file ends early (truncated)";
        longjmp(err.jump, 1);
    }
    jpeg_destroy_decompress(&d);
    return std::move(img);
}

}  // namespace

Rgb8 decode(std::string_view bytes, const Limits& limits) {
    static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes, limits);
    if (bytes.size() >= 3 && uint8_t(bytes[0]) == 0xFF && uint8_t(bytes[1]) == 0xD8 && uint8_t(bytes[2]) == 0xFF)
        return decode_jpeg(bytes, limits);
    throw std::runtime_error("image: not a PNG or JPEG file (" + std::to_string(bytes.size()) + " bytes)");
}

Rgb8 load_file(const std::string& path, const Limits& limits) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("image: cannot open '" + path + "'");
    const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    try {
        return decode(bytes, limits);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) + " ('" + path + "')");
    }
}

}  // namespace ls::image
