// Renders cases for the oracle comparison (jinja_corpus.py): reads a JSON array of
// {"template": path, "context": {...}, "now": "YYYY-MM-DD HH:MM:SS"} and writes a JSON array of
// {"ok": true, "text": ...} or {"ok": false, "error": ..., "construct": ..., "problem": ...}.
// Usage: jinja_render cases.json [out.json]
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/jinja/template.h"

using json = nlohmann::ordered_json;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// strftime over a fixed moment, so that the C++ and Python renders agree on "now".
std::string fixed_strftime(const std::string& now, const std::string& fmt) {
    std::tm tm{};
    std::istringstream in(now);
    in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S");
    if (in.fail()) throw std::runtime_error("bad \"now\": " + now);
    // Fill in the weekday and day of the year.
    std::tm copy = tm;
    timegm(&copy);
    tm.tm_wday = copy.tm_wday;
    tm.tm_yday = copy.tm_yday;
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    return std::string(buf, n);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: jinja_render cases.json [out.json]\n";
        return 2;
    }
    json cases;
    try {
        cases = json::parse(read_file(argv[1]));
    } catch (const std::exception& e) {
        std::cerr << "jinja_render: " << argv[1] << ": " << e.what() << "\n";
        return 2;
    }
    std::map<std::string, std::string> sources;
    json results = json::array();
    for (const json& c : cases) {
        json r;
        try {
            std::string path = c.at("template").get<std::string>();
            if (!sources.count(path)) sources[path] = read_file(path);
            ls::jinja::Options opt;
            std::string now = c.value("now", std::string("2025-08-05 10:30:00"));
            opt.strftime_now = [now](const std::string& fmt) { return fixed_strftime(now, fmt); };
            ls::jinja::Template t(sources[path], opt);
            std::string text = t.render(ls::jinja::from_json(c.at("context")));
            r["ok"] = true;
            r["text"] = text;
        } catch (const ls::jinja::Error& e) {
            r["ok"] = false;
            r["error"] = e.what();
            r["construct"] = e.construct;
            r["problem"] = e.problem;
        } catch (const std::exception& e) {
            r["ok"] = false;
            r["error"] = e.what();
            r["construct"] = "";
            r["problem"] = e.what();
        }
        results.push_back(std::move(r));
    }
    std::string out = results.dump(-1, ' ', false, json::error_handler_t::replace);
    if (argc >= 3) {
        std::ofstream f(argv[2], std::ios::binary);
        f << out;
    } else {
        std::cout << out;
    }
    return 0;
}
