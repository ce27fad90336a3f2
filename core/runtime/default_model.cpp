#include "core/runtime/default_model.h"

#include <cstdlib>

namespace ls {

std::string default_model_path() {
    if (const char* e = std::getenv("LOCKSTEP_MODEL")) return e;
    std::string dir;
    if (const char* c = std::getenv("LOCKSTEP_CACHE")) dir = c;
    else if (const char* x = std::getenv("XDG_CACHE_HOME")) dir = std::string(x) + "/lockstep";
    else dir = std::string(std::getenv("HOME") ? std::getenv("HOME") : ".") + "/.cache/lockstep";
    return dir + "/gemma-3-270m-q4_k_m.gguf";
}

}  // namespace ls
