#include "core/jinja/template.h"

#include "core/jinja/interp.h"
#include "core/jinja/lexer.h"
#include "core/jinja/parser.h"

namespace ls::jinja {

Error::Error(int line, std::string construct, std::string problem)
    : std::runtime_error("chat template, line " + std::to_string(line) + ": " + construct + ": " + problem),
      line(line),
      construct(std::move(construct)),
      problem(std::move(problem)) {}

struct Template::Parsed {
    Body body;
};

namespace {

// jinja2 refuses an unknown filter or test when compiling, except inside an `if` or a
// conditional expression (a "soft" frame), where it fails only if reached. Loop and macro
// bodies start hard again.
void check_expr(const Expr* e, bool soft);

void check_args(const CallArgs& a, bool soft) {
    for (const auto& p : a.pos) check_expr(p.get(), soft);
    for (const auto& [k, p] : a.kw) check_expr(p.get(), soft);
}

void check_expr(const Expr* e, bool soft) {
    if (!e) return;
    if (e->kind == Expr::K::Cond) soft = true;
    if (!soft && e->kind == Expr::K::Filter && !find_filter(e->name))
        throw Error(e->line, "filter '" + e->name + "'", "No filter named '" + e->name + "'.");
    if (!soft && e->kind == Expr::K::Test && !find_test(e->name))
        throw Error(e->line, "test '" + e->name + "'", "No test named '" + e->name + "'.");
    check_expr(e->a.get(), soft);
    check_expr(e->b.get(), soft);
    check_expr(e->c.get(), soft);
    check_expr(e->d.get(), soft);
    for (const auto& x : e->items) check_expr(x.get(), soft);
    check_args(e->args, soft);
}

void check_body(const Body& body, bool soft) {
    for (const StmtP& s : body) {
        check_expr(s->expr.get(), soft);
        for (const auto& f : s->filters) check_expr(f.get(), soft);
        switch (s->kind) {
            case Stmt::K::If:
                for (const auto& [cond, b] : s->branches) {
                    check_expr(cond.get(), true);
                    check_body(b, true);
                }
                break;
            case Stmt::K::For:
                check_expr(s->cond.get(), false);
                check_body(s->body, false);
                check_body(s->else_body, false);
                break;
            case Stmt::K::With:
                for (const auto& p : s->params) check_expr(p.dflt.get(), soft);
                check_body(s->body, soft);
                break;
            case Stmt::K::Macro:
            case Stmt::K::CallBlock:
                for (const auto& p : s->params) check_expr(p.dflt.get(), false);
                check_body(s->body, false);
                break;
            default: check_body(s->body, soft); break;
        }
    }
}

}  // namespace

Template::Template(std::string_view source, Options opt) : p_(std::make_unique<Parsed>()), opt_(std::move(opt)) {
    LexOptions lo{opt_.trim_blocks, opt_.lstrip_blocks, opt_.keep_trailing_newline};
    p_->body = parse(lex(source, lo));
    check_body(p_->body, false);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const {
    Interp in(opt_);
    return in.render(p_->body, context);
}

}  // namespace ls::jinja
