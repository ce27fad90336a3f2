#include "core/sched/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace ls {

namespace {
const Tensor* storage_base(const Tensor* t) {
    while (t->view_src) t = t->view_src;
    return t;
}

// One run of consecutive nodes on one device, as a graph of its own.
struct Piece {
    Backend* be = nullptr;
    std::vector<const Tensor*> nodes;  // of the whole graph
    std::unique_ptr<Graph> g = std::make_unique<Graph>();
    std::unordered_map<const Tensor*, Tensor*> local;  // whole graph's tensor -> this piece's
    // Roots made on another device (or persistent there) that this piece reads: the whole
    // graph's tensor, and the input standing for it here.
    std::vector<std::pair<const Tensor*, Tensor*>> imports;
    bool holds_output = false;
};
}  // namespace

Scheduler::Scheduler(std::vector<Backend*> backends, std::vector<const Tensor*> shared)
    : backends_(std::move(backends)), shared_(std::move(shared)), verbose_(std::getenv("LOCKSTEP_SCHED_VERBOSE") != nullptr) {
    if (backends_.empty()) throw std::invalid_argument("scheduler: no backend");
    for (Backend* b : backends_)
        if (!b) throw std::invalid_argument("scheduler: null backend");
}

Tensor* Scheduler::replica(const Tensor* w, Backend* be) {
    auto [it, fresh] = replicas_.try_emplace({w, be});
    Replica& r = it->second;
    if (fresh) {
        std::vector<uint8_t> bytes(w->nbytes());
        read_tensor(*w->buffer->backend, *w, bytes.data());
        r.buffer = be->alloc(std::max<size_t>(bytes.size(), 1));
        be->upload(*r.buffer, 0, bytes.data(), bytes.size());
        r.t = *w;
        r.t.buffer = r.buffer.get();
        r.t.offset = 0;
    }
    return &r.t;
}

void read_output(const Tensor& t, void* dst) {
    if (!t.buffer || !t.buffer->backend) throw std::logic_error("read_output: tensor '" + t.name + "' has no buffer");
    read_tensor(*t.buffer->backend, t, dst);
}

