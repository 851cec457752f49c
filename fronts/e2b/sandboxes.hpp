// SPDX-License-Identifier: Apache-2.0
// The E2B front's sandboxes: what E2B's control plane knows of a sandbox
// beyond the session it is (its template, metadata, variables, deadline,
// envd access token), the list filters and pages of GET /v2/sandboxes,
// and the JSON E2B's SDK reads. Pure: the front actor owns the table.
#pragma once

#include "fronts/e2b/network.hpp"
#include "fronts/query.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/optional.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace allox::e2b {

/// The envd version the front reports: the SDK gates features on it
/// (0.5.7: streamed octet-stream uploads; later versions add features we
/// do not serve, which the SDK then refuses itself, with a clear error).
inline constexpr std::string_view envd_version = "0.5.7";

/// Where a sandbox user's home (the session's workspace) appears.
inline constexpr std::string_view home = "/home/user";

/// What happens to a sandbox at its deadline.
enum class on_timeout : uint8_t { kill, pause };

/// One sandbox: a session of `agent` whose id is the sandbox id.
struct sandbox {
  std::string id;
  std::string agent;
  std::string template_id = "base";
  /// Metadata as given (string values).
  std::map<std::string, std::string> metadata;
  /// Variables every process of the sandbox starts with.
  std::map<std::string, std::string> envs;
  /// Required as X-Access-Token by envd calls.
  std::string access_token;
  /// Unix milliseconds.
  int64_t started_ms = 0;
  int64_t end_ms = 0;
  on_timeout at_timeout = on_timeout::kill;
  /// A pause at the deadline keeps the processes (autoPauseMemory).
  bool pause_memory = true;
  /// Paused (session.pause): envd refuses it until connect resumes it.
  bool paused = false;
  /// Internet access and egress rules (network.hpp).
  network_request network;
  /// The previous metrics sample (CPU microseconds, Unix ns): CPU use is
  /// the share of wall time between two samples. Not kept across restarts.
  int64_t last_cpu_usec = 0;
  int64_t last_sample_ns = 0;
  /// Being killed (its runs stopped, then its session deleted): envd
  /// and a second kill see it gone already.
  bool ending = false;
};

/// POST /v2/sandboxes, decoded.
struct create_request {
  std::string template_id = "base";
  /// Seconds; E2B's default is 300.
  int64_t timeout_s = 300;
  std::map<std::string, std::string> metadata;
  std::map<std::string, std::string> envs;
  network_request network;
  on_timeout at_timeout = on_timeout::kill;
  bool pause_memory = true;
};

/// Decodes a create body; errors are invalid_argument with the field.
expected<create_request> decode_create(const json::value& body);

/// The longest timeout a sandbox may have (E2B's: a day).
inline constexpr int64_t max_timeout_s = 86400;

/// A timeout in seconds, 1..max_timeout_s.
expected<int64_t> decode_timeout(const json::value& v);

/// The sandbox as the catalog keeps it (the session row's front_record):
/// {"front": "e2b", ...}; it holds the envd access token.
std::string to_record(const sandbox& s);

/// A sandbox from its session's front record; none when the record is
/// another front's or unreadable.
caf::optional<sandbox> from_record(const std::string& agent,
                                   const std::string& id,
                                   const std::string& record);

/// The create (and connect) answer: sandboxID, templateID, envdVersion,
/// envdAccessToken, clientID, alias, domain.
json::object created_json(const sandbox& s);

/// GET /sandboxes/{id}: the detail the SDK's getInfo reads.
json::object detail_json(const sandbox& s);

/// An item of GET /v2/sandboxes (and the v1 list).
json::object listed_json(const sandbox& s);

/// GET /v2/sandboxes's query: metadata pairs that must all match, the
/// states wanted, and the page.
struct list_query {
  std::map<std::string, std::string> metadata;
  /// Empty: both; else "running" and/or "paused".
  std::vector<std::string> states;
  size_t limit = 100;
  /// The last id of the previous page.
  std::string after;
};

/// Decodes the query (the part after '?'); `metadata` is form-encoded
/// pairs whose keys and values are percent-encoded once more.
expected<list_query> decode_list_query(std::string_view query);

/// The page: sandboxes sorted by id after `q.after`, at most `q.limit`;
/// `next` is the token of the page after (empty: none).
std::vector<const sandbox*> list_page(const std::map<std::string, sandbox>& all,
                                      const list_query& q, std::string& next);

/// RFC 3339 in UTC with milliseconds.
std::string rfc3339(int64_t unix_ms);

/// RFC 3339 in UTC with `digits` (1..9) of the second's fraction.
std::string rfc3339_ns(int64_t unix_ns, int digits = 9);

/// E2B's error body {code, message}: the SDK reads the numeric code.
std::string error_body(int status, std::string_view message);

using fronts::percent_decode;

} // namespace allox::e2b
