# Kernel fingerprints: one hash per kernel of everything that decides how fast its code runs, so
# a tuned row measured by another build of the kernel can be told apart ("stale"). See
# docs/tables.md#staleness.
#
# A kernel's fingerprint is SHA-256 (first 16 hex digits) over, in this order:
#   - every file of its folder kernels/<name>/ except reference.cc (the test oracle) and spec.cc
#     (parameters, validation, buckets: which configs exist, not how fast one runs), each as its
#     path relative to the source root and the SHA-256 of its CONTENTS, sorted by path; and the
#     same files of every other kernel whose headers those include (grouped_matmul, for one,
#     runs matmul's micro-kernels);
#   - the speed-relevant core files those sources include (kernels/core/simd.h, vec_math.h,
#     parallel.h with parallel.cc, scratch.h, isa_dispatch.h (which ISA's table runs), and what
#     those include among them), likewise;
#   - kernels/CMakeLists.txt (the library's compile options, -O3);
#   - the toolchain line: compiler id and version, target processor, language level, the
#     configured CXX flags and build-type flags, PIC and IPO settings.
# No absolute path, mtime or checkout detail enters it: two clones of one commit, built with the
# same compiler and flags, get the same fingerprints.
#
# Used two ways: included by the top-level CMakeLists.txt (blocktune_write_kernel_fingerprints)
# and as a script, which the ctest fingerprint_change runs on a copy of the tree:
#   cmake -DROOT=<tree> -DTOOLCHAIN_FILE=<build>/generated/blocktune/toolchain.txt [-DKERNEL=matmul] -P cmake/fingerprint.cmake
# prints "<kernel> <fingerprint>" per kernel (or only KERNEL's).

set(BLOCKTUNE_FINGERPRINT_CORE_FILES simd.h vec_math.h parallel.h parallel.cc scratch.h isa_dispatch.h)

