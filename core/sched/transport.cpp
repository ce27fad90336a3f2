#include "core/sched/transport.h"

namespace ls {

namespace {
Transport* g_transport = nullptr;
}

Transport* process_transport() { return g_transport; }
void set_process_transport(Transport* t) { g_transport = t; }

}  // namespace ls
