# deepcee_folder_library([DEPS folder...] [LIBS target...] [PRIVATE_LIBS target...]
#                        [SOURCES file...] [ENABLED bool])
#
# The folder this is called from (say runtime/sim) becomes one static library,
# deepcee_runtime_sim, that links the folders named in DEPS (and through them theirs).
# Folders are layers, and this is where each one's dependencies are declared, once:
# - a folder may name only folders declared before it, so the graph has no cycle;
# - at configure time every `#include "a/b/file"` in the folder's files must name the folder
#   itself or one it depends on (directly or not), and every `#include <x/...>` of a library
#   below must name one the folder links (LIBS, PRIVATE_LIBS, or a dependency's LIBS).
#   Anything else stops the configure with the file and the forbidden folder or library, so
#   a dependency against the layers fails the build even when it is header-only;
# - folders under runtime/ and kernels/ are plain computation: none of their files may include
#   a thread, lock, socket or TLS header (DEEPCEE_EFFECT_HEADERS: <thread>, <mutex>,
#   <condition_variable>, <sys/socket.h>, <netinet/...>, <arpa/inet.h>, <openssl/...> and
#   kin), and none may link Threads::Threads, OpenSSL, CAF or cpp-httplib
#   (DEEPCEE_EFFECT_LIBS). Those belong to transport/, actors/ and tools/. The configure
#   stops naming the file; the only exceptions are two kernel backends, each with its reason
#   (DEEPCEE_EFFECT_EXCEPTIONS).
# ENABLED OFF (the CUDA backend without nvcc) still checks the folder and declares it, as an
# empty interface library, so that folders above may name it.

# Headers of libraries whose use is declared, by the path prefix that includes them.
set(DEEPCEE_LIBRARY_HEADERS
  "toml++/=tomlplusplus::tomlplusplus"
  "nlohmann/=nlohmann_json::nlohmann_json"
  "caf/=deepcee_caf"
  "capnp/=CapnProto::capnp"
  "kj/=CapnProto::capnp"
  "spdlog/=spdlog::spdlog"
  "cblas.h=deepcee_openblas"
  "CLI/=CLI11::CLI11"
  "openssl/=OpenSSL::Crypto"
  "httplib.h=deepcee_httplib")

# The top-level folders whose subfolders are layers: an include into one of them must name
# a declared folder.
set(DEEPCEE_LAYER_ROOTS runtime kernels messages transport actors)

# What the folders of runtime/ and kernels/ may not include or link: threads, locks, sockets
# and TLS (see the top of this file). A header that ends in "/" stands for all below it.
set(DEEPCEE_PURE_ROOTS runtime kernels)
set(DEEPCEE_EFFECT_HEADERS thread mutex shared_mutex condition_variable future stop_token
  semaphore latch barrier pthread.h sys/socket.h sys/un.h netinet/ arpa/inet.h netdb.h poll.h
  sys/poll.h sys/select.h openssl/)
set(DEEPCEE_EFFECT_LIBS Threads::Threads OpenSSL::SSL OpenSSL::Crypto deepcee_caf
  deepcee_httplib)
# The exceptions, folder=header, each for a backend that must share memory or wait:
# - kernels/cpu: its block pool is shared with the deleters of the tensors it handed out,
#   which run on whichever actor's thread drops the last reference;
# - kernels/cuda: the NCCL wait sleeps between polls of its streams and of NCCL's
#   asynchronous errors, so that a dead peer ends in a timeout instead of a hang.
set(DEEPCEE_EFFECT_EXCEPTIONS kernels/cpu=mutex kernels/cuda=thread)

# deepcee_effect_problems(FOLDER FILES LIBS OUT): the lines naming each file of FOLDER that
# includes an effect header, and each effect library it links, unless FOLDER is outside
# DEEPCEE_PURE_ROOTS or holds an exception for that header.
function(deepcee_effect_problems folder files libs out)
  set(problems "")
  string(REGEX MATCH "^[^/]+" root ${folder})
  list(FIND DEEPCEE_PURE_ROOTS ${root} is_pure)
  if(is_pure LESS 0)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  foreach(file IN LISTS files)
    file(RELATIVE_PATH shown ${PROJECT_SOURCE_DIR} ${file})
    file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*<[^>]+>")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*<([^>]+)>.*" "\\1" path "${line}")
      foreach(header IN LISTS DEEPCEE_EFFECT_HEADERS)
        if(header MATCHES "/$")
          string(FIND "${path}" "${header}" at)
        elseif(path STREQUAL header)
          set(at 0)
        else()
          set(at -1)
        endif()
        list(FIND DEEPCEE_EFFECT_EXCEPTIONS "${folder}=${header}" excepted)
        if(at EQUAL 0 AND excepted LESS 0)
          string(APPEND problems "\n  ${shown} includes <${path}>.")
        endif()
      endforeach()
    endforeach()
  endforeach()
  foreach(lib IN LISTS libs)
    list(FIND DEEPCEE_EFFECT_LIBS ${lib} is_effect)
    if(is_effect GREATER_EQUAL 0)
      string(APPEND problems "\n  ${folder} links ${lib}.")
    endif()
  endforeach()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

