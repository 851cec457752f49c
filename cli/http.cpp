// SPDX-License-Identifier: Apache-2.0
#include "cli/http.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "guest/os/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

namespace allox::ctl {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

result<endpoint> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  auto bad = [&](const std::string& why) {
    return failure{
        exit_unreachable, "invalid daemon URL '" + url + "': " + why, {}};
  };
  if (url.rfind(scheme, 0) != 0)
    return bad("only http:// is supported");
  auto rest = url.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/')
    rest.pop_back();
  if (rest.find('/') != std::string::npos)
    return bad("a path is not allowed");
  endpoint e;
  e.url = url;
  e.port = "80";
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos)
      return bad("unclosed '['");
    e.host = rest.substr(1, close - 1);
    auto tail = rest.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':')
        return bad("expected ':' after the host");
      e.port = tail.substr(1);
    }
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    e.host = rest.substr(0, colon);
    e.port = rest.substr(colon + 1);
  } else {
    e.host = rest;
  }
  if (e.host.empty())
    return bad("no host");
  if (e.port.empty() ||
      e.port.find_first_not_of("0123456789") != std::string::npos)
    return bad("the port must be a number");
  return e;
}

struct client::impl {
  asio::io_context io;
  tcp::socket socket{io};
  boost::beast::flat_buffer buffer;
  bool connected = false;

  void close() {
    boost::system::error_code ec;
    socket.close(ec);
    buffer.clear();
    connected = false;
  }
};

client::client(endpoint where, std::string token)
    : impl_(std::make_unique<impl>()), where_(std::move(where)),
      token_(std::move(token)) {}

client::~client() = default;

failure client::unreachable(const std::string& why) const {
  return {exit_unreachable,
          "cannot reach the daemon at " + where_.url + ": " + why,
          {}};
}

namespace {

/// Connects `socket` to the first address of `where` that answers.
boost::system::error_code connect(tcp::socket& socket, asio::io_context& io,
                                  const endpoint& where) {
  tcp::resolver resolver{io};
  boost::system::error_code ec;
  auto addresses = resolver.resolve(where.host, where.port, ec);
  if (!ec)
    asio::connect(socket, addresses, ec);
  return ec;
}

bhttp::request<bhttp::string_body> make_request(const std::string& method,
                                                const std::string& target,
                                                const std::string& host,
                                                const std::string& token) {
  bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method), target,
                                         11};
  req.set(bhttp::field::host, host);
  req.set(bhttp::field::user_agent, "alloxctl");
  if (!token.empty())
    req.set(bhttp::field::authorization, "Bearer " + token);
  return req;
}

} // namespace

result<http_reply>
client::send(const std::string& method, const std::string& target,
             const std::string& body,
             const std::map<std::string, std::string>& headers) {
  // A kept-alive connection the daemon closed in the meantime (idle
  // timeout) fails on first use: reconnect once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = impl_->connected;
    if (!impl_->connected) {
      if (auto ec = connect(impl_->socket, impl_->io, where_))
        return unreachable(ec.message());
      impl_->connected = true;
    }
    auto req = make_request(method, target, where_.host, token_);
    if (!body.empty()) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body;
    }
    for (const auto& [name, value] : headers)
      req.set(name, value);
    req.prepare_payload();
    boost::system::error_code ec;
    bhttp::write(impl_->socket, req, ec);
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(256 << 20);
    if (!ec)
      bhttp::read(impl_->socket, impl_->buffer, parser, ec);
    if (ec) {
      impl_->close();
      if (reused && attempt == 0)
        continue;
      return unreachable(ec.message());
    }
    auto res = parser.release();
    http_reply out;
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    for (const auto& f : res)
      out.headers[std::string{f.name_string()}] = std::string{f.value()};
    if (!res.keep_alive())
      impl_->close();
    return out;
  }
  return unreachable("connection closed");
}

result<http_reply> client::get(const std::string& target) {
  return send("GET", target, {});
}

namespace {

/// A reply's status, headers and (string) body.
template <class Message>
http_reply reply_of(Message& res, std::string body) {
  http_reply out;
  out.status = static_cast<int>(res.result_int());
  out.body = std::move(body);
  for (const auto& f : res)
    out.headers[std::string{f.name_string()}] = std::string{f.value()};
  return out;
}

} // namespace

// Both directions move the body through one 1 MiB buffer of our own:
// Beast's file_body reads a file 4 KiB at a time, and a parser fed from a
// flat_buffer left at the header's size receives 512 bytes per call, two
// million system calls per GiB each way.
constexpr size_t body_chunk = 1 << 20;

namespace {

/// Waits until `fd` can be read (a socket asio may have made non-blocking).
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  int n;
  while ((n = ::poll(&p, 1, -1)) < 0 && errno == EINTR) {
  }
  return n > 0;
}

