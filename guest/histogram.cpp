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

json::value latency_histogram::to_json() const {
  json::array counts;
  for (auto c : counts_)
    counts.emplace_back(c);
  return json::object{{"counts", std::move(counts)},
                      {"sum", sum_},
                      {"count", count_}};
}

std::optional<latency_histogram>
latency_histogram::from_json(const json::value& v) {
  auto* o = v.if_object();
  if (!o)
    return std::nullopt;
  auto* counts = o->if_contains("counts");
  auto* sum = o->if_contains("sum");
  if (!counts || !counts->is_array() || !sum || !sum->is_number() ||
      counts->as_array().size() != bounds.size() + 1)
    return std::nullopt;
  latency_histogram h;
  for (size_t i = 0; i < h.counts_.size(); ++i) {
    const auto& c = counts->as_array()[i];
    if (!c.is_number())
      return std::nullopt;
    h.counts_[i] = c.to_number<uint64_t>();
    h.count_ += h.counts_[i];
  }
  h.sum_ = sum->to_number<double>();
  return h;
}

} // namespace allox
