// Runs one graph over several backends (SEMANTICS.md section 5). Each node runs on the device
// that holds the weight or cache it reads, else where the node before it ran;
// the node list is cut into runs of one device ("pieces"), each run as a graph of its own,
// and every tensor that crosses a cut is copied to the next device through host memory.
// Every backend computes every op to the same bits, so a cut moves data and never changes a
// result: logits are byte-identical under any placement.
#pragma once
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/ir/backend.h"
#include "core/sched/tensor_split.h"
#include "core/sched/transport.h"

namespace ls {

// --split-mode row (Model::row_splits): a matrix whose output rows are split over devices, placed
// nowhere as a whole, and its slices, each in its device's memory.
struct RowSplit {
    const Tensor* whole;
    std::vector<std::pair<const Tensor*, UnitSlice>> parts;
};

class Scheduler {
public:
    // The backends nodes may run on; backends[0] runs nodes that read nothing placed (graph
    // inputs only). One backend: run() is run_graph, with no copy.
    // `shared`: small read-only weights outside the layers that layers on every device read
    // (Model::shared_weights), each with its bytes in host memory (the mapped file): they do
    // not decide where a node runs, and each backend that needs one gets its own copy once,
    // kept for the scheduler's life.
    // Backends that are RemoteBackends stand for other ranks' devices (pipeline stages): their
    // pieces run there, and what crosses between ranks goes over `link` (rank 0 receives the
    // graph's outputs).
    // `row_splits`: each mul_mat of a split matrix runs as one mul_mat per slice, on the
    // slice's device, and its readers get the slices' rows put side by side on the host: each
    // output value is computed whole on one device, the gather only copies (SEMANTICS.md
    // section 5), so the bits are one device's. Local devices only (not other ranks').
    using SharedWeight = std::pair<const Tensor*, const void*>;
    explicit Scheduler(std::vector<Backend*> backends, std::vector<SharedWeight> shared = {}, Transport* link = nullptr,
                       std::vector<RowSplit> row_splits = {});

    // Whether run() leaves the graph's outputs readable here (false on ranks other than 0).
    bool outputs_here() const { return !link_ || link_->rank() == 0; }

    // Runs g. Afterwards each output of g is readable where it was computed
    // (read_output, or read_tensor on its buffer's backend).
    // Pipeline stages: rank 0 receives outputs another rank computed only at collect() (run()
    // leaves them pending), so that it can start the next ubatch's stage first and the ranks
    // work at the same time; read an output after collect(). Outputs of one run stay pending
    // across at most one more run.
    void run(Graph& g);
    // Receives the pending outputs of every run but the last `keep_runs` ones; they stay
    // readable until the next collect().
    void collect(size_t keep_runs = 0);

    struct Stats {
        size_t pieces = 0;       // graphs run
        size_t bytes_moved = 0;  // bytes copied across cuts (each copy counted once per reader)
    };
    const Stats& last_run() const { return last_; }
    const std::vector<Backend*>& backends() const { return backends_; }

private:
    std::vector<Backend*> backends_;
    // Compute buffers: one per backend, shared by its pieces (each piece's crossing tensors
    // are copied out right after it runs); a piece holding a graph output that a later piece
    // of the same backend would overwrite gets its own (key: its index + 1).
    std::map<std::pair<Backend*, size_t>, std::unique_ptr<Buffer>> scratch_;
    Stats last_;
    std::vector<SharedWeight> shared_;
    std::vector<RowSplit> row_splits_;
    std::unordered_map<const Tensor*, const RowSplit*> split_of_;  // whole matrix -> its split
    Transport* link_ = nullptr;
    std::unique_ptr<Backend> host_;           // holds outputs received from another rank
    struct Pending {
        Tensor* out;
        int from, tag;
        size_t run;
        std::unique_ptr<Buffer> buffer;
    };
    std::vector<std::unique_ptr<Buffer>> received_;  // outputs the last collect() received
    std::vector<Pending> pending_;  // outputs of the last runs that rank 0 receives at collect()
    size_t runs_ = 0;               // graphs run with other ranks: message tags alternate by it
    struct Replica {
        std::unique_ptr<Buffer> buffer;
        Tensor t;
    };
    std::map<std::pair<const Tensor*, Backend*>, Replica> replicas_;
    Tensor* replica(const SharedWeight& w, Backend* be);
    const SharedWeight* shared(const Tensor* t) const;
    bool verbose_;  // LOCKSTEP_SCHED_VERBOSE: each run's pieces on stderr
};

// Copies an output tensor's bytes to host memory from whichever backend holds it.
void read_output(const Tensor& t, void* dst);

}  // namespace ls
