// SPDX-License-Identifier: Apache-2.0
// Commands of a session's share facet (share.*, session-to-session
// sharing): one struct per RPC action, decoded once by the RPC actor and
// answered by the SESSION's handler for that type. In each, `session` is
// the caller: over the management RPC its agent_id/session_id, over the
// in-guest event endpoint the session the calling process belongs to.
// list, read and write name a target session; the caller's SESSION hands
// them to the target's as a share_access (actors/session/share.cpp).
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/share.hpp"

#include <caf/meta/type_name.hpp>

#include <string>

namespace allox::cmd {

/// share.status: the caller's policy.
struct share_status {
  static inline const char* name = "share.status";
  static share_status decode(params::reader& r);
  using reply = share_view;
  session_ref session;
};

/// share.enable {scope?, permission?, origin?}: opts the caller in.
struct share_enable {
  static inline const char* name = "share.enable";
  static share_enable decode(params::reader& r);
  using reply = share_view;
  session_ref session;
  /// A share path ("." for all of current/), checked by decode.
  std::string scope = ".";
  /// "read" or "write".
  std::string permission = "read";
  std::string origin;
};

/// share.disable {origin?}: opts the caller out (scope and permission
/// are kept).
struct share_disable {
  static inline const char* name = "share.disable";
  static share_disable decode(params::reader& r);
  using reply = share_view;
  session_ref session;
  std::string origin;
};

/// share.list {target_agent_id, target_session_id, path?}.
struct share_list {
  static inline const char* name = "share.list";
  static share_list decode(params::reader& r);
  using reply = share_listing;
  session_ref session;
  session_ref target;
  /// As the caller sent it ("." when absent); checked by the target.
  std::string path = ".";
};

/// share.read {target_agent_id, target_session_id, path}.
struct share_read {
  static inline const char* name = "share.read";
  static share_read decode(params::reader& r);
  using reply = share_content;
  session_ref session;
  session_ref target;
  std::string path;
};

/// share.write {target_agent_id, target_session_id, path, data_base64}.
struct share_write {
  static inline const char* name = "share.write";
  static share_write decode(params::reader& r);
  using reply = share_written;
  session_ref session;
  session_ref target;
  std::string path;
  /// As sent; the target decodes it (strict base64, at most 256 KiB).
  std::string data_base64;
};

/// What share.list/read/write become at the target: sent by the caller's
/// SESSION (once the caller's own policy allowed it) to the target's,
/// which checks its own policy, resolves the path and audits the attempt.
struct share_access {
  static inline const char* name = "share.access";
  using reply = share_answer;
  /// The target (this session).
  session_ref session;
  session_ref caller;
  share_op op = share_op::list;
  std::string path;
  std::string data_base64;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_status& x) {
  return f(caf::meta::type_name("share_status"), x.session);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_enable& x) {
  return f(caf::meta::type_name("share_enable"), x.session, x.scope,
           x.permission, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_disable& x) {
  return f(caf::meta::type_name("share_disable"), x.session, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_list& x) {
  return f(caf::meta::type_name("share_list"), x.session, x.target, x.path);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_read& x) {
  return f(caf::meta::type_name("share_read"), x.session, x.target, x.path);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_write& x) {
  return f(caf::meta::type_name("share_write"), x.session, x.target, x.path,
           x.data_base64);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, share_access& x) {
  return f(caf::meta::type_name("share_access"), x.session, x.caller, x.op,
           x.path, x.data_base64);
}

} // namespace allox::cmd
