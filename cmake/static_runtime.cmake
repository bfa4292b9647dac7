# The static runtime: build/static/{blocktune,blocktuned,blocktune-worker}, linked from the very
# objects of build/client/blocktune, build/server/blocktuned and blocktune-worker, with every
# library but the C library's family (libc, libm, libpthread, libdl, librt, the loader, the vDSO)
# linked in: libstdc++ and libgcc, SQLite, OpenSSL, zlib and brotli from Debian's static
# archives, and fmt, spdlog, muparser and cpp-httplib, which Debian ships as shared libraries
# only, compiled here from their Debian source packages (deploy/static-deps.sh, pinned in
# deploy/static-deps.lock). They run on a Linux with a recent enough glibc and nothing else
# installed: deploy/wheel.sh packs them into the wheel and the release tarball (docs/install.md).
#
# Only the link differs. Our libraries reach their third-party libraries through the
# blocktune_dep_<name> targets below, which give Debian's shared library to every target except
# one whose property BLOCKTUNE_STATIC_RUNTIME is on: the three static executables, which compile
# nothing. Every object is compiled once with one command line, so the kernel fingerprints
# (cmake/fingerprint.cmake: sources, compiler, CXX flags) are the same, and link flags
# (-static-libstdc++) never reach the compile flags.
#
# Linked in the normal build rather than in a build tree of its own: a second tree compiles all
# ~130 product sources again (~7 min of CPU on this 2-core VM, docs/install.md), relinking costs
# seconds. Included by the top-level CMakeLists.txt before the subdirectories (the dep targets)
# and blocktune_static_runtime_executables() after them.

set(BLOCKTUNE_STATIC_RUNTIME_DEFAULT OFF)
find_program(BLOCKTUNE_DPKG_QUERY dpkg-query)
if(NOT CMAKE_CROSSCOMPILING AND NOT BLOCKTUNE_KERNELS_ONLY AND CMAKE_SYSTEM_NAME STREQUAL "Linux"
   AND BLOCKTUNE_DPKG_QUERY)
  set(BLOCKTUNE_STATIC_RUNTIME_DEFAULT ON)
endif()
option(BLOCKTUNE_STATIC_RUNTIME
       "Also link build/static/{blocktune,blocktuned,blocktune-worker} needing only the C library (the wheel's)"
       ${BLOCKTUNE_STATIC_RUNTIME_DEFAULT})

