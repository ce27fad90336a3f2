// The evaluator's state for one render: scopes, the output being written, the limits spent,
// and the node being evaluated (for the line and construct an error names).
#pragma once
#include <memory>
#include <string>
#include <unordered_map>

#include "core/jinja/ast.h"
#include "core/jinja/internal.h"
#include "core/jinja/template.h"

namespace ls::jinja {

// Variables of one frame; a lookup walks to the parents. `for` bodies and macro calls get a
// frame of their own (a `set` there does not leak out, as in jinja2); `if` does not.
struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
    const Value* lookup(const std::string& name) const {
        for (const Scope* s = this; s; s = s->parent.get()) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};
using ScopeP = std::shared_ptr<Scope>;

class Interp {
 public:
    explicit Interp(const Options& opt) : opt_(opt) {}

    std::string render(const Body& body, const Value& context);

    const Options& opt() const { return opt_; }
    // Counts loop iterations and other work proportional to a template-chosen size.
    void spend(size_t n);

 private:
    enum class Flow { Normal, Break, Continue };
    const Options& opt_;
    std::string* out_ = nullptr;
    size_t spent_ = 0;
    int call_depth_ = 0;
    int eval_depth_ = 0;
    // Namespaces are the one mutable value, so the one way to make a reference cycle
    // (`set ns.me = ns`); the render empties them all when it ends.
    std::vector<Value> namespaces_;  // nested eval/exec frames: bounds the C++ stack a render uses
    friend struct Nested;
    const Stmt* stmt_ = nullptr;  // innermost statement and expression being evaluated
    const Expr* expr_ = nullptr;
    friend struct At;

    Flow exec(const Body& body, const ScopeP& scope);
    Flow exec_stmt(const Stmt& s, const ScopeP& scope);
    Flow exec_for(const Stmt& s, const ScopeP& scope);
    void assign(const Target& t, const Value& v, Scope& scope, const ScopeP& lookup_scope);
    std::string capture(const Body& body, const ScopeP& scope);
    void write(const std::string& s);

    Value eval(const Expr& e, const ScopeP& scope);
    Value eval_call(const Expr& e, const ScopeP& scope, const Value* caller = nullptr);
    Value eval_binary(const std::string& op, const Value& a, const Value& b);
    void eval_args(const CallArgs& ca, const ScopeP& scope, Args& out);
    Value apply_filters(const std::vector<ExprP>& filters, Value v, const ScopeP& scope);
    Value make_macro(const Stmt& s, const ScopeP& scope, const Body* body_override = nullptr);
    Error to_error(const Fail& f) const;
};

}  // namespace ls::jinja
