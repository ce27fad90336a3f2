// The gated feed-forward block the decoder families share, written once: down(act(gate h) *
// up h), SwiGLU (silu) or GeGLU (gelu, tanh form). Families with biases or fused matrices
// (llama's optional biases, phi3's fused gate/up) build theirs around the same ops.
#pragma once
#include "core/ir/graph.h"

namespace ls {

enum class GatedAct { Silu, Gelu };

// act(gate h) * up h: the gated activations, before the down projection.
Tensor* gated_act(Graph& g, Tensor* h, Tensor* gate, Tensor* up, GatedAct act);
// down(act(gate h) * up h).
Tensor* gated_ffn(Graph& g, Tensor* h, Tensor* gate, Tensor* up, Tensor* down, GatedAct act);

}  // namespace ls
