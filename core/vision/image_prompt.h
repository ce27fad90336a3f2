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

struct ImageSpan {
    size_t first = 0;  // the index of its first soft token in the prompt
    int64_t n = 0;     // how many
    size_t image = 0;  // which image
};

struct ImagePrompt {
    // The prompt's tokens as a sequence's history records them: an image's soft tokens are its
    // tag (negative, from the image's pixels), so a prompt with another image is another prefix.
    std::vector<int32_t> ids;
    std::vector<ImageSpan> spans;  // in prompt order
    int64_t n_image_tokens = 0;
};

// Tokenizes `text` (special tokens parsed, a BOS first when add_bos) with each marker replaced
// by the next image's expansion; encodes nothing. More markers than images, or fewer (but
// some), is an error naming both counts; so is text holding the soft token itself.
ImagePrompt layout_image_prompt(const Tokenizer& tok, const VisionEncoder& enc, const std::string& text,
                                const std::vector<image::Rgb8>& images, bool add_bos);

// Tokens [from, to) of the prompt as a batch for sequence `seq` at their positions, with the
// rows of every image they hold (encoded here; *n_encoded counts the images, when given) and
// each image's tokens seeing the whole image. `from` and `to` must not cut an image. Logits
// are wanted for token to - 1 when `last_logits`.
Batch image_prompt_batch(const ImagePrompt& p, const VisionEncoder& enc, const std::vector<image::Rgb8>& images, int seq,
                         size_t from, size_t to, bool last_logits, int64_t* n_encoded = nullptr);

// The tag a sequence's history records for an image's soft tokens: negative, from its pixels.
int32_t image_tag(const image::Rgb8& img);

// The start of the image that token i lies in, or i itself.
size_t image_start_at(const ImagePrompt& p, size_t i);

// Before generate() / DecodeLoop::start on a prompt with images: the prompt up to its last
// image evaluated into sequence `seq`, keeping what the sequence already holds (never part of
// an image: an image is kept whole or evaluated whole) and encoding only the images past it;
// the text after it is left to the caller, whose prefix reuse then finds the images cached.
// Returns how many prompt tokens the sequence held before, or -1 when it held all of that part
// already (the caller's own reuse count is then the true one). Counts images encoded and reused.
struct ImageCounts {
    int64_t encoded = 0, reused = 0;
};
int64_t evaluate_image_prefix(Session& s, int seq, const ImagePrompt& p, const VisionEncoder& enc, const std::vector<image::Rgb8>& images,
                              ImageCounts* counts = nullptr);

}  // namespace ls
