# cmake/Lesson.cmake — one function adds a lesson.
#
#   lesson_add(01-vector-add EXERCISE vector_add.cu)
#   lesson_add(05-flash-attention EXERCISE attention_fused.cu LIBS CUDA::cublas)
#   lesson_add(04-memory-traffic EXERCISE traffic_model.c transpose.cu TOOLS probe.c
#              CPU_SUITES A_count)
#
# From lessons/01-vector-add/ (the course's copy) it takes the header(s) and
# every .cu and .c that is not an exercise, bench.c or a tool (the baseline,
# and the lesson's apparatus); the EXERCISE files are
# compiled twice: from ${FUSIONLAB_STUDENT_ROOT}/01-vector-add/ (the student's
# copy, lessons/ by default) and from solutions/01-vector-add/. It builds
#   test_01_vector_add            Criterion test against the student's file
#   test_01_vector_add_solution   the same test against the worked solution
#   bench_01_vector_add           the bench (solution; `lab demo`)
#   bench_01_vector_add_student   the bench against the student's file
# and registers ctest entries labelled lesson01 and solution/student.
# LIBS are linked into the lesson's baseline (and so into everything above).
# TOOLS (e.g. probe.c) become executables probe_01 ... linked against the
# solution; code can find them in the compile-time FUSIONLAB_BUILD_DIR.
# CPU_SUITES name Criterion suites that need no GPU: they get a ctest entry of
# their own (label cpu), so a machine without a GPU reports their failures
# instead of folding them into the GPU entry's "skipped".
function(lesson_add name)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "EXERCISE;LIBS;TOOLS;CPU_SUITES")
  if(NOT L_EXERCISE)
    message(FATAL_ERROR "lesson_add(${name}): name the EXERCISE file(s)")
  endif()
  string(REGEX MATCH "^([0-9][0-9])-(.+)$" _ok "${name}")
  if(NOT _ok)
    message(FATAL_ERROR "lesson_add(${name}): name must look like NN-some-name")
  endif()
  set(num "${CMAKE_MATCH_1}")
  string(REPLACE "-" "_" slug "${CMAKE_MATCH_2}")
  set(course "${PROJECT_SOURCE_DIR}/lessons/${name}")
  set(student "${FUSIONLAB_STUDENT_ROOT}/${name}")
  set(solution "${PROJECT_SOURCE_DIR}/solutions/${name}")
  set(test_src "${PROJECT_SOURCE_DIR}/tests/test_${num}_${slug}.c")
  foreach(f IN ITEMS "${test_src}" "${course}/bench.c")
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "lesson_add(${name}): ${f} is missing")
    endif()
  endforeach()

  # The baseline: every .cu/.c of the course's lesson folder but the
  # exercises, the bench and the tools.
  file(GLOB all_src CONFIGURE_DEPENDS "${course}/*.cu" "${course}/*.c")
  set(baseline_cu "")
  foreach(f IN LISTS all_src)
    get_filename_component(base "${f}" NAME)
    if(NOT base IN_LIST L_EXERCISE AND NOT base IN_LIST L_TOOLS AND NOT base STREQUAL "bench.c")
      list(APPEND baseline_cu "${f}")
    endif()
  endforeach()
  set(lib "lesson${num}")
  add_library(${lib}_baseline STATIC ${baseline_cu})
  target_include_directories(${lib}_baseline PUBLIC "${course}")
  target_link_libraries(${lib}_baseline PUBLIC fusionlab_common ${L_LIBS})
  target_compile_definitions(${lib}_baseline PUBLIC FUSIONLAB_BUILD_DIR="${CMAKE_BINARY_DIR}")

  foreach(variant IN ITEMS student solution)
    set(dir "${${variant}}")
    set(srcs "")
    foreach(f IN LISTS L_EXERCISE)
      list(APPEND srcs "${dir}/${f}")
    endforeach()
    add_library(${lib}_${variant} STATIC ${srcs})
    target_include_directories(${lib}_${variant} PUBLIC "${course}")
    target_link_libraries(${lib}_${variant} PUBLIC ${lib}_baseline fusionlab_common)
  endforeach()

  foreach(tool IN LISTS L_TOOLS)
    get_filename_component(tname "${tool}" NAME_WE)
    add_executable(${tname}_${num} "${course}/${tool}")
    target_link_libraries(${tname}_${num} PRIVATE ${lib}_solution)
  endforeach()

  set(bench "bench_${num}_${slug}")
  add_executable(${bench} "${course}/bench.c")
  target_link_libraries(${bench} PRIVATE ${lib}_solution)
  add_executable(${bench}_student "${course}/bench.c")
  target_link_libraries(${bench}_student PRIVATE ${lib}_student)
  add_test(NAME ${name}/bench-smoke
           COMMAND ${bench} --quick --csv "${CMAKE_CURRENT_BINARY_DIR}/smoke_${num}.csv")
  set_tests_properties(${name}/bench-smoke PROPERTIES
                       LABELS "gpu;bench;lesson${num}" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)

  if(FUSIONLAB_HAVE_CRITERION)
    set(test "test_${num}_${slug}")
    add_executable(${test} "${test_src}")
    target_link_libraries(${test} PRIVATE ${lib}_student fusionlab_testlib)
    add_executable(${test}_solution "${test_src}")
    target_link_libraries(${test}_solution PRIVATE ${lib}_solution fusionlab_testlib)
    # Tests run one at a time: speed tests must have the GPU to themselves.
    add_test(NAME ${name}/solution COMMAND ${test}_solution --jobs 1 --short-filename --verbose)
    set_tests_properties(${name}/solution PROPERTIES
                         LABELS "gpu;solution;lesson${num}" RUN_SERIAL TRUE
                         SKIP_REGULAR_EXPRESSION "no CUDA device")
    foreach(suite IN LISTS L_CPU_SUITES)
      add_test(NAME ${name}/solution-${suite}
               COMMAND ${test}_solution --jobs 1 --short-filename --verbose --filter "${suite}/*")
      set_tests_properties(${name}/solution-${suite} PROPERTIES LABELS "cpu;solution;lesson${num}")
    endforeach()
    add_test(NAME ${name}/student COMMAND ${test} --jobs 1 --short-filename --verbose)
    set_tests_properties(${name}/student PROPERTIES
                         LABELS "gpu;student;lesson${num}" RUN_SERIAL TRUE
                         SKIP_REGULAR_EXPRESSION "no CUDA device")
  endif()
  set_property(GLOBAL APPEND PROPERTY FUSIONLAB_LESSONS "${name}")
endfunction()
