// SPDX-License-Identifier: Apache-2.0
#include "actors/session/write_sets.hpp"

#include "bpf/write_ops.hpp"

#include <algorithm>

namespace allox {

namespace {

void merge(std::vector<file_writer>& writers, const file_writer& w) {
  for (auto& x : writers)
    if (x.process_id == w.process_id && x.run_id == w.run_id &&
        x.action == w.action && x.origin == w.origin) {
      x.ops |= w.ops;
      x.first_ns = std::min(x.first_ns, w.first_ns);
      x.last_ns = std::max(x.last_ns, w.last_ns);
      return;
    }
  writers.push_back(w);
}

} // namespace

void write_interval::add(uint64_t ino, const file_writer& w) {
  merge(by_inode[ino], w);
}

void write_interval::add(const named_change& c) {
  by_name.push_back(c);
}

template <class Add>
void write_sets::place(uint64_t time_ns, Add add) {
  if (!last_.empty() && time_ns <= last_end_ns_)
    if (auto it = sealed_.find(last_); it != sealed_.end())
      add(it->second);
  if (last_.empty() || time_ns >= last_begin_ns_)
    add(live_);
}

void write_sets::add(uint64_t time_ns, uint64_t ino, const file_writer& w) {
  place(time_ns, [&](write_interval& i) { i.add(ino, w); });
}

void write_sets::add(uint64_t time_ns, const named_change& c) {
  place(time_ns, [&](write_interval& i) { i.add(c); });
}

void write_sets::lose(uint64_t count, bool in_last_sealed_too) {
  live_.lost += count;
  if (in_last_sealed_too && !last_.empty())
    if (auto it = sealed_.find(last_); it != sealed_.end())
      it->second.lost += count;
}

void write_sets::seal(const std::string& id, uint64_t begin_ns,
                      uint64_t end_ns) {
  // The live interval becomes the sealed one as a whole (no copy: a
  // checkpoint after thousands of changes answers after this); writers
  // seen since the snapshot began are copied on, and those first seen
  // after it ended leave it.
  write_interval next;
  write_interval& done = sealed_[id];
  done = std::move(live_);
  for (auto it = done.by_inode.begin(); it != done.by_inode.end();) {
    auto& writers = it->second;
    for (auto w = writers.begin(); w != writers.end();) {
      if (w->last_ns >= begin_ns)
        next.add(it->first, *w);
      if (w->first_ns > end_ns)
        w = writers.erase(w);
      else
        ++w;
    }
    it = writers.empty() ? done.by_inode.erase(it) : std::next(it);
  }
  auto names = std::move(done.by_name);
  done.by_name.clear();
  for (auto& c : names) {
    if (c.writer.last_ns >= begin_ns)
      next.add(c);
    if (c.writer.first_ns <= end_ns)
      done.add(std::move(c));
  }
  live_ = std::move(next);
  last_ = id;
  last_begin_ns_ = begin_ns;
  last_end_ns_ = end_ns;
}

void write_sets::restart() {
  live_ = {};
  last_.clear();
  last_begin_ns_ = last_end_ns_ = 0;
}

void write_sets::drop(const std::string& id,
                      const std::vector<std::string>& children) {
  auto it = sealed_.find(id);
  if (it == sealed_.end())
    return;
  for (const auto& child : children) {
    auto c = sealed_.find(child);
    if (c == sealed_.end())
      continue; // not recorded: stays so
    c->second.lost += it->second.lost;
    c->second.partial = c->second.partial || it->second.partial;
    for (const auto& [ino, writers] : it->second.by_inode)
      for (const auto& w : writers)
        c->second.add(ino, w);
    for (const auto& n : it->second.by_name)
      c->second.add(n);
  }
  sealed_.erase(it);
  if (id == last_) {
    last_.clear();
    last_begin_ns_ = last_end_ns_ = 0;
  }
}

const write_interval* write_sets::sealed(const std::string& id) const {
  auto it = sealed_.find(id);
  return it == sealed_.end() ? nullptr : &it->second;
}

write_interval* write_sets::sealed(const std::string& id) {
  auto it = sealed_.find(id);
  return it == sealed_.end() ? nullptr : &it->second;
}

void write_sets::restore(const std::string& id, write_interval i) {
  sealed_.emplace(id, std::move(i));
}

std::vector<std::string> write_op_names(uint32_t ops) {
  std::vector<std::string> out;
  for (uint32_t op = 1; op < ALLOX_WRITE_OPS; ++op)
    if ((ops & (1u << op)) != 0)
      out.emplace_back(bpf::write_op_name(op));
  return out;
}

} // namespace allox
