#include "core/sched/placement.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <regex>
#include <stdexcept>

namespace ls {

std::string format_bytes(size_t n) {
    char s[32];
    if (n >= (size_t(1) << 30)) std::snprintf(s, sizeof s, "%.2f GiB", double(n) / double(size_t(1) << 30));
    else if (n >= (size_t(1) << 20)) std::snprintf(s, sizeof s, "%.1f MiB", double(n) / double(size_t(1) << 20));
    else if (n >= 1024) std::snprintf(s, sizeof s, "%.1f KiB", double(n) / 1024.0);
    else std::snprintf(s, sizeof s, "%zu B", n);
    return s;
}

int PlacementPlan::device_of(const std::string& tensor) const {
    auto it = tensor_device.find(tensor);
    if (it == tensor_device.end()) throw std::logic_error("placement: no device planned for tensor '" + tensor + "'");
    return it->second;
}

std::vector<int> PlacementPlan::used_devices() const {
    std::vector<int> v;
    for (int d = 0; d < int(devices.size()); ++d) {
        bool used = weight_bytes[size_t(d)] > 0 || state_bytes[size_t(d)] > 0 || input_device == d || output_device == d;
        for (int l : layer_device) used = used || l == d;
        if (used) v.push_back(d);
    }
    return v;
}

std::string PlacementPlan::describe() const {
    std::string s;
    for (int d : used_devices()) {
        std::string what;
        auto add = [&](const std::string& w) { what += (what.empty() ? "" : ", ") + w; };
        if (input_device == d) add("input");
        for (size_t il = 0; il < layer_device.size();) {
            if (layer_device[il] != d) {
                ++il;
                continue;
            }
            size_t end = il;
            while (end + 1 < layer_device.size() && layer_device[end + 1] == d) ++end;
            add(end == il ? "layer " + std::to_string(il) : "layers " + std::to_string(il) + "-" + std::to_string(end));
            il = end + 1;
        }
        if (output_device == d) add("output");
        size_t rows_of = 0;  // --split-mode row: the matrices d holds rows of
        for (const auto& [name, sl] : row_slices)
            for (const auto& part : sl) rows_of += part.first == d;
        if (rows_of) add("rows of " + std::to_string(rows_of) + " matrices");
        if (what.empty()) add("tensors placed by -ot/--cpu-moe");
        s += (s.empty() ? "" : "; ") + devices[size_t(d)].name + ": " + what + " (" + format_bytes(weight_bytes[size_t(d)]) + " weights";
        if (state_bytes[size_t(d)]) s += ", " + format_bytes(state_bytes[size_t(d)]) + " KV/state";
        s += ")";
    }
    return s;
}

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// "blk.12.attn_q.weight" -> 12; -1 for tensors outside the layers.
int64_t layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    size_t i = 4;
    int64_t n = 0;
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) n = n * 10 + (name[i++] - '0');
    return i < name.size() && name[i] == '.' ? n : -1;
}

// llama.cpp's --cpu-moe pattern: a layer's routed experts (not its shared expert).
bool is_expert(const std::string& name) {
    static const std::regex re(R"(\.ffn_(up|down|gate|gate_up)_(ch)?exps)");
    return std::regex_search(name, re);
}

}  // namespace