function(deepcee_folder_library)
  cmake_parse_arguments(arg "" "ENABLED" "DEPS;LIBS;PRIVATE_LIBS;SOURCES" ${ARGN})
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REPLACE "/" "_" suffix ${folder})
  set(target deepcee_${suffix})
  if(NOT DEFINED arg_ENABLED)
    set(arg_ENABLED ON)
  endif()

  # What the folder may use: itself, and each dependency with what that one may use.
  set(allowed ${folder})
  set(allowed_libs ${arg_LIBS} ${arg_PRIVATE_LIBS})
  set(public_libs ${arg_LIBS})
  foreach(dep IN LISTS arg_DEPS)
    get_property(known GLOBAL PROPERTY DEEPCEE_FOLDER_USES_${dep} SET)
    if(NOT known)
      message(FATAL_ERROR "deepcee layers: ${folder} depends on ${dep}, which is not a folder "
        "declared before it. Dependencies point one way: declare ${dep} first (its "
        "add_subdirectory comes earlier), and make sure ${dep} does not depend on ${folder}.")
    endif()
    get_property(uses GLOBAL PROPERTY DEEPCEE_FOLDER_USES_${dep})
    get_property(libs GLOBAL PROPERTY DEEPCEE_FOLDER_LIBS_${dep})
    list(APPEND allowed ${uses})
    list(APPEND allowed_libs ${libs})
    list(APPEND public_libs ${libs})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  list(REMOVE_DUPLICATES allowed_libs)
  list(REMOVE_DUPLICATES public_libs)
  get_property(declared GLOBAL PROPERTY DEEPCEE_FOLDERS)

  file(GLOB files CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/*.hpp ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/*.cuh ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
  set(problems "")
  foreach(file IN LISTS files)
    file(RELATIVE_PATH shown ${PROJECT_SOURCE_DIR} ${file})
    file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]+[\">]")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*" "\\1" path "${line}")
      if(line MATCHES "#[ \t]*include[ \t]*\"")
        if(NOT path MATCHES "/")
          continue() # a file beside this one
        endif()
        get_filename_component(dir ${path} DIRECTORY)
        string(REGEX MATCH "^[^/]+" root ${dir})
        list(FIND declared ${dir} is_folder)
        list(FIND DEEPCEE_LAYER_ROOTS ${root} is_layered)
        if(is_folder LESS 0 AND is_layered LESS 0)
          continue() # not a layer (tests/, tools/ and generated files)
        endif()
        list(FIND allowed ${dir} ok)
        if(ok LESS 0)
          string(REPLACE ";" ", " shown_allowed "${allowed}")
          string(APPEND problems "\n  ${shown} includes ${path}: ${folder} may not use ${dir} "
            "(it uses ${shown_allowed}).")
        endif()
      else()
        foreach(entry IN LISTS DEEPCEE_LIBRARY_HEADERS)
          string(REPLACE "=" ";" pair ${entry})
          list(GET pair 0 prefix)
          list(GET pair 1 lib)
          string(FIND "${path}" "${prefix}" at)
          if(at EQUAL 0)
            list(FIND allowed_libs ${lib} ok)
            if(ok LESS 0)
              string(APPEND problems "\n  ${shown} includes <${path}>: ${folder} does not link "
                "${lib}.")
            endif()
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "deepcee layers: ${folder} uses what it does not depend on:${problems}\n"
      "Move the code to a folder that may use it, or, if the dependency is meant, name it in "
      "DEPS (or LIBS) in ${folder}/CMakeLists.txt.")
  endif()
  deepcee_effect_problems(${folder} "${files}" "${allowed_libs}" effects)
  if(effects)
    message(FATAL_ERROR "deepcee layers: ${folder} uses threads, sockets or TLS, which runtime/ "
      "and kernels/ may not:${effects}\n"
      "runtime/ and kernels/ are plain computation, tested alone. Move what needs these to "
      "transport/, actors/ or tools/ and pass its results down in value structs. (A kernel "
      "backend that must share memory or wait is an exception in DEEPCEE_EFFECT_EXCEPTIONS, "
      "cmake/deepcee_folder.cmake, with its reason.)")
  endif()

  set(sources ${arg_SOURCES})
  foreach(file IN LISTS files)
    if(file MATCHES "\\.cpp$" OR (file MATCHES "\\.cu$" AND arg_ENABLED))
      list(APPEND sources ${file})
    endif()
  endforeach()
  set(dep_targets "")
  foreach(dep IN LISTS arg_DEPS)
    string(REPLACE "/" "_" dep_suffix ${dep})
    list(APPEND dep_targets deepcee_${dep_suffix})
  endforeach()
  if(arg_ENABLED AND sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} PUBLIC ${dep_targets} ${arg_LIBS} PRIVATE ${arg_PRIVATE_LIBS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    if(arg_ENABLED)
      target_link_libraries(${target} INTERFACE ${dep_targets} ${arg_LIBS})
    endif()
  endif()

  set_property(GLOBAL PROPERTY DEEPCEE_FOLDER_USES_${folder} ${allowed})
  set_property(GLOBAL PROPERTY DEEPCEE_FOLDER_LIBS_${folder} ${public_libs})
  set_property(GLOBAL PROPERTY DEEPCEE_FOLDER_DEPS_${folder} ${arg_DEPS})
  set_property(GLOBAL APPEND PROPERTY DEEPCEE_FOLDERS ${folder})
  string(REGEX MATCH "^[^/]+" root ${folder})
  set_property(GLOBAL APPEND PROPERTY DEEPCEE_FOLDERS_OF_${root} ${target})
  set(deepcee_folder_target ${target} PARENT_SCOPE)
endfunction()

# deepcee_layer(NAME): deepcee_NAME, one interface target that links every folder of the
# top-level folder NAME (for executables that use the whole layer).
function(deepcee_layer name)
  get_property(targets GLOBAL PROPERTY DEEPCEE_FOLDERS_OF_${name})
  add_library(deepcee_${name} INTERFACE)
  target_link_libraries(deepcee_${name} INTERFACE ${targets})
endfunction()
