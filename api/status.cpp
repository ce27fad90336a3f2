// Status codes, this thread's message, the versions.
#include <cstring>
#include <new>

#include "api/handles.h"
#include "core/gguf/gguf.h"
#include "core/grammar/grammar.h"

#ifndef LOCKSTEP_VERSION
#define LOCKSTEP_VERSION "0.0.0"
#endif

namespace ls::capi {

namespace {
thread_local std::string t_message;
}

void clear_error() noexcept { t_message.clear(); }
const char* last_message() noexcept { return t_message.c_str(); }

int set_error(const char* fn, int status, const char* msg) noexcept {
    try {
        t_message.assign(fn);
        t_message += ": ";
        t_message += msg;
    } catch (...) {
        // No memory for the message: the status still says what happened.
    }
    return status;
}

int error_from_current(const char* fn) noexcept {
    try {
        throw;
    } catch (const Error& e) {
        return set_error(fn, e.status, e.what());
    } catch (const GgufError& e) {
        return set_error(fn, LOCKSTEP_ERR_FORMAT, e.what());
    } catch (const chat::TemplateError& e) {
        return set_error(fn, LOCKSTEP_ERR_TEMPLATE, e.what());
    } catch (const grammar::Error& e) {
        return set_error(fn, LOCKSTEP_ERR_GRAMMAR, e.what());
    } catch (const std::bad_alloc&) {
        return set_error(fn, LOCKSTEP_ERR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::out_of_range& e) {
        return set_error(fn, LOCKSTEP_ERR_OUT_OF_RANGE, e.what());
    } catch (const std::length_error& e) {
        return set_error(fn, LOCKSTEP_ERR_TOO_LONG, e.what());
    } catch (const std::invalid_argument& e) {
        return set_error(fn, LOCKSTEP_ERR_INVALID_ARGUMENT, e.what());
    } catch (const std::runtime_error& e) {
        return set_error(fn, LOCKSTEP_ERR_RUNTIME, e.what());
    } catch (const std::exception& e) {
        return set_error(fn, LOCKSTEP_ERR_INTERNAL, e.what());
    } catch (...) {
        return set_error(fn, LOCKSTEP_ERR_INTERNAL, "an exception that is not a std::exception");
    }
}

void check_token(const ModelState& m, int32_t id) {
    const int32_t n = m.tok->n_vocab();
    if (id < 0 || id >= n)
        throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(n) + ")");
}

void put_bytes(const char* data, size_t n, char* buf, size_t buf_len, size_t* n_out) {
    need(n_out, "n_out");
    *n_out = n;
    if (buf_len > 0) need(buf, "buf");
    if (buf_len < n)
        throw Error(LOCKSTEP_ERR_BUFFER_TOO_SMALL, "needs " + std::to_string(n) + " bytes, the buffer has " + std::to_string(buf_len));
    if (n) std::memcpy(buf, data, n);
    if (buf_len > n) buf[n] = '\0';
}

}  // namespace ls::capi

using namespace ls::capi;

extern "C" {

LOCKSTEP_API int32_t lockstep_api_version(void) { return LOCKSTEP_API_VERSION; }

LOCKSTEP_API const char* lockstep_version(void) { return LOCKSTEP_VERSION; }

LOCKSTEP_API const char* lockstep_last_error(void) { return last_message(); }

LOCKSTEP_API const char* lockstep_status_name(int status) {
    switch (status) {
        case LOCKSTEP_OK: return "LOCKSTEP_OK";
        case LOCKSTEP_ERR_INVALID_ARGUMENT: return "LOCKSTEP_ERR_INVALID_ARGUMENT";
        case LOCKSTEP_ERR_OUT_OF_RANGE: return "LOCKSTEP_ERR_OUT_OF_RANGE";
        case LOCKSTEP_ERR_BUFFER_TOO_SMALL: return "LOCKSTEP_ERR_BUFFER_TOO_SMALL";
        case LOCKSTEP_ERR_NOT_FOUND: return "LOCKSTEP_ERR_NOT_FOUND";
        case LOCKSTEP_ERR_IO: return "LOCKSTEP_ERR_IO";
        case LOCKSTEP_ERR_FORMAT: return "LOCKSTEP_ERR_FORMAT";
        case LOCKSTEP_ERR_TOO_LONG: return "LOCKSTEP_ERR_TOO_LONG";
        case LOCKSTEP_ERR_UNSUPPORTED: return "LOCKSTEP_ERR_UNSUPPORTED";
        case LOCKSTEP_ERR_TEMPLATE: return "LOCKSTEP_ERR_TEMPLATE";
        case LOCKSTEP_ERR_GRAMMAR: return "LOCKSTEP_ERR_GRAMMAR";
        case LOCKSTEP_ERR_OUT_OF_MEMORY: return "LOCKSTEP_ERR_OUT_OF_MEMORY";
        case LOCKSTEP_ERR_RUNTIME: return "LOCKSTEP_ERR_RUNTIME";
        case LOCKSTEP_ERR_INTERNAL: return "LOCKSTEP_ERR_INTERNAL";
        default: return "LOCKSTEP_ERR_UNKNOWN";
    }
}

}  // extern "C"
