# Layers: one CMake target per folder, linked only to the layers below it. The direction
# is enforced twice: a layer's code links only against its dependencies, and the build runs
# cmake/check_layers.py, which fails on any #include that reaches a layer not among the
# including layer's (transitive) dependencies, and on any include cycle.
#
# ls_layer(<target> <folder> [DEPS <layer targets>...] [PRIVATE_DEPS <layer targets>...]
#          [LIBS <other link items>...] [SOURCES <more sources>...])
# A layer may include its deps and what they export (their DEPS, transitively); PRIVATE_DEPS
# are its own business and not exported to the layers above.
# Sources are found by rule: <folder>/*.cpp (not recursive: a sub-folder is its own layer).
set_property(GLOBAL PROPERTY LS_LAYER_LINES "")
function(ls_layer target folder)
  cmake_parse_arguments(L "" "" "DEPS;PRIVATE_DEPS;LIBS;SOURCES" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
  list(APPEND srcs ${L_SOURCES})
  ls_layer_dirs(dep_dirs ${L_DEPS})
  ls_layer_dirs(priv_dirs ${L_PRIVATE_DEPS})
  if(srcs)
    add_library(${target} STATIC ${srcs})
    # Position-independent: every layer is linked into the shared C API library too (api/).
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    # (Static libraries: a private dep still has to reach the final link.)
    target_link_libraries(${target} PUBLIC ${L_DEPS} ${L_LIBS} PRIVATE ${L_PRIVATE_DEPS})
    if(L_PRIVATE_DEPS)
      target_link_libraries(${target} INTERFACE $<LINK_ONLY:${L_PRIVATE_DEPS}>)
    endif()
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${L_DEPS} ${L_LIBS})
  endif()
  set_property(GLOBAL PROPERTY LS_LAYER_DIR_${target} ${folder})
  string(REPLACE ";" " " dep_str "${dep_dirs}")
  string(REPLACE ";" " " priv_str "${priv_dirs}")
  set_property(GLOBAL APPEND PROPERTY LS_LAYER_LINES "${folder}: ${dep_str} | ${priv_str}")
endfunction()

# The folders of layer targets (or folders declared by ls_layer_folder).
function(ls_layer_dirs out)
  set(dirs "")
  foreach(d ${ARGN})
    get_property(dd GLOBAL PROPERTY LS_LAYER_DIR_${d})
    if(NOT dd)
      message(FATAL_ERROR "ls_layer: ${d} is not a layer declared before its user")
    endif()
    list(APPEND dirs ${dd})
  endforeach()
  set(${out} ${dirs} PARENT_SCOPE)
endfunction()

# Adds a folder to the layer table without making a target (a folder whose code is
# compiled into another target, e.g. shaders/ into SPIR-V, backends/cuda/emu/).
function(ls_layer_folder folder)
  cmake_parse_arguments(L "" "" "DEPS;PRIVATE_DEPS" ${ARGN})
  ls_layer_dirs(dep_dirs ${L_DEPS})
  ls_layer_dirs(priv_dirs ${L_PRIVATE_DEPS})
  set_property(GLOBAL PROPERTY LS_LAYER_DIR_${folder} ${folder})
  string(REPLACE ";" " " dep_str "${dep_dirs}")
  string(REPLACE ";" " " priv_str "${priv_dirs}")
  set_property(GLOBAL APPEND PROPERTY LS_LAYER_LINES "${folder}: ${dep_str} | ${priv_str}")
endfunction()

# After every layer is declared: the check, as a build step every target waits for.
function(ls_layer_check)
  get_property(lines GLOBAL PROPERTY LS_LAYER_LINES)
  string(REPLACE ";" "\n" text "${lines}")
  set(table ${CMAKE_BINARY_DIR}/layers.txt)
  file(WRITE ${table}.tmp "${text}\n")
  file(COPY_FILE ${table}.tmp ${table} ONLY_IF_DIFFERENT)
  file(GLOB_RECURSE watched CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/core/*.h ${PROJECT_SOURCE_DIR}/core/*.cpp ${PROJECT_SOURCE_DIR}/core/*.inc
       ${PROJECT_SOURCE_DIR}/cpu/*.h ${PROJECT_SOURCE_DIR}/cpu/*.cpp
       ${PROJECT_SOURCE_DIR}/backends/*.h ${PROJECT_SOURCE_DIR}/backends/*.cpp
       ${PROJECT_SOURCE_DIR}/backends/*.cu ${PROJECT_SOURCE_DIR}/backends/*.cuh
       ${PROJECT_SOURCE_DIR}/shaders/*.comp ${PROJECT_SOURCE_DIR}/shaders/*.glsl ${PROJECT_SOURCE_DIR}/shaders/*.h
       ${PROJECT_SOURCE_DIR}/tools/*.h ${PROJECT_SOURCE_DIR}/tools/*.cpp
       ${PROJECT_SOURCE_DIR}/tests/*.h ${PROJECT_SOURCE_DIR}/tests/*.cpp)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(stamp ${CMAKE_BINARY_DIR}/layers.ok)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/cmake/check_layers.py ${PROJECT_SOURCE_DIR} ${table} ${stamp}
    DEPENDS ${watched} ${table} ${PROJECT_SOURCE_DIR}/cmake/check_layers.py
    COMMENT "checking the layering (cmake/check_layers.py)" VERBATIM)
  add_custom_target(check_layers ALL DEPENDS ${stamp})
  # Every target named waits for the check (its compile steps, not only its link), so a
  # build with a wrong include fails before compiling it.
  foreach(t ${ARGN})
    if(TARGET ${t})
      get_target_property(type ${t} TYPE)
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        add_dependencies(${t} check_layers)
      endif()
    endif()
  endforeach()
endfunction()
