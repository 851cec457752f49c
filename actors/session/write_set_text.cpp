// SPDX-License-Identifier: Apache-2.0
// A sealed interval as the catalog keeps it (write_sets.hpp: encode and
// decode_write_interval). Written on the session's thread before a
// checkpoint answers, so it is built as text directly, without a JSON
// document: each writer once in a table, each inode as a flat array of
// (writer, ops) pairs. A thousand changed files by one process are some
// 30 KB. Times within the interval are not kept: they only place records
// that arrive while it is the last one sealed.
//
//   {"version":1, "lost":N, "partial":B,
//    "writers":[{"run_id","process_id","pid","action","origin"}...],
//    "inodes":[[ino, writer, ops, writer, ops...]...],
//    "names":[{"subvol","dir_ino","path","absolute","subtree","writer",
//              "ops"}...],
//    "commands":{run:[argv...]}, "exes":{process:program}}
#include "actors/session/write_sets.hpp"

#include "messages/json.hpp"
#include "messages/utf8.hpp"

#include <charconv>
#include <tuple>

namespace allox {

namespace {

constexpr int64_t body_version = 1;

/// Appends JSON text without building a document.
class text_writer {
public:
  std::string out;

  void raw(std::string_view s) { out.append(s); }

  void number(uint64_t n) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, n);
    out.append(buf, r.ptr);
  }

  void boolean(bool b) { out.append(b ? "true" : "false"); }

  /// A string, made valid UTF-8 first (a path is bytes).
  void string(std::string_view s) {
    auto text = valid_utf8(s);
    out.push_back('"');
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(static_cast<char>(c));
      } else if (c < 0x20) {
        static const char hex[] = "0123456789abcdef";
        out.append("\\u00");
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    out.push_back('"');
  }

  /// `"key":`, after a comma unless first.
  void key(std::string_view k, bool& first) {
    if (!first)
      out.push_back(',');
    first = false;
    string(k);
    out.push_back(':');
  }
};

using writer_key =
    std::tuple<std::string, std::string, uint32_t, std::string, std::string>;

writer_key key_of(const file_writer& w) {
  return {w.run_id, w.process_id, w.pid, w.action, w.origin};
}

/// Reads what encode wrote; `ok` turns false at the first field missing
/// or of the wrong type.
struct body_reader {
  bool ok = true;

  uint64_t number(const json::value* v) {
    if (v != nullptr && v->is_uint64())
      return v->as_uint64();
    if (v != nullptr && v->is_int64() && v->as_int64() >= 0)
      return static_cast<uint64_t>(v->as_int64());
    ok = false;
    return 0;
  }

  uint64_t number(const json::object& o, const char* key) {
    return number(o.if_contains(key));
  }

  std::string text(const json::object& o, const char* key, bool required) {
    const auto* v = o.if_contains(key);
    if (v != nullptr && v->is_string())
      return std::string{v->as_string()};
    if (required || v != nullptr)
      ok = false;
    return {};
  }

  bool flag(const json::object& o, const char* key) {
    const auto* v = o.if_contains(key);
    return v != nullptr && v->is_bool() && v->as_bool();
  }

  const json::object& object(const json::value& v) {
    static const json::object none;
    if (v.is_object())
      return v.as_object();
    ok = false;
    return none;
  }

  const json::array& array(const json::value* v) {
    static const json::array none;
    if (v != nullptr && v->is_array())
      return v->as_array();
    ok = false;
    return none;
  }
};

} // namespace