PlacementPlan plan_placement(const std::vector<PlacementDevice>& devices, const PlacementFlags& f, const PlacementInput& in) {
    if (devices.empty()) throw std::invalid_argument("placement: no device");
    const int64_t L = in.n_layer;
    if (L < 0) throw std::invalid_argument("placement: negative layer count");
    int host = -1;
    std::vector<int> gpus;
    for (int d = 0; d < int(devices.size()); ++d) {
        if (devices[size_t(d)].host && host < 0) host = d;
        else if (!devices[size_t(d)].host) gpus.push_back(d);
    }
    if (f.split_rows && !f.split_layers) throw std::invalid_argument("--split-mode is one of none, layer and row");
    if (!f.split_layers && gpus.size() > 1) gpus.resize(1);
    if (f.n_gpu_layers < PlacementFlags::kAuto)
        throw std::invalid_argument("-ngl must be a count of layers, 'all' or 'auto', got " + std::to_string(f.n_gpu_layers));
    if (f.n_cpu_moe < 0) throw std::invalid_argument("--n-cpu-moe must be >= 0, got " + std::to_string(f.n_cpu_moe));

    // Shares of the offloaded layers per GPU device.
    std::vector<double> share(gpus.size(), 1.0);
    if (!f.tensor_split.empty()) {
        if (gpus.empty()) throw std::invalid_argument("--tensor-split needs GPU devices (--device cuda0,cuda1 or --backend)");
        if (f.tensor_split.size() > gpus.size())
            throw std::invalid_argument("--tensor-split gives " + std::to_string(f.tensor_split.size()) + " shares for " +
                                        std::to_string(gpus.size()) + " GPU device" + (gpus.size() == 1 ? "" : "s") +
                                        (f.split_layers ? "" : " (--split-mode none uses the first GPU only)"));
        double sum = 0;
        for (double x : f.tensor_split) {
            if (!std::isfinite(x) || x < 0) throw std::invalid_argument("--tensor-split shares must be >= 0, got " + std::to_string(x));
            sum += x;
        }
        if (sum <= 0) throw std::invalid_argument("--tensor-split shares add up to 0: no GPU device would get a layer");
        for (size_t g = 0; g < gpus.size(); ++g) share[g] = g < f.tensor_split.size() ? f.tensor_split[g] : 0.0;
    } else if (!gpus.empty()) {
        bool known = true;
        for (int d : gpus) known = known && devices[size_t(d)].memory_free > 0;
        if (known)
            for (size_t g = 0; g < gpus.size(); ++g) share[g] = double(devices[size_t(gpus[g])].memory_free);
    }

    // -ot patterns, and the devices they name.
    struct Override {
        std::regex re;
        int device;
        std::string text;
        size_t matched = 0;
    };
    std::vector<Override> ots;
    for (const auto& [pat, dev] : f.overrides) {
        Override o;
        o.text = pat + "=" + dev;
        try {
            o.re = std::regex(pat);
        } catch (const std::regex_error& e) {
            throw std::invalid_argument("-ot '" + o.text + "': '" + pat + "' is not a regular expression (" + e.what() + ")");
        }
        o.device = -1;
        for (int d = 0; d < int(devices.size()); ++d)
            if (lower(devices[size_t(d)].name) == lower(dev)) o.device = d;
        if (o.device < 0) {
            std::string names;
            for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.name;
            throw std::invalid_argument("-ot '" + o.text + "': no device '" + dev + "' (open: " + names + ")");
        }
        ots.push_back(std::move(o));
    }
    const bool moe_flags = f.cpu_moe || f.n_cpu_moe > 0;
    // Row split: the layers go to the first GPU device (the main one, which holds the KV rows,
    // runs the other ops and gathers); the shares split each matrix's rows instead.
    std::vector<int> row_gpus;
    std::vector<double> row_share;
    if (f.split_rows) {
        if (gpus.size() < 2) throw std::invalid_argument("--split-mode row needs two GPU devices or more (--device cuda0,cuda1)");
        row_gpus = gpus;
        row_share = share;
        gpus.resize(1);
        share.resize(1);
    }
    if (moe_flags && host < 0) throw std::invalid_argument("--cpu-moe/--n-cpu-moe need the CPU device, which is not open");

    auto plan_with = [&](int ngl) {
        PlacementPlan p;
        p.devices = devices;
        const int64_t N = ngl < 0 || ngl > L + 1 ? L + 1 : ngl;  // kAll (and more than there are): every layer
        const int64_t start = L + 1 - N;
        double total = 0;
        for (double x : share) total += x;
        auto dev_of_layer = [&](int64_t il) {  // il == L: the output head
            if (gpus.empty()) return host >= 0 ? host : 0;
            if (il < start) {
                if (host < 0) throw std::invalid_argument("-ngl " + std::to_string(ngl) + " leaves layers for the CPU, which is not open");
                return host;
            }
            const double at = double(il - start) / double(N) * total;
            double cum = 0;
            for (size_t g = 0; g < gpus.size(); ++g) {
                cum += share[g];
                if (at < cum) return gpus[g];
            }
            return gpus.back();
        };
        for (int64_t il = 0; il < L; ++il) p.layer_device.push_back(dev_of_layer(il));
        p.output_device = dev_of_layer(L);
        p.input_device = L > 0 ? p.layer_device[0] : p.output_device;
        p.weight_bytes.assign(devices.size(), 0);
        p.state_bytes.assign(devices.size(), 0);
        bool has_output = false, has_experts = false;
        for (const auto& [name, bytes] : in.tensors) {
            if (p.tensor_device.count(name)) continue;
            int d = -1;
            for (Override& o : ots)
                if (std::regex_search(name, o.re)) {
                    ++o.matched;
                    d = o.device;
                    break;
                }
            const int64_t il = layer_of(name);
            const bool expert = is_expert(name);
            has_experts = has_experts || expert;
            if (d < 0 && expert && (f.cpu_moe || il < f.n_cpu_moe)) d = host;
            if (d < 0) {
                if (il >= 0) d = il < L ? p.layer_device[size_t(il)] : p.output_device;
                else if (name == "output.weight" || name == "output_norm.weight") d = p.output_device;
                else d = p.input_device;
            }
            has_output = has_output || name == "output.weight";
            p.tensor_device[name] = d;
            // A layer's matrix on the main GPU, as planned (not moved by -ot): its rows over the GPUs.
            auto rows = in.matrix_rows.find(name);
            if (f.split_rows && il >= 0 && il < L && d == gpus[0] && d == p.layer_device[size_t(il)] && rows != in.matrix_rows.end()) {
                std::vector<std::pair<int, UnitSlice>> sl;
                const std::vector<UnitSlice> parts = split_units(rows->second, 1, row_share);
                for (size_t g = 0; g < parts.size(); ++g)
                    if (parts[g].size() > 0) sl.emplace_back(row_gpus[g], parts[g]);
                if (sl.size() > 1) {
                    for (const auto& [g, part] : sl) p.weight_bytes[size_t(g)] += bytes / size_t(rows->second) * size_t(part.size());
                    p.row_slices[name] = std::move(sl);
                    continue;
                }
                d = p.tensor_device[name] = sl.front().first;  // one device has all its rows
            }
            p.weight_bytes[size_t(d)] += bytes;
        }
        // Tied embeddings: the output head multiplies by token_embd on its own device.
        if (!has_output)
            for (const auto& [name, bytes] : in.tensors)
                if (name == "token_embd.weight" && p.tensor_device[name] != p.output_device) p.weight_bytes[size_t(p.output_device)] += bytes;
        for (int64_t il = 0; il < L && size_t(il) < in.layer_state_bytes.size(); ++il)
            p.state_bytes[size_t(p.layer_device[size_t(il)])] += in.layer_state_bytes[size_t(il)];
        if (moe_flags && !has_experts) throw std::invalid_argument("--cpu-moe/--n-cpu-moe: this model has no expert tensors (ffn_*_exps)");
        return p;
    };
    auto check_overrides = [&] {
        for (const Override& o : ots)
            if (o.matched == 0) throw std::invalid_argument("-ot '" + o.text + "' matches no tensor of this model");
    };
    // The bytes a plan needs on device d beyond its free memory (0: fits or unknown).
    auto runs_layers = [](const PlacementPlan& p, int d) {
        return p.output_device == d || std::find(p.layer_device.begin(), p.layer_device.end(), d) != p.layer_device.end();
    };
    auto compute = [&](const PlacementPlan& p, int d) -> size_t {
        return (runs_layers(p, d) ? in.compute_bytes : 0) + (p.output_device == d ? in.logits_bytes : 0);
    };
    auto misfit = [&](const PlacementPlan& p) -> int {
        for (int d = 0; d < int(devices.size()); ++d) {
            const PlacementDevice& D = devices[size_t(d)];
            if (D.host || D.memory_free == 0) continue;
            const size_t need = p.weight_bytes[size_t(d)] + p.state_bytes[size_t(d)] + compute(p, d);
            if (need > D.memory_free) return d;
        }
        return -1;
    };
    PlacementPlan p;
    if (f.n_gpu_layers == PlacementFlags::kAuto) {
        // Without the CPU, all or nothing: the layers have nowhere else to go.
        for (int64_t ngl = L + 1; ngl >= (host < 0 ? L + 1 : 0); --ngl) {
            p = plan_with(int(ngl));
            if (ngl == L + 1) check_overrides();
            if (misfit(p) < 0) return p;
        }
    } else {
        p = plan_with(f.n_gpu_layers);
        check_overrides();
    }
    if (const int d = misfit(p); d >= 0) {
        const PlacementDevice& D = devices[size_t(d)];
        const size_t c = compute(p, d);
        throw std::invalid_argument("the placement does not fit " + D.name + ": it needs " +
                                    format_bytes(p.weight_bytes[size_t(d)] + p.state_bytes[size_t(d)] + c) + " (" +
                                    format_bytes(p.weight_bytes[size_t(d)]) + " weights, " + format_bytes(p.state_bytes[size_t(d)]) +
                                    " KV/state, " + format_bytes(c) + " compute) and " + format_bytes(D.memory_free) +
                                    " is free; lower -ngl (or -ngl auto), -c or --parallel, or add a device");
    }
    return p;
}

}  // namespace ls
