// data: URLs, as image_url parts carry images (tools/server/data_url.h).
#include <catch2/catch.hpp>

#include "tools/server/data_url.h"

using ls::server::decode_data_url;

TEST_CASE("data URLs: base64 with and without padding, percent-encoded text, refusals naming the problem", "[server]") {
    CHECK(decode_data_url("data:image/png;base64,aGVsbG8=") == "hello");
    CHECK(decode_data_url("data:image/png;base64,aGVsbG8") == "hello");  // padding left out
    CHECK(decode_data_url("data:;base64,aGVs\nbG8=") == "hello");         // whitespace skipped
    CHECK(decode_data_url("data:;base64,-_8=") == std::string("\xfb\xff", 2));  // the URL-safe alphabet
    CHECK(decode_data_url("data:text/plain,a%20b%zz") == "a b%zz");
    CHECK(decode_data_url("data:;base64,") == "");
    CHECK_THROWS_WITH(decode_data_url("https://example.com/x.png"), Catch::Contains("remote image URLs are not fetched"));
    CHECK_THROWS_WITH(decode_data_url("file:///etc/passwd"), Catch::Contains("must be a data: URL"));
    CHECK_THROWS_WITH(decode_data_url("data:image/png;base64"), Catch::Contains("no ','"));
    CHECK_THROWS_WITH(decode_data_url("data:;base64,ab$c"), Catch::Contains("outside its alphabet") && Catch::Contains("offset 15"));
    CHECK_THROWS_WITH(decode_data_url("data:;base64,aGVsbG8=aGVs"), Catch::Contains("after its padding"));
}
