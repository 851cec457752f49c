// SPDX-License-Identifier: Apache-2.0
#include "guest/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace allox::log {

namespace {

std::atomic<level> threshold{level::info};

const char* name(level lvl) {
  switch (lvl) {
  case level::debug:
    return "debug";
  case level::info:
    return "info";
  case level::warn:
    return "warn";
  case level::error:
    return "error";
  }
  return "?";
}

} // namespace

void set_threshold(level lvl) {
  threshold = lvl;
}

void write(level lvl, std::string_view component, std::string_view message) {
  if (lvl < threshold.load(std::memory_order_relaxed))
    return;
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                    now.time_since_epoch())
                    .count() %
                1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[80];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  std::string line;
  line.reserve(64 + message.size());
  line += stamp;
  line += ' ';
  line += name(lvl);
  line += ' ';
  line += component;
  line += ": ";
  line += message;
  line += '\n';
  auto rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

} // namespace allox::log
