// The HTTP layer's connections (issue 32): cpp-httplib parses requests and writes responses,
// but a connection holds no worker thread while it is idle or still sending its headers.
// httplib serves a connection on a worker from accept to close, so 30 connections sending a
// header byte every 2 s, or a few hundred idle ones, took every worker and with them /health.
// Here the accept thread hands each new connection to a gate: one thread that watches every
// waiting connection (epoll) and passes it to a worker only once a whole request head has
// arrived, with its body when that is small (32 KiB: peeked, not read), and closes it when that takes longer than the read deadline or
// when the gate, or one client address's share of it, is full (the oldest first: one client
// cannot push the others' waiting connections out). After a response the worker hands the connection
// back to the gate, unless the client already sent its next request (pipelining: that one is
// served at once, in order). A request's head and body must arrive within the read deadline,
// separate from how long its response may take to generate and write.
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace ls::server {

struct GateLimits {
    size_t workers = 32;        // threads that serve requests (slots + queue + a few for quick endpoints)
    int read_deadline_s = 10;   // a request's head and body, from its first byte awaited
    int write_timeout_s = 600;  // one write to a client that does not read
    size_t max_waiting = 4096;  // connections the gate holds; beyond, the oldest is closed
    size_t max_waiting_per_address = 256;  // of one client address; beyond, its oldest is closed
};

// The connection of the request this thread is serving (-1 outside a handler), and whether
// its client has gone: a handler that holds its whole answer until it is known (so that its
// status can still be an error) notices a client that left without writing to it.
socket_t current_connection();
bool client_gone(socket_t fd);

class GatedServer : public httplib::Server {
public:
    explicit GatedServer(const GateLimits& limits);
    ~GatedServer() override;
    // Closes every waiting connection and stops the gate and the workers (after stop(): the
    // accept loop has ended; requests being served finish first).
    void close_gate();
    size_t waiting() const { return waiting_.load(); }
    // Connections the gate closed: at the read deadline, and to make room (full, or one
    // address's share full).
    uint64_t closed_late() const { return closed_late_.load(); }
    uint64_t closed_full() const { return closed_full_.load(); }
    // After bind: the accept queue as long as the system allows (httplib listens with a
    // backlog of 5, so a burst of connections while the accept thread was busy lost SYNs and
    // waited for the client's retransmission, a second or more).
    void widen_backlog();

private:
    // Called by httplib's accept loop (through a task queue that runs it at once): the new
    // connection goes to the gate.
    bool process_and_close_socket(socket_t sock) override;
    void admit(socket_t sock);
    void gate_loop();
    void serve_connection(socket_t sock);

    GateLimits limits_;
    int epoll_ = -1, wake_ = -1;  // wake_: an eventfd that interrupts epoll_wait
    std::mutex mutex_;
    struct Waiting {
        std::chrono::steady_clock::time_point deadline;
        uint64_t order;       // admission order: the oldest is closed first when full
        std::string address;  // the client's, without the port
    };
    std::unordered_map<socket_t, Waiting> waiting_set_;  // under mutex_
    std::unordered_map<std::string, size_t> per_address_;  // waiting connections per client address
    // Takes a waiting connection out of the gate (and out of epoll); closes it if asked.
    void forget(std::unordered_map<socket_t, Waiting>::iterator it, bool close);
    uint64_t admitted_ = 0;
    std::atomic<size_t> waiting_{0};
    std::atomic<uint64_t> closed_late_{0}, closed_full_{0};
    std::atomic<bool> closing_{false};
    std::unique_ptr<httplib::ThreadPool> workers_;
    std::thread gate_;
};

}  // namespace ls::server
