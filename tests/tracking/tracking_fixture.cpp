// SPDX-License-Identifier: Apache-2.0
#include "tests/tracking/tracking_fixture.hpp"

#include "guest/os/cgroup.hpp"
#include "guest/os/mountinfo.hpp"
#include "messages/ids.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

namespace allox::test {

std::string tracking_helper() {
  return ALLOX_TRACKING_HELPER_PATH;
}

scratch_cgroup::scratch_cgroup() {
  auto mounts = os::read_mountinfo();
  REQUIRE(mounts);
  auto* v2 = os::find_cgroup2(*mounts);
  REQUIRE(v2 != nullptr);
  path_ = v2->mount_point + "/allox-track-" + random_hex_token();
  REQUIRE_FALSE(os::prepare_group(path_));
  auto fd = os::open_group(path_);
  REQUIRE(fd);
  fd_ = std::move(*fd);
  auto id = bpf::cgroup_id(path_);
  REQUIRE(id);
  id_ = *id;
  devnull_.reset(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  REQUIRE(devnull_);
}

scratch_cgroup::~scratch_cgroup() {
  (void)os::kill_group(path_);
  (void)os::wait_empty(path_, 5000);
  os::remove_group(path_);
}

sandbox::child scratch_cgroup::start(const std::vector<std::string>& argv) {
  auto c = sandbox::spawn_in_cgroup(fd_.get(), argv, -1, devnull_.get(),
                                    devnull_.get());
  REQUIRE(c);
  return std::move(*c);
}

int scratch_cgroup::run(const std::vector<std::string>& argv) {
  auto c = start(argv);
  return sandbox::wait_child(c);
}

bool scratch_cgroup::wait_empty(std::chrono::milliseconds timeout) {
  return os::wait_empty(path_, static_cast<int>(timeout.count()));
}

std::vector<std::string> shell(const std::string& script) {
  return {"/bin/sh", "-c", script};
}

collector::collector(bpf::probe_options opts, tracking::reader_options ropts,
                     bool start) {
  auto probe = bpf::process_probe::open(std::move(opts));
  REQUIRE_MESSAGE(probe, (probe ? "" : message_of(probe.error())));
  probe_ = std::move(*probe);
  if (start)
    start_reader(std::move(ropts));
}

collector::~collector() {
  if (reader_)
    reader_->stop();
}

void collector::start_reader(tracking::reader_options ropts) {
  auto reader = tracking::ring_reader::start(
      *probe_,
      [this](tracking::event_batch batch) {
        std::lock_guard<std::mutex> guard{mtx_};
        for (auto& e : batch.events)
          events_.push_back(std::move(e));
        last_ = batch.counters;
        boot_id_ = batch.boot_id;
        ++batches_;
      },
      nullptr, std::move(ropts));
  REQUIRE(reader);
  reader_ = std::move(*reader);
}

std::vector<tracking::process_event> collector::of(uint64_t cookie) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<tracking::process_event> out;
  for (const auto& e : events_)
    if (tracking::header_of(e).cookie == cookie &&
        tracking::is_process_event(e))
      out.push_back(e);
  return out;
}

std::vector<tracking::process_event> collector::all() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<tracking::process_event> out;
  for (const auto& e : events_)
    if (tracking::is_process_event(e))
      out.push_back(e);
  return out;
}

std::vector<tracking::write_event> collector::writes(uint64_t cookie) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<tracking::write_event> out;
  for (const auto& e : events_)
    if (const auto* w = std::get_if<tracking::write_event>(&e);
        w != nullptr && (cookie == 0 || w->hdr.cookie == cookie))
      out.push_back(*w);
  return out;
}

std::vector<tracking::write_path_event>
collector::write_paths(uint64_t cookie) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<tracking::write_path_event> out;
  for (const auto& e : events_)
    if (const auto* w = std::get_if<tracking::write_path_event>(&e);
        w != nullptr && (cookie == 0 || w->hdr.cookie == cookie))
      out.push_back(*w);
  return out;
}

tracking::reader_counters collector::last_counters() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return last_;
}

size_t collector::batches() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return batches_;
}

bool collector::drain(uint64_t cookie, scratch_cgroup& group,
                      std::chrono::milliseconds timeout) {
  auto started = std::chrono::steady_clock::now();
  if (!group.wait_empty(timeout))
    return false;
  auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - started);
  return eventually(
      [&] {
        auto c = probe_->counters(cookie);
        return c && of(cookie).size() == c->produced &&
               writes(cookie).size() + write_paths(cookie).size() +
                       c->writes_lost ==
                   c->write_sequences;
      },
      std::max(left, std::chrono::milliseconds{100}));
}

} // namespace allox::test
