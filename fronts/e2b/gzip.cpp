// SPDX-License-Identifier: Apache-2.0
#include "fronts/e2b/gzip.hpp"

#include <zlib.h>

#include <cctype>

namespace allox::e2b {

namespace {

/// zlib's window bits for a gzip header and trailer.
constexpr int gzip_window = 15 + 16;

} // namespace

expected<std::string> gunzip(std::string_view in, size_t limit) {
  z_stream z{};
  if (inflateInit2(&z, gzip_window) != Z_OK)
    return make_error(errc::internal, "zlib inflateInit2 failed");
  std::string out;
  char buf[64 * 1024];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END)
      break;
    out.append(buf, sizeof(buf) - z.avail_out);
    if (out.size() > limit) {
      inflateEnd(&z);
      return make_error(errc::payload_too_large, "the upload inflates beyond " +
                                                     std::to_string(limit) +
                                                     " bytes");
    }
    // Another member follows (concatenated gzip files).
    if (rc == Z_STREAM_END && z.avail_in > 0) {
      inflateReset(&z);
      continue;
    }
    if (rc == Z_STREAM_END || (z.avail_in == 0 && z.avail_out != 0))
      break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    return make_error(errc::invalid_argument,
                      "the body is not gzip, or it is cut short");
  return out;
}

struct gzip_writer::state {
  z_stream z{};
};

gzip_writer::gzip_writer() : s_(std::make_unique<state>()) {
  // Level 1: the fastest; files are often compressed already.
  deflateInit2(&s_->z, 1, Z_DEFLATED, gzip_window, 8, Z_DEFAULT_STRATEGY);
}

gzip_writer::~gzip_writer() {
  deflateEnd(&s_->z);
}

std::string gzip_writer::write(std::string_view data, bool last) {
  auto& z = s_->z;
  std::string out;
  char buf[64 * 1024];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

bool accepts_gzip(std::string_view v) {
  while (!v.empty()) {
    auto comma = v.find(',');
    auto item = v.substr(0, comma);
    v = comma == std::string_view::npos ? std::string_view{}
                                        : v.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item[0])))
      item.remove_prefix(1);
    auto semi = item.find(';');
    auto token = item.substr(0, semi);
    while (!token.empty() &&
           std::isspace(static_cast<unsigned char>(token.back())))
      token.remove_suffix(1);
    if (token != "gzip")
      continue;
    if (semi == std::string_view::npos)
      return true;
    auto q = item.substr(semi + 1);
    auto eq = q.find('=');
    if (eq == std::string_view::npos)
      return true;
    auto value = q.substr(eq + 1);
    return value.find_first_not_of("0. ") != std::string_view::npos;
  }
  return false;
}

} // namespace allox::e2b
