#include "tools/server/http_gate.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls::server {
namespace {

using clock = std::chrono::steady_clock;

// Runs httplib's per-connection task at once, on the accept thread: it only hands the
// connection to the gate (GatedServer::process_and_close_socket).
class InlineQueue : public httplib::TaskQueue {
public:
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override {}
};

// Waits up to ms for events on fd; false on timeout or error.
bool wait_fd(int fd, short events, int64_t ms) {
    if (ms <= 0) return false;
    pollfd p{fd, events, 0};
    while (true) {
        const int r = poll(&p, 1, int(std::min<int64_t>(ms, 1 << 30)));
        if (r < 0 && errno == EINTR) continue;
        return r > 0 && (p.revents & events);
    }
}

void close_socket(socket_t fd) {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
}

// The client's address, without the port ("" where unknown).
std::string peer_address(socket_t fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
    char s[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, s, sizeof s);
    else if (a.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr, s, sizeof s);
    return s;
}

// One connection, as httplib's request parser and response writer see it: reads go through
// a buffer that lives as long as the connection (a pipelined request's bytes are kept for it),
// and must come before the request's read deadline; each write waits at most the write
// timeout for the client to read.
class ConnStream final : public httplib::Stream {
public:
    ConnStream(socket_t fd, int write_timeout_s) : fd_(fd), write_ms_(int64_t(write_timeout_s) * 1000) {}
    void start_request(clock::time_point deadline) { deadline_ = deadline; }
    size_t buffered() const { return end_ - pos_; }

    bool is_readable() const override { return buffered() > 0 || wait_fd(fd_, POLLIN, remaining_ms()); }
    bool is_writable() const override { return wait_fd(fd_, POLLOUT, write_ms_); }
    ssize_t read(char* ptr, size_t size) override {
        if (buffered() == 0) {
            if (!wait_fd(fd_, POLLIN, remaining_ms())) return -1;  // the read deadline passed
            ssize_t r;
            do r = ::recv(fd_, buf_, sizeof buf_, 0);
            while (r < 0 && errno == EINTR);
            if (r <= 0) return r;
            pos_ = 0;
            end_ = size_t(r);
        }
        const size_t k = std::min(size, buffered());
        std::memcpy(ptr, buf_ + pos_, k);
        pos_ += k;
        return ssize_t(k);
    }
    ssize_t write(const char* ptr, size_t size) override {
        size_t done = 0;
        while (done < size) {
            if (!wait_fd(fd_, POLLOUT, write_ms_)) return -1;
            const ssize_t r = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
            if (r < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                return -1;
            }
            done += size_t(r);
        }
        return ssize_t(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { address(&getpeername, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address(&getsockname, ip, port); }
    socket_t socket() const override { return fd_; }

private:
    int64_t remaining_ms() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - clock::now()).count();
    }
    void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        ip.clear();
        port = 0;
        if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
        char s[INET6_ADDRSTRLEN] = {};
        if (a.ss_family == AF_INET) {
            const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
            inet_ntop(AF_INET, &in->sin_addr, s, sizeof s);
            port = ntohs(in->sin_port);
        } else if (a.ss_family == AF_INET6) {
            const auto* in = reinterpret_cast<const sockaddr_in6*>(&a);
            inet_ntop(AF_INET6, &in->sin6_addr, s, sizeof s);
            port = ntohs(in->sin6_port);
        }
        ip = s;
    }

    socket_t fd_;
    int64_t write_ms_;
    clock::time_point deadline_{};
    char buf_[8192];
    size_t pos_ = 0, end_ = 0;
};

// The length of a request's head (request line and headers, through the empty line) if it is
// all in buf, else 0.
size_t head_length(const char* buf, size_t n) {
    for (size_t i = 0; i + 1 < n; ++i) {
        if (buf[i] != '\n') continue;
        if (buf[i + 1] == '\n') return i + 2;
        if (buf[i + 1] == '\r' && i + 2 < n && buf[i + 2] == '\n') return i + 3;
    }
    return 0;
}

// The Content-Length a head declares (0: none, or not a plain number).
size_t content_length(const char* head, size_t n) {
    static const char kName[] = "\ncontent-length:";
    for (size_t i = 0; i + sizeof kName - 1 <= n; ++i) {
        size_t k = 0;
        while (k < sizeof kName - 1 && std::tolower(static_cast<unsigned char>(head[i + k])) == kName[k]) ++k;
        if (k < sizeof kName - 1) continue;
        size_t j = i + k, v = 0;
        while (j < n && head[j] == ' ') ++j;
        while (j < n && head[j] >= '0' && head[j] <= '9' && v < (size_t(1) << 40)) v = v * 10 + size_t(head[j++] - '0');
        return v;
    }
    return 0;
}

// A small body is awaited in the gate too, so that a client that sends it slowly holds no
// worker; a larger one could not fit the socket's receive buffer unread, so its reading is
// left to the worker (within the read deadline).
constexpr size_t kGateHead = 16 << 10, kGateBody = 32 << 10;

thread_local socket_t this_connection = -1;

}  // namespace

socket_t current_connection() { return this_connection; }