/// The next `size` bytes of `sock` into `file` at its offset, through a
/// pipe: splice(2) moves the received pages into it and copies them once,
/// into the file, where read and write copied them twice. Falls back to
/// read and write where the kernel cannot splice. {true, why} when writing
/// the file failed; {false, why} when the socket did; {false, ""}: done.
std::pair<bool, std::string> receive_body(int sock, int file, uint64_t size) {
  int ends[2];
  bool spliced = ::pipe2(ends, O_CLOEXEC) == 0;
  os::unique_fd out{spliced ? ends[0] : -1}, in{spliced ? ends[1] : -1};
  size_t step = body_chunk;
  if (spliced && ::fcntl(in.get(), F_SETPIPE_SZ, static_cast<int>(step)) < 0)
    step = 64 << 10; // the pipe's default, under a lower pipe-max-size
  std::vector<char> chunk;
  while (size > 0) {
    auto want = static_cast<size_t>(std::min<uint64_t>(size, step));
    ssize_t n = spliced ? ::splice(sock, nullptr, in.get(), nullptr, want,
                                   SPLICE_F_MOVE | SPLICE_F_MORE)
                        : ::read(sock, chunk.data(), want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN && readable(sock))
      continue;
    if (n < 0 && spliced && errno == EINVAL) {
      spliced = false;
      chunk.resize(step);
      continue;
    }
    if (n < 0)
      return {false, std::strerror(errno)};
    if (n == 0)
      return {false, "the daemon closed the connection"};
    size -= static_cast<uint64_t>(n);
    for (size_t left = static_cast<size_t>(n); left > 0;) {
      ssize_t m =
          spliced
              ? ::splice(out.get(), nullptr, file, nullptr, left, SPLICE_F_MOVE)
              : ::write(file, chunk.data() + (static_cast<size_t>(n) - left),
                        left);
      if (m < 0 && errno == EINTR)
        continue;
      if (m <= 0)
        return {true, m < 0 ? std::strerror(errno) : "nothing written"};
      left -= static_cast<size_t>(m);
    }
  }
  return {false, {}};
}

/// SIGPIPE blocked in this thread while it lives: sendfile(2) has no
/// MSG_NOSIGNAL, and a daemon that refuses an upload closes the
/// connection before the body is sent. A SIGPIPE raised meanwhile is taken
/// off before the mask is restored.
class quiet_sigpipe {
public:
  quiet_sigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~quiet_sigpipe() {
    timespec none{0, 0};
    while (::sigtimedwait(&pipe_, nullptr, &none) == SIGPIPE) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

private:
  sigset_t pipe_{}, old_{};
};

/// The first `size` bytes of `file` to `sock` with sendfile(2): the
/// file's pages go to the socket without a copy through user space.
/// Returns the bytes sent: fewer where the kernel cannot sendfile this
/// file (nothing sent, read and write go on) or the socket failed (the
/// reply read next says why); an error when the file could not be read.
result<uint64_t> send_body(int file, int sock, uint64_t size) {
  quiet_sigpipe quiet;
  off_t at = 0;
  while (static_cast<uint64_t>(at) < size) {
    auto want = static_cast<size_t>(
        std::min<uint64_t>(body_chunk * 4, size - static_cast<uint64_t>(at)));
    auto n = ::sendfile(sock, file, &at, want);
    if (n > 0)
      continue;
    if (n == 0)
      return failure{exit_usage, "the file shrank while it was read", {}};
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN) {
      pollfd p{sock, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if ((errno == EINVAL || errno == ENOSYS) && at == 0)
      return uint64_t{0};
    if (errno == EPIPE || errno == ECONNRESET)
      return static_cast<uint64_t>(at);
    return failure{exit_usage, std::strerror(errno), {}};
  }
  return static_cast<uint64_t>(at);
}

} // namespace

result<http_reply> client::put_file(const std::string& target,
                                    const std::string& path,
                                    const std::string& content_type) {
  boost::system::error_code ec;
  boost::beast::file file;
  file.open(path.c_str(), boost::beast::file_mode::scan, ec);
  uint64_t size = ec ? 0 : file.size(ec);
  if (ec)
    return failure{exit_usage, "cannot read " + path + ": " + ec.message(), {}};
  // Its own connection: a refused upload closes it.
  asio::io_context io;
  tcp::socket socket{io};
  if (auto err = connect(socket, io, where_))
    return unreachable(err.message());
  bhttp::request<bhttp::buffer_body> req{bhttp::verb::put, target, 11};
  req.set(bhttp::field::host, where_.host);
  req.set(bhttp::field::user_agent, "alloxctl");
  req.set(bhttp::field::content_type, content_type);
  if (!token_.empty())
    req.set(bhttp::field::authorization, "Bearer " + token_);
  req.content_length(size);
  req.body().data = nullptr;
  req.body().more = true;
  bhttp::request_serializer<bhttp::buffer_body> sr{req};
  bhttp::write_header(socket, sr, ec);
  uint64_t sent = 0;
  if (!ec && size > 0) {
    auto moved = send_body(file.native_handle(), socket.native_handle(), size);
    if (!moved)
      return failure{
          exit_usage, "cannot read " + path + ": " + moved.error().message, {}};
    // Short of the size only when the socket failed (a refusal closes the
    // connection; the reply below says why) or sendfile could not start.
    sent = *moved > 0 ? size : 0;
  }
  std::vector<char> chunk(body_chunk);
  while (!ec && sent < size) {
    auto n = file.read(
        chunk.data(),
        static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - sent)), ec);
    if (ec)
      return failure{
          exit_usage, "cannot read " + path + ": " + ec.message(), {}};
    if (n == 0)
      return failure{exit_usage, path + " shrank while it was read", {}};
    sent += n;
    req.body().data = chunk.data();
    req.body().size = n;
    req.body().more = sent < size;
    bhttp::write(socket, sr, ec);
    if (ec == bhttp::error::need_buffer)
      ec = {};
  }
  if (!ec && size == 0) {
    req.body().data = nullptr;
    req.body().more = false;
    bhttp::write(socket, sr, ec);
  }
  // A refusal may come before the whole body went: read it anyway.
  boost::beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  bhttp::read(socket, buffer, parser, ec);
  if (!parser.is_done())
    return unreachable(ec ? ec.message() : "no reply to the upload");
  auto res = parser.release();
  return reply_of(res, std::move(res.body()));
}

