#include "core/jinja/parser.h"

#include <charconv>
#include <cstdlib>

#include "core/jinja/template.h"

namespace ls::jinja {

namespace {

// Nesting beyond this (brackets, blocks) is refused so that parsing and evaluating a hostile
// template cannot overflow the stack.
constexpr int kMaxNesting = 200;

class Parser {
 public:
    explicit Parser(const std::vector<Token>& t) : t_(t) {}

    Body run() {
        Body b = subparse({});
        if (cur().type != Token::Eof) error("unexpected " + describe(cur()));
        return b;
    }

 private:
    const std::vector<Token>& t_;
    size_t i_ = 0;
    int depth_ = 0;
    std::vector<std::string> open_blocks_;

    struct Nest {
        Parser& p;
        explicit Nest(Parser& p) : p(p) {
            if (++p.depth_ > kMaxNesting) p.error("template nested deeper than " + std::to_string(kMaxNesting) + " levels");
        }
        ~Nest() { --p.depth_; }
    };

    const Token& cur() const { return t_[i_]; }
    const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
    void next() {
        if (i_ + 1 < t_.size()) ++i_;
    }
    [[noreturn]] void error(const std::string& msg) const { throw Error(cur().line, "syntax", msg); }

    bool is_op(const char* op) const { return cur().type == Token::Op && cur().text == op; }
    bool is_name(const char* n) const { return cur().type == Token::Name && cur().text == n; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) error(std::string("expected '") + op + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().type != Token::Name) error("expected a name, got " + describe(cur()));
        std::string n = cur().text;
        next();
        return n;
    }
    void expect_block_end() {
        if (cur().type != Token::BlockEnd) error("expected end of statement block, got " + describe(cur()));
        next();
    }

    ExprP node(Expr::K k, int line) { return std::make_unique<Expr>(k, line); }

    // ---- statements ----

    // Parses until `{% <one of ends> %}`; leaves the cursor on that name.
    Body subparse(const std::vector<std::string>& ends) {
        Nest n(*this);
        Body body;
        while (true) {
            const Token& tk = cur();
            if (tk.type == Token::Eof) {
                if (!ends.empty()) {
                    std::string want;
                    for (const auto& e : ends) want += (want.empty() ? "'" : " or '") + e + "'";
                    error("unexpected end of template, expected " + want + " to close '" + open_blocks_.back() + "'");
                }
                return body;
            }
            if (tk.type == Token::Data) {
                auto s = std::make_unique<Stmt>(Stmt::K::Text, tk.line);
                s->text = tk.text;
                body.push_back(std::move(s));
                next();
            } else if (tk.type == Token::VarBegin) {
                next();
                auto s = std::make_unique<Stmt>(Stmt::K::Output, tk.line);
                s->expr = parse_tuple(true);
                if (cur().type != Token::VarEnd) error("expected end of print statement, got " + describe(cur()));
                next();
                body.push_back(std::move(s));
            } else if (tk.type == Token::BlockBegin) {
                next();
                if (cur().type != Token::Name) error("expected a statement name, got " + describe(cur()));
                for (const auto& e : ends)
                    if (cur().text == e) return body;
                body.push_back(statement(ends));
            } else {
                error("unexpected " + describe(tk));
            }
        }
    }

