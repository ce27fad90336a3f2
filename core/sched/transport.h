// The link between pipeline stages that run in other processes, maybe on other hosts (issue 31):
// bytes from rank to rank, and a broadcast from rank 0, in order. backends/mpi implements it
// over Open MPI; ranks are started and connected by MPI's launcher, so lockstep opens no
// listening port of its own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ls {

class Transport {
public:
    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Where this rank runs, for messages ("node2").
    virtual std::string host() const = 0;
    // Sends n bytes to rank `to` under `tag`; the bytes are copied, so the call may return
    // before the receiver has them (flush() waits for every send).
    virtual void send(int to, int tag, const void* p, size_t n) = 0;
    // Receives exactly n bytes that rank `from` sent under `tag`.
    virtual void recv(int from, int tag, void* p, size_t n) = 0;
    virtual void flush() = 0;
    // Rank 0's bytes (any length) to every rank; every rank calls it, in the same order.
    virtual void broadcast(std::vector<uint8_t>& bytes) = 0;
    // Ends the whole job at once after printing `why` (a rank that cannot go on must not leave
    // the others waiting for rows it will never send).
    [[noreturn]] virtual void abort(const std::string& why) = 0;
};

// The transport of this process when it runs as one rank of several; null otherwise.
Transport* process_transport();
void set_process_transport(Transport* t);

}  // namespace ls
