# Compiler false positives, silenced one file at a time (never for the whole tree), each with
# its reason. Included by the top-level CMakeLists.txt after every target exists. The other
# known one, GCC 12's '__Y' warnings inside avx512fintrin.h, is silenced around the #include
# itself in kernels/core/simd.h, which is narrower than a file.

# blocktune_silence_gcc(<target> <source> <flag>...): append -Wno-<flag> for GCC to one source of
# one target. Sources are given relative to the project root.
function(blocktune_silence_gcc target source)
  if(NOT TARGET ${target} OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  foreach(flag ${ARGN})
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/${source} TARGET_DIRECTORY ${target}
                 APPEND PROPERTY COMPILE_OPTIONS -Wno-${flag})
  endforeach()
endfunction()

# GCC 12 bug 105329 (fixed in 12.3/13): `"literal" + std::string(...)` becomes
# std::string::insert(0, ...), and after inlining -Wrestrict claims a memcpy of
# 9223372036854775810 or more bytes "may overlap" inside char_traits.h. The sizes are the
# strings' lengths, which cannot be near 2^63; the files below are the ones where GCC's inliner
# happens to reach that path (one error message each). kernels/bench/fused_cross_entropy_bench.cc
# silences the same warning with a pragma of its own, as tests/tuner/search_test_util.h and
# auto_test.cc do around their helpers (a pragma keeps those sources in their unity batch).
blocktune_silence_gcc(blocktune_kernels kernels/core/config.cc restrict)           # NamedInts::Parse
