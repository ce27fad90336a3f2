#include "tools/server/data_url.h"

#include <stdexcept>

namespace ls::server {

namespace {
int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;  // (and the URL-safe alphabet's)
    if (c == '/' || c == '_') return 63;
    return -1;
}
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

std::string decode_data_url(const std::string& url) {
    if (url.compare(0, 5, "data:") != 0) {
        const size_t colon = url.find(':');
        const std::string scheme = colon == std::string::npos || colon > 16 ? "" : url.substr(0, colon);
        throw std::invalid_argument(scheme == "http" || scheme == "https"
                                        ? "remote image URLs are not fetched by this server: send the image as a data: URL"
                                        : "an image URL must be a data: URL");
    }
    const size_t comma = url.find(',');
    if (comma == std::string::npos) throw std::invalid_argument("the data: URL has no ',' before its data");
    const std::string meta = url.substr(5, comma - 5);
    const bool b64 = meta.size() >= 7 && meta.compare(meta.size() - 7, 7, ";base64") == 0;
    std::string out;
    if (!b64) {
        for (size_t i = comma + 1; i < url.size(); ++i) {
            if (url[i] == '%' && i + 2 < url.size() && hex_value(url[i + 1]) >= 0 && hex_value(url[i + 2]) >= 0) {
                out += char(hex_value(url[i + 1]) * 16 + hex_value(url[i + 2]));
                i += 2;
            } else {
                out += url[i];
            }
        }
        return out;
    }
    out.reserve((url.size() - comma) * 3 / 4);
    uint32_t acc = 0;
    int bits = 0;
    bool padded = false;
    for (size_t i = comma + 1; i < url.size(); ++i) {
        const char c = url[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            padded = true;
            continue;
        }
        const int v = b64_value(c);
        if (v < 0 || padded)
            throw std::invalid_argument("the data: URL's base64 has " + std::string(padded ? "data after its padding" : "a character outside its alphabet") +
                                        " at offset " + std::to_string(i));
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += char((acc >> bits) & 0xFF);
        }
    }
    return out;
}

}  // namespace ls::server