    StmtP statement(const std::vector<std::string>& ends) {
        const Token& tk = cur();
        const std::string& n = tk.text;
        if (n == "if") return parse_if();
        if (n == "for") return parse_for();
        if (n == "set") return parse_set();
        if (n == "macro") return parse_macro();
        if (n == "call") return parse_call_block();
        if (n == "filter") return parse_filter_block();
        if (n == "with") {
            // {% with a = 1, b = x %}...{% endwith %}: the names live in a frame of their own.
            auto s = std::make_unique<Stmt>(Stmt::K::With, tk.line);
            next();
            while (cur().type != Token::BlockEnd) {
                if (!s->params.empty()) expect_op(",");
                MacroParam p;
                p.name = expect_name();
                expect_op("=");
                p.dflt = parse_expression();
                s->params.push_back(std::move(p));
            }
            expect_block_end();
            s->body = block_body("with", {"endwith"});
            next();
            expect_block_end();
            return s;
        }
        if (n == "generation") {
            // Hugging Face's AssistantTracker marks the assistant's tokens; for rendering it is
            // its body.
            auto s = std::make_unique<Stmt>(Stmt::K::Scope, tk.line);
            next();
            expect_block_end();
            s->body = block_body("generation", {"endgeneration"});
            next();
            expect_block_end();
            return s;
        }
        if (n == "break" || n == "continue") {
            bool in_loop = false;
            for (const auto& b : open_blocks_) {
                if (b == "for") in_loop = true;
                if (b == "macro" || b == "call") in_loop = false;
            }
            if (!in_loop) error("'" + n + "' outside of a loop");
            auto s = std::make_unique<Stmt>(n == "break" ? Stmt::K::Break : Stmt::K::Continue, tk.line);
            next();
            expect_block_end();
            return s;
        }
        std::string msg = "Encountered unknown tag '" + n + "'.";
        if (!ends.empty()) {
            msg += " Jinja was looking for the following tags: ";
            for (size_t k = 0; k < ends.size(); ++k) msg += (k ? " or '" : "'") + ends[k] + "'";
            msg += ". The innermost block that needs to be closed is '" + open_blocks_.back() + "'.";
        }
        error(msg);
    }

    Body block_body(const std::string& name, const std::vector<std::string>& ends) {
        open_blocks_.push_back(name);
        Body b = subparse(ends);
        open_blocks_.pop_back();
        return b;
    }

    StmtP parse_if() {
        auto s = std::make_unique<Stmt>(Stmt::K::If, cur().line);
        next();
        ExprP cond = parse_tuple(false);
        expect_block_end();
        while (true) {
            Body b = block_body("if", {"elif", "else", "endif"});
            s->branches.emplace_back(std::move(cond), std::move(b));
            std::string tag = cur().text;
            next();
            if (tag == "elif") {
                cond = parse_tuple(false);
                expect_block_end();
            } else if (tag == "else") {
                expect_block_end();
                Body eb = block_body("if", {"endif"});
                s->branches.emplace_back(nullptr, std::move(eb));
                next();
                expect_block_end();
                return s;
            } else {
                expect_block_end();
                return s;
            }
        }
    }

    Target parse_target(bool with_namespace) {
        Target t;
        int line = cur().line;
        std::string first = expect_name();
        if (with_namespace && is_op(".")) {
            next();
            t.names.push_back(first);
            t.attr = expect_name();
            return t;
        }
        t.names.push_back(first);
        while (skip_op(",")) {
            t.tuple = true;
            // `for a, in xs` may end on a comma; `set a, = x` may not (as in jinja2).
            if (!with_namespace && is_name("in")) break;
            if (cur().type != Token::Name) error("unexpected " + describe(cur()));
            t.names.push_back(expect_name());
        }
        for (const auto& nm : t.names)
            if (nm == "true" || nm == "false" || nm == "none" || nm == "True" || nm == "False" || nm == "None")
                throw Error(line, "syntax", "can't assign to '" + nm + "'");
        return t;
    }

    StmtP parse_for() {
        auto s = std::make_unique<Stmt>(Stmt::K::For, cur().line);
        next();
        s->target = parse_target(false);
        if (!skip_name("in")) error("expected 'in', got " + describe(cur()));
        s->expr = parse_tuple(false);
        if (skip_name("if")) s->cond = parse_expression();
        s->recursive = skip_name("recursive");
        if (s->recursive) error("recursive loops are not supported");
        expect_block_end();
        s->body = block_body("for", {"endfor", "else"});
        if (cur().text == "else") {
            next();
            expect_block_end();
            s->else_body = block_body("for", {"endfor"});
        }
        next();
        expect_block_end();
        return s;
    }

    StmtP parse_set() {
        int line = cur().line;
        next();
        Target t = parse_target(true);
        if (skip_op("=")) {
            auto s = std::make_unique<Stmt>(Stmt::K::Set, line);
            s->target = std::move(t);
            s->expr = parse_tuple(true);
            expect_block_end();
            return s;
        }
        if (t.tuple) error("expected '=', got " + describe(cur()));
        auto s = std::make_unique<Stmt>(Stmt::K::SetBlock, line);
        s->target = std::move(t);
        s->filters = parse_filter_chain();
        expect_block_end();
        s->body = block_body("set", {"endset"});
        next();
        expect_block_end();
        return s;
    }