void Scheduler::run(Graph& g) {
    last_ = {};
    if (backends_.size() == 1) {
        run_graph(*backends_[0], g, scratch_[{backends_[0], 0}]);
        last_.pieces = 1;
        return;
    }
    // 1. A device per node: the backend of its first placed operand (a weight, a cache row
    //    range), else the previous node's. Straight-line model code keeps a layer's weightless
    //    nodes (activations, residual adds) on the device of the weights around them; following
    //    an operand instead would send each residual add back to the previous layer's device.
    const std::vector<Tensor*>& nodes = g.nodes();
    std::unordered_map<const Tensor*, size_t> piece_of;  // node -> piece index
    std::vector<Piece> pieces;
    auto known = [&](Backend* b) {
        if (std::find(backends_.begin(), backends_.end(), b) == backends_.end())
            throw std::logic_error("scheduler: a tensor lives on a backend this scheduler was not given");
        return b;
    };
    for (const Tensor* n : nodes) {
        Backend* dev = nullptr;
        for (const Tensor* s : n->src) {
            if (!s) continue;
            const Tensor* b = storage_base(s);
            if (b->kind == TensorKind::Persistent && b->buffer && std::find(shared_.begin(), shared_.end(), b) == shared_.end()) {
                dev = known(b->buffer->backend);
                break;
            }
        }
        if (!dev) dev = pieces.empty() ? backends_[0] : pieces.back().be;
        if (pieces.empty() || pieces.back().be != dev) pieces.emplace_back().be = dev;
        pieces.back().nodes.push_back(n);
        piece_of[n] = pieces.size() - 1;
    }
    if (pieces.size() <= 1) {
        Backend* be = pieces.empty() ? backends_[0] : pieces[0].be;
        run_graph(*be, g, scratch_[{be, 0}]);
        last_.pieces = 1;
        return;
    }

    if (verbose_) {
        std::fprintf(stderr, "lockstep sched: %zu pieces:", pieces.size());
        for (const Piece& P : pieces)
            std::fprintf(stderr, " [%s: %zu nodes from %s %s]", P.be->name().c_str(), P.nodes.size(), op_name(P.nodes[0]->op),
                         P.nodes[0]->name.c_str());
        std::fprintf(stderr, "\n");
    }
    // 2. Each piece's graph: its nodes copied, their operands resolved to this piece's own
    //    tensors (graph inputs copied with their bytes, other pieces' results as inputs
    //    filled when they are made, views rebuilt over whichever base they resolve to).
    std::unordered_map<const Tensor*, size_t> input_index;
    for (size_t i = 0; i < g.inputs().size(); ++i) input_index[g.inputs()[i]] = i;
    std::unordered_map<const Tensor*, std::vector<std::pair<size_t, Tensor*>>> readers;  // root -> (piece, its input)
    for (size_t pi = 0; pi < pieces.size(); ++pi) {
        Piece& P = pieces[pi];
        auto resolve = [&](auto& self, const Tensor* s) -> Tensor* {
            if (auto it = P.local.find(s); it != P.local.end()) return it->second;
            Tensor* r = nullptr;
            if (s->view_src) {
                Tensor* base = self(self, s->view_src);
                if (base == s->view_src) return const_cast<Tensor*>(s);  // a view of a tensor used in place
                r = P.g->clone(*s);
                r->view_src = base;
                r->buffer = nullptr;
            } else if (s->kind == TensorKind::Persistent) {
                if (!s->buffer || s->buffer->backend == P.be) return const_cast<Tensor*>(s);
                if (std::find(shared_.begin(), shared_.end(), s) != shared_.end()) {
                    r = replica(s, P.be);
                } else {
                    r = P.g->input_like(*s, s->name);  // a weight placed elsewhere: copied in before the piece runs
                    P.imports.emplace_back(s, r);
                }
            } else if (auto in = input_index.find(s); in != input_index.end()) {
                r = P.g->input_like(*s, s->name);
                P.g->set_input_data(r, g.input_data(in->second));
            } else {
                auto made = piece_of.find(s);
                if (made == piece_of.end() || made->second >= pi)
                    throw std::logic_error("scheduler: '" + s->name + "' is read before it is computed");
                r = P.g->input_like(*s, s->name);
                P.imports.emplace_back(s, r);
                readers[s].emplace_back(pi, r);
                pieces[made->second].g->mark_output(pieces[made->second].local.at(s));  // kept until copied out
            }
            P.local[s] = r;
            return r;
        };
        for (const Tensor* n : P.nodes) {
            Tensor* c = P.g->clone(*n);
            for (Tensor*& s : c->src)
                if (s) s = resolve(resolve, s);
            if (n->view_src) c->view_src = resolve(resolve, n->view_src);
            c->buffer = nullptr;
            P.local[n] = c;
            P.g->add_node(c);
        }
    }
    for (Tensor* o : g.outputs())
        if (auto it = piece_of.find(o); it != piece_of.end()) {
            Piece& P = pieces[it->second];
            P.g->mark_output(P.local.at(o));
            P.holds_output = true;
        }

    // 3. Run the pieces in order. A piece's results that later pieces read are copied out as
    //    soon as it has run, so pieces of one backend can share its compute buffer.
    for (size_t pi = 0; pi < pieces.size(); ++pi) {
        Piece& P = pieces[pi];
        for (auto& [src, in] : P.imports)
            if (src->kind == TensorKind::Persistent) {
                std::vector<uint8_t> bytes(src->nbytes());
                read_tensor(*src->buffer->backend, *src, bytes.data());
                last_.bytes_moved += bytes.size();
                P.g->set_input_data(in, std::move(bytes));
            }
        bool later_same = false;
        for (size_t q = pi + 1; q < pieces.size() && !later_same; ++q) later_same = pieces[q].be == P.be;
        run_graph(*P.be, *P.g, scratch_[{P.be, P.holds_output && later_same ? pi + 1 : 0}]);
        for (const Tensor* n : P.nodes) {
            auto rd = readers.find(n);
            if (rd == readers.end()) continue;
            std::vector<uint8_t> bytes(n->nbytes());
            read_tensor(*P.be, *P.local.at(n), bytes.data());
            for (auto& [q, in] : rd->second) {
                last_.bytes_moved += bytes.size();
                pieces[q].g->set_input_data(in, bytes);
            }
        }
    }
    // The whole graph's outputs point at where they were computed.
    for (Tensor* o : g.outputs())
        if (auto it = piece_of.find(o); it != piece_of.end()) {
            const Tensor* c = pieces[it->second].local.at(o);
            o->buffer = c->buffer;
            o->offset = c->offset;
        }
    last_.pieces = pieces.size();
}

}  // namespace ls
