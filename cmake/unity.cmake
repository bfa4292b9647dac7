# Unity builds: which of our targets compile their sources in batches (CMake's UNITY_BUILD, up to
# 8 sources per generated .cxx that #includes them), and why. Included by the top-level
# CMakeLists.txt after every target exists.
#
# Most of a compile of ours is not our code: every source that includes CLI11, nlohmann/json,
# cpp-httplib or spdlog compiles their inline functions and namespace-scope objects again
# (client/service_commands.cc, 26 lines, takes ~5 s; -ftime-report: half of it "opt and
# generate", a third template instantiation). A precompiled header (cmake/pch.cmake) saves
# only the parsing, 0.5-1.3 s of the 5-12 s per source (measured on four sources); a batch
# compiles that shared code once: the 14 sources of client/ took 121 s of CPU one by one
# (fresh-clone build log) and 29 s as one unit.
#
# Not batched: the kernel library, whose compile options and translation units are part of what
# its tuned rows were measured with (cmake/fingerprint.cmake, kernels/CMakeLists.txt), and
# kernels_test, whose files each bring one kernel's names in with `using namespace` (Validate is
# ambiguous in a batch); the tuner library, whose classes hold types of their file's anonymous
# namespace (GCC's -Wsubobject-linkage, an error under -Werror, once the file is included by
# another: tuner/evaluator.cc's Cache).
# A source with its own compile options (cmake/warnings.cmake's silences) is compiled on its
# own, as CMake does for any such source. Sources of one batch share a translation unit, so
# two of them must not define the same name in an anonymous namespace (a redefinition error
# says which); -DBLOCKTUNE_UNITY=OFF compiles every source on its own again, e.g. to check
# that each still includes what it uses.
option(BLOCKTUNE_UNITY "Compile our libraries, executables and tests in unity batches" ON)

set(BLOCKTUNE_UNITY_TARGETS
    # libraries and executables, bottom floor first (docs/design.md#floors)
    blocktune_isolation blocktune_store blocktune_external blocktune_import blocktune_codegen
    blocktune_api blocktune_wire blocktune_server blocktuned_main blocktune_cli
    # tests
    tuner_test store_test codegen_test server_test external_test http_test fault_matrix_test
    fault_worker_test)

if(BLOCKTUNE_UNITY)
  foreach(target ${BLOCKTUNE_UNITY_TARGETS})
    if(TARGET ${target})
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
  endforeach()
endif()