# The kernels: folders under kernels/ with a CMakeLists.txt, except core and bench.
function(blocktune_fingerprint_kernels root out)
  file(GLOB dirs LIST_DIRECTORIES true RELATIVE ${root}/kernels ${root}/kernels/*)
  set(names "")
  foreach(d ${dirs})
    if(IS_DIRECTORY ${root}/kernels/${d} AND EXISTS ${root}/kernels/${d}/CMakeLists.txt
       AND NOT d STREQUAL "core" AND NOT d STREQUAL "bench")
      list(APPEND names ${d})
    endif()
  endforeach()
  list(SORT names)
  set(${out} ${names} PARENT_SCOPE)
endfunction()

# The files (relative to root) that kernel's fingerprint covers, sorted.
function(blocktune_fingerprint_files root kernel out)
  file(GLOB_RECURSE own RELATIVE ${root} ${root}/kernels/${kernel}/*)
  list(FILTER own EXCLUDE REGEX "/(reference|spec)\\.cc$")
  set(core_files "")
  set(used_kernels ${kernel})
  set(pending ${own})
  while(pending)
    list(POP_FRONT pending f)
    file(STRINGS ${root}/${f} includes REGEX "^#include \"kernels/[a-z_]+/[a-z_0-9]+\\.h\"")
    foreach(line ${includes})
      string(REGEX MATCH "kernels/([a-z_]+)/([a-z_0-9]+)\\.h" _ "${line}")
      set(dir ${CMAKE_MATCH_1})
      set(name ${CMAKE_MATCH_2})
      if(dir STREQUAL "core")
        foreach(candidate ${name}.h ${name}.cc)
          list(FIND BLOCKTUNE_FINGERPRINT_CORE_FILES ${candidate} speed)
          list(FIND core_files kernels/core/${candidate} seen)
          if(speed GREATER -1 AND seen EQUAL -1 AND EXISTS ${root}/kernels/core/${candidate})
            list(APPEND core_files kernels/core/${candidate})
            list(APPEND pending kernels/core/${candidate})
          endif()
        endforeach()
      else()
        # Another kernel's header (grouped_matmul, for one, runs matmul's micro-kernels): that
        # kernel's speed files decide this one's speed too, so they enter its fingerprint.
        list(FIND used_kernels ${dir} seen)
        if(seen EQUAL -1 AND IS_DIRECTORY ${root}/kernels/${dir})
          list(APPEND used_kernels ${dir})
          file(GLOB_RECURSE theirs RELATIVE ${root} ${root}/kernels/${dir}/*)
          list(FILTER theirs EXCLUDE REGEX "/(reference|spec)\\.cc$")
          list(APPEND own ${theirs})
          list(APPEND pending ${theirs})
        endif()
      endif()
    endforeach()
  endwhile()
  set(files ${own} ${core_files} kernels/CMakeLists.txt)
  list(SORT files)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

function(blocktune_kernel_fingerprint root kernel toolchain out)
  blocktune_fingerprint_files(${root} ${kernel} files)
  set(text "blocktune kernel fingerprint v1\n${kernel}\n")
  foreach(f ${files})
    file(SHA256 ${root}/${f} h)
    string(APPEND text "${f} ${h}\n")
  endforeach()
  string(APPEND text "${toolchain}\n")
  string(SHA256 digest "${text}")
  string(SUBSTRING ${digest} 0 16 digest)
  set(${out} ${digest} PARENT_SCOPE)
  set(${out}_FILES ${files} PARENT_SCOPE)
endfunction()

# The toolchain line of this configuration (configure mode only).
function(blocktune_fingerprint_toolchain out)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" bt)
  set(t "compiler=${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  string(APPEND t " target=${CMAKE_SYSTEM_PROCESSOR}${CMAKE_CXX_COMPILER_TARGET} std=c++${CMAKE_CXX_STANDARD}")
  string(APPEND t " build_type=${CMAKE_BUILD_TYPE} flags=${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${bt}}")
  string(APPEND t " pic=${CMAKE_POSITION_INDEPENDENT_CODE} ipo=${CMAKE_INTERPROCEDURAL_OPTIMIZATION}")
  string(STRIP "${t}" t)
  set(${out} "${t}" PARENT_SCOPE)
endfunction()

# Configure mode: writes <dir>/blocktune/kernel_fingerprints.h (only when it changes) and
# <dir>/blocktune/toolchain.txt, and re-runs when any fingerprinted file changes.
function(blocktune_write_kernel_fingerprints dir)
  blocktune_fingerprint_toolchain(toolchain)
  blocktune_fingerprint_kernels(${PROJECT_SOURCE_DIR} kernels)
  set(body "")
  set(table "")
  set(deps "")
  foreach(k ${kernels})
    blocktune_kernel_fingerprint(${PROJECT_SOURCE_DIR} ${k} "${toolchain}" fp)
    string(APPEND body "inline constexpr char ${k}[] = \"${fp}\";\n")
    string(APPEND table "    {\"${k}\", ${k}},\n")
    foreach(f ${fp_FILES})
      list(APPEND deps ${PROJECT_SOURCE_DIR}/${f})
    endforeach()
  endforeach()
  # New files in a kernel folder change its fingerprint too.
  file(GLOB_RECURSE _ CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*)
  list(REMOVE_DUPLICATES deps)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${deps})
  string(REPLACE "\\" "\\\\" escaped "${toolchain}")
  string(REPLACE "\"" "\\\"" escaped "${escaped}")
  file(CONFIGURE OUTPUT ${dir}/blocktune/kernel_fingerprints.h CONTENT
"// GENERATED by CMake (cmake/fingerprint.cmake) at configure time; do not edit.
// Each kernel's fingerprint: a hash of the sources that decide its speed and of the toolchain
// line below (see docs/tables.md#staleness). A tuned row whose fingerprint differs from its
// kernel's here was measured by another build of the kernel: lookups report it stale.
#pragma once

namespace blocktune::kernel_fingerprint {

${body}
// The compiler and flags hashed into every fingerprint above.
inline constexpr char kToolchain[] = \"${escaped}\";

struct Named {
  const char* kernel;
  const char* fingerprint;
};
inline constexpr Named kAll[] = {
${table}};

}  // namespace blocktune::kernel_fingerprint
" @ONLY)
  file(CONFIGURE OUTPUT ${dir}/blocktune/toolchain.txt CONTENT "${toolchain}" @ONLY)
endfunction()

# Script mode (cmake -P): print fingerprints of the tree at ROOT.
if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT ROOT OR NOT TOOLCHAIN_FILE)
    message(FATAL_ERROR "usage: cmake -DROOT=<tree> -DTOOLCHAIN_FILE=<file> [-DKERNEL=<name>] -P fingerprint.cmake")
  endif()
  # A relative ROOT (-DROOT=.) found no kernel folder and printed nothing: file(GLOB RELATIVE)
  # wants an absolute base. In -P mode the current source dir is the working directory.
  get_filename_component(ROOT "${ROOT}" ABSOLUTE)
  file(READ ${TOOLCHAIN_FILE} toolchain)
  if(KERNEL)
    set(kernels ${KERNEL})
  else()
    blocktune_fingerprint_kernels(${ROOT} kernels)
  endif()
  foreach(k ${kernels})
    blocktune_kernel_fingerprint(${ROOT} ${k} "${toolchain}" fp)
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${k} ${fp}")
  endforeach()
endif()