# Why the static runtime cannot be built here, if it cannot; the ctest e2e_wheel then fails
# with it rather than the whole build (a Debian update of one -dev package must not stop CI).
set(BLOCKTUNE_STATIC_RUNTIME_PROBLEM "")
set(BLOCKTUNE_STATIC_DIR ${PROJECT_BINARY_DIR}/static-deps)
if(BLOCKTUNE_STATIC_RUNTIME)
  execute_process(COMMAND ${PROJECT_SOURCE_DIR}/deploy/static-deps.sh check
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    set(BLOCKTUNE_STATIC_RUNTIME_PROBLEM "${err}")
  endif()
  # Debian's static archives: libsqlite3-dev, libssl-dev, zlib1g-dev, libbrotli-dev.
  foreach(lib sqlite3 ssl crypto z brotlienc brotlidec brotlicommon)
    find_library(BLOCKTUNE_STATIC_LIB_${lib} NAMES lib${lib}.a)
    if(NOT BLOCKTUNE_STATIC_LIB_${lib})
      string(APPEND BLOCKTUNE_STATIC_RUNTIME_PROBLEM "no static archive lib${lib}.a (deploy/install-deps.sh installs it)\n")
    endif()
  endforeach()
  if(BLOCKTUNE_STATIC_RUNTIME_PROBLEM)
    message(WARNING "static runtime not built (ctest e2e_wheel fails with this):\n${BLOCKTUNE_STATIC_RUNTIME_PROBLEM}")
  endif()
endif()
set(BLOCKTUNE_STATIC_RUNTIME_ACTIVE OFF)
if(BLOCKTUNE_STATIC_RUNTIME AND NOT BLOCKTUNE_STATIC_RUNTIME_PROBLEM)
  set(BLOCKTUNE_STATIC_RUNTIME_ACTIVE ON)
endif()

# blocktune_dep(<name> <shared target> <static link item>...): blocktune_dep_<name>.
function(blocktune_dep name shared)
  add_library(blocktune_dep_${name} INTERFACE)
  if(BLOCKTUNE_STATIC_RUNTIME_ACTIVE)
    add_library(blocktune_static_link_${name} INTERFACE)
    target_link_libraries(blocktune_static_link_${name} INTERFACE ${ARGN})
    target_link_libraries(blocktune_dep_${name} INTERFACE
      "$<IF:$<BOOL:$<TARGET_PROPERTY:BLOCKTUNE_STATIC_RUNTIME>>,blocktune_static_link_${name},${shared}>")
  else()
    target_link_libraries(blocktune_dep_${name} INTERFACE ${shared})
  endif()
endfunction()

if(BLOCKTUNE_STATIC_RUNTIME_ACTIVE)
  set(src ${BLOCKTUNE_STATIC_DIR}/src)
  set(fmt_sources ${src}/fmtlib/src/format.cc ${src}/fmtlib/src/os.cc)
  set(spdlog_sources)
  foreach(f spdlog stdout_sinks color_sinks file_sinks async cfg)
    list(APPEND spdlog_sources ${src}/spdlog/src/${f}.cpp)
  endforeach()
  set(muparser_sources)
  foreach(f muParser muParserBase muParserBytecode muParserCallback muParserDLL muParserError muParserInt
            muParserTest muParserTokenReader)
    list(APPEND muparser_sources ${src}/muparser/src/${f}.cpp)
  endforeach()
  set(httplib_sources ${src}/cpp-httplib/split/httplib.cc)
  add_custom_command(
    OUTPUT ${BLOCKTUNE_STATIC_DIR}/fetched.stamp ${fmt_sources} ${spdlog_sources} ${muparser_sources} ${httplib_sources}
    COMMAND ${PROJECT_SOURCE_DIR}/deploy/static-deps.sh fetch ${BLOCKTUNE_STATIC_DIR}
    DEPENDS ${PROJECT_SOURCE_DIR}/deploy/static-deps.sh ${PROJECT_SOURCE_DIR}/deploy/static-deps.lock
    COMMENT "apt-get source of fmt, spdlog, muparser, cpp-httplib (deploy/static-deps.lock)" VERBATIM)

  # Compiled as Debian compiles them (its default C++17, the same definitions as its shared
  # builds, which are what our objects' headers declare), with their warnings off: third-party
  # code under our -Werror. muparser without OpenMP, which only parallelises its bulk Eval (we
  # evaluate one expression at a time): no libgomp.
  function(blocktune_static_library name)
    add_library(blocktune_static_${name} STATIC EXCLUDE_FROM_ALL ${ARGN})
    set_target_properties(blocktune_static_${name} PROPERTIES CXX_STANDARD 17 UNITY_BUILD OFF)
    target_compile_options(blocktune_static_${name} PRIVATE -w)
  endfunction()
  blocktune_static_library(fmt ${fmt_sources})
  target_include_directories(blocktune_static_fmt SYSTEM PRIVATE ${src}/fmtlib/include)
  target_compile_definitions(blocktune_static_fmt PRIVATE FMT_EXPORT)
  blocktune_static_library(spdlog ${spdlog_sources})
  target_include_directories(blocktune_static_spdlog SYSTEM PRIVATE ${src}/spdlog/include ${src}/fmtlib/include)
  target_compile_definitions(blocktune_static_spdlog PRIVATE SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL SPDLOG_SHARED_LIB
                                                             spdlog_EXPORTS FMT_SHARED)
  blocktune_static_library(muparser ${muparser_sources})
  target_include_directories(blocktune_static_muparser SYSTEM PRIVATE ${src}/muparser/include)
  target_compile_definitions(blocktune_static_muparser PRIVATE MUPARSER_DLL MUPARSERLIB_EXPORTS)
  blocktune_static_library(httplib ${httplib_sources})
  target_include_directories(blocktune_static_httplib SYSTEM PRIVATE ${src}/cpp-httplib/split)
  # Debian's flags (libcpp-httplib-dev's pkg-config file and debian/rules' CPPHTTPLIB_USE_POLL).
  target_compile_definitions(blocktune_static_httplib PRIVATE CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT
                                                              CPPHTTPLIB_BROTLI_SUPPORT CPPHTTPLIB_USE_POLL)
  # OpenSSL's libcrypto.a calls dlopen and pthreads: both in the C library's family.
  set(BLOCKTUNE_STATIC_SYSTEM ${CMAKE_DL_LIBS} Threads::Threads m)
endif()

blocktune_dep(sqlite SQLite::SQLite3 ${BLOCKTUNE_STATIC_LIB_sqlite3} ${BLOCKTUNE_STATIC_LIB_z} ${BLOCKTUNE_STATIC_SYSTEM})
blocktune_dep(spdlog spdlog::spdlog blocktune_static_spdlog blocktune_static_fmt ${BLOCKTUNE_STATIC_SYSTEM})
blocktune_dep(muparser muparser::muparser blocktune_static_muparser)
blocktune_dep(httplib PkgConfig::HTTPLIB blocktune_static_httplib
  ${BLOCKTUNE_STATIC_LIB_ssl} ${BLOCKTUNE_STATIC_LIB_crypto} ${BLOCKTUNE_STATIC_LIB_z}
  ${BLOCKTUNE_STATIC_LIB_brotlidec} ${BLOCKTUNE_STATIC_LIB_brotlienc} ${BLOCKTUNE_STATIC_LIB_brotlicommon}
  ${BLOCKTUNE_STATIC_SYSTEM})

# blocktune_static_runtime_executables(<target>...): <target>-static, linking what <target>
# links (its objects come from an OBJECT library it links), written to build/static/ under
# <target>'s name; installed only by `cmake --install build --component static_runtime`.
function(blocktune_static_runtime_executables)
  if(NOT BLOCKTUNE_STATIC_RUNTIME_ACTIVE)
    return()
  endif()
  # The two glibc functions that Debian 12's libstdc++.a and libgcc_eh.a would otherwise need
  # glibc 2.36 and 2.35 for (static_runtime_glibc.cc): the programs need glibc 2.34.
  add_library(blocktune_static_glibc OBJECT ${PROJECT_SOURCE_DIR}/cmake/static_runtime_glibc.cc)
  foreach(target ${ARGN})
    get_target_property(libs ${target} LINK_LIBRARIES)
    get_target_property(name ${target} OUTPUT_NAME)
    if(NOT name)
      set(name ${target})
    endif()
    add_executable(${target}-static)
    target_link_libraries(${target}-static PRIVATE ${libs} blocktune_static_glibc)
    target_link_options(${target}-static PRIVATE -static-libstdc++ -static-libgcc)
    set_target_properties(${target}-static PROPERTIES BLOCKTUNE_STATIC_RUNTIME ON OUTPUT_NAME ${name}
                          RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/static)
    install(TARGETS ${target}-static RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
            COMPONENT static_runtime EXCLUDE_FROM_ALL)
  endforeach()
  # The licences of what they link in (Debian's copyright file of each library's package).
  foreach(pkg libstdc++6 libsqlite3-dev libssl-dev zlib1g-dev libbrotli-dev libfmt-dev libspdlog-dev
              libmuparser-dev libcpp-httplib-dev)
    install(FILES /usr/share/doc/${pkg}/copyright RENAME ${pkg}.copyright
            DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/blocktune/third-party COMPONENT static_runtime EXCLUDE_FROM_ALL)
  endforeach()
  # The worker is found next to the program at run time: build it with them.
  foreach(target ${ARGN})
    get_target_property(deps ${target} MANUALLY_ADDED_DEPENDENCIES)
    foreach(dep ${deps})
      if(TARGET ${dep}-static)
        add_dependencies(${target}-static ${dep}-static)
      endif()
    endforeach()
  endforeach()
endfunction()
