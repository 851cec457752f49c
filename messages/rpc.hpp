// The contract between the HTTP front end and the RPC actor.
#pragma once

#include <cstdint>
#include <string>

namespace allox {

/// A finished response for the request identified by `ticket`.
struct rpc_reply {
  uint64_t ticket = 0;
  int status = 200;
  std::string body;
};

/// Where the RPC actor delivers replies; implemented by the HTTP server.
/// `post` is called from actor threads and must be thread-safe.
class reply_channel {
public:
  virtual ~reply_channel() = default;
  virtual void post(rpc_reply reply) = 0;
};

/// Encodes the envelope `{"ok":true,"result":...}` around serialized JSON.
std::string ok_body(const std::string& result_json);

/// Encodes `{"ok":false,"error":...,"code":...}`.
std::string error_body(std::string_view message, std::string_view code);

} // namespace allox
