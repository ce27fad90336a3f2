// The parsed template: expressions and statements, each with the line it came from so that
// an error can name it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/jinja/value.h"

namespace ls::jinja {

struct Expr;
struct Stmt;
using ExprP = std::unique_ptr<Expr>;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

struct CallArgs {
    std::vector<ExprP> pos;
    std::vector<std::pair<std::string, ExprP>> kw;
};

struct Expr {
    enum class K {
        Literal,    // value
        Name,       // name
        List,       // items
        Tuple,      // items
        Dict,       // items as key, value pairs
        GetAttr,    // a.name
        GetItem,    // a[b]
        Slice,      // a[b:c:d]; absent parts are null
        Call,       // a(args)
        Filter,     // a | name(args)
        Test,       // a is [not] name(args)
        Unary,      // op a: "-", "+", "not"
        Binary,     // a op b
        And,
        Or,
        Compare,    // a ops[0] items[0] ops[1] items[1] ...
        Cond,       // b if a else c
    };
    K kind;
    int line = 0;
    Value value;
    std::string name;  // name, attribute, filter, test, operator
    bool negated = false;
    ExprP a, b, c, d;
    std::vector<ExprP> items;
    std::vector<std::string> ops;
    CallArgs args;
    Expr(K k, int l) : kind(k), line(l) {}
};

// A place `set` or `for` assigns to: a name, a namespace attribute, or a tuple of names.
struct Target {
    std::vector<std::string> names;
    std::string attr;  // `ns.attr`: names[0] is the namespace
    bool tuple = false;
};

struct MacroParam {
    std::string name;
    ExprP dflt;
};

struct Stmt {
    enum class K { Text, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, Scope, With };
    K kind;
    int line = 0;
    std::string text;                        // Text; Macro name
    ExprP expr;                              // Output, Set value, For iterable, CallBlock call
    std::vector<std::pair<ExprP, Body>> branches;  // If: condition (null for else), body
    Target target;                           // For, Set, SetBlock
    ExprP cond;                              // For: `if` filter
    Body body, else_body;                    // For, SetBlock, Macro, CallBlock, FilterBlock, Scope
    std::vector<MacroParam> params;          // Macro, CallBlock (the caller's); With: name = value
    std::vector<ExprP> filters;              // SetBlock, FilterBlock: Filter nodes with a null operand
    bool recursive = false;
    Stmt(K k, int l) : kind(k), line(l) {}
};

}  // namespace ls::jinja
