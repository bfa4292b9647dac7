# Cross toolchain for 64-bit Arm Linux with Debian 12's g++-aarch64-linux-gnu; tests run under
# qemu-user. Used by deploy/test-aarch64.sh together with -DBLOCKTUNE_KERNELS_ONLY=ON (the
# server, store and CLI need SQLite, cpp-httplib and spdlog, which are installed for amd64 only).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(BLOCKTUNE_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${BLOCKTUNE_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${BLOCKTUNE_CROSS_TRIPLE}-g++)

# Debian's cross packages put the target's headers and libraries under /usr/aarch64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/${BLOCKTUNE_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest (and add_test(COMMAND <target>)) run target binaries through qemu-user; -L points the
# emulator at the target's dynamic loader and libc/libstdc++ from libc6-arm64-cross.
find_program(BLOCKTUNE_QEMU_AARCH64 qemu-aarch64 qemu-aarch64-static)
if(BLOCKTUNE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${BLOCKTUNE_QEMU_AARCH64} -L /usr/${BLOCKTUNE_CROSS_TRIPLE})
endif()
