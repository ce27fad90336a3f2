// Where the default model (Gemma 3 270M Q4_K_M, fetched by tools/scripts/fetch_model.sh) lives:
// $LOCKSTEP_MODEL, else $LOCKSTEP_CACHE, $XDG_CACHE_HOME/lockstep or ~/.cache/lockstep.
#pragma once
#include <string>

namespace ls {
std::string default_model_path();
}  // namespace ls