result<http_reply> client::get_file(const std::string& target,
                                    const std::string& path) {
  asio::io_context io;
  tcp::socket socket{io};
  if (auto ec = connect(socket, io, where_))
    return unreachable(ec.message());
  auto req = make_request("GET", target, where_.host, token_);
  boost::system::error_code ec;
  bhttp::write(socket, req, ec);
  boost::beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::empty_body> head;
  head.body_limit(boost::none);
  if (!ec)
    bhttp::read_header(socket, buffer, head, ec);
  if (ec)
    return unreachable(ec.message());
  if (head.get().result_int() != 200) {
    bhttp::response_parser<bhttp::string_body> rest{std::move(head)};
    bhttp::read(socket, buffer, rest, ec);
    auto res = rest.release();
    return reply_of(res, std::move(res.body()));
  }
  boost::beast::file file;
  file.open(path.c_str(), boost::beast::file_mode::write, ec);
  if (ec)
    return failure{
        exit_usage, "cannot write " + path + ": " + ec.message(), {}};
  if (auto length = head.content_length(); length && !head.chunked()) {
    // What came with the head, then the rest straight from the socket.
    auto early = std::min<uint64_t>(buffer.size(), *length);
    if (early > 0)
      file.write(buffer.data().data(), static_cast<size_t>(early), ec);
    if (ec)
      return failure{
          exit_usage, "cannot write " + path + ": " + ec.message(), {}};
    auto err = receive_body(socket.native_handle(), file.native_handle(),
                            *length - early);
    if (err.first)
      return failure{
          exit_usage, "cannot write " + path + ": " + err.second, {}};
    if (!err.second.empty())
      return unreachable("the download was cut off: " + err.second);
    return reply_of(head.get(), {});
  }
  bhttp::response_parser<bhttp::buffer_body> body{std::move(head)};
  body.body_limit(boost::none);
  // Reads of up to 64 KiB (Beast's limit per read), not of the header's
  // 512 bytes.
  buffer.reserve(64 * 1024);
  std::vector<char> chunk(body_chunk);
  while (!body.is_done()) {
    body.get().body().data = chunk.data();
    body.get().body().size = chunk.size();
    bhttp::read(socket, buffer, body, ec);
    if (ec == bhttp::error::need_buffer)
      ec = {};
    if (ec)
      break;
    auto n = chunk.size() - body.get().body().size;
    if (n > 0)
      file.write(chunk.data(), n, ec);
    if (ec)
      return failure{
          exit_usage, "cannot write " + path + ": " + ec.message(), {}};
  }
  if (ec || !body.is_done())
    return unreachable("the download was cut off" +
                       (ec ? ": " + ec.message() : std::string{}));
  auto res = body.release();
  return reply_of(res, {});
}

