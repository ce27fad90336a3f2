#include "core/image/resize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ls::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double filter_at(Filter f, double x) {
    x = std::fabs(x);
    if (f == Filter::Bilinear) return x < 1.0 ? 1.0 - x : 0.0;
    constexpr double a = -0.5;  // PIL's bicubic
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}
double support_of(Filter f) { return f == Filter::Bilinear ? 1.0 : 2.0; }

// One axis: for each output index, the first input index, the count, and the fixed-point
// weights (ksize per output), as Pillow's precompute_coeffs and normalize_coeffs_8bpc.
struct Coeffs {
    int ksize = 0;
    std::vector<int> lo, n;
    std::vector<int32_t> k;
};

Coeffs coeffs(int in_size, int out_size, Filter f) {
    const double scale = double(in_size) / out_size;
    const double filterscale = std::max(scale, 1.0);
    const double support = support_of(f) * filterscale;
    Coeffs c;
    c.ksize = int(std::ceil(support)) * 2 + 1;
    c.lo.resize(size_t(out_size));
    c.n.resize(size_t(out_size));
    c.k.assign(size_t(out_size) * size_t(c.ksize), 0);
    std::vector<double> w(size_t(c.ksize));
    for (int xx = 0; xx < out_size; ++xx) {
        const double center = (xx + 0.5) * scale;
        const double ss = 1.0 / filterscale;
        const int xmin = std::max(int(center - support + 0.5), 0);
        const int xmax = std::min(int(center + support + 0.5), in_size) - xmin;
        double ww = 0.0;
        for (int x = 0; x < xmax; ++x) {
            w[size_t(x)] = filter_at(f, (x + xmin - center + 0.5) * ss);
            ww += w[size_t(x)];
        }
        for (int x = 0; x < xmax; ++x) {
            const double v = ww != 0.0 ? w[size_t(x)] / ww : w[size_t(x)];
            c.k[size_t(xx) * size_t(c.ksize) + size_t(x)] =
                int32_t(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
        }
        c.lo[size_t(xx)] = xmin;
        c.n[size_t(xx)] = xmax;
    }
    return c;
}

uint8_t clip8(int32_t v) { return uint8_t(std::clamp(v >> kPrecisionBits, 0, 255)); }

// One pass along x (rows [row0, row0 + rows) of `in`) or along y (all columns): out-of-place.
Rgb8 pass_x(const Rgb8& in, const Coeffs& c, int width, int row0, int rows) {
    Rgb8 out;
    out.width = width;
    out.height = rows;
    out.px.resize(size_t(width) * size_t(rows) * 3);
    for (int y = 0; y < rows; ++y)
        for (int xx = 0; xx < width; ++xx) {
            const int32_t* k = &c.k[size_t(xx) * size_t(c.ksize)];
            for (int ch = 0; ch < 3; ++ch) {
                int32_t s = 1 << (kPrecisionBits - 1);
                for (int x = 0; x < c.n[size_t(xx)]; ++x) s += int32_t(in.at(y + row0, x + c.lo[size_t(xx)], ch)) * k[x];
                out.px[(size_t(y) * size_t(width) + size_t(xx)) * 3 + size_t(ch)] = clip8(s);
            }
        }
    return out;
}
// row0: the input row that the coefficients' row 0 stands for.
Rgb8 pass_y(const Rgb8& in, const Coeffs& c, int height, int row0) {
    Rgb8 out;
    out.width = in.width;
    out.height = height;
    out.px.resize(size_t(in.width) * size_t(height) * 3);
    for (int yy = 0; yy < height; ++yy) {
        const int32_t* k = &c.k[size_t(yy) * size_t(c.ksize)];
        const int lo = c.lo[size_t(yy)] - row0;
        for (int x = 0; x < in.width; ++x)
            for (int ch = 0; ch < 3; ++ch) {
                int32_t s = 1 << (kPrecisionBits - 1);
                for (int y = 0; y < c.n[size_t(yy)]; ++y) s += int32_t(in.at(y + lo, x, ch)) * k[y];
                out.px[(size_t(yy) * size_t(in.width) + size_t(x)) * 3 + size_t(ch)] = clip8(s);
            }
    }
    return out;
}

}  // namespace

Rgb8 resize(const Rgb8& in, int width, int height, Filter f) {
    if (width <= 0 || height <= 0 || in.width <= 0 || in.height <= 0) throw std::invalid_argument("image resize: empty size");
    const bool need_h = width != in.width, need_v = height != in.height;
    if (!need_h && !need_v) return in;
    const Coeffs ch = coeffs(in.width, width, f), cv = coeffs(in.height, height, f);
    if (!need_v) return pass_x(in, ch, width, 0, in.height);
    if (!need_h) return pass_y(in, cv, height, 0);
    // Both: Pillow 13 runs the vertical pass first when the image loses more than twice as many
    // rows as columns (and does lose rows), else the horizontal one, which then makes only the
    // rows the vertical pass reads. The order changes the rounding of the bytes in between.
    const int lost_rows = in.height - height, lost_cols = in.width - width;
    if (lost_rows > 0 && lost_rows > 2 * lost_cols) return pass_x(pass_y(in, cv, height, 0), ch, width, 0, height);
    const int y_first = cv.lo[0], y_last = cv.lo[size_t(height - 1)] + cv.n[size_t(height - 1)];
    return pass_y(pass_x(in, ch, width, y_first, y_last - y_first), cv, height, y_first);
}

}  // namespace ls::image
