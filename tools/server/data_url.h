// data: URLs (RFC 2397) as OpenAI's image_url parts carry images: the server fetches nothing,
// so a URL of any other scheme is refused.
#pragma once
#include <string>

namespace ls::server {

// The bytes a "data:[<type>][;base64],<data>" URL holds (base64 per RFC 4648, padding optional,
// whitespace skipped; without ;base64, the percent-decoded text). Throws std::invalid_argument
// naming the problem: another scheme, no comma, a character outside the base64 alphabet.
std::string decode_data_url(const std::string& url);

}  // namespace ls::server