failure daemon_failure(const std::string& action, const http_reply& reply) {
  boost::system::error_code ec;
  auto doc = json::parse(reply.body, ec);
  const json::object* o = !ec && doc.is_object() ? &doc.as_object() : nullptr;
  const json::value* error = o ? o->if_contains("error") : nullptr;
  const json::value* code = o ? o->if_contains("code") : nullptr;
  if (error == nullptr || !error->is_string())
    return {exit_unreachable,
            "unexpected reply to " + action + " (HTTP " +
                std::to_string(reply.status) + "): not an Allox OS daemon?",
            {}};
  failure f{exit_daemon_error, std::string{error->get_string()},
            code && code->is_string() ? std::string{code->get_string()} : ""};
  // Every daemon answers an action it does not route with this message
  // (actors/rpc.cpp); an older daemon lacks newer actions.
  if (f.code == "invalid_argument" &&
      f.message.rfind("unknown action: ", 0) == 0) {
    f.exit = exit_unsupported;
    f.message = action + " is not supported by this daemon";
    f.code.clear(); // invalid_argument would blame the caller
  }
  return f;
}

result<json::value> client::rpc(const std::string& action,
                                const json::object& params) {
  json::object body{{"action", action}, {"params", params}};
  auto reply = send("POST", "/v1/rpc", json::serialize(body));
  if (!reply)
    return reply.error();
  boost::system::error_code ec;
  auto doc = json::parse(reply->body, ec);
  if (!ec && doc.is_object()) {
    auto& o = doc.as_object();
    if (auto* okv = o.if_contains("ok"); okv && *okv == true) {
      auto* r = o.if_contains("result");
      return r ? std::move(*r) : json::value{};
    }
  }
  return daemon_failure(action, *reply);
}

namespace {

/// Splits a buffer of SSE text into events; keeps an incomplete tail.
template <class F>
bool drain_events(std::string& pending, F&& on_event) {
  for (;;) {
    auto end = pending.find("\n\n");
    if (end == std::string::npos)
      return true;
    std::string block = pending.substr(0, end);
    pending.erase(0, end + 2);
    sse_event ev;
    size_t pos = 0;
    bool any = false;
    while (pos <= block.size()) {
      auto nl = block.find('\n', pos);
      auto line = block.substr(pos, nl == std::string::npos ? std::string::npos
                                                            : nl - pos);
      pos = nl == std::string::npos ? block.size() + 1 : nl + 1;
      if (line.empty() || line.front() == ':')
        continue; // a heartbeat comment
      auto colon = line.find(':');
      auto field = line.substr(0, colon);
      std::string value;
      if (colon != std::string::npos) {
        value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ')
          value.erase(0, 1);
      }
      any = true;
      if (field == "event")
        ev.event = value;
      else if (field == "data")
        ev.data += ev.data.empty() ? value : "\n" + value;
      else if (field == "id")
        ev.id = value;
    }
    if (any && !on_event(ev))
      return false;
  }
}

} // namespace

result<bool>
client::stream(const std::string& target,
               const std::map<std::string, std::string>& headers,
               const std::function<bool(const sse_event&)>& on_event,
               const volatile std::sig_atomic_t* interrupt) {
  asio::io_context io;
  tcp::socket socket{io};
  if (auto ec = connect(socket, io, where_))
    return unreachable(ec.message());
  auto req = make_request("GET", target, where_.host, token_);
  req.set(bhttp::field::accept, "text/event-stream");
  for (const auto& [k, v] : headers)
    req.set(k, v);
  boost::system::error_code ec;
  bhttp::write(socket, req, ec);
  if (ec)
    return unreachable(ec.message());
  // The head through Beast; the body, which lasts as long as the run, by
  // hand, so that Ctrl-C is noticed while nothing arrives.
  boost::beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::empty_body> head;
  bhttp::read_header(socket, buffer, head, ec);
  if (ec)
    return unreachable(ec.message());
  std::string pending{static_cast<const char*>(buffer.data().data()),
                      buffer.size()};
  auto code = head.get().result_int();
  int fd = socket.native_handle();
  char chunk[64 << 10];
  bool keep_going = true;
  if (code == 200)
    keep_going = drain_events(pending, on_event);
  while (keep_going) {
    if (interrupt != nullptr && *interrupt != 0)
      return false;
    pollfd pfd{fd, POLLIN, 0};
    int n = ::poll(&pfd, 1, 200);
    if (n < 0 && errno != EINTR)
      return unreachable(std::strerror(errno));
    if (n <= 0)
      continue;
    auto got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return unreachable(std::strerror(errno));
    }
    if (got == 0)
      break; // the daemon closed the stream
    pending.append(chunk, static_cast<size_t>(got));
    if (code == 200)
      keep_going = drain_events(pending, on_event);
  }
  if (code != 200) {
    http_reply reply;
    reply.status = static_cast<int>(code);
    reply.body = std::move(pending);
    return daemon_failure("the live stream", reply);
  }
  return keep_going;
}

} // namespace allox::ctl
