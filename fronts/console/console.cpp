// SPDX-License-Identifier: Apache-2.0
#include "fronts/console/console.hpp"

#include <string_view>

namespace allox::assets {
/// The page (generated from fronts/console/console.html).
std::string_view console_html();
} // namespace allox::assets

namespace allox::fronts {

void serve_console(http::server& srv) {
  auto page = [](const http::route_request&, http::responder answer) {
    answer({200,
            "text/html; charset=utf-8",
            std::string{assets::console_html()},
            {}});
  };
  for (const char* path : {"/ui", "/ui/"})
    srv.add_route({boost::beast::http::verb::get, path,
                   http::route_match::exact, http::route_access::open, page});
}

} // namespace allox::fronts
