# SPDX-License-Identifier: Apache-2.0
# Finds the C++ Actor Framework as installed by Debian's libcaf-dev, which
# ships neither a CMake package nor a pkg-config file.
#
# Provides CAF::core, CAF::io and CAF::openssl (as requested through
# COMPONENTS) and sets CAF_VERSION from caf/config.hpp.

find_path(CAF_INCLUDE_DIR NAMES caf/config.hpp)

if(CAF_INCLUDE_DIR)
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX MATCH "[0-9]+" _caf_version_number "${_caf_version_line}")
  if(_caf_version_number)
    math(EXPR _caf_major "${_caf_version_number} / 10000")
    math(EXPR _caf_minor "(${_caf_version_number} / 100) % 100")
    math(EXPR _caf_patch "${_caf_version_number} % 100")
    set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
  endif()
endif()

foreach(_caf_component IN LISTS CAF_FIND_COMPONENTS)
  find_library(CAF_${_caf_component}_LIBRARY NAMES caf_${_caf_component})
  if(NOT CAF_${_caf_component}_LIBRARY)
    continue()
  endif()
  set(CAF_${_caf_component}_FOUND TRUE)
  if(NOT TARGET CAF::${_caf_component})
    add_library(CAF::${_caf_component} UNKNOWN IMPORTED)
    set_target_properties(CAF::${_caf_component} PROPERTIES
      IMPORTED_LOCATION "${CAF_${_caf_component}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
    if(NOT _caf_component STREQUAL "core")
      set_property(TARGET CAF::${_caf_component} APPEND PROPERTY
                   INTERFACE_LINK_LIBRARIES CAF::core)
    endif()
  endif()
  mark_as_advanced(CAF_${_caf_component}_LIBRARY)
endforeach()

if(TARGET CAF::core)
  find_package(Threads REQUIRED)
  set_property(TARGET CAF::core APPEND PROPERTY
               INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION
  HANDLE_COMPONENTS)
mark_as_advanced(CAF_INCLUDE_DIR)
