// A prompt with images in it: the text tokenized with each image's expansion in place
// (VisionEncoder::image_text), the soft tokens taking the image's rows, seeing the whole image.
#pragma once
#include <string>
#include <vector>

#include "core/image/image.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "core/vision/vision_encoder.h"

namespace ls {

// Where an image goes in a prompt's text (llama.cpp's default media marker). Images without a
// marker go before the text, in order.
inline constexpr const char* kMediaMarker = "<__media__>";

struct ImagePrompt {
    // The prompt's tokens as a sequence's history records them: an image's soft tokens are its
    // tag (negative, from the image's pixels), so a prompt with another image is another prefix.
    std::vector<int32_t> ids;
    // The same prompt as a batch for sequence `seq` from position 0: the image rows given, each
    // image's tokens seeing the whole image; logits wanted for the last token only.
    Batch batch;
    int64_t n_image_tokens = 0;
};

// Encodes every image (rows from `enc`) and tokenizes `text` (special tokens parsed, the
// tokenizer's BOS when it adds one) with each marker replaced by the next image's expansion.
// More markers than images, or images for a prompt that has markers for fewer, is an error.
ImagePrompt build_image_prompt(const Tokenizer& tok, const VisionEncoder& enc, const std::string& text,
                               const std::vector<image::Rgb8>& images, int seq = 0);

// The tag a sequence's history records for an image's soft tokens: negative, from its pixels.
int32_t image_tag(const image::Rgb8& img);

}  // namespace ls