    std::vector<ExprP> parse_filter_chain() {
        std::vector<ExprP> out;
        while (skip_op("|")) out.push_back(parse_filter(nullptr));
        return out;
    }

    std::vector<MacroParam> parse_signature() {
        std::vector<MacroParam> params;
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (skip_op("=")) p.dflt = parse_expression();
            else if (!params.empty() && params.back().dflt)
                error("non-default argument follows default argument");
            params.push_back(std::move(p));
        }
        next();
        return params;
    }

    StmtP parse_macro() {
        auto s = std::make_unique<Stmt>(Stmt::K::Macro, cur().line);
        next();
        s->text = expect_name();
        s->params = parse_signature();
        expect_block_end();
        s->body = block_body("macro", {"endmacro"});
        next();
        if (cur().type == Token::Name) next();  // {% endmacro name %}
        expect_block_end();
        return s;
    }

    StmtP parse_call_block() {
        auto s = std::make_unique<Stmt>(Stmt::K::CallBlock, cur().line);
        next();
        if (is_op("(")) s->params = parse_signature();
        s->expr = parse_expression();
        if (s->expr->kind != Expr::K::Call) error("expected call");
        expect_block_end();
        s->body = block_body("call", {"endcall"});
        next();
        expect_block_end();
        return s;
    }

    StmtP parse_filter_block() {
        auto s = std::make_unique<Stmt>(Stmt::K::FilterBlock, cur().line);
        next();
        s->filters.push_back(parse_filter(nullptr));
        for (auto more = parse_filter_chain(); auto& f : more) s->filters.push_back(std::move(f));
        expect_block_end();
        s->body = block_body("filter", {"endfilter"});
        next();
        expect_block_end();
        return s;
    }

    // ---- expressions ----

