#include <cmath>
#include <ctime>
#include <exception>

#include "core/jinja/interp.h"

namespace ls::jinja {

// Marks the node being evaluated; on a normal exit restores the outer one, while unwinding
// leaves the innermost in place so the error names where it happened.
struct At {
    Interp& in;
    const Stmt* s;
    const Expr* e;
    int unwinding;
    At(Interp& in, const Stmt* st, const Expr* ex) : in(in), s(in.stmt_), e(in.expr_), unwinding(std::uncaught_exceptions()) {
        if (st) in.stmt_ = st;
        in.expr_ = ex;
    }
    ~At() {
        if (std::uncaught_exceptions() > unwinding) return;
        in.stmt_ = s;
        in.expr_ = e;
    }
};

// Counts how deeply evaluation has recursed (statements inside macros inside expressions...):
// the parser bounds one template's nesting, this bounds nesting multiplied by macro calls.
struct Nested {
    Interp& in;
    explicit Nested(Interp& in) : in(in) {
        if (++in.eval_depth_ > in.opt_.max_nesting) {
            --in.eval_depth_;
            fail("evaluation nested deeper than " + std::to_string(in.opt_.max_nesting) + " levels");
        }
    }
    ~Nested() { --in.eval_depth_; }
};

void Interp::spend(size_t n) {
    spent_ += n;
    if (spent_ > opt_.max_iterations)
        fail("the template ran more than " + std::to_string(opt_.max_iterations) + " loop iterations");
}

void Interp::write(const std::string& s) {
    out_->append(s);
    if (out_->size() > opt_.max_output) fail("output larger than " + std::to_string(opt_.max_output) + " bytes");
}

Error Interp::to_error(const Fail& f) const {
    int line = expr_ ? expr_->line : stmt_ ? stmt_->line : 0;
    if (f.raised) return Error(line, "raise_exception", f.msg);
    std::string c;
    if (expr_) {
        const Expr& e = *expr_;
        switch (e.kind) {
            case Expr::K::Filter: c = "filter '" + e.name + "'"; break;
            case Expr::K::Test: c = "test '" + e.name + "'"; break;
            case Expr::K::Call:
                c = e.a->kind == Expr::K::Name || e.a->kind == Expr::K::GetAttr ? "call to '" + e.a->name + "'" : "call";
                break;
            case Expr::K::GetAttr: c = "attribute '" + e.name + "'"; break;
            case Expr::K::GetItem: c = "subscript"; break;
            case Expr::K::Slice: c = "slice"; break;
            case Expr::K::Binary:
            case Expr::K::Unary: c = "operator '" + e.name + "'"; break;
            case Expr::K::Compare: c = "comparison"; break;
            case Expr::K::Name: c = "variable '" + e.name + "'"; break;
            default: c = "expression"; break;
        }
    } else if (stmt_) {
        switch (stmt_->kind) {
            case Stmt::K::For: c = "for"; break;
            case Stmt::K::If: c = "if"; break;
            case Stmt::K::Set:
            case Stmt::K::SetBlock: c = "set"; break;
            case Stmt::K::Macro: c = "macro '" + stmt_->text + "'"; break;
            case Stmt::K::CallBlock: c = "call"; break;
            case Stmt::K::FilterBlock: c = "filter"; break;
            default: c = "output"; break;
        }
    } else {
        c = "template";
    }
    return Error(line, c, f.msg);
}

namespace {

std::string local_strftime(const std::string& fmt) {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return std::string(buf, n);
}

}  // namespace

std::string Interp::render(const Body& body, const Value& context) {
    auto globals = std::make_shared<Scope>();
    auto& g = globals->vars;
    Interp* self = this;
    g["range"] = Value::function("range", [self](Args& a) {
        if (a.pos.empty() || a.pos.size() > 3) fail("range expected 1 to 3 arguments");
        int64_t start = 0, stop, step = 1;
        if (a.pos.size() == 1) {
            stop = checked_int(a.pos[0], "range");
        } else {
            start = checked_int(a.pos[0], "range");
            stop = checked_int(a.pos[1], "range");
            if (a.pos.size() == 3) step = checked_int(a.pos[2], "range");
        }
        if (step == 0) fail("range() arg 3 must not be zero");
        Value::List out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            self->spend(1);
            out.push_back(Value(i));
        }
        return Value::list(std::move(out));
    });
    g["dict"] = Value::function("dict", [](Args& a) {
        Value::Dict d;
        if (!a.pos.empty()) {
            if (a.pos[0].is_dict()) d = a.pos[0].entries();
            else
                for (const Value& p : iterate(a.pos[0])) {
                    if (!p.is_list() || p.items().size() != 2) fail("dictionary update sequence element has wrong length");
                    d.emplace_back(p.items()[0], p.items()[1]);
                }
        }
        for (auto& [k, v] : a.kw) {
            bool found = false;
            for (auto& [dk, dv] : d)
                if (dk.is_string() && dk.str() == k) {
                    dv = v;
                    found = true;
                }
            if (!found) d.emplace_back(Value(k), v);
        }
        return Value::dict(std::move(d));
    });
    g["namespace"] = Value::function("namespace", [self](Args& a) {
        Value::Dict d;
        if (!a.pos.empty() && a.pos[0].is_dict()) d = a.pos[0].entries();
        for (auto& [k, v] : a.kw) d.emplace_back(Value(k), v);
        Value ns = Value::namespace_(std::move(d));
        self->namespaces_.push_back(ns);
        return ns;
    });
    g["raise_exception"] = Value::function("raise_exception", [](Args& a) -> Value {
        throw Fail{a.pos.empty() ? std::string() : a.pos[0].to_str(), true};
    });
    g["strftime_now"] = Value::function("strftime_now", [self](Args& a) {
        std::string fmt = arg(a, 0, "format").to_str();
        return Value(self->opt_.strftime_now ? self->opt_.strftime_now(fmt) : local_strftime(fmt));
    });
    g["joiner"] = Value::function("joiner", [](Args& a) {
        std::string sep = has_arg(a, 0, "sep") ? arg(a, 0, "sep").to_str() : ", ";
        auto used = std::make_shared<bool>(false);
        return Value::function("joiner", [sep, used](Args&) {
            if (!*used) {
                *used = true;
                return Value("");
            }
            return Value(sep);
        });
    });

