// SPDX-License-Identifier: Apache-2.0
// A latency histogram with fixed bounds, as Prometheus reads them: cheap to
// observe (no allocation), rendered in the text exposition format, and
// reported in their stats by actors that keep one.
#pragma once

#include "messages/stats.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace allox {

class latency_histogram {
public:
  /// Upper bounds of the buckets in seconds; one more bucket (+Inf)
  /// follows.
  static constexpr std::array<double, 14> bounds{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,  0.5,    1,     2.5,  5,     10};

  void observe(double seconds);

  /// Appends `name`_bucket/_sum/_count samples with `labels` (`k="v",...`
  /// or empty).
  void render(std::string& out, std::string_view name,
              std::string_view labels) const;

  /// Its buckets as an actor reports them (system.dump, /metrics).
  stats_histogram to_stats() const;

  /// The histogram to_stats() reported; nothing if the bucket count does
  /// not match these bounds.
  static std::optional<latency_histogram> from_stats(const stats_histogram& s);

  uint64_t count() const { return count_; }

private:
  std::array<uint64_t, bounds.size() + 1> counts_{};
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// Pieces of the exposition format shared by its writers.
namespace metrics_text {

/// A sample value: integers exactly, others with full precision.
std::string number(double v);
std::string number(uint64_t v);

/// `name{labels} value\n`.
void sample(std::string& out, std::string_view name, std::string_view labels,
            const std::string& value);

/// A metric family's HELP and TYPE lines.
void family(std::string& out, std::string_view name, std::string_view type,
            std::string_view help);

/// A label value escaped for the exposition format.
std::string escape_label(std::string_view v);

/// `k="v"`, the value escaped.
std::string label(std::string_view k, std::string_view v);

} // namespace metrics_text

} // namespace allox
