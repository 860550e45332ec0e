# Every dependency comes from Debian's packages (see setup.sh).
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Boost REQUIRED COMPONENTS unit_test_framework)
find_package(CapnProto REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

# OpenBLAS: Debian's libopenblas-dev installs cblas.h through alternatives.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu/openblas-pthread openblas REQUIRED)
find_library(OPENBLAS_LIBRARY openblas REQUIRED)
add_library(deepcee_openblas INTERFACE)
target_include_directories(deepcee_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(deepcee_openblas INTERFACE ${OPENBLAS_LIBRARY})

# Debian ships no CMake package for CAF 0.17.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(deepcee_caf INTERFACE)
target_include_directories(deepcee_caf INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(deepcee_caf INTERFACE ${CAF_CORE_LIBRARY} ${CAF_IO_LIBRARY} Threads::Threads)

# cpp-httplib (Debian's libcpp-httplib-dev): the header declares, the shared library defines;
# pkg-config gives the feature macros (TLS, compression) the library was built with, which
# the header must see the same.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
add_library(deepcee_httplib INTERFACE)
target_link_libraries(deepcee_httplib INTERFACE PkgConfig::CPP_HTTPLIB Threads::Threads)
