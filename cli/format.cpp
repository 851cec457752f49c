// SPDX-License-Identifier: Apache-2.0
#include "cli/format.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>

namespace allox::ctl {

std::string style::paint(const std::string& text, const char* sgr) const {
  if (!colour || text.empty())
    return text;
  return std::string{"\033["} + sgr + "m" + text + "\033[0m";
}

namespace {

void pretty(const json::value& v, int indent, std::string& out) {
  auto pad = [&](int n) {
    out.append(static_cast<size_t>(n), ' ');
  };
  if (v.is_object() && !v.get_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& kv : v.get_object()) {
      if (!first)
        out += ",\n";
      first = false;
      pad(indent + 2);
      out += json::serialize(json::string{kv.key()}) + ": ";
      pretty(kv.value(), indent + 2, out);
    }
    out += "\n";
    pad(indent);
    out += "}";
  } else if (v.is_array() && !v.get_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const auto& e : v.get_array()) {
      if (!first)
        out += ",\n";
      first = false;
      pad(indent + 2);
      pretty(e, indent + 2, out);
    }
    out += "\n";
    pad(indent);
    out += "]";
  } else {
    out += json::serialize(v);
  }
}

/// True when YAML reads `s` back as this very string without quotes.
bool plain_yaml(const std::string& s) {
  if (s.empty())
    return false;
  static const char* reserved[] = {"true", "false", "null", "yes", "no",
                                   "on",   "off",   "y",    "n",   "~"};
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const char* r : reserved)
    if (lower == r)
      return false;
  unsigned char first = static_cast<unsigned char>(s.front());
  if (!(std::isalpha(first) || first == '_' || first == '/'))
    return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' ||
          c == '@' || c == '+'))
      return false;
  return true;
}

std::string yaml_scalar(const json::value& v) {
  if (v.is_string()) {
    std::string s{v.get_string()};
    // A JSON string is a valid YAML double-quoted scalar.
    return plain_yaml(s) ? s : json::serialize(v);
  }
  return json::serialize(v);
}

bool compound(const json::value& v) {
  return (v.is_object() && !v.get_object().empty()) ||
         (v.is_array() && !v.get_array().empty());
}

void yaml(const json::value& v, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) {
      out += pad + yaml_scalar(json::string{kv.key()}) + ":";
      if (compound(kv.value())) {
        out += "\n";
        yaml(kv.value(), indent + 2, out);
      } else {
        out += " " +
               (kv.value().is_object()  ? std::string{"{}"}
                : kv.value().is_array() ? std::string{"[]"}
                                        : yaml_scalar(kv.value())) +
               "\n";
      }
    }
  } else if (v.is_array()) {
    for (const auto& e : v.get_array()) {
      if (compound(e)) {
        // "- " then the item indented under it, its first line inline.
        std::string item;
        yaml(e, indent + 2, item);
        out += pad + "- " + item.substr(static_cast<size_t>(indent) + 2);
      } else {
        out += pad + "- " +
               (e.is_object()  ? std::string{"{}"}
                : e.is_array() ? std::string{"[]"}
                               : yaml_scalar(e)) +
               "\n";
      }
    }
  } else {
    out += pad + yaml_scalar(v) + "\n";
  }
}

void flatten(const std::string& prefix, const json::object& o,
             std::vector<std::pair<std::string, std::string>>& rows) {
  for (const auto& kv : o) {
    std::string key = prefix + std::string{kv.key()};
    if (kv.value().is_object() && !kv.value().get_object().empty())
      flatten(key + ".", kv.value().get_object(), rows);
    else
      rows.emplace_back(key, cell(kv.value()));
  }
}

} // namespace

std::string pretty_json(const json::value& v) {
  std::string out;
  pretty(v, 0, out);
  return out + "\n";
}

std::string to_yaml(const json::value& v) {
  if (!compound(v))
    return v.is_object()  ? "{}\n"
           : v.is_array() ? "[]\n"
                          : yaml_scalar(v) + "\n";
  std::string out;
  yaml(v, 0, out);
  return out;
}

std::string cell(const json::value& v) {
  if (v.is_null())
    return "-";
  if (v.is_string())
    return std::string{v.get_string()};
  if (v.is_array()) {
    const auto& a = v.get_array();
    if (a.empty())
      return "-";
    std::string out;
    for (const auto& e : a) {
      if (e.is_object() || e.is_array())
        return json::serialize(v);
      out += (out.empty() ? "" : ", ") + cell(e);
    }
    return out;
  }
  return json::serialize(v);
}

std::string time_text(const json::value& ns) {
  if (!ns.is_number())
    return "-";
  auto secs = static_cast<std::time_t>(ns.to_number<int64_t>() / 1000000000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

column col(std::string header, std::string key) {
  return {std::move(header), [key](const json::object& o) {
            auto* v = o.if_contains(key);
            return v ? cell(*v) : std::string{"-"};
          }};
}

column time_col(std::string header, std::string key) {
  return {std::move(header), [key](const json::object& o) {
            auto* v = o.if_contains(key);
            return v ? time_text(*v) : std::string{"-"};
          }};
}

void print_table(std::ostream& out, const style& st,
                 const std::vector<column>& cols,
                 const std::vector<const json::object*>& rows) {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width;
  for (const auto& c : cols)
    width.push_back(c.header.size());
  for (const auto* r : rows) {
    auto& line = cells.emplace_back();
    for (size_t i = 0; i < cols.size(); ++i) {
      line.push_back(cols[i].text(*r));
      width[i] = std::max(width[i], line.back().size());
    }
  }
  auto emit = [&](const std::vector<std::string>& line, bool head) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      bool last = i + 1 == line.size();
      auto field =
          last ? line[i]
               : line[i] + std::string(width[i] - line[i].size() + 2, ' ');
      text += head ? st.bold(field) : field;
    }
    out << text << "\n";
  };
  std::vector<std::string> heads;
  for (const auto& c : cols)
    heads.push_back(c.header);
  emit(heads, true);
  for (const auto& line : cells)
    emit(line, false);
}

void print_fields(std::ostream& out, const style& st, const json::object& o) {
  std::vector<std::pair<std::string, std::string>> rows;
  flatten("", o, rows);
  size_t width = 0;
  for (const auto& r : rows)
    width = std::max(width, r.first.size());
  for (const auto& [k, v] : rows)
    out << st.bold(k + ":") << std::string(width - k.size() + 2, ' ') << v
        << "\n";
}

void print_result(std::ostream& out, const style& st, const json::value& v,
                  const std::function<void()>& table) {
  switch (st.format) {
  case output_format::json:
    out << pretty_json(v);
    break;
  case output_format::yaml:
    out << to_yaml(v);
    break;
  case output_format::table:
    table();
    break;
  }
}

void progress::update(const std::string& text) {
  if (!on_)
    return;
  std::cerr << "\r\033[K" << text << std::flush;
  shown_ = true;
}

void progress::clear() {
  if (!shown_)
    return;
  std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

} // namespace allox::ctl
