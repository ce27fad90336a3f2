#include "core/sched/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/ir/host_buffer.h"
#include "core/ir/ops.h"
#include "core/sched/remote_backend.h"

namespace ls {

namespace {
const Tensor* storage_base(const Tensor* t) {
    while (t->view_src) t = t->view_src;
    return t;
}

// One run of consecutive nodes on one device, as a graph of its own.
struct Piece {
    Backend* be = nullptr;
    int rank = -1;                     // the rank that runs it (-1: this one)
    std::vector<const Tensor*> nodes;  // of the whole graph
    std::unique_ptr<Graph> g = std::make_unique<Graph>();
    std::unordered_map<const Tensor*, Tensor*> local;  // whole graph's tensor -> this piece's
    // Roots made on another device (or persistent there) that this piece reads: the whole
    // graph's tensor, the input standing for it here, and the message tag it crosses under.
    struct Import {
        const Tensor* src;
        Tensor* in;
        int tag;
    };
    std::vector<Import> imports;
    size_t holds_output = 0;  // 1, 2, ...: the pieces holding graph outputs, in order (0: none)
};

// Outputs received from another rank live in host memory.
class ReceivedOutputs : public HostBackend {
public:
    std::string name() const override { return "host"; }
    void compute(const Graph&) override { throw std::logic_error("received outputs are not computed here"); }
};

// Message tags: one per crossing of a run (the same numbering on every rank), within the range
// every MPI guarantees; runs alternate between two ranges, so that the outputs of a run still
// pending while the next run exchanges its rows never match them.
int tag_of(size_t run, size_t id) { return int(run % 2) * 16000 + int(id % 16000) + 1; }
}  // namespace

Scheduler::Scheduler(std::vector<Backend*> backends, std::vector<SharedWeight> shared, Transport* link, std::vector<RowSplit> row_splits)
    : backends_(std::move(backends)), shared_(std::move(shared)), row_splits_(std::move(row_splits)), link_(link),
      verbose_(std::getenv("LOCKSTEP_SCHED_VERBOSE") != nullptr) {
    if (backends_.empty()) throw std::invalid_argument("scheduler: no backend");
    for (Backend* b : backends_) {
        if (!b) throw std::invalid_argument("scheduler: null backend");
        if (remote_rank(b) >= 0 && !link_) throw std::invalid_argument("scheduler: another rank's device, but no link to it");
    }
    for (const RowSplit& r : row_splits_) split_of_[r.whole] = &r;
}

const Scheduler::SharedWeight* Scheduler::shared(const Tensor* t) const {
    for (const SharedWeight& w : shared_)
        if (w.first == t) return &w;
    return nullptr;
}

Tensor* Scheduler::replica(const SharedWeight& w, Backend* be) {
    auto [it, fresh] = replicas_.try_emplace({w.first, be});
    Replica& r = it->second;
    if (fresh) {
        const size_t n = w.first->nbytes();
        r.buffer = be->alloc(std::max<size_t>(n, 1));
        be->upload(*r.buffer, 0, w.second, n);
        r.t = *w.first;
        r.t.buffer = r.buffer.get();
        r.t.offset = 0;
    }
    return &r.t;
}

void Scheduler::collect(size_t keep_runs) {
    received_.clear();
    std::vector<Pending> later;
    for (Pending& p : pending_) {
        if (p.run + keep_runs >= runs_) {
            later.push_back(std::move(p));
            continue;
        }
        link_->recv(p.from, p.tag, p.buffer->host, p.out->nbytes());
        p.out->buffer = p.buffer.get();
        p.out->offset = 0;
        received_.push_back(std::move(p.buffer));
    }
    pending_ = std::move(later);
}

void read_output(const Tensor& t, void* dst) {
    if (!t.buffer || !t.buffer->backend) throw std::logic_error("read_output: tensor '" + t.name + "' has no buffer");
    read_tensor(*t.buffer->backend, t, dst);
}

void Scheduler::run(Graph& g) {
    last_ = {};
    // Every rank counts every run, whichever path it takes below (a graph all on rank 0 is one
    // piece there and none here), so that their tags agree.
    const size_t run = runs_;
    if (link_) ++runs_;
    if (backends_.size() == 1) {
        run_graph(*backends_[0], g, scratch_[{backends_[0], 0}]);
        last_.pieces = 1;
        return;
    }
    // 0. Row splits: a mul_mat of a split matrix becomes a mul_mat per slice, on the slice's
    //    device; the node itself is computed nowhere: it is a gather, whose readers get its rows
    //    put together on the host from the slices' outputs.
    Graph sliced;  // the slices' nodes, this run only
    // gathered node -> its slice nodes and their rows
    std::unordered_map<const Tensor*, std::vector<std::pair<const Tensor*, UnitSlice>>> gathers;
    std::vector<Tensor*> expanded;
    if (!row_splits_.empty()) {
        auto split_of = [&](const Tensor* t) -> const RowSplit* {
            auto it = split_of_.find(storage_base(t));
            return it == split_of_.end() ? nullptr : it->second;
        };
        for (Tensor* n : g.nodes()) {
            const RowSplit* rs = n->op == OpId::MUL_MAT ? split_of(n->src[0]) : nullptr;
            if (!rs) {
                for (const Tensor* s : n->src)
                    if (s && split_of(s))
                        throw std::logic_error("scheduler: '" + s->name + "' is split by rows, and " + op_name(n->op) + " reads it whole");
                expanded.push_back(n);
                continue;
            }
            if (n->src[0] != rs->whole) throw std::logic_error("scheduler: a view of '" + rs->whole->name + "', which is split by rows");
            auto& ga = gathers[n];
            for (const auto& [part, sl] : rs->parts) {
                if (remote_rank(part->buffer->backend) >= 0) throw std::logic_error("scheduler: rows split over ranks");
                Tensor* s = sliced.clone(*n);
                s->src[0] = const_cast<Tensor*>(part);
                s->ne[0] = sl.size();
                set_contiguous_strides(*s);
                s->buffer = nullptr;
                s->name = n->name + "[rows " + std::to_string(sl.begin) + ".." + std::to_string(sl.end) + "]";
                expanded.push_back(s);
                ga.emplace_back(s, sl);
            }
        }
        for (const Tensor* o : g.outputs())
            if (gathers.count(o)) throw std::logic_error("scheduler: a graph output ('" + o->name + "') split by rows");
    }
    // 1. A device per node: the backend of its first placed operand (a weight, a cache row
    //    range), else the previous node's. Straight-line model code keeps a layer's weightless
    //    nodes (activations, residual adds) on the device of the weights around them; following
    //    an operand instead would send each residual add back to the previous layer's device.
    const std::vector<Tensor*>& nodes = row_splits_.empty() ? g.nodes() : expanded;
    std::unordered_map<const Tensor*, size_t> piece_of;  // node -> piece index
    std::vector<Piece> pieces;
    auto known = [&](Backend* b) {
        if (std::find(backends_.begin(), backends_.end(), b) == backends_.end())
            throw std::logic_error("scheduler: a tensor lives on a backend this scheduler was not given");
        return b;
    };
    for (const Tensor* n : nodes) {
        Backend* dev = nullptr;
        // A node that writes a cache or a state in place runs where it lives (a copy would take
        // the write); otherwise the first weight or cache it reads decides.
        if (const Tensor* w = ops::written_in_place(*n)) {
            const Tensor* b = storage_base(w);
            if (b->kind == TensorKind::Persistent && b->buffer) dev = known(b->buffer->backend);
        }
        for (const Tensor* s : n->src) {
            if (dev) break;
            if (!s) continue;
            const Tensor* b = storage_base(s);
            if (b->kind == TensorKind::Persistent && b->buffer && !shared(b)) {
                dev = known(b->buffer->backend);
                break;
            }
        }
        // A reader of a gather: after every slice's piece (its rows are put together before the
        // reader's piece runs), on the first slice's device (the main one) unless placed.
        bool after_slices = false;
        for (const Tensor* s : n->src) {
            if (!s) continue;
            auto ga = gathers.find(storage_base(s));
            if (ga == gathers.end()) continue;
            for (const auto& part : ga->second)
                after_slices = after_slices || (!pieces.empty() && piece_of.at(part.first) == pieces.size() - 1);
            if (!dev) dev = storage_base(ga->second.front().first->src[0])->buffer->backend;
        }
        if (!dev) dev = pieces.empty() ? backends_[0] : pieces.back().be;
        if (pieces.empty() || pieces.back().be != dev || after_slices) {
            pieces.emplace_back().be = dev;
            pieces.back().rank = remote_rank(dev);
        }
        pieces.back().nodes.push_back(n);
        piece_of[n] = pieces.size() - 1;
    }
    // One local piece whose every placed operand is on its backend: the graph as it is.
    auto all_here = [&](Backend* be) {
        for (const Tensor* n : nodes)
            for (const Tensor* s : n->src)
                if (s) {
                    const Tensor* b = storage_base(s);
                    if (b->kind == TensorKind::Persistent && b->buffer && b->buffer->backend != be) return false;
                }
        return true;
    };
    if (pieces.empty() || (pieces.size() == 1 && pieces[0].rank < 0 && gathers.empty() && all_here(pieces[0].be))) {
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
    //    filled when they are made, views rebuilt over whichever base they resolve to). Every
    //    rank builds every piece, so all number the crossings alike.
    std::unordered_map<const Tensor*, size_t> input_index;
    for (size_t i = 0; i < g.inputs().size(); ++i) input_index[g.inputs()[i]] = i;
    struct Reader {
        size_t piece;
        Tensor* in;
        int tag;
    };
    std::unordered_map<const Tensor*, std::vector<Reader>> readers;  // root -> where it is read
    std::unordered_map<const Tensor*, std::vector<uint8_t>> slice_rows;  // a slice node's output, once its piece ran
    size_t crossings = 0, output_pieces = 0;
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
                if (const SharedWeight* w = shared(s)) {
                    r = P.rank < 0 ? replica(*w, P.be) : const_cast<Tensor*>(s);
                } else {
                    if (P.rank >= 0 || remote_rank(s->buffer->backend) >= 0)
                        throw std::logic_error("scheduler: '" + s->name + "' on " + s->buffer->backend->name() + " is read by a piece on " +
                                               P.be->name() + ": ranks exchange computed rows only");
                    for (const Tensor* n : P.nodes)
                        if (const Tensor* w = ops::written_in_place(*n); w && storage_base(w) == s)
                            throw std::logic_error("scheduler: '" + s->name + "' is written in place by a piece on another device");
                    r = P.g->input_like(*s, s->name);  // a weight placed elsewhere: copied in before the piece runs
                    P.imports.push_back({s, r, 0});
                }
            } else if (auto ga = gathers.find(s); ga != gathers.end()) {
                if (P.rank >= 0) throw std::logic_error("scheduler: rows split over ranks");
                r = P.g->input_like(*s, s->name);  // put together from the slices before the piece runs
                P.imports.push_back({s, r, 0});
                for (const auto& [sn, sl] : ga->second) {
                    Piece& Q = pieces[piece_of.at(sn)];
                    if (slice_rows.emplace(sn, std::vector<uint8_t>()).second) Q.g->mark_output(Q.local.at(sn));  // kept until read out
                }
            } else if (auto in = input_index.find(s); in != input_index.end()) {
                r = P.g->input_like(*s, s->name);
                P.g->set_input_data(r, g.input_data(in->second));
            } else {
                auto made = piece_of.find(s);
                if (made == piece_of.end() || made->second >= pi)
                    throw std::logic_error("scheduler: '" + s->name + "' is read before it is computed");
                r = P.g->input_like(*s, s->name);
                const int tag = tag_of(run, crossings++);
                P.imports.push_back({s, r, tag});
                readers[s].push_back({pi, r, tag});
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
    std::vector<std::pair<Tensor*, int>> outputs;  // the graph's outputs made in pieces, and their tags
    for (Tensor* o : g.outputs())
        if (auto it = piece_of.find(o); it != piece_of.end()) {
            Piece& P = pieces[it->second];
            P.g->mark_output(P.local.at(o));
            if (!P.holds_output) P.holds_output = ++output_pieces;
            outputs.emplace_back(o, tag_of(run, crossings++));
        }

    // 3. Run this rank's pieces in order. A piece's results that later pieces read are copied
    //    out as soon as it has run (so pieces of one backend can share its compute buffer), or
    //    sent to the rank that reads them; rows from other ranks are received just before.
    const int me = link_ ? link_->rank() : 0;
    for (size_t pi = 0; pi < pieces.size(); ++pi) {
        Piece& P = pieces[pi];
        if (P.rank >= 0) continue;
        for (const Piece::Import& im : P.imports) {
            std::vector<uint8_t> bytes(im.src->nbytes());
            if (auto ga = gathers.find(im.src); ga != gathers.end()) {
                // Row r of the whole output: each slice's row r at its first unit.
                const size_t N = size_t(im.src->ne[0]), rows = size_t(im.src->nrows());
                const size_t es = bytes.empty() ? 0 : bytes.size() / (N * rows);
                for (const auto& [sn, sl] : ga->second) {
                    const std::vector<uint8_t>& part = slice_rows.at(sn);
                    const size_t w = size_t(sl.size()) * es;
                    for (size_t r = 0; r < rows; ++r) std::memcpy(&bytes[(r * N + size_t(sl.begin)) * es], &part[r * w], w);
                }
            } else if (im.src->kind == TensorKind::Persistent) {
                read_tensor(*im.src->buffer->backend, *im.src, bytes.data());
            } else if (const int from = pieces[piece_of.at(im.src)].rank; from >= 0) {
                link_->recv(from, im.tag, bytes.data(), bytes.size());
            } else {
                continue;  // filled when its piece ran
            }
            last_.bytes_moved += bytes.size();
            P.g->set_input_data(im.in, std::move(bytes));
        }
        bool later_same = false;
        for (size_t q = pi + 1; q < pieces.size() && !later_same; ++q) later_same = pieces[q].be == P.be;
        // A piece holding an output keeps its own compute buffer when a later piece of its backend
        // would overwrite the shared one (keyed by its ordinal, so the set stays small).
        run_graph(*P.be, *P.g, scratch_[{P.be, later_same ? P.holds_output : 0}]);
        for (const Tensor* n : P.nodes)
            if (auto sr = slice_rows.find(n); sr != slice_rows.end()) {
                sr->second.resize(n->nbytes());
                read_tensor(*P.be, *P.local.at(n), sr->second.data());
                last_.bytes_moved += n->nbytes();
            }
        for (const Tensor* n : P.nodes) {
            auto rd = readers.find(n);
            if (rd == readers.end()) continue;
            std::vector<uint8_t> bytes(n->nbytes());
            read_tensor(*P.be, *P.local.at(n), bytes.data());
            for (const Reader& r : rd->second) {
                last_.bytes_moved += bytes.size();
                if (pieces[r.piece].rank >= 0) link_->send(pieces[r.piece].rank, r.tag, bytes.data(), bytes.size());
                else pieces[r.piece].g->set_input_data(r.in, bytes);
            }
        }
    }
    // Every row this run sent has arrived before the outputs go: a rank never waits on its own
    // output send (rank 0 receives it only after starting the next run, and a rank that waited
    // for that here would never start the next run's receives).
    if (link_) link_->flush();
    // The whole graph's outputs: where they were computed, or, on rank 0, received from the
    // rank that computed them at collect().
    for (auto& [o, tag] : outputs) {
        const Piece& P = pieces[piece_of.at(o)];
        if (P.rank < 0 && me == 0) {
            const Tensor* c = P.local.at(o);
            o->buffer = c->buffer;
            o->offset = c->offset;
        } else if (P.rank < 0) {
            std::vector<uint8_t> bytes(o->nbytes());
            read_tensor(*P.be, *P.local.at(o), bytes.data());
            link_->send(0, tag, bytes.data(), bytes.size());
        } else if (me == 0) {
            if (!host_) host_ = std::make_unique<ReceivedOutputs>();
            pending_.push_back({o, P.rank, tag, run, host_->alloc(std::max<size_t>(o->nbytes(), 1))});
            o->buffer = nullptr;  // readable at collect()
        }
    }
    last_.pieces = pieces.size();
}

}  // namespace ls