    auto root = std::make_shared<Scope>();
    root->parent = globals;
    if (context.is_dict())
        for (const auto& [k, v] : context.entries()) root->vars[k.to_str()] = v;

    std::string out;
    out_ = &out;
    auto release = [&] {
        for (Value& ns : namespaces_) ns.mutable_entries().clear();
        namespaces_.clear();
    };
    try {
        exec(body, root);
    } catch (const Fail& f) {
        Error e = to_error(f);
        release();
        throw e;
    } catch (...) {
        release();
        throw;
    }
    release();
    return out;
}

Interp::Flow Interp::exec(const Body& body, const ScopeP& scope) {
    for (const StmtP& s : body) {
        Flow f = exec_stmt(*s, scope);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

std::string Interp::capture(const Body& body, const ScopeP& scope) {
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
        exec(body, scope);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buf;
}

Value Interp::apply_filters(const std::vector<ExprP>& filters, Value v, const ScopeP& scope) {
    for (const ExprP& f : filters) {
        At at(*this, nullptr, f.get());
        Args a;
        eval_args(f->args, scope, a);
        v = run_filter(*this, f->name, v, a);
    }
    return v;
}

Interp::Flow Interp::exec_stmt(const Stmt& s, const ScopeP& scope) {
    Nested nested(*this);
    At at(*this, &s, nullptr);
    switch (s.kind) {
        case Stmt::K::Text: write(s.text); return Flow::Normal;
        case Stmt::K::Output: {
            Value v = eval(*s.expr, scope);
            write(v.to_str());
            return Flow::Normal;
        }
        case Stmt::K::If:
            for (const auto& [cond, body] : s.branches) {
                if (!cond || eval(*cond, scope).truthy()) return exec(body, scope);
            }
            return Flow::Normal;
        case Stmt::K::For: return exec_for(s, scope);
        case Stmt::K::Set: assign(s.target, eval(*s.expr, scope), *scope, scope); return Flow::Normal;
        case Stmt::K::SetBlock: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            Value v(capture(s.body, inner));
            v = apply_filters(s.filters, v, scope);
            assign(s.target, v, *scope, scope);
            return Flow::Normal;
        }
        case Stmt::K::FilterBlock: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            Value v(capture(s.body, inner));
            write(apply_filters(s.filters, v, scope).to_str());
            return Flow::Normal;
        }
        case Stmt::K::Macro: scope->vars[s.text] = make_macro(s, scope); return Flow::Normal;
        case Stmt::K::CallBlock: {
            Value caller = make_macro(s, scope, &s.body);
            write(eval_call(*s.expr, scope, &caller).to_str());
            return Flow::Normal;
        }
        case Stmt::K::Scope: {
            // HF's generation block is a call block: its body runs in a frame of its own.
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            write(capture(s.body, inner));
            return Flow::Normal;
        }
        case Stmt::K::With: {
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            // Each value is evaluated in the outer frame, as jinja2 does.
            for (const MacroParam& p : s.params) inner->vars[p.name] = eval(*p.dflt, scope);
            return exec(s.body, inner);
        }
        case Stmt::K::Break: return Flow::Break;
        case Stmt::K::Continue: return Flow::Continue;
    }
    return Flow::Normal;
}

