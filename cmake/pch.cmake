# Precompiled headers: the targets whose sources each parse the same large third-party headers
# (nlohmann/json, cpp-httplib, CLI11, spdlog/fmt, GoogleTest) parse them once per target
# instead of once per source. CMake compiles each target's header into a .gch and passes it with
# -include, so no source changes.
#
# Off by default (-DBLOCKTUNE_PCH=ON turns it on). Measured on a fresh clone of issue 25's
# branch: with the header included first, GCC 12's inliner takes other paths and -Werror stops
# the build at a false -Warray-bounds in server/token.cc (a std::string moved into a Result,
# "forming offset 32 is out of the bounds [0, 32]"); every such file has to be silenced (with
# blocktune_silence_gcc, cmake/warnings.cmake) before CI can build this way. Under ccache
# (CMAKE_CXX_COMPILER_LAUNCHER, the developers' builds) it stays off in any case: ccache does not
# cache a compile that uses a precompiled header unless its sloppiness is configured for it, and
# a warm cache beats the header.
set(BLOCKTUNE_PCH_DEFAULT OFF)
option(BLOCKTUNE_PCH "Precompile the large third-party headers per target" ${BLOCKTUNE_PCH_DEFAULT})

# The standard library headers nearly every source of ours includes.
set(BLOCKTUNE_PCH_STD <algorithm> <chrono> <cstdint> <expected> <functional> <map> <memory> <optional>
    <string> <string_view> <vector>)

# blocktune_precompile(<target> <header>...): the standard headers above and the given ones.
function(blocktune_precompile target)
  if(BLOCKTUNE_PCH)
    target_precompile_headers(${target} PRIVATE ${BLOCKTUNE_PCH_STD} ${ARGN})
  endif()
endfunction()