bool client_gone(socket_t fd) {
    if (fd < 0) return false;
    pollfd p{fd, short(POLLIN | POLLRDHUP), 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
    char c;
    // Readable: the client's next (pipelined) request, or its end of the stream.
    return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

GatedServer::GatedServer(const GateLimits& limits) : limits_(limits) {
    new_task_queue = [] { return new InlineQueue; };
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || wake_ < 0) throw std::runtime_error(std::string("http gate: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    workers_ = std::make_unique<httplib::ThreadPool>(std::max<size_t>(limits_.workers, 1));
    gate_ = std::thread([this] { gate_loop(); });
}

GatedServer::~GatedServer() {
    close_gate();
    ::close(epoll_);
    ::close(wake_);
}

void GatedServer::close_gate() {
    if (closing_.exchange(true)) return;
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
    if (gate_.joinable()) gate_.join();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [fd, w] : waiting_set_) close_socket(fd);
        waiting_set_.clear();
        per_address_.clear();
        waiting_ = 0;
    }
    workers_->shutdown();  // requests being served finish; their connections then close
}

void GatedServer::widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }

bool GatedServer::process_and_close_socket(socket_t sock) {
    admit(sock);
    return true;
}

void GatedServer::forget(std::unordered_map<socket_t, Waiting>::iterator it, bool close) {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, it->first, nullptr);
    if (close) close_socket(it->first);
    auto pa = per_address_.find(it->second.address);
    if (pa != per_address_.end() && --pa->second == 0) per_address_.erase(pa);
    waiting_set_.erase(it);
    waiting_ = waiting_set_.size();
}

void GatedServer::admit(socket_t sock) {
    if (closing_) {
        close_socket(sock);
        return;
    }
    std::string address = peer_address(sock);
    std::lock_guard<std::mutex> lock(mutex_);
    // Full (the gate, or this address's share of it): the connection that has waited longest
    // (of this address) goes.
    auto oldest = [&](bool same_address) {
        auto best = waiting_set_.end();
        for (auto it = waiting_set_.begin(); it != waiting_set_.end(); ++it)
            if ((!same_address || it->second.address == address) && (best == waiting_set_.end() || it->second.order < best->second.order))
                best = it;
        return best;
    };
    if (auto pa = per_address_.find(address); pa != per_address_.end() && pa->second >= limits_.max_waiting_per_address)
        if (auto it = oldest(true); it != waiting_set_.end()) forget(it, true), ++closed_full_;
    if (waiting_set_.size() >= limits_.max_waiting)
        if (auto it = oldest(false); it != waiting_set_.end()) forget(it, true), ++closed_full_;
    waiting_set_[sock] = {clock::now() + std::chrono::seconds(limits_.read_deadline_s), admitted_++, address};
    ++per_address_[address];
    waiting_ = waiting_set_.size();
    // Edge-triggered: the gate peeks without reading, so a level-triggered wait would report
    // a half-sent head again at once; each new arrival reports it once. (Bytes already there
    // when it is added are reported too.)
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.fd = sock;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, sock, &ev) != 0) forget(waiting_set_.find(sock), true);
}

void GatedServer::gate_loop() {
    epoll_event evs[256];
    std::vector<char> peek_buf(kGateHead + kGateBody);
    char* peek = peek_buf.data();
    auto last_sweep = clock::now();
    while (!closing_) {
        const int n = epoll_wait(epoll_, evs, 256, 100);
        for (int i = 0; i < n; ++i) {
            const int fd = evs[i].data.fd;
            if (fd == wake_) continue;
            const ssize_t r = ::recv(fd, peek, peek_buf.size(), MSG_PEEK | MSG_DONTWAIT);
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
            const size_t head = r > 0 ? head_length(peek, std::min(size_t(r), kGateHead)) : 0;
            const size_t body = head ? content_length(peek, head) : 0;
            // A whole head, and a small body whole too: to a worker.
            const bool ready = head > 0 && (body > kGateBody || head + body <= size_t(r));
            // Closed by the client, failed, or a head larger than the gate looks at (16 KiB):
            // dropped. Otherwise it waits for more.
            if (!ready && r > 0 && (head > 0 || size_t(r) < kGateHead)) continue;
            std::unique_lock<std::mutex> lock(mutex_);
            auto it = waiting_set_.find(fd);
            if (it == waiting_set_.end()) continue;  // dropped meanwhile (full gate)
            forget(it, false);
            lock.unlock();
            if (ready) workers_->enqueue([this, fd] { serve_connection(fd); });
            else close_socket(fd);
        }
        // Connections past their deadline (a head that never completes, an idle keep-alive).
        const auto now = clock::now();
        if (now - last_sweep >= std::chrono::milliseconds(100)) {
            last_sweep = now;
            std::lock_guard<std::mutex> lock(mutex_);
            std::vector<socket_t> late;
            for (const auto& [fd, w] : waiting_set_)
                if (w.deadline <= now) late.push_back(fd);
            for (socket_t fd : late) forget(waiting_set_.find(fd), true);
            closed_late_ += late.size();
        }
    }
}

void GatedServer::serve_connection(socket_t sock) {
    ConnStream s(sock, limits_.write_timeout_s);
    struct Current {
        explicit Current(socket_t fd) { this_connection = fd; }
        ~Current() { this_connection = -1; }
    } current(sock);
    while (true) {
        s.start_request(clock::now() + std::chrono::seconds(limits_.read_deadline_s));
        bool closed = false;
        const bool ok = process_request(s, closing_.load(), closed, nullptr);
        if (!ok || closed || closing_) break;
        if (s.buffered() > 0) continue;  // the client sent its next request already: in order, here
        admit(sock);                     // the next one waits off the workers
        return;
    }
    close_socket(sock);
}

}  // namespace ls::server