Value Interp::make_macro(const Stmt& s, const ScopeP& scope, const Body* body_override) {
    // The macro holds its defining scope weakly: that scope holds the macro, and a strong
    // reference would be a cycle. Macros do not outlive a render.
    std::weak_ptr<Scope> weak = scope;
    const Stmt* def = &s;
    const Body* body = body_override ? body_override : &s.body;
    std::string name = body_override ? "caller" : s.text;
    return Value::function(name, [this, weak, def, body, name](Args& a) -> Value {
        ScopeP parent = weak.lock();
        if (!parent) fail("macro '" + name + "' called after its scope ended");
        if (call_depth_ >= opt_.max_call_depth)
            fail("macro calls nested deeper than " + std::to_string(opt_.max_call_depth) + " levels");
        auto frame = std::make_shared<Scope>();
        frame->parent = parent;
        size_t np = def->params.size();
        Value::List varargs;
        for (size_t i = 0; i < a.pos.size(); ++i) {
            if (i < np) frame->vars[def->params[i].name] = a.pos[i];
            else varargs.push_back(a.pos[i]);
        }
        Value::Dict extra;
        for (auto& [k, v] : a.kw) {
            bool bound = false;
            for (size_t i = 0; i < np; ++i)
                if (def->params[i].name == k) {
                    if (i < a.pos.size()) fail("macro '" + name + "' got multiple values for argument '" + k + "'");
                    frame->vars[k] = v;
                    bound = true;
                }
            if (!bound) {
                if (k == "caller") frame->vars["caller"] = v;
                else extra.emplace_back(Value(k), v);
            }
        }
        for (size_t i = 0; i < np; ++i) {
            const MacroParam& p = def->params[i];
            if (frame->vars.count(p.name)) continue;
            frame->vars[p.name] = p.dflt ? eval(*p.dflt, frame) : Value::undefined("'" + p.name + "' is undefined");
        }
        frame->vars["varargs"] = Value::list(std::move(varargs), true);
        frame->vars["kwargs"] = Value::dict(std::move(extra));
        ++call_depth_;
        std::string text;
        try {
            text = capture(*body, frame);
        } catch (...) {
            --call_depth_;
            throw;
        }
        --call_depth_;
        return Value(std::move(text));
    });
}

void Interp::assign(const Target& t, const Value& v, Scope& scope, const ScopeP& lookup_scope) {
    if (!t.attr.empty()) {
        const Value* ns = lookup_scope->lookup(t.names[0]);
        if (!ns || !ns->is_namespace()) fail("cannot assign attribute on non-namespace object");
        if (v.depth() >= Value::kMaxDepth) fail("value nested too deeply");
        auto& entries = ns->mutable_entries();
        for (auto& [k, x] : entries)
            if (k.is_string() && k.str() == t.attr) {
                x = v;
                return;
            }
        entries.emplace_back(Value(t.attr), v);
        return;
    }
    if (!t.tuple) {
        scope.vars[t.names[0]] = v;
        return;
    }
    std::vector<Value> parts = iterate(v);
    if (parts.size() != t.names.size())
        fail(parts.size() > t.names.size() ? "too many values to unpack (expected " + std::to_string(t.names.size()) + ")"
                                           : "not enough values to unpack (expected " + std::to_string(t.names.size()) +
                                                 ", got " + std::to_string(parts.size()) + ")");
    for (size_t i = 0; i < parts.size(); ++i) scope.vars[t.names[i]] = parts[i];
}

