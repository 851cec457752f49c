// SPDX-License-Identifier: Apache-2.0
// The files facet of the SESSION actor: the workspace's files and bulk
// transfers (files.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- files (files.cpp) --------------------------------------------------------

/// file.stat: one path's type, size, mode and mtime.
caf::result<file_entry> handle(self_ptr self, const cmd::file_stat& c);

/// file.list: a directory's entries, a page at a time.
caf::result<dir_page> handle(self_ptr self, const cmd::file_list& c);

/// file.read: a range of a regular file.
caf::result<read_slice> handle(self_ptr self, const cmd::file_read& c);

/// file.write: replaces or appends to a regular file.
caf::result<write_result> handle(self_ptr self, const cmd::file_write& c);

/// file.mkdir: a directory (and its parents).
caf::result<mkdir_result> handle(self_ptr self, const cmd::file_mkdir& c);

/// file.remove: a file, symlink or directory (tree).
caf::result<remove_result> handle(self_ptr self, const cmd::file_remove& c);

/// file.move: a rename beneath one root, never over an existing path.
caf::result<move_result> handle(self_ptr self, const cmd::file_move& c);

/// file.search: matching lines beneath a directory, bounded.
caf::result<search_result> handle(self_ptr self, const cmd::file_search& c);

/// file.replace: an exact-string edit, if the count matches.
caf::result<replace_result> handle(self_ptr self, const cmd::file_replace& c);

/// Begins a bulk transfer (not while mutating, for uploads) or audits one.
caf::result<transfer_begun> handle(self_ptr self,
                                   const cmd::file_transfer_begin& c);
caf::result<transfer_audited> handle(self_ptr self,
                                     const cmd::file_transfer_end& c);

} // namespace allox::session_facets
