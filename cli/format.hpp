// SPDX-License-Identifier: Apache-2.0
// How alloxctl prints: JSON and YAML for scripts (the daemon's result with
// its own keys, so they stay stable), tables and key/value lists for
// people, colour only on a terminal, progress only on a terminal and never
// in json/yaml output.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace allox::ctl {

namespace json = boost::json;

enum class output_format { table, json, yaml };

/// What the current invocation may print.
struct style {
  output_format format = output_format::table;
  /// ANSI colour on stdout (a terminal, NO_COLOR unset).
  bool colour = false;
  /// Progress lines on stderr (a terminal, table output).
  bool progress = false;

  std::string paint(const std::string& text, const char* sgr) const;
  std::string bold(const std::string& t) const { return paint(t, "1"); }
  std::string dim(const std::string& t) const { return paint(t, "2"); }
  std::string green(const std::string& t) const { return paint(t, "32"); }
  std::string yellow(const std::string& t) const { return paint(t, "33"); }
  std::string cyan(const std::string& t) const { return paint(t, "36"); }
  std::string red(const std::string& t) const { return paint(t, "31"); }
};

/// Indented JSON, two spaces, keys in the daemon's order.
std::string pretty_json(const json::value& v);

/// Block-style YAML; strings are quoted whenever YAML would read them as
/// something else.
std::string to_yaml(const json::value& v);

/// A scalar as a table cell: strings bare, null as "-", arrays of scalars
/// joined with ", ", anything else as compact JSON.
std::string cell(const json::value& v);

/// Nanoseconds since the epoch as "YYYY-MM-DD HH:MM:SS" (UTC).
std::string time_text(const json::value& ns);

/// A column: its header and how to get the cell from a row.
struct column {
  std::string header;
  std::function<std::string(const json::object&)> text;
};

/// A column showing `key` with cell().
column col(std::string header, std::string key);
/// A column showing the nanosecond timestamp `key` with time_text().
column time_col(std::string header, std::string key);

/// Rows under bold headers, columns padded to their widest cell.
void print_table(std::ostream& out, const style& st,
                 const std::vector<column>& cols,
                 const std::vector<const json::object*>& rows);

/// An object as aligned "key  value" lines; nested objects flattened with
/// dotted keys.
void print_fields(std::ostream& out, const style& st, const json::object& o);

/// A result in the chosen format; `table` renders the table form.
void print_result(std::ostream& out, const style& st, const json::value& v,
                  const std::function<void()>& table);

/// A line that rewrites itself on stderr while a long operation runs;
/// silent unless the style allows progress. Cleared on destruction.
class progress {
public:
  explicit progress(const style& st) : on_(st.progress) {}
  ~progress() { clear(); }
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  void update(const std::string& text);
  void clear();

private:
  bool on_;
  bool shown_ = false;
};

} // namespace allox::ctl
