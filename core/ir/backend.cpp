#include "core/ir/backend.h"

#include <stdexcept>
#include <vector>

#include "core/ir/index_inputs.h"
#include "core/quant/quant.h"

namespace ls {

std::unique_ptr<Buffer> Backend::wrap_host(const void* p, size_t bytes) {
    auto b = alloc(bytes);
    upload(*b, 0, p, bytes);
    return b;
}

void Backend::copy(Buffer& buf, size_t dst_offset, size_t src_offset, size_t n) {
    if (dst_offset + n > buf.size || src_offset + n > buf.size) throw std::out_of_range("buffer copy past the end of the buffer");
    std::vector<uint8_t> tmp(n);
    download(buf, src_offset, tmp.data(), n);
    upload(buf, dst_offset, tmp.data(), n);
}

std::string unsupported_node(const std::string& backend, const Tensor& n) {
    // The operands say what is missing (a weight type, a cache type, a view): "mul_mat of
    // blk.0.attn_q.weight [640, 2048, 1, 1] iq2_xxs, ..."; the output last.
    std::string s = backend + " backend does not support " + op_name(n.op) + " of ";
    for (int i = 0; i < kMaxSrc && n.src[i]; ++i)
        s += (i ? ", " : "") + (n.src[i]->name.empty() ? std::string("input") : n.src[i]->name) + " " + shape_str(*n.src[i]);
    s += " giving " + shape_str(n) + (n.name.empty() ? "" : " (" + n.name + ")");
    if ((n.op == OpId::MUL_MAT || n.op == OpId::MUL_MAT_ID || n.op == OpId::GET_ROWS) && is_weight_type(n.src[0]->type))
        s += "; the CPU backend (--backend cpu) runs every weight type";
    return s;
}

void run_graph(Backend& be, Graph& g, std::unique_ptr<Buffer>& scratch) {
    for (const Tensor* n : g.nodes())
        if (!be.supports(*n)) throw std::runtime_error(unsupported_node(be.name(), *n));
    check_index_inputs(g);  // bad rows, positions or runs: an error before anything is written
    size_t need = plan_graph(g);
    if (!scratch || scratch->size < need) {
        scratch.reset();
        scratch = be.alloc(need + need / 8 + 4096);  // headroom: graphs grow with the ubatch
    }
    bind_compute_buffer(g, scratch.get());
    for (size_t i = 0; i < g.inputs().size(); ++i) {
        Tensor* t = g.inputs()[i];
        const auto& d = g.input_data(i);
        if (!d.empty()) be.upload(*t->buffer, t->offset, d.data(), d.size());
    }
    be.compute(g);
}

void read_tensor(Backend& be, const Tensor& t, void* dst) {
    if (!t.buffer) throw std::logic_error("read_tensor: tensor '" + t.name + "' has no buffer");
    if (!t.is_contiguous()) throw std::logic_error("read_tensor: tensor '" + t.name + "' is not contiguous");
    be.download(*t.buffer, t.offset, dst, t.nbytes());
}

void write_tensor(Backend& be, Tensor& t, const void* src) {
    if (!t.buffer) throw std::logic_error("write_tensor: tensor '" + t.name + "' has no buffer");
    if (!t.is_contiguous()) throw std::logic_error("write_tensor: tensor '" + t.name + "' is not contiguous");
    be.upload(*t.buffer, t.offset, src, t.nbytes());
}

}  // namespace ls
