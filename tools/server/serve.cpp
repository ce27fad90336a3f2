#include "tools/server/serve.h"

#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "backends/registry.h"
#include "core/runtime/grammar_vocab.h"
#include "core/text/tokenizer.h"
#include "tools/server/api_embed.h"
#include "tools/server/api_rerank.h"
#include "tools/server/api_request.h"
#include "tools/server/api_response.h"
#include "tools/server/api_responses.h"
#include "tools/server/engine.h"
#include "tools/server/http_gate.h"

namespace ls::server {

using nlohmann::json;

namespace {

// Everything the handlers share; set up by the loader, read once `ready`.
struct State {
    std::atomic<bool> ready{false};
    std::string model_id;
    std::vector<std::unique_ptr<Backend>> devices;
    std::unique_ptr<Model> model;
    std::unique_ptr<Tokenizer> tok;
    std::unique_ptr<Session> session;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<chat::ChatFormat> format;
    std::unique_ptr<Backend> vision_backend;  // the projector's own, on the CPU (declared first: destroyed after it)
    std::unique_ptr<VisionEncoder> vision;
    ApiContext api;
    EmbedContext embed;
    Metrics metrics;
    std::atomic<uint64_t> next_id{1};
};

void send_json(httplib::Response& res, int status, const json& j) {
    res.status = status;
    res.set_content(dump(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
    send_json(res, e.status, error_body(e.status, e.message, e.type, e.param, e.code));
}

// Every waiting connection is a descriptor: as many as the hard limit allows (the soft limit
// is often 1024).
void raise_open_files_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

std::string random_hex() {
    static std::atomic<uint64_t> counter{0};
    const uint64_t x = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ull + counter++;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)x);
    return buf;
}

// The ids of a request's tool calls: from its seed, its choice and the call's index, so an
// answer is the same bytes whatever else is served; formats that carry ids of a fixed length
// (Mistral's nine letters and digits) get them so.
chat::MakeCallId call_ids(const GenRequest& g, int choice) {
    const uint64_t seed = g.job.sampling.seed, stream = g.job.sampling.stream + uint64_t(choice);
    const size_t len = chat::format_id_length(g.tool_format);
    return [seed, stream, len](size_t i) {
        auto mix = [](uint64_t x) {
            x += 0x9E3779B97F4A7C15ull;
            x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
            x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
            return x ^ (x >> 31);
        };
        uint64_t h = mix(mix(mix(seed ^ 0x746F6F6Cull) ^ stream) ^ uint64_t(i));
        static const char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        if (len > 0) {
            std::string id;
            for (size_t k = 0; k < len; ++k, h /= 62) {
                if (h < 62) h = mix(h + k);
                id += kAlnum[h % 62];
            }
            return id;
        }
        char buf[32];
        std::snprintf(buf, sizeof buf, "call_%016llx", (unsigned long long)h);
        return std::string(buf);
    };
}

// The usage of a job of several choices: the prompt once, every choice's tokens.
void add_usage(Usage& sum, const Usage& u) {
    sum.prompt_tokens = u.prompt_tokens;
    sum.cached_tokens = u.cached_tokens;
    sum.completion_tokens += u.completion_tokens;
}

// A request that failed after it was accepted: 503 while the server shuts down, else 500
// (an engine error).
json failure_body(const State& st, const std::string& error) {
    return st.ready ? error_body(500, error, "server_error") : error_body(503, error, "unavailable_error");
}

// Streams one job's results. Runs on the HTTP worker that took the request; a failed write
// means the client left, and cancels the job. Between results it writes keep-alives (an SSE
// comment) so a client that left is noticed even while its request waits or generates. A
// failure after the stream began is an error event, then the end of the stream.
// `responses` (POST /v1/responses): the chat chunks become that API's typed events.
bool pump(State& st, const std::shared_ptr<Job>& job, const ResponseMeta& meta, const GenRequest& g, httplib::DataSink& sink,
          ResponsesStream* responses = nullptr) {
    auto write = [&](const std::string& s) {
        if (s.empty()) return true;
        if (!sink.write(s.data(), s.size())) {
            job->cancel();
            return false;
        }
        return true;
    };
    auto sse = [&](const json& j) { return write(responses ? responses->chunk(j) : "data: " + dump(j) + "\n\n"); };
    const size_t n = size_t(std::max(1, g.job.n));
    std::vector<size_t> offset(n, 0);
    std::vector<char> first(n, 1), called(n, 0);
    size_t open = n;
    Usage usage;
    // A chat with tools: each choice's text goes through the format's reader, whose events
    // become content, reasoning and tool-call deltas.
    std::vector<std::unique_ptr<chat::ToolCallParser>> parsers(n);
    if (g.tool_format != chat::Format::None)
        for (size_t k = 0; k < n; ++k)
            parsers[k] = std::make_unique<chat::ToolCallParser>(g.tool_format, chat::ParserOptions{call_ids(g, int(k)), g.tools});
    auto send_events = [&](int choice, const std::vector<chat::Event>& evs, const std::vector<TokenOut>& tokens, const std::string& reasoning) {
        const size_t k = size_t(choice);
        std::string text, think = reasoning;
        auto flush_text = [&](bool force) {
            if (text.empty() && think.empty() && !force) return true;
            const bool ok = sse(stream_chunk(meta, choice, text, {}, "", first[k], offset[k], *st.tok, think));
            first[k] = 0;
            text.clear(), think.clear();
            return ok;
        };
        for (const chat::Event& ev : evs) {
            if (ev.kind == chat::Event::Content) text += ev.text;
            else if (ev.kind == chat::Event::Reasoning) think += ev.text;
            else {
                if (!flush_text(false)) return false;
                json call = {{"index", ev.index}};
                if (ev.kind == chat::Event::CallStart) {
                    call["id"] = ev.id;
                    call["type"] = "function";
                    call["function"] = {{"name", ev.name}, {"arguments", ""}};
                    called[k] = 1;
                } else {
                    call["function"] = {{"arguments", ev.text}};
                }
                if (!sse(tool_calls_chunk(meta, choice, json::array({call}), first[k]))) return false;
                first[k] = 0;
            }
        }
        if (!tokens.empty() && meta.logprobs) {
            // (The tokens' logprobs in a chunk of their own: the reader may hold their text.)
            if (!flush_text(false)) return false;
            if (!sse(stream_chunk(meta, choice, "", tokens, "", first[k], offset[k], *st.tok))) return false;
            first[k] = 0;
        }
        for (const auto& t : tokens) offset[k] += t.piece.size();
        return flush_text(first[k] && meta.chat);
    };
    using clock = std::chrono::steady_clock;
    const auto keepalive = std::chrono::milliseconds(200);
    auto last_write = clock::now();
    while (true) {
        JobEvent e;
        const bool got = job->pop(e, std::chrono::milliseconds(200));
        if (!(got && e.last()) && clock::now() - last_write >= keepalive) {
            if (!write(":\n\n")) return false;
            last_write = clock::now();
        }
        if (!got) continue;
        last_write = clock::now();
        if (!e.error.empty()) {
            if (!sse(failure_body(st, e.error))) return false;
            break;
        }
        const size_t k = size_t(e.choice);
        if (first[k] && !g.echo.empty()) {
            // (echo comes without logprobs: parse_completion refuses the pair.)
            if (!sse(stream_chunk(meta, e.choice, g.echo, {}, "", true, 0, *st.tok))) return false;
            first[k] = 0;
        }
        if (parsers[k]) {
            if (!send_events(e.choice, parsers[k]->push(e.text), e.tokens, e.reasoning)) return false;
            if (!e.finish.empty()) {
                if (!send_events(e.choice, parsers[k]->finish(), {}, "")) return false;
                if (const auto& err = parsers[k]->error()) {
                    if (!sse(failure_body(st, "the model's tool call " + std::to_string(err->call_index) + " is malformed: " + err->message)))
                        return false;
                    break;
                }
            }
        } else if (!e.text.empty() || !e.tokens.empty() || !e.reasoning.empty() || (first[k] && meta.chat)) {
            if (!sse(stream_chunk(meta, e.choice, e.text, e.tokens, "", first[k], offset[k], *st.tok, e.reasoning))) return false;
            first[k] = 0;
            for (const auto& t : e.tokens) offset[k] += t.piece.size();
        }
        if (!e.finish.empty()) {
            const std::string finish = called[k] && e.finish == "stop" ? "tool_calls" : e.finish;
            if (!sse(stream_chunk(meta, e.choice, "", {}, finish, first[k], offset[k], *st.tok))) return false;
            add_usage(usage, e.usage);
            if (--open > 0) continue;
            if (g.include_usage && !sse(usage_chunk(meta, usage))) return false;
            if (!write(responses ? responses->end() : "data: [DONE]\n\n")) return false;
            break;
        }
    }
    sink.done();
    return true;
}

// A whole (non-streamed) answer: held until the job's result is known, so that a failure
// after the request was accepted (shutdown: 503, an engine error: 500) still gets an error
// status; a client that leaves meanwhile is noticed on its connection, and cancels the job.
void answer_whole(State& st, const std::shared_ptr<Job>& job, const ResponseMeta& meta, const GenRequest& g, httplib::Response& res,
                  const ResponsesMeta* responses = nullptr) {
    const std::string& echo = g.echo;
    const socket_t fd = current_connection();
    std::vector<ChoiceOut> choices(size_t(std::max(1, job->params.n)));
    for (ChoiceOut& c : choices) c.text = echo;
    size_t open = choices.size();
    Usage usage;
    auto last_check = std::chrono::steady_clock::now();
    while (true) {
        JobEvent e;
        const bool got = job->pop(e, std::chrono::milliseconds(50));
        if (!got || std::chrono::steady_clock::now() - last_check >= std::chrono::milliseconds(50)) {
            last_check = std::chrono::steady_clock::now();
            if (client_gone(fd)) {
                job->cancel();
                res.status = 499;  // (nginx's "client closed request": counted, never sent)
                return;
            }
        }
        if (!got) continue;
        if (!e.error.empty()) {
            const json body = failure_body(st, e.error);
            send_json(res, body["error"]["code"].get<int>(), body);  // (one read of st.ready for both)
            return;
        }
        ChoiceOut& c = choices.at(size_t(e.choice));
        c.text += e.text;
        c.reasoning += e.reasoning;
        c.tokens.insert(c.tokens.end(), e.tokens.begin(), e.tokens.end());
        if (!e.finish.empty()) {
            c.finish = e.finish;
            add_usage(usage, e.usage);
            if (--open == 0) {
                if (g.tool_format != chat::Format::None)
                    for (size_t k = 0; k < choices.size(); ++k) {
                        // The reply read for tool calls. Malformed calls leave the reply as
                        // its text (nothing was sent yet that would have to be taken back).
                        ChoiceOut& ch = choices[k];
                        std::optional<chat::ParseError> err;
                        chat::Message msg = chat::parse_reply(g.tool_format, ch.text, chat::ParserOptions{call_ids(g, int(k)), g.tools}, &err);
                        if (err) continue;
                        ch.text = msg.content;
                        ch.reasoning += msg.reasoning;
                        ch.tool_calls = std::move(msg.tool_calls);
                        if (!ch.tool_calls.empty() && ch.finish == "stop") ch.finish = "tool_calls";
                    }
                const json whole = full_response(meta, choices, usage, *st.tok);
                send_json(res, 200, responses ? chat_to_response(*responses, whole) : whole);
                return;
            }
        }
    }
}

enum class Endpoint { Completions, Chat, Responses };

void handle_generate(State& st, Endpoint kind, const httplib::Request& req, httplib::Response& res) {
    const bool chat = kind != Endpoint::Completions;
    // An encoder (BERT, nomic-bert) has no output projection: it embeds, it does not generate.
    if (st.model && !st.model->hparams().has_logits) {
        send_error(res, ApiError(400, st.model->hparams().arch + " is an embedding model: it serves /v1/embeddings, not text generation", "",
                                 "", "invalid_request_error"));
        return;
    }
    GenRequest g;
    std::shared_ptr<ResponsesMeta> responses;
    try {
        const json body = parse_json_object(req.body);
        if (kind == Endpoint::Responses) {
            responses = std::make_shared<ResponsesMeta>();
            responses->request = body;
            try {
                g = parse_chat(responses_to_chat(body), st.api);
            } catch (ApiError& e) {
                e.param = responses_param(e.param);
                throw;
            }
            g.include_usage = true;  // (response.completed carries it)
        } else {
            g = chat ? parse_chat(body, st.api) : parse_completion(body, st.api);
        }
    } catch (const ApiError& e) {
        send_error(res, e);
        return;
    }
    auto job = std::make_shared<Job>(g.job);
    if (!st.engine->submit(job)) {
        st.metrics.requests_rejected++;
        res.set_header("Retry-After", "1");
        send_error(res, ApiError(503, "every slot is busy and the queue is full; retry later", "", "", "unavailable_error"));
        return;
    }
    ResponseMeta meta;
    meta.chat = chat;
    meta.logprobs = g.logprobs;
    meta.model = st.model_id;
    meta.created = int64_t(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    meta.id = (chat ? "chatcmpl-" : "cmpl-") + random_hex();
    if (responses) {
        responses->id = "resp_" + random_hex();
        responses->model = meta.model;
        responses->created = meta.created;
    }
    if (!g.stream) {
        answer_whole(st, job, meta, g, res, responses.get());
        return;
    }
    auto gp = std::make_shared<GenRequest>(std::move(g));
    auto rs = responses ? std::make_shared<ResponsesStream>(*responses) : nullptr;
    res.set_chunked_content_provider(
        "text/event-stream",
        [&st, job, meta, gp, rs](size_t, httplib::DataSink& sink) {
            // httplib calls this outside its own exception handling: nothing may escape.
            try {
                return pump(st, job, meta, *gp, sink, rs.get());
            } catch (const std::exception& e) {
                std::fprintf(stderr, "lockstep serve: response failed: %s\n", e.what());
                job->cancel();
                return false;
            }
        },
        [job](bool success) {
            if (!success) job->cancel();
        });
    res.set_header("Cache-Control", "no-cache");
}

void routes(GatedServer& svr, State& st, const ServeConfig& c) {
    svr.set_pre_routing_handler([&st, &c](const httplib::Request& req, httplib::Response& res) {
        // CORS (--cors-origin): every answer to an allowed origin says so, and a preflight is
        // answered here, before the key check (browsers send it without credentials).
        const std::string origin = req.get_header_value("Origin");
        const bool allowed = !c.cors_origin.empty() && !origin.empty() && (c.cors_origin == "*" || origin == c.cors_origin);
        if (allowed) {
            res.set_header("Access-Control-Allow-Origin", c.cors_origin == "*" ? "*" : origin);
            if (c.cors_origin != "*") res.set_header("Vary", "Origin");
        }
        if (req.method == "OPTIONS" && allowed && req.has_header("Access-Control-Request-Method")) {
            res.status = 204;
            res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
            res.set_header("Access-Control-Max-Age", "600");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (req.path == "/health" || req.path == "/v1/health") return httplib::Server::HandlerResponse::Unhandled;
        if (!c.api_key.empty()) {
            const std::string bearer = "Bearer " + c.api_key;
            if (req.get_header_value("Authorization") != bearer && req.get_header_value("X-Api-Key") != c.api_key) {
                send_error(res, ApiError(401, "invalid or missing API key (Authorization: Bearer KEY)", "", "invalid_api_key",
                                         "authentication_error"));
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        if (!st.ready.load()) {
            send_error(res, ApiError(503, "the model is loading", "", "", "unavailable_error"));
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    auto health = [&st](const httplib::Request&, httplib::Response& res) {
        if (st.ready.load())
            send_json(res, 200, {{"status", "ok"}});
        else
            send_error(res, ApiError(503, "the model is loading", "", "", "unavailable_error"));
    };
    svr.Get("/health", health);
    svr.Get("/v1/health", health);
    svr.Get("/v1/models", [&st](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200,
                  {{"object", "list"},
                   {"data", json::array({{{"id", st.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "lockstep"}}})}});
    });
    for (const auto& [path, kind] : {std::pair{"/v1/completions", Endpoint::Completions}, std::pair{"/completions", Endpoint::Completions},
                                     std::pair{"/v1/chat/completions", Endpoint::Chat}, std::pair{"/chat/completions", Endpoint::Chat},
                                     std::pair{"/v1/responses", Endpoint::Responses}, std::pair{"/responses", Endpoint::Responses}})
        svr.Post(path, [&st, kind = kind](const httplib::Request& req, httplib::Response& res) { handle_generate(st, kind, req, res); });
    auto embeddings = [&st](const httplib::Request& req, httplib::Response& res) {
        handle_embeddings(st.embed, *st.engine, st.metrics, st.ready, req, res);
    };
    svr.Post("/v1/embeddings", embeddings);
    svr.Post("/embeddings", embeddings);
    for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"})
        svr.Post(path, [&st](const httplib::Request& req, httplib::Response& res) {
            handle_rerank(st.embed, *st.engine, st.metrics, st.ready, req, res);
        });
    svr.Post("/tokenize", [&st](const httplib::Request& req, httplib::Response& res) {
        try {
            const json body = parse_json_object(req.body);
            auto it = body.find("content");
            if (it == body.end() || !it->is_string()) throw ApiError(400, "'content' must be a string", "content");
            auto flag = [&](const char* k, bool def) {
                auto f = body.find(k);
                if (f == body.end() || f->is_null()) return def;
                if (!f->is_boolean()) throw ApiError(400, std::string("'") + k + "' must be a boolean", k);
                return f->get<bool>();
            };
            const bool add_special = flag("add_special", false), parse_special = flag("parse_special", true),
                       with_pieces = flag("with_pieces", false);
            const auto ids = st.tok->encode(it->get<std::string>(), add_special && st.tok->add_bos_default(), parse_special);
            json out = json::array();
            for (int32_t id : ids) {
                if (with_pieces)
                    out.push_back({{"id", id}, {"piece", st.tok->token_to_piece(id)}});
                else
                    out.push_back(id);
            }
            send_json(res, 200, {{"tokens", out}});
        } catch (const ApiError& e) {
            send_error(res, e);
        }
    });
    svr.Post("/detokenize", [&st](const httplib::Request& req, httplib::Response& res) {
        try {
            const json body = parse_json_object(req.body);
            auto it = body.find("tokens");
            if (it == body.end() || !it->is_array()) throw ApiError(400, "'tokens' must be an array of token ids", "tokens");
            std::vector<int32_t> ids;
            for (const json& x : *it) {
                if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= st.tok->n_vocab())
                    throw ApiError(400, "'tokens' holds " + (x.is_number() ? x.dump() : std::string("a non-number")) +
                                            ", not a token id in [0, " + std::to_string(st.tok->n_vocab()) + ")",
                                   "tokens");
                ids.push_back(int32_t(x.get<int64_t>()));
            }
            send_json(res, 200, {{"content", st.tok->decode(ids, false)}});
        } catch (const ApiError& e) {
            send_error(res, e);
        }
    });
    svr.Get("/metrics", [&st, &svr](const httplib::Request&, httplib::Response& res) {
        std::string m = st.metrics.render(st.engine->n_slots());
        m += "# HELP lockstep_http_connections_waiting connections the gate holds: idle, or their request not all in\n"
             "# TYPE lockstep_http_connections_waiting gauge\nlockstep_http_connections_waiting " +
             std::to_string(svr.waiting()) + "\n";
        m += "# HELP lockstep_http_connections_closed_total connections the gate closed, by reason\n"
             "# TYPE lockstep_http_connections_closed_total counter\n"
             "lockstep_http_connections_closed_total{reason=\"read_deadline\"} " + std::to_string(svr.closed_late()) + "\n"
             "lockstep_http_connections_closed_total{reason=\"gate_full\"} " + std::to_string(svr.closed_full()) + "\n";
        res.set_content(m, "text/plain; version=0.0.4");
    });
    svr.set_error_handler([&c](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        std::string msg = res.status == 404 ? "no such endpoint: " + req.method + " " + req.path
                        : res.status == 413 ? "the request body is larger than the server's limit of " +
                                                  std::to_string(c.max_body_bytes >> 20) + " MiB (--max-body)"
                                            : "request failed with HTTP status " + std::to_string(res.status);
        send_json(res, res.status, error_body(res.status, msg, res.status == 404 ? "not_found_error" : "invalid_request_error"));
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string msg = "internal error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            msg = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        send_json(res, 500, error_body(500, msg, "server_error"));
    });
    svr.set_logger([&st](const httplib::Request&, const httplib::Response& res) { st.metrics.count_status(res.status); });
}

}  // namespace

int serve(const ServeConfig& c) {
    // SIGINT / SIGTERM are waited for below; every thread started from here on blocks them.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that left: a failed write, not a dead server

    State st;
    st.model_id = std::filesystem::path(c.model_path).filename().string();
    // A connection holds a worker only while one of its requests is served (http_gate.h):
    // each open stream and each queued request holds one, so slots + queue + a few for the
    // quick endpoints (health, metrics, errors, 503s), which idle and slow connections, held
    // by the gate, can no longer take.
    raise_open_files_limit();
    GateLimits gl;
    gl.workers = size_t(c.session.n_seq) + size_t(c.max_queue) + 16;
    gl.read_deadline_s = c.read_timeout_s;
    gl.write_timeout_s = c.timeout_s;
    GatedServer svr(gl);
    svr.set_tcp_nodelay(true);
    svr.set_payload_max_length(c.max_body_bytes);
    routes(svr, st, c);
    // An exclusive bind: SO_REUSEADDR only, so that a restart need not wait out TIME_WAIT.
    // (httplib's default adds SO_REUSEPORT, with which a second server, or any process of the
    // same user, could bind the same port and silently take half of the connections.)
    svr.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    int port = c.port;
    errno = 0;
    if (port == 0) port = svr.bind_to_any_port(c.host);
    else if (!svr.bind_to_port(c.host, port)) port = -1;
    if (port > 0) svr.widen_backlog();
    if (port <= 0) {
        const int err = errno;
        std::fprintf(stderr, "lockstep serve: error: cannot listen on %s:%d: %s\n", c.host.c_str(), c.port,
                     err == EADDRINUSE ? "the port is in use (another server?)"
                     : err             ? std::strerror(err)
                                       : "not an address of this machine");
        return 1;
    }
    std::atomic<bool> listen_ended{false};
    std::thread http([&svr, &listen_ended] {
        svr.listen_after_bind();
        listen_ended = true;
    });
    // stop() does nothing until the accept loop runs: wait for it, so that a model that fails
    // to load below can stop the server instead of leaving it running.
    while (!svr.is_running() && !listen_ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (listen_ended) {
        http.join();
        std::fprintf(stderr, "lockstep serve: error: the HTTP server stopped at once on %s:%d\n", c.host.c_str(), port);
        return 1;
    }
    std::fprintf(stderr, "lockstep serve: listening on http://%s:%d (GET /health answers 503 until the model is loaded)\n",
                 c.host.c_str(), port);

    int rc = 0;
    try {
        const auto t0 = std::chrono::steady_clock::now();
        std::fprintf(stderr, "lockstep serve: loading %s (%.0f MiB) on %s...\n", c.model_path.c_str(),
                     double(std::filesystem::file_size(c.model_path)) / (1 << 20), c.open.backend.c_str());
        if (c.load) {
            c.load(st.devices, st.model);
        } else {
            ModelOpenOptions mo = c.open;
            mo.state = {c.session.n_ctx, c.session.n_seq, c.session.n_ubatch, c.session.type_k, c.session.type_v};
            OpenedModel opened = open_model(c.model_path, mo);
            st.devices = std::move(opened.devices);
            st.model = std::move(opened.model);
        }
        if (!c.load && (st.model->backends().size() > 1 || c.open.placement.any()))
            std::fprintf(stderr, "lockstep serve: placement: %s\n", st.model->placement().describe().c_str());
        st.tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(st.model->gguf()));
        st.session = std::make_unique<Session>(*st.model, c.session);
        st.api.tok = st.tok.get();
        st.api.arch = st.model->hparams().arch;
        st.api.chat = &chat_template_for(st.api.arch, [&](std::string_view t) { return st.tok->find_token(t) >= 0; });
        st.api.n_ctx = st.session->params().n_ctx;
        st.api.n_slots = int(st.session->params().n_seq);
        st.api.grammar_vocab = grammar_vocab(*st.tok);
        try {
            st.format = std::make_unique<chat::ChatFormat>(
                chat::ChatFormat::from_model(st.model->gguf(), *st.tok, st.api.arch, c.chat_template, c.chat_template_name));
        } catch (const chat::TemplateError& e) {
            // The user's own template must work; a broken one in the file falls back to the
            // built-in table, saying so.
            if (!c.chat_template.empty()) throw std::runtime_error(std::string("--chat-template-file: ") + e.what());
            std::fprintf(stderr, "lockstep serve: the model's chat template does not parse (%s); chats use the built-in one for %s\n",
                         e.what(), st.api.arch.c_str());
        }
        st.api.format = st.format.get();
        if (st.format) {
            // Forced calls: the format's markers that this vocabulary holds as control tokens
            // are their text to the grammar (another trie only where there are such markers).
            const std::vector<std::string_view> markers = chat::format_markers(st.format->tool_format());
            bool control = false;
            for (std::string_view m : markers)
                if (const int32_t id = st.tok->find_token(m); id >= 0 && st.tok->token_type(id) == TokenType::Control) control = true;
            if (control) st.api.tool_grammar_vocab = grammar_vocab(*st.tok, markers);
        }
        // Which template chats use and how its replies' tool calls are read: a family whose
        // template is refused, or whose calls fall back to the generic format, shows here.
        if (st.format && st.format->is_jinja())
            std::fprintf(stderr, "lockstep serve: chat template: Jinja (%s), tool calls: %s\n",
                         c.chat_template.empty() ? "the model's" : "--chat-template-file",
                         std::string(chat::format_name(st.format->tool_format())).c_str());
        st.api.defaults = c.sampling;
        for (int32_t id = 0; id < st.tok->n_vocab(); ++id)
            if (st.tok->is_eog(id)) st.api.eog_ids.push_back(id);
        st.api.max_piece_bytes = st.tok->max_bytes_per_token();
        st.embed = embed_context(*st.model, *st.tok, st.session->params().n_ctx, c.pooling, c.embd_normalize, st.model_id);
        if (!st.model->hparams().causal) st.embed.one_ubatch = st.session->params().n_ubatch;
        st.engine = std::make_unique<Engine>(*st.session, *st.tok, st.metrics, c.max_queue, c.spec);
        if (!c.mmproj.empty()) {
            // On the CPU the projector gets a backend of its own (its own thread pool), and a
            // request's images are encoded on the request's thread before it is queued: the
            // engine then finds their rows kept by the encoder, and its other slots go on
            // generating while an image encodes. (A GPU backend is not shared between threads:
            // there the engine encodes what it needs itself, as before.)
            Backend& text_be = *st.model->backends().front();
            if (text_be.name() == "cpu") {
                BackendOptions bo;
                bo.threads = c.open.threads;
                st.vision_backend = create_backend(bo);
                st.api.encode_images = true;
            }
            st.vision = load_vision_encoder(c.mmproj, st.vision_backend ? *st.vision_backend : text_be);
            st.vision->set_image_tokens(c.image_min_tokens, c.image_max_tokens);
            st.vision->check_text_model(*st.model);
            st.api.vision = st.vision.get();
            st.engine->set_vision(st.vision.get());
            std::fprintf(stderr, "lockstep serve: images: %s projector (%s)\n", st.vision->projector().c_str(), c.mmproj.c_str());
        }
        st.ready = true;
        std::fprintf(stderr, "lockstep serve: ready in %.1f s: %s, %d slots of %lld tokens each, ubatch %lld\n",
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), st.api.arch.c_str(),
                     int(c.session.n_seq), (long long)st.api.n_ctx, (long long)st.session->params().n_ubatch);
        int sig = 0;
        sigwait(&sigs, &sig);
        std::fprintf(stderr, "lockstep serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lockstep serve: error: %s\n", e.what());
        rc = 1;
    }
    // Requests still running get an error ("server shutting down") before the workers stop.
    st.ready = false;
    if (st.engine) st.engine->shutdown();
    svr.stop();
    http.join();
    svr.close_gate();
    return rc;
}

}  // namespace ls::server