    // A comma list becomes a tuple. `for` and `if` heads parse without conditional
    // expressions, so that `for x in xs if cond` keeps its `if`.
    ExprP parse_tuple(bool with_condexpr) {
        int line = cur().line;
        std::vector<ExprP> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) {
                if (!skip_op(",")) break;
                is_tuple = true;
            }
            if (tuple_end()) break;
            items.push_back(with_condexpr ? parse_expression() : parse_or());
        }
        if (!is_tuple) {
            if (items.empty()) error("expected an expression, got " + describe(cur()));
            return std::move(items[0]);
        }
        auto e = node(Expr::K::Tuple, line);
        e->items = std::move(items);
        return e;
    }

    bool tuple_end() const {
        const Token& c = cur();
        if (c.type == Token::VarEnd || c.type == Token::BlockEnd || c.type == Token::Eof) return true;
        if (c.type == Token::Op && (c.text == ")" || c.text == "]" || c.text == "}" || c.text == "=")) return true;
        if (c.type == Token::Name && (c.text == "in" || c.text == "if" || c.text == "recursive")) return true;
        return false;
    }

    ExprP parse_expression() {
        Nest n(*this);
        ExprP e = parse_or();
        while (is_name("if")) {
            int line = cur().line;
            next();
            auto c = node(Expr::K::Cond, line);
            c->a = parse_or();
            c->b = std::move(e);
            if (skip_name("else")) c->c = parse_expression();
            e = std::move(c);
        }
        return e;
    }

    ExprP parse_or() {
        ExprP e = parse_and();
        while (is_name("or")) {
            auto o = node(Expr::K::Or, cur().line);
            next();
            o->a = std::move(e);
            o->b = parse_and();
            e = std::move(o);
        }
        return e;
    }

    ExprP parse_and() {
        ExprP e = parse_not();
        while (is_name("and")) {
            auto o = node(Expr::K::And, cur().line);
            next();
            o->a = std::move(e);
            o->b = parse_not();
            e = std::move(o);
        }
        return e;
    }

    ExprP parse_not() {
        if (is_name("not")) {
            Nest n(*this);
            auto o = node(Expr::K::Unary, cur().line);
            next();
            o->name = "not";
            o->a = parse_not();
            return o;
        }
        return parse_compare();
    }

    ExprP parse_compare() {
        int line = cur().line;
        ExprP e = parse_math1();
        std::unique_ptr<Expr> cmp;
        while (true) {
            std::string op;
            if (cur().type == Token::Op &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
                 cur().text == ">" || cur().text == ">=")) {
                op = cur().text;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && peek().type == Token::Name && peek().text == "in") {
                op = "notin";
                next();
                next();
            } else {
                break;
            }
            if (!cmp) {
                cmp = node(Expr::K::Compare, line);
                cmp->a = std::move(e);
            }
            cmp->ops.push_back(op);
            cmp->items.push_back(parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(e);
    }

    ExprP binary(const std::string& op, ExprP a, ExprP b, int line) {
        auto o = node(Expr::K::Binary, line);
        o->name = op;
        o->a = std::move(a);
        o->b = std::move(b);
        return o;
    }

    ExprP parse_math1() {
        ExprP e = parse_concat();
        while (is_op("+") || is_op("-")) {
            std::string op = cur().text;
            int line = cur().line;
            next();
            e = binary(op, std::move(e), parse_concat(), line);
        }
        return e;
    }

    ExprP parse_concat() {
        ExprP e = parse_math2();
        while (is_op("~")) {
            int line = cur().line;
            next();
            e = binary("~", std::move(e), parse_math2(), line);
        }
        return e;
    }

    ExprP parse_math2() {
        ExprP e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            std::string op = cur().text;
            int line = cur().line;
            next();
            e = binary(op, std::move(e), parse_pow(), line);
        }
        return e;
    }

    ExprP parse_pow() {
        ExprP e = parse_unary(true);
        while (is_op("**")) {
            int line = cur().line;
            next();
            e = binary("**", std::move(e), parse_unary(true), line);
        }
        return e;
    }

    ExprP parse_unary(bool with_filter) {
        Nest n(*this);
        ExprP e;
        if (is_op("-") || is_op("+")) {
            auto o = node(Expr::K::Unary, cur().line);
            o->name = cur().text;
            next();
            o->a = parse_unary(false);
            e = std::move(o);
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprP parse_primary() {
        const Token& tk = cur();
        int line = tk.line;
        if (tk.type == Token::Name) {
            const std::string& n = tk.text;
            auto lit = node(Expr::K::Literal, line);
            if (n == "true" || n == "True") lit->value = Value(true);
            else if (n == "false" || n == "False") lit->value = Value(false);
            else if (n == "none" || n == "None") lit->value = Value(nullptr);
            else {
                auto nm = node(Expr::K::Name, line);
                nm->name = n;
                next();
                return nm;
            }
            next();
            return lit;
        }
        if (tk.type == Token::String) {
            std::string s = tk.text;
            next();
            while (cur().type == Token::String) {  // adjacent literals concatenate
                s += cur().text;
                next();
            }
            auto lit = node(Expr::K::Literal, line);
            lit->value = Value(std::move(s));
            return lit;
        }
        if (tk.type == Token::Int) {
            auto lit = node(Expr::K::Literal, line);
            int64_t v = 0;
            auto r = std::from_chars(tk.text.data(), tk.text.data() + tk.text.size(), v);
            if (r.ec != std::errc()) error("integer literal out of range: " + tk.text);
            lit->value = Value(v);
            next();
            return lit;
        }
        if (tk.type == Token::Float) {
            auto lit = node(Expr::K::Literal, line);
            lit->value = Value(std::strtod(tk.text.c_str(), nullptr));
            next();
            return lit;
        }
        if (is_op("(")) {
            next();
            if (skip_op(")")) {
                auto t = node(Expr::K::Tuple, line);
                return t;
            }
            ExprP e = parse_tuple(true);
            expect_op(")");
            return e;
        }
        if (is_op("[")) {
            next();
            auto l = node(Expr::K::List, line);
            while (!is_op("]")) {
                if (!l->items.empty()) expect_op(",");
                if (is_op("]")) break;
                l->items.push_back(parse_expression());
            }
            next();
            return l;
        }
        if (is_op("{")) {
            next();
            auto d = node(Expr::K::Dict, line);
            while (!is_op("}")) {
                if (!d->items.empty()) expect_op(",");
                if (is_op("}")) break;
                d->items.push_back(parse_expression());
                expect_op(":");
                d->items.push_back(parse_expression());
            }
            next();
            return d;
        }
        error("unexpected " + describe(tk));
    }

    ExprP parse_postfix(ExprP e) {
        while (true) {
            if (is_op(".") || is_op("[")) {
                e = parse_subscript(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprP parse_filter_expr(ExprP e) {
        while (true) {
            if (is_op("|")) {
                next();
                e = parse_filter(std::move(e));
            } else if (is_name("is")) {
                e = parse_test(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprP parse_subscript(ExprP e) {
        Nest n(*this);
        int line = cur().line;
        if (skip_op(".")) {
            auto g = node(Expr::K::GetAttr, line);
            g->a = std::move(e);
            if (cur().type == Token::Name) {
                g->name = cur().text;
                next();
            } else if (cur().type == Token::Int) {
                // `x.0` is x[0] in jinja2
                g->kind = Expr::K::GetItem;
                auto idx = node(Expr::K::Literal, line);
                idx->value = Value(int64_t(std::strtoll(cur().text.c_str(), nullptr, 10)));
                g->b = std::move(idx);
                next();
            } else {
                error("expected name or number, got " + describe(cur()));
            }
            return g;
        }
        expect_op("[");
        // Either an index or a slice a[b:c:d].
        ExprP parts[3];
        bool slice = false;
        int k = 0;
        while (true) {
            if (is_op(":")) {
                slice = true;
                next();
                if (++k > 2) error("expected ']'");
                continue;
            }
            if (is_op("]")) break;
            if (is_op(",") && !slice && parts[0]) {
                // x[a, b] indexes with the tuple (a, b), as in Python.
                auto t = node(Expr::K::Tuple, line);
                t->items.push_back(std::move(parts[0]));
                while (skip_op(",")) {
                    if (is_op("]")) break;
                    t->items.push_back(parse_expression());
                }
                parts[0] = std::move(t);
                if (!is_op("]")) error("expected ']', got " + describe(cur()));
                break;
            }
            if (parts[k]) error("expected ':' or ']', got " + describe(cur()));
            parts[k] = parse_expression();
        }
        next();
        if (slice) {
            auto s = node(Expr::K::Slice, line);
            s->a = std::move(e);
            s->b = std::move(parts[0]);
            s->c = std::move(parts[1]);
            s->d = std::move(parts[2]);
            return s;
        }
        if (!parts[0]) error("expected an index");
        auto g = node(Expr::K::GetItem, line);
        g->a = std::move(e);
        g->b = std::move(parts[0]);
        return g;
    }

    void parse_call_args(CallArgs& args) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (is_op("*") || is_op("**")) error("*args and **kwargs in calls are not supported");
            if (cur().type == Token::Name && peek().type == Token::Op && peek().text == "=") {
                std::string k = cur().text;
                next();
                next();
                args.kw.emplace_back(k, parse_expression());
            } else {
                if (!args.kw.empty()) error("positional argument after keyword argument");
                args.pos.push_back(parse_expression());
            }
        }
        next();
    }

    ExprP parse_call(ExprP e) {
        Nest n(*this);
        auto c = node(Expr::K::Call, cur().line);
        c->a = std::move(e);
        parse_call_args(c->args);
        return c;
    }

    ExprP parse_filter(ExprP e) {
        Nest n(*this);
        auto f = node(Expr::K::Filter, cur().line);
        f->name = expect_name();
        while (skip_op(".")) f->name += "." + expect_name();
        f->a = std::move(e);
        if (is_op("(")) parse_call_args(f->args);
        return f;
    }

    ExprP parse_test(ExprP e) {
        Nest n(*this);
        auto t = node(Expr::K::Test, cur().line);
        next();  // is
        t->negated = skip_name("not");
        t->name = expect_name();
        while (skip_op(".")) t->name += "." + expect_name();
        t->a = std::move(e);
        const Token& c = cur();
        if (is_op("(")) {
            parse_call_args(t->args);
        } else if ((c.type == Token::Name || c.type == Token::String || c.type == Token::Int ||
                    c.type == Token::Float || is_op("[") || is_op("{")) &&
                   !(c.type == Token::Name && (c.text == "else" || c.text == "or" || c.text == "and"))) {
            if (is_name("is")) error("You cannot chain multiple tests with is");
            t->args.pos.push_back(parse_postfix(parse_primary()));
        }
        return t;
    }
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace ls::jinja