std::string encode(const write_interval& i) {
  std::map<writer_key, uint64_t> index;
  std::vector<const file_writer*> table;
  // Runs of changes by one process are the rule: the previous writer is
  // compared first, without building a key.
  const file_writer* last = nullptr;
  uint64_t last_index = 0;
  auto writer = [&](const file_writer& w) {
    if (last != nullptr && last->process_id == w.process_id &&
        last->run_id == w.run_id && last->pid == w.pid &&
        last->action == w.action && last->origin == w.origin)
      return last_index;
    auto [it, added] = index.emplace(key_of(w), table.size());
    if (added)
      table.push_back(&w);
    last = &w;
    last_index = it->second;
    return last_index;
  };
  text_writer t;
  t.out.reserve(64 + 24 * i.by_inode.size() + 96 * i.by_name.size());
  text_writer inodes;
  inodes.raw("[");
  bool first_inode = true;
  for (const auto& [ino, writers] : i.by_inode) {
    inodes.raw(first_inode ? "[" : ",[");
    first_inode = false;
    inodes.number(ino);
    for (const auto& w : writers) {
      inodes.raw(",");
      inodes.number(writer(w));
      inodes.raw(",");
      inodes.number(w.ops);
    }
    inodes.raw("]");
  }
  inodes.raw("]");
  text_writer names;
  names.raw("[");
  bool first_name = true;
  for (const auto& c : i.by_name) {
    names.raw(first_name ? "{" : ",{");
    first_name = false;
    bool f = true;
    names.key("subvol", f);
    names.number(c.subvol);
    names.key("dir_ino", f);
    names.number(c.dir_ino);
    names.key("path", f);
    names.string(c.path);
    names.key("absolute", f);
    names.boolean(c.absolute);
    names.key("subtree", f);
    names.boolean(c.subtree);
    names.key("writer", f);
    names.number(writer(c.writer));
    names.key("ops", f);
    names.number(c.writer.ops);
    names.raw("}");
  }
  names.raw("]");
  bool f = true;
  t.raw("{");
  t.key("version", f);
  t.number(body_version);
  t.key("lost", f);
  t.number(i.lost);
  t.key("partial", f);
  t.boolean(i.partial);
  t.key("writers", f);
  t.raw("[");
  for (size_t k = 0; k < table.size(); ++k) {
    const auto& w = *table[k];
    t.raw(k == 0 ? "{" : ",{");
    bool wf = true;
    t.key("pid", wf);
    t.number(w.pid);
    for (auto [name, value] :
         {std::pair{"run_id", &w.run_id},
          std::pair{"process_id", &w.process_id},
          std::pair{"action", &w.action}, std::pair{"origin", &w.origin}})
      if (!value->empty()) {
        t.key(name, wf);
        t.string(*value);
      }
    t.raw("}");
  }
  t.raw("]");
  t.key("inodes", f);
  t.raw(inodes.out);
  t.key("names", f);
  t.raw(names.out);
  t.key("commands", f);
  t.raw("{");
  bool cf = true;
  for (const auto& [run, argv] : i.commands) {
    t.key(run, cf);
    t.raw("[");
    for (size_t k = 0; k < argv.size(); ++k) {
      if (k > 0)
        t.raw(",");
      t.string(argv[k]);
    }
    t.raw("]");
  }
  t.raw("}");
  t.key("exes", f);
  t.raw("{");
  bool ef = true;
  for (const auto& [process, exe] : i.exes) {
    t.key(process, ef);
    t.string(exe);
  }
  t.raw("}}");
  return std::move(t.out);
}

expected<write_interval> decode_write_interval(const std::string& body) {
  auto bad = [](const std::string& why) {
    return make_error(errc::invalid_argument, "bad write set: " + why);
  };
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object())
    return bad("not a JSON object");
  const auto& o = v.as_object();
  body_reader r;
  if (r.number(o, "version") != body_version)
    return bad("unknown version");
  write_interval out;
  out.lost = r.number(o, "lost");
  out.partial = r.flag(o, "partial");
  std::vector<file_writer> table;
  for (const auto& e : r.array(o.if_contains("writers"))) {
    const auto& x = r.object(e);
    file_writer w;
    w.pid = static_cast<uint32_t>(r.number(x, "pid"));
    w.run_id = r.text(x, "run_id", false);
    w.process_id = r.text(x, "process_id", false);
    w.action = r.text(x, "action", false);
    w.origin = r.text(x, "origin", false);
    table.push_back(std::move(w));
  }
  auto writer = [&](uint64_t k, uint64_t ops) {
    if (k >= table.size()) {
      r.ok = false;
      return file_writer{};
    }
    auto w = table[k];
    w.ops = static_cast<uint32_t>(ops);
    return w;
  };
  for (const auto& e : r.array(o.if_contains("inodes"))) {
    const auto& a = r.array(&e);
    if (a.empty() || a.size() % 2 != 1) {
      r.ok = false;
      break;
    }
    auto ino = r.number(&a[0]);
    for (size_t k = 1; k + 1 < a.size(); k += 2)
      out.add(ino, writer(r.number(&a[k]), r.number(&a[k + 1])));
  }
  for (const auto& e : r.array(o.if_contains("names"))) {
    const auto& x = r.object(e);
    named_change c;
    c.subvol = r.number(x, "subvol");
    c.dir_ino = r.number(x, "dir_ino");
    c.path = r.text(x, "path", true);
    c.absolute = r.flag(x, "absolute");
    c.subtree = r.flag(x, "subtree");
    c.writer = writer(r.number(x, "writer"), r.number(x, "ops"));
    out.add(c);
  }
  if (const auto* c = o.if_contains("commands"); c != nullptr && c->is_object())
    for (const auto& [run, argv] : c->as_object()) {
      auto& dst = out.commands[std::string{run}];
      if (argv.is_array())
        for (const auto& a : argv.as_array())
          if (a.is_string())
            dst.emplace_back(a.as_string());
    }
  if (const auto* e = o.if_contains("exes"); e != nullptr && e->is_object())
    for (const auto& [process, exe] : e->as_object())
      if (exe.is_string())
        out.exes[std::string{process}] = std::string{exe.as_string()};
  if (!r.ok)
    return bad("a field is missing or of the wrong type");
  return out;
}

} // namespace allox
