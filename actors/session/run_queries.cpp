// SPDX-License-Identifier: Apache-2.0
// The queries of the SESSION actor's runs facet: process.get, list, output
// and events, and the live stream's subscription. Runs this actor knows
// are answered from memory; older ones from the catalog's runs table
// through METADATA (no thread per query); log slices are read on the
// session's read lane.
#include "actors/session/handlers.hpp"
#include "guest/os/fs.hpp"
#include "messages/results/runs_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

namespace allox::session_facets {

namespace {

/// A catalog record's row; an unreadable one is an internal error.
expected<run_row> parse_row(const run_record& rec) {
  auto row = run_row_from_text(rec.row);
  if (!row)
    return make_error(errc::internal, "unreadable run row " + rec.run_id +
                                          ": " + message_of(row.error()));
  return row;
}

/// Calls `next(row)` with a run's row: from memory, or from the catalog
/// (checked to belong to this session); errors go to `fail`.
template <class Next>
void with_row(self_ptr self, const std::string& id, Next next, fail_fn fail) {
  if (const auto* row = known_row(self, id)) {
    next(run_row(*row));
    return;
  }
  run_query q;
  q.run_id = id;
  auto a = self->state.agent_id();
  auto s = self->state.session_id();
  query_runs(
      self, std::move(q),
      [next, fail, a, s](run_page& page) mutable {
        if (page.runs.empty())
          return fail(make_error(errc::not_found, "unknown run"));
        const auto& rec = page.runs.front();
        if (rec.agent_id != a || rec.session_id != s)
          return fail(make_error(errc::invalid_argument,
                                 "run does not belong to this Agent/Session"));
        auto row = parse_row(rec);
        if (!row)
          return fail(row.error());
        next(std::move(*row));
      },
      fail);
}

/// Answers a request with f(row) for the run's row.
template <class Reply, class F>
caf::result<Reply> answer_with_row(self_ptr self, const std::string& id, F f) {
  auto rp = self->make_response_promise<Reply>();
  with_row(
      self, id, [rp, f](run_row row) mutable { rp.deliver(f(std::move(row))); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

/// Reads up to `limit` bytes at `offset` of a log into `data`; returns
/// the log's size (0 when it does not exist).
int64_t read_slice(const std::string& path, int64_t offset, int64_t limit,
                   std::string& data) {
  os::unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd)
    return 0;
  struct stat sb {};
  if (::fstat(fd.get(), &sb) != 0)
    return 0;
  if (offset < sb.st_size) {
    data.resize(static_cast<size_t>(std::min(limit, sb.st_size - offset)));
    auto n = ::pread(fd.get(), data.data(), data.size(), offset);
    data.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  return sb.st_size;
}

} // namespace

void row_of(self_ptr self, const std::string& id,
            std::function<void(run_row)> next, fail_fn fail) {
  with_row(self, id, std::move(next), std::move(fail));
}

void row_view_of(self_ptr self, const std::string& id,
                 std::function<void(const run_row&)> next, fail_fn fail) {
  if (const auto* row = known_row(self, id)) {
    next(*row);
    return;
  }
  with_row(
      self, id, [next](run_row row) { next(row); }, std::move(fail));
}

const run_row* known_row(self_ptr self, const std::string& id) {
  auto& runs = self->state.runs.runs;
  auto it = runs.find(id);
  return it == runs.end() ? nullptr : &it->second.row;
}

caf::result<run_row> handle(self_ptr self, const cmd::process_get& c) {
  if (!self->state.runs.config)
    return no_execution();
  if (const auto* row = known_row(self, c.run_id))
    return *row;
  return answer_with_row<run_row>(self, c.run_id,
                                  [](run_row row) { return row; });
}

// The catalog holds every row this actor wrote (METADATA answers after
// committing what was queued before the question), so a page is one
// indexed query, whatever the length of the history.
caf::result<run_list> handle(self_ptr self, const cmd::process_list& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  run_query q;
  q.agent_id = st.agent_id();
  q.session_id = st.session_id();
  q.after = c.cursor;
  q.limit = c.limit;
  auto rp = self->make_response_promise<run_list>();
  run_list list;
  list.agent_id = st.agent_id();
  list.session_id = st.session_id();
  list.paged = c.limit > 0;
  query_runs(
      self, std::move(q),
      [rp, list](run_page& page) mutable {
        for (const auto& rec : page.runs)
          if (auto row = parse_row(rec))
            list.runs.push_back(std::move(*row));
        list.has_more = page.has_more;
        if (!page.runs.empty())
          list.next_cursor = page.runs.back().run_id;
        rp.deliver(std::move(list));
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// A live stream reads the run's logs itself (on the HTTP loop, when
// inotify says they grew); the session only tells it the run's state
// changes, so an idle stream costs nothing here.
caf::result<run_subscription> handle(self_ptr self,
                                     const cmd::process_subscribe& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto cfg = st.runs.config;
  if (auto it = st.runs.runs.find(c.run_id); it != st.runs.runs.end()) {
    if (it->second.active && c.sink)
      it->second.sinks.push_back(c.sink);
    return run_subscription{it->second.row, logs_of(*cfg, it->second.row)};
  }
  return answer_with_row<run_subscription>(self, c.run_id, [cfg](run_row row) {
    auto dir = logs_of(*cfg, row);
    return run_subscription{std::move(row), std::move(dir)};
  });
}

caf::result<output_slice> handle(self_ptr self, const cmd::process_output& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto rp = self->make_response_promise<output_slice>();
  row_view_of(
      self, c.run_id,
      [self, rp, c](const run_row& row) mutable {
        auto dir = logs_of(*self->state.runs.config, row);
        auto phase = row.state;
        read_step<output_slice>(
            self,
            [dir, c, phase]() -> expected<output_slice> {
              output_slice out;
              out.run_id = c.run_id;
              out.stream = c.stream;
              out.offset = c.offset;
              out.size = read_slice(dir + "/" + c.stream + ".log", c.offset,
                                    c.limit, out.data);
              // Removed to make room (guest/store/run_output.hpp): say so,
              // rather than pass for a run that printed nothing.
              out.logs_removed =
                  out.size == 0 && os::kind_of(dir) == os::entry_kind::missing;
              out.next_offset =
                  c.offset + static_cast<int64_t>(out.data.size());
              out.eof = is_final(phase) && out.next_offset >= out.size;
              out.state = phase;
              return out;
            },
            [rp](output_slice& v) mutable { rp.deliver(std::move(v)); },
            [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace allox::session_facets
