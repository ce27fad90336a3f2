# The CUDA kernels compute in float32 and int32 only (core/rules/canon.h rule 1): a float64
# instruction in a kernel would be a sum or a conversion that the other backends do not do
# (and runs at 1/2 to 1/64 of the float rate). Run after lockstep_cuda is built: reads the
# PTX embedded in the library (cuobjdump -ptx) and fails, naming the kernel or function, on
# any line of a function body that touches a .f64 value (arithmetic, cvt to or from f64,
# loads, stores, registers), and on any fused float multiply-add (rule 2: -fmad=false keeps
# the compiler from contracting; this catches an explicit fma in the source).
#   cmake -DCUOBJDUMP=<cuobjdump> -DLIB=<liblockstep_cuda.a> -P check_ptx.cmake
#   cmake -DPTX=<file.ptx> -P check_ptx.cmake     (a PTX file, to try the check itself)
if(DEFINED PTX)
  file(READ "${PTX}" text)
else()
  execute_process(COMMAND "${CUOBJDUMP}" -ptx "${LIB}" OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_ptx: cuobjdump -ptx ${LIB} failed (${rc}): ${err}")
  endif()
endif()

# Lines, without CMake's list syntax getting in the way (';' separates, '[' ']' group).
string(REPLACE ";" "," text "${text}")
string(REPLACE "[" "<" text "${text}")
string(REPLACE "]" ">" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(fn "")
set(n_fn 0)
set(bad "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[ \t]*(\\.visible[ \t]+|\\.weak[ \t]+|\\.extern[ \t]+)*\\.(entry|func)[ \t]+(\\([^)]*\\)[ \t]*)?([A-Za-z_$][A-Za-z0-9_$]*)")
    set(fn "${CMAKE_MATCH_4}")
    math(EXPR n_fn "${n_fn} + 1")
  elseif(NOT fn STREQUAL "" AND (line MATCHES "\\.f64([^A-Za-z0-9_]|$)" OR line MATCHES "^[ \t]*(fma|mad)(\\.[a-z0-9]+)*\\.(f16|bf16|f16x2|f32|f64)[ \t]"))
    string(STRIP "${line}" l)
    list(APPEND bad "${fn}: ${l}")
  endif()
endforeach()

if(n_fn EQUAL 0)
  message(FATAL_ERROR "check_ptx: no PTX functions found in ${LIB}${PTX}: the check needs PTX in the library, "
                      "so CMAKE_CUDA_ARCHITECTURES must name a virtual architecture (\"90\", not \"90-real\")")
endif()
if(bad)
  list(REMOVE_DUPLICATES bad)
  list(LENGTH bad n_bad)
  string(REPLACE ";" "\n  " shown "${bad}")
  message(FATAL_ERROR "check_ptx: ${n_bad} float64 or fused multiply-add PTX lines in the CUDA kernels (mangled names; c++filt reads them):\n  ${shown}")
endif()
message(STATUS "check_ptx: ${n_fn} PTX functions, no float64 instruction, no fused multiply-add")
