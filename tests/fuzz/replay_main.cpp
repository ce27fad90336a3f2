// Runs the fuzz target over every file of a corpus directory, so the corpus is a plain
// regression test on any compiler (libFuzzer needs clang).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    std::error_code ec;
    if (!fs::is_directory(argv[1], ec)) {
        std::fprintf(stderr, "%s: not a directory\n", argv[1]);
        return 1;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(argv[1]))
        if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) {
        std::fprintf(stderr, "%s: no files to replay\n", argv[1]);
        return 1;
    }
    for (const auto& p : files) {
        std::ifstream in(p, std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "%s: cannot read\n", p.c_str());
            return 1;
        }
        const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        // A copy of exactly the file's size, so ASan catches reads one past the end.
        std::vector<uint8_t> buf(bytes.begin(), bytes.end());
        LLVMFuzzerTestOneInput(buf.empty() ? nullptr : buf.data(), buf.size());
    }
    std::printf("%zu files replayed\n", files.size());
    return 0;
}