Interp::Flow Interp::exec_for(const Stmt& s, const ScopeP& scope) {
    Value seq = eval(*s.expr, scope);
    std::vector<Value> items;
    {
        std::vector<Value> all = iterate(seq);
        if (s.cond) {
            for (const Value& x : all) {
                spend(1);
                auto probe = std::make_shared<Scope>();
                probe->parent = scope;
                assign(s.target, x, *probe, scope);
                if (eval(*s.cond, probe).truthy()) items.push_back(x);
            }
        } else {
            items = std::move(all);
        }
    }
    if (items.empty()) {
        exec(s.else_body, scope);
        return Flow::Normal;
    }
    int64_t n = int64_t(items.size());
    auto last_changed = std::make_shared<Value>();  // loop.changed's memory, across iterations
    for (int64_t i = 0; i < n; ++i) {
        spend(1);
        auto frame = std::make_shared<Scope>();
        frame->parent = scope;
        assign(s.target, items[size_t(i)], *frame, scope);
        Value::Dict loop;
        loop.emplace_back(Value("index"), Value(i + 1));
        loop.emplace_back(Value("index0"), Value(i));
        loop.emplace_back(Value("revindex"), Value(n - i));
        loop.emplace_back(Value("revindex0"), Value(n - i - 1));
        loop.emplace_back(Value("first"), Value(i == 0));
        loop.emplace_back(Value("last"), Value(i == n - 1));
        loop.emplace_back(Value("length"), Value(n));
        loop.emplace_back(Value("depth"), Value(1));
        loop.emplace_back(Value("depth0"), Value(0));
        loop.emplace_back(Value("previtem"), i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item"));
        loop.emplace_back(Value("nextitem"), i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item"));
        loop.emplace_back(Value("cycle"), Value::function("cycle", [i](Args& a) {
                              if (a.pos.empty()) fail("no items for cycling given");
                              return a.pos[size_t(i) % a.pos.size()];
                          }));
        loop.emplace_back(Value("changed"), Value::function("changed", [last_changed](Args& a) {
                              Value now = Value::list(a.pos, true);
                              if (!last_changed->is_undefined() && equals(*last_changed, now)) return Value(false);
                              *last_changed = now;
                              return Value(true);
                          }));
        frame->vars["loop"] = Value::dict(std::move(loop));
        Flow f = exec(s.body, frame);
        if (f == Flow::Break) break;
    }
    return Flow::Normal;
}

void Interp::eval_args(const CallArgs& ca, const ScopeP& scope, Args& out) {
    for (const ExprP& p : ca.pos) out.pos.push_back(eval(*p, scope));
    for (const auto& [k, e] : ca.kw) out.kw.emplace_back(k, eval(*e, scope));
}

Value Interp::eval_call(const Expr& e, const ScopeP& scope, const Value* caller) {
    At at(*this, nullptr, &e);
    Value fn = eval(*e.a, scope);
    Args a;
    eval_args(e.args, scope, a);
    if (caller) a.kw.emplace_back("caller", *caller);
    expr_ = &e;
    if (fn.is_undefined()) fail(fn.str().empty() ? "call of an undefined value" : fn.str());
    if (!fn.is_callable()) fail("'" + fn.type_name() + "' object is not callable");
    Value r = fn.call(a);
    if (r.str_size() > opt_.max_output) fail("string longer than " + std::to_string(opt_.max_output) + " bytes");
    return r;
}

namespace {

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail(a.str());
    if (b.is_undefined()) fail(b.str());
    fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

Value repeat(const Value& seq, int64_t n, Interp& in) {
    if (n <= 0) return seq.is_string() ? Value("") : Value::list({}, seq.is_tuple());
    size_t unit = seq.is_string() ? seq.str().size() : seq.items().size();
    if (unit && uint64_t(n) > in.opt().max_output / unit) fail("repetition result too large");
    in.spend(size_t(n));
    if (seq.is_string()) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq.str();
        return Value(std::move(out));
    }
    Value::List out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return Value::list(std::move(out), seq.is_tuple());
}

}  // namespace

Value Interp::eval_binary(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return Value(a.to_str() + b.to_str());
    bool nums = a.is_number() && b.is_number();
    bool flt = nums && (a.is_float() || b.is_float());
    if (op == "+") {
        if (nums) {
            if (flt) return Value(a.as_float() + b.as_float());
            int64_t r;
            if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
            return Value(r);
        }
        if (a.is_string() && b.is_string()) {
            if (a.str().size() + b.str().size() > opt_.max_output) fail("string longer than " + std::to_string(opt_.max_output) + " bytes");
            if (a.is_markup() || b.is_markup()) {
                // Markup + str escapes the plain side, as markupsafe does.
                return Value::markup((a.is_markup() ? a.str() : html_escape(a.str())) +
                                     (b.is_markup() ? b.str() : html_escape(b.str())));
            }
            return Value(a.str() + b.str());
        }
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
            Value::List out = a.items();
            out.insert(out.end(), b.items().begin(), b.items().end());
            spend(out.size());
            return Value::list(std::move(out), a.is_tuple());
        }
        bad_operands(op, a, b);
    }
    if (op == "-") {
        if (!nums) bad_operands(op, a, b);
        if (flt) return Value(a.as_float() - b.as_float());
        int64_t r;
        if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
        return Value(r);
    }
    if (op == "*") {
        if (nums) {
            if (flt) return Value(a.as_float() * b.as_float());
            int64_t r;
            if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow");
            return Value(r);
        }
        if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), *this);
        if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), *this);
        bad_operands(op, a, b);
    }
    if (op == "/") {
        if (!nums) bad_operands(op, a, b);
        if (b.as_float() == 0) fail("division by zero");
        return Value(a.as_float() / b.as_float());
    }
    if (op == "//" || op == "%") {
        if (op == "%" && a.is_string()) {
            // printf-style formatting, as the `format` filter does
            Args fa;
            if (b.is_tuple()) fa.pos = b.items();
            else fa.pos.push_back(b);
            return run_filter(*this, "format", a, fa);
        }
        if (!nums) bad_operands(op, a, b);
        if (b.as_float() == 0) fail(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
        if (flt) {
            double x = a.as_float(), y = b.as_float();
            double m = std::fmod(x, y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            if (op == "%") return Value(m);
            return Value(std::floor(x / y));
        }
        int64_t x = a.as_int(), y = b.as_int();
        if (x == INT64_MIN && y == -1) fail("integer overflow");
        int64_t q = floordiv(x, y);
        return op == "//" ? Value(q) : Value(x - q * y);
    }
    if (op == "**") {
        if (!nums) bad_operands(op, a, b);
        if (!flt && b.as_int() >= 0) {
            int64_t r = 1, base = a.as_int();
            for (int64_t k = 0; k < b.as_int(); ++k) {
                if (__builtin_mul_overflow(r, base, &r)) fail("integer overflow");
                if (r == 0 || r == 1) break;
            }
            return Value(r);
        }
        return Value(std::pow(a.as_float(), b.as_float()));
    }
    fail("unknown operator " + op);
}

namespace {

bool contains(const Value& container, const Value& item) {
    if (container.is_string()) {
        if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
        return container.str().find(item.str()) != std::string::npos;
    }
    if (container.is_dict() || container.is_namespace()) return container.find(item) != nullptr;
    if (container.kind() == Value::Kind::List) {
        for (const Value& x : container.items())
            if (equals(x, item)) return true;
        return false;
    }
    if (container.is_undefined()) return false;
    fail("argument of type '" + container.type_name() + "' is not iterable");
}

}  // namespace

Value Interp::eval(const Expr& e, const ScopeP& scope) {
    Nested nested(*this);
    switch (e.kind) {
        case Expr::K::Literal: return e.value;
        case Expr::K::Name: {
            const Value* v = scope->lookup(e.name);
            return v ? *v : Value::undefined("'" + e.name + "' is undefined");
        }
        case Expr::K::List:
        case Expr::K::Tuple: {
            Value::List items;
            for (const ExprP& x : e.items) items.push_back(eval(*x, scope));
            return Value::list(std::move(items), e.kind == Expr::K::Tuple);
        }
        case Expr::K::Dict: {
            Value::Dict d;
            for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
                Value k = eval(*e.items[i], scope);
                Value v = eval(*e.items[i + 1], scope);
                bool found = false;
                for (auto& [dk, dv] : d)
                    if (equals(dk, k)) {
                        dv = v;
                        found = true;
                    }
                if (!found) d.emplace_back(std::move(k), std::move(v));
            }
            return Value::dict(std::move(d));
        }
        case Expr::K::GetAttr: {
            Value obj = eval(*e.a, scope);
            At at(*this, nullptr, &e);
            return get_attr(obj, e.name);
        }
        case Expr::K::GetItem: {
            Value obj = eval(*e.a, scope);
            Value key = eval(*e.b, scope);
            At at(*this, nullptr, &e);
            return get_item(obj, key);
        }
        case Expr::K::Slice: {
            Value obj = eval(*e.a, scope);
            Value b = e.b ? eval(*e.b, scope) : Value(nullptr);
            Value c = e.c ? eval(*e.c, scope) : Value(nullptr);
            Value d = e.d ? eval(*e.d, scope) : Value(nullptr);
            At at(*this, nullptr, &e);
            if (obj.is_undefined()) fail(obj.str());
            if (obj.is_string()) {
                auto cps = code_points(obj.str());
                std::string out;
                for (int64_t i : slice_indices(int64_t(cps.size()), b, c, d)) out += cps[size_t(i)];
                return Value(std::move(out));
            }
            if (obj.is_list()) {
                Value::List out;
                for (int64_t i : slice_indices(int64_t(obj.items().size()), b, c, d)) out.push_back(obj.items()[size_t(i)]);
                return Value::list(std::move(out), obj.is_tuple());
            }
            return Value::undefined("'" + obj.type_name() + " object' has no attribute 'slice'");
        }
        case Expr::K::Call: return eval_call(e, scope);
        case Expr::K::Filter: {
            Value v = e.a ? eval(*e.a, scope) : Value();
            Args a;
            eval_args(e.args, scope, a);
            At at(*this, nullptr, &e);
            return run_filter(*this, e.name, v, a);
        }
        case Expr::K::Test: {
            Value v = eval(*e.a, scope);
            Args a;
            eval_args(e.args, scope, a);
            At at(*this, nullptr, &e);
            bool r = run_test(*this, e.name, v, a);
            return Value(e.negated ? !r : r);
        }
        case Expr::K::Unary: {
            Value v = eval(*e.a, scope);
            At at(*this, nullptr, &e);
            if (e.name == "not") return Value(!v.truthy());
            if (!v.is_number()) {
                if (v.is_undefined()) fail(v.str());
                fail("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
            }
            if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
            if (v.is_float()) return Value(-v.as_float());
            if (v.as_int() == INT64_MIN) fail("integer overflow");
            return Value(-v.as_int());
        }
        case Expr::K::Binary: {
            Value a = eval(*e.a, scope);
            Value b = eval(*e.b, scope);
            At at(*this, nullptr, &e);
            Value r = eval_binary(e.name, a, b);
            if (r.str_size() > opt_.max_output) fail("string longer than " + std::to_string(opt_.max_output) + " bytes");
            return r;
        }
        case Expr::K::And: {
            Value a = eval(*e.a, scope);
            return a.truthy() ? eval(*e.b, scope) : a;
        }
        case Expr::K::Or: {
            Value a = eval(*e.a, scope);
            return a.truthy() ? a : eval(*e.b, scope);
        }
        case Expr::K::Compare: {
            Value left = eval(*e.a, scope);
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = eval(*e.items[i], scope);
                At at(*this, nullptr, &e);
                const std::string& op = e.ops[i];
                bool r;
                if (op == "==") r = equals(left, right);
                else if (op == "!=") r = !equals(left, right);
                else if (op == "<") r = less(left, right);
                else if (op == ">") r = less(right, left);
                else if (op == "<=") r = less(left, right) || equals(left, right);
                else if (op == ">=") r = less(right, left) || equals(left, right);
                else if (op == "in") r = contains(right, left);
                else r = !contains(right, left);
                if (!r) return Value(false);
                left = std::move(right);
            }
            return Value(true);
        }
        case Expr::K::Cond: {
            if (eval(*e.a, scope).truthy()) return eval(*e.b, scope);
            if (e.c) return eval(*e.c, scope);
            return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                    " evaluated to false and no else section was defined.");
        }
    }
    return Value();
}

}  // namespace ls::jinja
