// Draws documents from a JSON schema's grammar, or checks documents against it: the C++ half
// of check_schema_samples.py, which validates what comes out with Python's jsonschema.
//
//   grammar_sample --sample SCHEMA.json N SEED   N lines, each a JSON string holding one document
//   grammar_sample --accept SCHEMA.json          per stdin line (a JSON string holding a document):
//                                                "1" if the grammar accepts it whole, else "0"
//   grammar_sample --gbnf SCHEMA.json            the GBNF
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/grammar/json_schema.h"
#include "tests/grammar/random_walk.h"

using nlohmann::ordered_json;
using namespace ls::grammar;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: grammar_sample --sample SCHEMA N SEED | --accept SCHEMA | --gbnf SCHEMA\n";
        return 2;
    }
    std::string mode = argv[1];
    try {
        std::ifstream f(argv[2]);
        if (!f) throw Error(std::string("cannot open ") + argv[2]);
        std::string gbnf = json_schema_to_gbnf(ordered_json::parse(f));
        if (mode == "--gbnf") {
            std::cout << gbnf;
            return 0;
        }
        Matcher m(Grammar::parse(gbnf));
        if (mode == "--sample" && argc >= 5) {
            int n = std::stoi(argv[3]);
            std::mt19937_64 rng(std::stoull(argv[4]));
            for (int i = 0; i < n; ++i) {
                std::optional<std::string> doc;
                for (int tries = 0; tries < 100 && !doc; ++tries) doc = testing::random_walk(m, rng);
                if (!doc) throw Error("no document under 4096 bytes after 100 walks");
                std::cout << ordered_json(*doc).dump() << "\n";
            }
            return 0;
        }
        if (mode == "--accept") {
            std::string line;
            while (std::getline(std::cin, line)) {
                std::string doc = ordered_json::parse(line).get<std::string>();
                m.reset();
                std::cout << (m.accept_bytes(doc) && m.is_accepting() ? "1" : "0") << "\n";
            }
            return 0;
        }
    } catch (const std::exception& e) {
        std::cerr << "grammar_sample: " << e.what() << "\n";
        return 1;
    }
    std::cerr << "grammar_sample: bad arguments\n";
    return 2;
}
