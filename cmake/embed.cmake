# SPDX-License-Identifier: Apache-2.0
# Turns a file into a C++ source defining `std::string_view <SYMBOL>()`
# with its bytes, so assets ship inside the binary (no files to install,
# nothing fetched at run time).
# cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
  "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/embed.cmake.
#include <string_view>

namespace allox::assets {

namespace {
const unsigned char data[] = {
  ${bytes}
};
} // namespace

std::string_view ${SYMBOL}() {
  return {reinterpret_cast<const char*>(data), ${size}};
}

} // namespace allox::assets
")
