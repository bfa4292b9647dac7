# Precompiled headers: the targets whose sources each parse the same large third-party headers
# (nlohmann/json, cpp-httplib, CLI11, spdlog/fmt, GoogleTest) parse them once per target
# instead of once per source. On 2 cores those headers were most of a fresh build's time
# (docs/performance.md#build-time). CMake compiles each target's header into a .gch and passes
# it with -include, so no source changes.
#
# Off by default under ccache (CMAKE_CXX_COMPILER_LAUNCHER=ccache, the developers' builds):
# ccache does not cache a compile that uses a precompiled header unless its sloppiness is
# configured for it, and a warm cache beats the header. deploy/test.sh (CI, a fresh clone
# without ccache) gets it. -DBLOCKTUNE_PCH=ON/OFF decides either way.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
  set(BLOCKTUNE_PCH_DEFAULT OFF)
else()
  set(BLOCKTUNE_PCH_DEFAULT ON)
endif()
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
