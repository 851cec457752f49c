// SPDX-License-Identifier: Apache-2.0
#include "guest/histogram.hpp"

#include <cstdio>

namespace allox {

namespace metrics_text {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string number(uint64_t v) {
  return std::to_string(v);
}

void sample(std::string& out, std::string_view name, std::string_view labels,
            const std::string& value) {
  out.append(name);
  if (!labels.empty())
    out.append("{").append(labels).append("}");
  out.append(" ").append(value).append("\n");
}

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void family(std::string& out, std::string_view name, std::string_view type,
            std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

std::string label(std::string_view k, std::string_view v) {
  return std::string{k} + "=\"" + escape_label(v) + "\"";
}

} // namespace metrics_text

void latency_histogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i])
    ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void latency_histogram::render(std::string& out, std::string_view name,
                               std::string_view labels) const {
  using namespace metrics_text;
  std::string bucket{name};
  bucket += "_bucket";
  std::string prefix{labels};
  if (!prefix.empty())
    prefix += ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts_[i];
    sample(out, bucket, prefix + "le=\"" + number(bounds[i]) + "\"",
           number(cumulative));
  }
  cumulative += counts_.back();
  sample(out, bucket, prefix + "le=\"+Inf\"", number(cumulative));
  sample(out, std::string{name} + "_sum", labels, number(sum_));
  sample(out, std::string{name} + "_count", labels, number(count_));
}

stats_histogram latency_histogram::to_stats() const {
  return {{counts_.begin(), counts_.end()}, sum_, count_};
}

std::optional<latency_histogram>
latency_histogram::from_stats(const stats_histogram& s) {
  latency_histogram h;
  if (s.counts.size() != h.counts_.size())
    return std::nullopt;
  for (size_t i = 0; i < h.counts_.size(); ++i) {
    h.counts_[i] = s.counts[i];
    h.count_ += s.counts[i];
  }
  h.sum_ = s.sum;
  return h;
}

} // namespace allox
