#include "core/image/pixels.h"

#include <stdexcept>

namespace ls::image {

std::vector<float> normalize(const Rgb8& img, const std::array<float, 3>& mean, const std::array<float, 3>& std) {
    const size_t hw = size_t(img.width) * size_t(img.height);
    std::vector<float> out(3 * hw);
    for (int c = 0; c < 3; ++c)
        for (size_t i = 0; i < hw; ++i) {
            const float x = float(double(img.px[i * 3 + size_t(c)]) * (1.0 / 255.0));
            out[size_t(c) * hw + i] = (x - mean[size_t(c)]) / std[size_t(c)];
        }
    return out;
}

std::vector<float> unfold_patches(const std::vector<float>& chw, int h, int w, int p) {
    if (p <= 0 || h % p || w % p || chw.size() != size_t(3) * size_t(h) * size_t(w))
        throw std::invalid_argument("unfold_patches: the image is not a whole number of patches");
    const int nx = w / p, ny = h / p;
    const size_t per = size_t(3) * size_t(p) * size_t(p);
    std::vector<float> out(per * size_t(nx) * size_t(ny));
    for (int py = 0; py < ny; ++py)
        for (int px = 0; px < nx; ++px) {
            float* o = out.data() + per * (size_t(py) * size_t(nx) + size_t(px));
            for (int c = 0; c < 3; ++c)
                for (int ky = 0; ky < p; ++ky)
                    for (int kx = 0; kx < p; ++kx)
                        o[size_t(kx + p * (ky + p * c))] =
                            chw[(size_t(c) * size_t(h) + size_t(py * p + ky)) * size_t(w) + size_t(px * p + kx)];
        }
    return out;
}

}  // namespace ls::image
