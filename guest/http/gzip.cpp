// SPDX-License-Identifier: Apache-2.0
#include "guest/http/gzip.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cctype>

namespace allox::http {

namespace {

/// zlib's window bits for a gzip header and trailer.
constexpr int gzip_window = 15 + 16;

} // namespace

struct gunzip_source::state {
  z_stream z{};
  os::pull_fn in;
  uint64_t limit = 0;
  uint64_t total = 0;
  /// The body has ended (the last pull said so).
  bool in_done = false;
  /// A member's trailer was read; another may follow.
  bool member_ended = false;
  bool done = false;
  std::string out;
};

gunzip_source::gunzip_source(os::pull_fn in, uint64_t limit)
    : s_(std::make_unique<state>()) {
  s_->in = std::move(in);
  s_->limit = limit;
  s_->out.resize(256 << 10);
  inflateInit2(&s_->z, gzip_window);
}

gunzip_source::~gunzip_source() {
  inflateEnd(&s_->z);
}

expected<bool> gunzip_source::pull(std::string_view& bytes) {
  auto& s = *s_;
  auto& z = s.z;
  while (!s.done) {
    if (z.avail_in == 0 && !s.in_done) {
      std::string_view chunk;
      auto more = s.in(chunk);
      if (!more)
        return more.error();
      s.in_done = !*more;
      // The chunk stays valid until the next pull from `in`, which comes
      // only once zlib has taken all of it.
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
      z.avail_in = static_cast<uInt>(chunk.size());
    }
    if (z.avail_in == 0 && s.in_done) {
      if (!s.member_ended)
        return make_error(errc::invalid_argument,
                          "the body is not gzip, or it is cut short");
      s.done = true;
      break;
    }
    if (s.member_ended) {
      // Another member follows (gzip files concatenated).
      inflateReset(&z);
      s.member_ended = false;
    }
    z.next_out = reinterpret_cast<Bytef*>(s.out.data());
    z.avail_out = static_cast<uInt>(s.out.size());
    auto rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END)
      s.member_ended = true;
    else if (rc != Z_OK && rc != Z_BUF_ERROR)
      return make_error(errc::invalid_argument,
                        "the body is not gzip, or it is cut short");
    auto n = s.out.size() - z.avail_out;
    s.total += n;
    if (s.total > s.limit)
      return make_error(errc::payload_too_large, "the upload inflates beyond " +
                                                     std::to_string(s.limit) +
                                                     " bytes");
    if (n > 0) {
      bytes = std::string_view{s.out.data(), n};
      return true;
    }
  }
  return false;
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

bool worth_gzip(int fd, uint64_t size) {
  // Below this, deflating costs less than a round trip either way.
  constexpr uint64_t always = 256 * 1024;
  constexpr size_t sample = 64 * 1024;
  if (size <= always)
    return true;
  std::string in(sample, '\0');
  auto n = ::pread(fd, in.data(), in.size(), 0);
  if (n <= 0)
    return true;
  uLongf out_size = compressBound(static_cast<uLong>(n));
  std::string out(out_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &out_size,
                reinterpret_cast<const Bytef*>(in.data()),
                static_cast<uLong>(n), 1) != Z_OK)
    return true;
  return out_size * 10 < static_cast<uLongf>(n) * 9;
}

} // namespace allox::http
