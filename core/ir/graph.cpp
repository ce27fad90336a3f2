#include "core/ir/graph.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace ls {

Tensor* Graph::new_tensor(DType type, std::initializer_list<int64_t> ne, const char* name) {
    if (ne.size() == 0 || ne.size() > kMaxDims) throw std::invalid_argument("tensor needs 1..4 dims");
    Tensor& t = arena_.emplace_back();
    t.type = type;
    int i = 0;
    for (int64_t n : ne) {
        if (n < 0) throw std::invalid_argument("negative tensor dimension");
        t.ne[i++] = n;
    }
    set_contiguous_strides(t);
    t.name = name;
    return &t;
}

Tensor* Graph::input(DType type, std::initializer_list<int64_t> ne, const void* host_data, const char* name) {
    Tensor* t = new_tensor(type, ne, name);
    t->kind = TensorKind::Input;
    const uint8_t* p = static_cast<const uint8_t*>(host_data);
    input_data_.emplace_back(p, p + t->nbytes());
    inputs_.push_back(t);
    return t;
}

Tensor* Graph::clone(const Tensor& t) {
    arena_.push_back(t);
    return &arena_.back();
}

Tensor* Graph::input_like(const Tensor& t, const std::string& name) {
    Tensor& c = arena_.emplace_back();
    c.type = t.type;
    for (int i = 0; i < kMaxDims; ++i) c.ne[i] = t.ne[i];
    set_contiguous_strides(c);
    c.kind = TensorKind::Input;
    c.name = name;
    input_data_.emplace_back();
    inputs_.push_back(&c);
    return &c;
}

void Graph::set_input_data(const Tensor* input, std::vector<uint8_t> bytes) {
    for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputs_[i] == input) {
            if (bytes.size() != input->nbytes())
                throw std::logic_error("set_input_data: " + std::to_string(bytes.size()) + " bytes for input '" + input->name +
                                       "' of " + std::to_string(input->nbytes()));
            input_data_[i] = std::move(bytes);
            return;
        }
    throw std::logic_error("set_input_data: '" + input->name + "' is not an input of this graph");
}

const std::vector<uint8_t>* Graph::host_data(const Tensor* t) const {
    for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputs_[i] == t) return input_data_[i].size() == t->nbytes() ? &input_data_[i] : nullptr;
    return nullptr;
}

Tensor* Graph::add_node(Tensor* t) {
    nodes_.push_back(t);
    return t;
}

namespace {
Tensor* storage_base(Tensor* t) {
    while (t->view_src) t = t->view_src;
    return t;
}
size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

size_t plan_graph(Graph& g, size_t alignment) {
    // Last step at which each storage base is read (inputs and outputs live to the end
    // or from the start, so that uploads and downloads never race reuse).
    const auto& nodes = g.nodes();
    const int end = static_cast<int>(nodes.size());
    std::unordered_map<Tensor*, int> last_use;
    for (int i = 0; i < end; ++i) {
        Tensor* n = nodes[i];
        last_use[storage_base(n)] = std::max(last_use[storage_base(n)], i);
        for (Tensor* s : n->src)
            if (s) last_use[storage_base(s)] = std::max(last_use[storage_base(s)], i);
    }
    for (Tensor* o : g.outputs()) last_use[storage_base(o)] = end;

    // First-fit over a free list of [offset, size) ranges, merged on release.
    std::map<size_t, size_t> free_list;  // offset -> size
    size_t top = 0;
    auto take = [&](size_t size) {
        for (auto it = free_list.begin(); it != free_list.end(); ++it) {
            if (it->second >= size) {
                size_t off = it->first, rest = it->second - size;
                free_list.erase(it);
                if (rest) free_list[off + size] = rest;
                return off;
            }
        }
        size_t off = top;
        top += size;
        return off;
    };
    auto give = [&](size_t off, size_t size) {
        auto it = free_list.emplace(off, size).first;
        auto next = std::next(it);
        if (next != free_list.end() && it->first + it->second == next->first) {
            it->second += next->second;
            free_list.erase(next);
        }
        if (it != free_list.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second == it->first) {
                prev->second += it->second;
                free_list.erase(it);
            }
        }
    };
    std::unordered_map<Tensor*, size_t> placed;  // base -> size
    auto place = [&](Tensor* t) {
        if (t->kind == TensorKind::Persistent || t->view_src || placed.count(t)) return;
        size_t size = align_up(std::max<size_t>(t->nbytes(), 1), alignment);
        t->offset = take(size);
        placed[t] = size;
    };
    for (Tensor* t : g.inputs()) place(t);
    std::vector<std::vector<Tensor*>> dies_at(end + 1);
    for (auto& [t, step] : last_use)
        if (t->kind == TensorKind::Intermediate) dies_at[step].push_back(t);
    for (int i = 0; i < end; ++i) {
        place(storage_base(nodes[i]));
        // Release after the node so that an op never writes over its own inputs.
        for (Tensor* t : dies_at[i])
            if (placed.count(t)) give(t->offset, placed[t]);
    }
    return top;
}

void bind_compute_buffer(Graph& g, Buffer* buf) {
    for (Tensor* t : g.inputs()) t->buffer = buf;
    // Views take their base's buffer and offset; resolve bases first.
    auto resolve = [&](auto& self, Tensor* t) -> void {
        if (!t) return;
        if (t->view_src) {
            self(self, t->view_src);
            t->buffer = t->view_src->buffer;
            t->offset = t->view_src->offset + t->view_offs;
        } else if (t->kind == TensorKind::Intermediate) {
            t->buffer = buf;
        }
    };
    for (Tensor* n : g.nodes()) {
        resolve(resolve, n);
        for (Tensor* s : n->src) resolve(resolve, s);
    }
    for (Tensor* o : g.outputs()) resolve(resolve, o);
}

}  // namespace ls
