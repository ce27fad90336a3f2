# The CUDA kernels compute in float32 and int32 only (core/rules/canon.h rule 1): a float64
# instruction in a kernel would be a sum or a conversion that the other backends do not do
# (and runs at 1/2 to 1/64 of the float rate). Run by the build (backends/cuda/CMakeLists.txt)
# over the PTX of every .cu file of the backend; fails, naming the file and the kernel or
# function, on any line of a function body that touches a .f64 value (arithmetic, cvt to or
# from f64, loads, stores, registers), and on any fused float multiply-add (rule 2:
# -fmad=false keeps the compiler from contracting; this catches an explicit fma).
#   cmake "-DPTX_FILES=a.ptx|b.ptx" [-DSTAMP=file] -P check_ptx.cmake
string(REPLACE "|" ";" files "${PTX_FILES}")
set(f64 "\\.f64([^A-Za-z0-9_]|$)")
set(fma "[ \t](fma|mad)(\\.[a-z0-9]+)*\\.(f16|bf16|f16x2|bf16x2|f32|f64)[ \t]")
set(n_fn 0)
set(bad "")
foreach(file IN LISTS files)
  file(READ "${file}" text)
  string(REGEX MATCHALL "\\.(entry|func)[ \t]" fns "${text}")
  list(LENGTH fns n)
  math(EXPR n_fn "${n_fn} + ${n}")
  if(NOT text MATCHES "${f64}" AND NOT text MATCHES "${fma}")
    continue()
  endif()
  # Something to report: line by line, to name the function (';' and '[' ']' are CMake list
  # syntax, so they are replaced first).
  get_filename_component(name "${file}" NAME)
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "<" text "${text}")
  string(REPLACE "]" ">" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(fn "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*(\\.visible[ \t]+|\\.weak[ \t]+|\\.extern[ \t]+)*\\.(entry|func)[ \t]+(\\([^)]*\\)[ \t]*)?([A-Za-z_$][A-Za-z0-9_$]*)")
      set(fn "${CMAKE_MATCH_4}")
    elseif(NOT fn STREQUAL "" AND (line MATCHES "${f64}" OR line MATCHES "${fma}"))
      string(STRIP "${line}" l)
      list(APPEND bad "${name} ${fn}: ${l}")
    endif()
  endforeach()
endforeach()

if(n_fn EQUAL 0)
  message(FATAL_ERROR "check_ptx: no PTX function in ${PTX_FILES}")
endif()
if(bad)
  list(REMOVE_DUPLICATES bad)
  list(LENGTH bad n_bad)
  string(REPLACE ";" "\n  " shown "${bad}")
  message(FATAL_ERROR "check_ptx: ${n_bad} float64 or fused multiply-add PTX lines in the CUDA kernels "
                      "(file, mangled name: c++filt reads it, line):\n  ${shown}")
endif()
message(STATUS "check_ptx: ${n_fn} PTX functions, no float64 instruction, no fused multiply-add")
if(DEFINED STAMP)
  file(TOUCH "${STAMP}")
endif()
