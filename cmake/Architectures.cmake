# cmake/Architectures.cmake — pick the GPU architectures to build for.
# Included before project(), so it only sets a default: a user's
# -DCMAKE_CUDA_ARCHITECTURES=... or the CUDAARCHS environment variable wins.
#
#   a GPU is present  -> "native" (exactly the GPUs in this machine)
#   no GPU            -> machine code for Turing .. Hopper (sm_75 .. sm_90),
#                        plus sm_90 PTX that newer GPUs compile at load time.
# CUDA 13 needs compute capability >= 7.5; every entry also builds on 12.x.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(_fl_have_gpu FALSE)
  find_program(_fl_nvidia_smi nvidia-smi)
  if(_fl_nvidia_smi)
    execute_process(COMMAND "${_fl_nvidia_smi}" --query-gpu=compute_cap --format=csv,noheader
                    RESULT_VARIABLE _fl_rc OUTPUT_VARIABLE _fl_caps ERROR_QUIET TIMEOUT 20)
    if(_fl_rc EQUAL 0 AND _fl_caps MATCHES "[0-9]+\\.[0-9]+")
      set(_fl_have_gpu TRUE)
    endif()
  endif()
  if(_fl_have_gpu)
    set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "GPU architectures to build for")
  else()
    set(CMAKE_CUDA_ARCHITECTURES "75-real;80-real;86-real;89-real;90"
        CACHE STRING "GPU architectures to build for")
  endif()
  message(STATUS "fusion-lab: CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES}"
                 " (override with -DCMAKE_CUDA_ARCHITECTURES=...)")
endif()
