#include "backends/mpi/mpi_transport.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <vector>

namespace ls {

namespace {

// MPI's errors end the job (MPI_ERRORS_ARE_FATAL, the default): a rank that dies or a link that
// breaks aborts every rank, and mpirun names the rank, its host and the cause.
class MpiTransport : public Transport {
public:
    MpiTransport() {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        if (provided < MPI_THREAD_SERIALIZED) {
            MPI_Finalize();
            throw std::runtime_error("this MPI library cannot be called from more than one thread (MPI_THREAD_SERIALIZED)");
        }
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        char name[MPI_MAX_PROCESSOR_NAME] = {};
        int len = 0;
        MPI_Get_processor_name(name, &len);
        host_.assign(name, size_t(len));
    }
    ~MpiTransport() override {
        flush();
        MPI_Finalize();
    }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string host() const override { return host_; }
    void send(int to, int tag, const void* p, size_t n) override {
        check_size(n);
        Pending& q = pending_.emplace_back();
        q.bytes.assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
        MPI_Isend(q.bytes.data(), int(n), MPI_BYTE, to, tag, MPI_COMM_WORLD, &q.req);
    }
    void recv(int from, int tag, void* p, size_t n) override {
        check_size(n);
        MPI_Status st;
        MPI_Recv(p, int(n), MPI_BYTE, from, tag, MPI_COMM_WORLD, &st);
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        if (size_t(got) != n)
            throw std::runtime_error("rank " + std::to_string(rank_) + ": " + std::to_string(got) + " bytes from rank " +
                                     std::to_string(from) + ", expected " + std::to_string(n) + " (are all ranks running the same lockstep?)");
    }
    void flush() override {
        for (Pending& q : pending_) MPI_Wait(&q.req, MPI_STATUS_IGNORE);
        pending_.clear();
    }
    [[noreturn]] void abort(const std::string& why) override { abort_mpi_job(why); }
    void broadcast(std::vector<uint8_t>& bytes) override {
        unsigned long long n = bytes.size();
        MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        check_size(size_t(n));
        bytes.resize(size_t(n));
        if (n) MPI_Bcast(bytes.data(), int(n), MPI_BYTE, 0, MPI_COMM_WORLD);
    }

private:
    struct Pending {
        std::vector<uint8_t> bytes;
        MPI_Request req;
    };
    std::deque<Pending> pending_;  // deque: the buffers stay put while sends are in flight
    int rank_ = 0, size_ = 1;
    std::string host_;
    static void check_size(size_t n) {
        if (n > size_t(2147483647)) throw std::runtime_error("a message of " + std::to_string(n) + " bytes is more than MPI sends at once");
    }
};

}  // namespace

bool launched_by_mpirun() {
    const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
    return n && std::atoi(n) > 1;
}

std::unique_ptr<Transport> open_mpi_transport() { return std::make_unique<MpiTransport>(); }

void abort_mpi_job(const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
}

}  // namespace ls
