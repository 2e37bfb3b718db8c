# cmake/Lesson.cmake — one function adds a lesson.
#
#   lesson_add(01-vector-add EXERCISE vector_add.cu)
#   lesson_add(05-flash-attention EXERCISE attention_fused.cu LIBS fusionlab_cublas_lazy)
#   lesson_add(04-memory-traffic EXERCISE traffic_model.c transpose.cu TOOLS probe.c
#              CPU_SUITES A_count)
#
# From lessons/01-vector-add/ (the course's copy) it takes the header(s) and
# every .cu and .c that is not an exercise, bench.c or a tool (the baseline,
# the CPU reference the test and the bench share, and the lesson's
# apparatus); the EXERCISE files are
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
# SCAN_RULES adds rules of the object scan for this lesson's exercise files
# (tools/scan-objects: no-device-alloc); they go to scan-rules/lessonNN.txt.
# CPU_SUITES name Criterion suites that need no GPU: they get a ctest entry of
# their own (label cpu), so a machine without a GPU reports their failures
# instead of folding them into the GPU entry's "skipped".
# COMPARE builds the lesson's kernels as shared libraries for ./lab compare
# (tools/compare.py times them beside PyTorch and Triton): see _lesson_compare.
#
# The EXERCISE files in lessons/ are generated from the marked worked
# solutions (tools/skeleton.c): each gets a ctest entry NN-name/sources/FILE
# (label sources) that checks the committed file is what its solution gives,
# and the target `skeletons` (./lab skeletons) writes them.
#
# Without solutions/ (the student bundle, `./lab export-student`) the
# solution variants and the sources checks are left out; LIBS and TOOLS that name a lesson's
# solution library use that lesson's student library instead.
# Each call also adds the lesson to ${CMAKE_BINARY_DIR}/fusionlab_manifest.json,
# the grader's list of the files a student may change (see _lesson_manifest).
function(lesson_add name)
  cmake_parse_arguments(PARSE_ARGV 1 L "COMPARE" "" "EXERCISE;LIBS;TOOLS;CPU_SUITES;SCAN_RULES")
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
  set(variants student)
  set(has_solution FALSE)
  if(EXISTS "${solution}")
    list(APPEND variants solution)
    set(has_solution TRUE)
  endif()
  # lessonNN_solution of a lesson without solutions/ -> lessonNN_student
  set(libs "")
  foreach(l IN LISTS L_LIBS)
    if(l MATCHES "^lesson([0-9][0-9])_solution$" AND NOT TARGET ${l})
      set(l "lesson${CMAKE_MATCH_1}_student")
    endif()
    list(APPEND libs "${l}")
  endforeach()
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
  # the lesson's CPU reference (*_reference.c) takes its tolerances from
  # tests/thresholds.h; PRIVATE, so the exercise files do not see tests/
  target_include_directories(${lib}_baseline PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  target_link_libraries(${lib}_baseline PUBLIC fusionlab_common ${libs})
  target_compile_definitions(${lib}_baseline PUBLIC FUSIONLAB_BUILD_DIR="${CMAKE_BINARY_DIR}")

  foreach(variant IN LISTS variants)
    set(dir "${${variant}}")
    set(srcs "")
    foreach(f IN LISTS L_EXERCISE)
      list(APPEND srcs "${dir}/${f}")
    endforeach()
    add_library(${lib}_${variant} STATIC ${srcs})
    target_include_directories(${lib}_${variant} PUBLIC "${course}")
    target_link_libraries(${lib}_${variant} PUBLIC ${lib}_baseline fusionlab_common)
  endforeach()
  # The student's targets are built only when asked for (./lab check, ./lab
  # bench, the grader): a half-finished exercise must not break the course's
  # own build, ./lab test or ./lab demo.
  set_target_properties(${lib}_student PROPERTIES EXCLUDE_FROM_ALL TRUE)
  if(L_COMPARE)
    _lesson_compare("${name}" "${num}" "${L_EXERCISE}" "${baseline_cu}" "${libs}" "${variants}")
  endif()

  list(GET variants -1 tool_variant)  # the solution when there is one
  set(tool_targets "")
  foreach(tool IN LISTS L_TOOLS)
    get_filename_component(tname "${tool}" NAME_WE)
    add_executable(${tname}_${num} "${course}/${tool}")
    target_link_libraries(${tname}_${num} PRIVATE ${lib}_${tool_variant})
    list(APPEND tool_targets "${tname}_${num}")
  endforeach()

  set(bench "bench_${num}_${slug}")
  if(has_solution)
    add_executable(${bench} "${course}/bench.c")
    target_link_libraries(${bench} PRIVATE ${lib}_solution)
    target_include_directories(${bench} PRIVATE "${PROJECT_SOURCE_DIR}/tests") # thresholds.h
    add_test(NAME ${name}/bench-smoke
             COMMAND ${bench} --quick --csv "${CMAKE_CURRENT_BINARY_DIR}/smoke_${num}.csv")
    set_tests_properties(${name}/bench-smoke PROPERTIES
                         LABELS "gpu;bench;lesson${num}" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endif()
  add_executable(${bench}_student "${course}/bench.c")
  target_link_libraries(${bench}_student PRIVATE ${lib}_student)
  target_include_directories(${bench}_student PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  set_target_properties(${bench}_student PROPERTIES EXCLUDE_FROM_ALL TRUE)
  if(tool_targets)
    # the tests and benches run the tools (lesson 04's probe): build them too
    add_dependencies(${bench}_student ${tool_targets})
    if(has_solution)
      add_dependencies(${bench} ${tool_targets})
    endif()
  endif()

  if(FUSIONLAB_HAVE_CRITERION)
    set(test "test_${num}_${slug}")
    add_executable(${test} "${test_src}")
    target_link_libraries(${test} PRIVATE ${lib}_student fusionlab_testlib)
    set_target_properties(${test} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    if(tool_targets)
      add_dependencies(${test} ${tool_targets})
    endif()
    if(has_solution)
      add_executable(${test}_solution "${test_src}")
      target_link_libraries(${test}_solution PRIVATE ${lib}_solution fusionlab_testlib)
      if(tool_targets)
        add_dependencies(${test}_solution ${tool_targets})
      endif()
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
    endif()
    add_test(NAME ${name}/student COMMAND ${test} --jobs 1 --short-filename --verbose)
    set_tests_properties(${name}/student PROPERTIES
                         LABELS "gpu;student;lesson${num}" RUN_SERIAL TRUE
                         SKIP_REGULAR_EXPRESSION "no CUDA device")
  endif()
  if(has_solution)
    _lesson_sources("${name}" "${num}" "${L_EXERCISE}")
    _lesson_open("${name}" "${num}" "${slug}" "${L_EXERCISE}" "${tool_targets}")
  endif()
  if(FUSIONLAB_HAVE_CRITERION AND FUSIONLAB_CORPUS AND has_solution)
    _lesson_corpus(adversarial "${name}" "${num}" "${slug}" "${L_EXERCISE}" "${tool_targets}")
    _lesson_corpus(variants "${name}" "${num}" "${slug}" "${L_EXERCISE}" "${tool_targets}")
  endif()
  # the object scan's extra rules for this lesson (tools/scan-objects --rules);
  # written every time, so a rule taken out of lesson_add goes away
  foreach(r IN LISTS L_SCAN_RULES)
    if(NOT r STREQUAL "no-device-alloc")
      message(FATAL_ERROR "lesson_add(${name}): unknown SCAN_RULES entry '${r}' (known: no-device-alloc)")
    endif()
  endforeach()
  string(REPLACE ";" "\n" rules "${L_SCAN_RULES}")
  if(rules)
    string(APPEND rules "\n")
  endif()
  file(WRITE "${CMAKE_BINARY_DIR}/scan-rules/lesson${num}.txt" "${rules}")
  set_property(GLOBAL APPEND PROPERTY FUSIONLAB_LESSONS "${name}")
  _lesson_manifest("${name}" "${num}" "${slug}" "${L_EXERCISE}" "${tool_targets}"
                   "${L_CPU_SUITES}" ${has_solution})
endfunction()

# The lesson's kernels as shared libraries, for tools/compare.py (./lab
# compare), which loads them with ctypes and times them beside PyTorch and
# Triton with the course's own protocol:
#   fusionlab_compare_NN_solution  the worked exercise files (part of the build)
#   fusionlab_compare_NN_student   the student's copy (built only when asked
#                                  for, like lessonNN_student)
# each with the lesson's baseline, the harness (common/: fl_time_variants, the
# L2 flush) and tools/compare_abi.c (the structures' layout and the lessons'
# facts, for compare.py to check and read). Everything in them is compiled
# again, position-independent: the static libraries above keep the objects
# the object scan reads exactly as they were. The harness and each baseline
# are compiled once (object libraries) for all the shared libraries that use
# them. lab finds them in the layout: fl_NN_compare_<side>_lib and
# fl_NN_compare_<side>_target.
function(_lesson_compare name num exercise baseline_src libs variants)
  set(course "${PROJECT_SOURCE_DIR}/lessons/${name}")
  if(NOT TARGET fusionlab_compare_common)
    get_target_property(common_src fusionlab_common SOURCES)
    add_library(fusionlab_compare_common OBJECT ${common_src} tools/compare_abi.c)
    set_target_properties(fusionlab_compare_common PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_include_directories(fusionlab_compare_common PUBLIC "${PROJECT_SOURCE_DIR}/common")
    # compare_abi.c reads the lessons' headers and tests/thresholds.h
    target_include_directories(fusionlab_compare_common PRIVATE "${PROJECT_SOURCE_DIR}")
    target_link_libraries(fusionlab_compare_common PUBLIC CUDA::cudart m)
  endif()
  set(base "lesson${num}_compare_baseline")
  add_library(${base} OBJECT ${baseline_src})
  set_target_properties(${base} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${base} PUBLIC "${course}")
  target_include_directories(${base} PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  target_link_libraries(${base} PUBLIC fusionlab_compare_common ${libs})
  target_compile_definitions(${base} PUBLIC FUSIONLAB_BUILD_DIR="${CMAKE_BINARY_DIR}")
  get_property(sh GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH)
  foreach(variant IN LISTS variants)
    if(variant STREQUAL "solution")
      set(dir "${PROJECT_SOURCE_DIR}/solutions/${name}")
    else()
      set(dir "${FUSIONLAB_STUDENT_ROOT}/${name}")
    endif()
    set(srcs "")
    foreach(f IN LISTS exercise)
      list(APPEND srcs "${dir}/${f}")
    endforeach()
    set(t "fusionlab_compare_${num}_${variant}")
    add_library(${t} SHARED ${srcs})
    set_target_properties(${t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${t} PRIVATE ${base} fusionlab_compare_common)
    if(variant STREQUAL "student")
      # (a half-finished exercise must not break the course's own build)
      set_target_properties(${t} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
    string(APPEND sh "fl_${num}_compare_${variant}_target='${t}'\n"
                     "fl_${num}_compare_${variant}_lib='$<TARGET_FILE:${t}>'\n")
    if(variant STREQUAL "solution")
      # (the ctest compare/abi loads every one of them)
      set_property(GLOBAL APPEND PROPERTY FUSIONLAB_COMPARE_LIBS ${t})
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH "${sh}")
endfunction()

# The skeletons of a lesson's exercise files: a test per file that checks
# lessons/NN-name/FILE against what solutions/NN-name/FILE gives (fl_skeleton
# --check; it prints the first differing line and how to regenerate), and a
# target skeletons_NN, part of `skeletons`, that regenerates them.
function(_lesson_sources name num exercise)
  set(course "${PROJECT_SOURCE_DIR}/lessons/${name}")
  set(solution "${PROJECT_SOURCE_DIR}/solutions/${name}")
  if(NOT TARGET skeletons)
    add_custom_target(skeletons)
  endif()
  set(cmds "")
  foreach(f IN LISTS exercise)
    add_test(NAME ${name}/sources/${f}
             COMMAND fl_skeleton --check --lesson ${num} "${solution}/${f}" "${course}/${f}")
    set_tests_properties(${name}/sources/${f} PROPERTIES LABELS "sources;cpu;lesson${num}")
    list(APPEND cmds COMMAND fl_skeleton "${solution}/${f}" -o "${course}/${f}")
  endforeach()
  add_custom_target(skeletons_${num} ${cmds} VERBATIM)
  add_dependencies(skeletons skeletons_${num})
endfunction()

# The open level of a lesson's exercise files (fl_skeleton --level open: the
# API and the task, nothing given), untouched, built as a student would build
# it: lessonNN_open from open/NN-name/ in the build folder, and
# test_NN_name_open against it. Two ctest entries prove the level is a real
# exercise: NN-name/open-scan (CPU, label sources) compiles it with the
# course's flags, links the lesson's test against it and passes it through
# the grader's object scan; NN-name/open (GPU) runs the test and passes only
# when every check of the student's code fails (tests/open_level.sh).
function(_lesson_open name num slug exercise tool_targets)
  set(course "${PROJECT_SOURCE_DIR}/lessons/${name}")
  set(solution "${PROJECT_SOURCE_DIR}/solutions/${name}")
  set(dir "${CMAKE_BINARY_DIR}/open/${name}")
  set(srcs "")
  foreach(f IN LISTS exercise)
    add_custom_command(OUTPUT "${dir}/${f}"
                       COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
                       COMMAND fl_skeleton --level open "${solution}/${f}" -o "${dir}/${f}"
                       DEPENDS fl_skeleton "${solution}/${f}" VERBATIM)
    list(APPEND srcs "${dir}/${f}")
  endforeach()
  set(lib "lesson${num}_open")
  add_library(${lib} STATIC ${srcs})
  target_include_directories(${lib} PUBLIC "${course}")
  target_link_libraries(${lib} PUBLIC lesson${num}_baseline fusionlab_common)
  if(NOT FUSIONLAB_HAVE_CRITERION)
    return()
  endif()
  set(test "test_${num}_${slug}_open")
  add_executable(${test} "${PROJECT_SOURCE_DIR}/tests/test_${num}_${slug}.c")
  target_link_libraries(${test} PRIVATE ${lib} fusionlab_testlib)
  if(tool_targets)
    add_dependencies(${test} ${tool_targets})
  endif()
  file(GLOB headers "${course}/*.h")
  set(api "")
  foreach(h IN LISTS headers)
    list(APPEND api --api "${h}")
  endforeach()
  set(harness_opts "")
  foreach(t IN LISTS FUSIONLAB_HARNESS_TARGETS) # (CMakeLists.txt)
    list(APPEND harness_opts --harness "$<TARGET_FILE:${t}>")
  endforeach()
  # (the objects come as one ;-separated argument: open_level.sh splits it)
  add_test(NAME ${name}/open-scan
           COMMAND sh "${PROJECT_SOURCE_DIR}/tests/open_level.sh" --scan "$<TARGET_OBJECTS:${lib}>"
                   ${api} ${harness_opts}
                   --baseline $<TARGET_FILE:lesson${num}_baseline>
                   --rules "${CMAKE_BINARY_DIR}/scan-rules/lesson${num}.txt")
  set_tests_properties(${name}/open-scan PROPERTIES LABELS "sources;cpu;lesson${num}")
  add_test(NAME ${name}/open
           COMMAND sh "${PROJECT_SOURCE_DIR}/tests/open_level.sh" $<TARGET_FILE:${test}>)
  set_tests_properties(${name}/open PROPERTIES LABELS "gpu;open;lesson${num}" RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77)
endfunction()

# The worked file `src` as the compiler sees it, written to `dst`: less its
# skeleton markers, the lines that begin with //@ or //| (tools/skeleton.c).
function(_lesson_worked_code src dst)
  file(READ "${src}" text)
  string(REGEX REPLACE "\n//[@|][^\n]*" "" text "\n${text}")
  string(SUBSTRING "${text}" 1 -1 text)
  file(WRITE "${dst}" "${text}")
endfunction()

# A JSON string literal of `text` (quotes, backslashes and control characters
# escaped).
function(_lesson_json_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n" text "${text}")
  string(REPLACE "\t" "\\t" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# A JSON array of the strings in the list `items`.
function(_lesson_json_list out items)
  set(json "[")
  set(sep "")
  foreach(item IN LISTS items)
    _lesson_json_string(quoted "${item}")
    string(APPEND json "${sep}${quoted}")
    set(sep ", ")
  endforeach()
  set(${out} "${json}]" PARENT_SCOPE)
endfunction()

# Append one lesson to the grader's manifest and rewrite the file. The
# grader takes from a submission only the `exercise` files named here, and
# builds `test` (and `tools`) against them: the manifest is made from the
# same lesson_add() arguments as the build, so the two cannot disagree.
function(_lesson_manifest name num slug exercise tools cpu_suites has_solution)
  foreach(f IN LISTS exercise)
    if(NOT f MATCHES "^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
      message(FATAL_ERROR "lesson_add(${name}): EXERCISE '${f}' must be a plain file name")
    endif()
  endforeach()
  get_property(manifest GLOBAL PROPERTY FUSIONLAB_MANIFEST)
  if(NOT manifest)
    _lesson_json_string(root "${FUSIONLAB_STUDENT_ROOT}")
    set(manifest "{\"format\": 1, \"student_root\": ${root}, \"lessons\": []}")
  endif()
  _lesson_json_list(ex_json "${exercise}")
  _lesson_json_list(tools_json "${tools}")
  _lesson_json_list(cpu_json "${cpu_suites}")
  set(entry "{}")
  string(JSON entry SET "${entry}" name "\"${name}\"")
  string(JSON entry SET "${entry}" number "\"${num}\"")
  string(JSON entry SET "${entry}" slug "\"${slug}\"")
  string(JSON entry SET "${entry}" exercise "${ex_json}")
  string(JSON entry SET "${entry}" tools "${tools_json}")
  string(JSON entry SET "${entry}" cpu_suites "${cpu_json}")
  if(FUSIONLAB_HAVE_CRITERION)
    string(JSON entry SET "${entry}" test "\"test_${num}_${slug}\"")
    if(has_solution)
      string(JSON entry SET "${entry}" solution_test "\"test_${num}_${slug}_solution\"")
    endif()
  endif()
  # Where the build puts this lesson's files, as pairs of a name and a value,
  # written both into the manifest's "build" object and, as fl_NN_<name>,
  # into fusionlab_layout.sh. The values are generator expressions that
  # lesson_write_layout() has CMake expand. A target's Makefile rules are
  # CMakeFiles/<target>.dir, relative to the build folder, as the generated
  # Makefiles name them (the grader runs them).
  string(REGEX REPLACE "^/" "" files "${CMAKE_FILES_DIRECTORY}")
  set(facts
      student_lib "$<TARGET_FILE:lesson${num}_student>"
      student_rules "${files}/lesson${num}_student.dir"
      baseline_lib "$<TARGET_FILE:lesson${num}_baseline>"
      scan_rules "${CMAKE_BINARY_DIR}/scan-rules/lesson${num}.txt"
      bench_student_target "bench_${num}_${slug}_student"
      bench_student_bin "$<TARGET_FILE:bench_${num}_${slug}_student>")
  if(has_solution)
    list(APPEND facts bench_bin "$<TARGET_FILE:bench_${num}_${slug}>"
                      solution_lib "$<TARGET_FILE:lesson${num}_solution>")
  endif()
  if(FUSIONLAB_HAVE_CRITERION)
    list(APPEND facts test_target "test_${num}_${slug}"
                      test_bin "$<TARGET_FILE:test_${num}_${slug}>"
                      test_rules "${files}/test_${num}_${slug}.dir"
                      test_source "${PROJECT_SOURCE_DIR}/tests/test_${num}_${slug}.c")
    if(has_solution)
      list(APPEND facts solution_test_bin "$<TARGET_FILE:test_${num}_${slug}_solution>")
    endif()
  endif()
  get_property(sh GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH)
  string(REPLACE ";" " " ex_sh "${exercise}")
  string(APPEND sh "fl_${num}_name='${name}'\nfl_${num}_exercise='${ex_sh}'\n")
  set(layout "{}")
  while(facts)
    list(POP_FRONT facts key value)
    string(JSON layout SET "${layout}" ${key} "\"${value}\"")
    string(APPEND sh "fl_${num}_${key}='${value}'\n")
  endwhile()
  # the object files: a list (a placeholder in the JSON until
  # lesson_write_layout, as a JSON array cannot hold a generator expression)
  set(objects "$<TARGET_OBJECTS:lesson${num}_student>")
  string(JSON layout SET "${layout}" student_objects "\"@FL_OBJECTS_lesson${num}_student@\"")
  string(APPEND sh "fl_${num}_student_objects='$<JOIN:${objects}, >'\n")
  string(JSON entry SET "${entry}" build "${layout}")
  string(JSON count LENGTH "${manifest}" lessons)
  string(JSON manifest SET "${manifest}" lessons ${count} "${entry}")
  set_property(GLOBAL PROPERTY FUSIONLAB_MANIFEST "${manifest}")
  set_property(GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH "${sh}")
endfunction()

# After the last target is defined (the end of the top CMakeLists.txt): write
# what the build knows of its own layout, for the programs that use the build
# rather than being part of it. CMake expands the generator expressions
# ($<TARGET_FILE:...>, $<TARGET_OBJECTS:...>) when it generates the build:
#   fusionlab_manifest.json  for the grader (grader/manifest.h)
#   fusionlab_layout.sh      for lab and the corpus runner (sh assignments)
# The names and the folders of the targets are written here and nowhere else.
function(lesson_write_layout)
  if(CMAKE_BINARY_DIR MATCHES "[\"\\']")
    message(FATAL_ERROR "the build folder's path (${CMAKE_BINARY_DIR}) must not contain "
                        "quotes or backslashes: the layout files quote it")
  endif()
  get_property(manifest GLOBAL PROPERTY FUSIONLAB_MANIFEST)
  get_property(sh GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH)
  get_property(names GLOBAL PROPERTY FUSIONLAB_LESSONS)
  set(harness_targets ${FUSIONLAB_HARNESS_TARGETS}) # (CMakeLists.txt)
  set(harness "")
  foreach(t IN LISTS harness_targets)
    list(APPEND harness "$<TARGET_FILE:${t}>")
  endforeach()
  _lesson_json_list(harness_json "${harness}")
  string(JSON manifest SET "${manifest}" harness_libs "${harness_json}")
  string(JSON manifest SET "${manifest}" generator "\"${CMAKE_GENERATOR}\"")
  if(TARGET fusionlab_ktrace) # the speed audit's kernel trace (grader/ktrace.c)
    string(JSON manifest SET "${manifest}" kernel_trace
           "{\"target\": \"fusionlab_ktrace\", \"file\": \"$<TARGET_FILE:fusionlab_ktrace>\"}")
  endif()
  string(REGEX MATCHALL "@FL_OBJECTS_[A-Za-z0-9_]+@" holders "${manifest}")
  foreach(h IN LISTS holders)
    string(REGEX REPLACE "^@FL_OBJECTS_(.*)@$" "\\1" t "${h}")
    string(REPLACE "\"${h}\"" "[\"$<JOIN:$<TARGET_OBJECTS:${t}>,\"$<COMMA> \">\"]"
           manifest "${manifest}")
  endforeach()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/fusionlab_manifest.json" CONTENT "${manifest}\n")

  string(REPLACE ";" " " names "${names}")
  string(REPLACE ";" " " harness "${harness}")
  string(REPLACE ";" " " harness_targets "${harness_targets}")
  set(head "# fusionlab_layout.sh -- written by CMake (cmake/Lesson.cmake,\n"
           "# lesson_write_layout): where this build keeps what lab runs. Do not edit.\n"
           "fl_layout_format=1\n"
           "fl_lessons='${names}'\n"
           "fl_harness_libs='${harness}'\n"
           "fl_harness_targets='${harness_targets}'\n"
           "fl_generator='${CMAKE_GENERATOR}'\n")
  if(FUSIONLAB_GNUPLOT)
    list(APPEND head "fl_gnuplot='${FUSIONLAB_GNUPLOT}'\n")
  endif()
  # what the top CMakeLists.txt found missing, as Debian packages
  foreach(what COURSE PLOT GRADER SLURM)
    string(TOLOWER "${what}" w)
    string(REPLACE ";" " " pkgs "${FUSIONLAB_MISSING_${what}}")
    list(APPEND head "fl_missing_${w}='${pkgs}'\n")
  endforeach()
  if(TARGET fusionlab_ktrace) # the grader's speed audit traces kernels with CUPTI
    string(APPEND head "fl_kernel_trace='$<TARGET_FILE:fusionlab_ktrace>'\n")
  endif()
  if(TARGET fl_skeleton)
    string(APPEND head "fl_skeleton_bin='$<TARGET_FILE:fl_skeleton>'\n")
  endif()
  if(TARGET fusionlab_grade)
    string(APPEND head "fl_grader_bin='$<TARGET_FILE:fusionlab_grade>'\n")
  endif()
  string(JOIN "" text ${head} "${sh}")
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/fusionlab_layout.sh" CONTENT "${text}")
endfunction()

# The adversarial corpus of a lesson (tests/adversarial/NN-name/*.patch): each
# entry is a known-bad version of one exercise file, kept as a patch to the
# worked file its "// REPLACES: file" line names (the patch's comment block
# says what is wrong). At configure time the patch is applied (GNU patch) to a
# copy of the worked file, less its skeleton markers (_lesson_worked_code),
# under the name of the file it replaces, so it builds exactly as a
# student's copy would. For each entry: a library
# adv_NN_<stem>_lib (the bad file plus the worked versions of the lesson's
# other exercise files) and the lesson's test program linked against it,
# adv_NN_<stem>. Built only on demand (tests/adversarial/run-corpus, ./lab
# adversarial); lesson_corpus_list() writes the entries to
# ${CMAKE_BINARY_DIR}/adversarial.txt as "lesson target library-target
# source" lines. A patch that no longer applies (the worked file changed) is
# left out with a warning, and the corpus run counts it as missed.
#
# The corpus of correct variants (tests/variants/NN-name/*.patch, `kind`
# "variants") is built the same way: var_NN_<stem>_lib and var_NN_<stem>,
# listed in ${CMAKE_BINARY_DIR}/variants.txt. Each is another valid design of
# an exercise file; its test program must pass every suite, speed included,
# and the object scan must not flag it.
function(_lesson_corpus kind name num slug exercise tool_targets)
  if(kind STREQUAL "variants")
    set(prefix var)
    set(listprop FUSIONLAB_VARIANTS_LIST)
  else()
    set(prefix adv)
    set(listprop FUSIONLAB_ADVERSARIAL_LIST)
  endif()
  set(dir "${PROJECT_SOURCE_DIR}/tests/${kind}/${name}")
  if(NOT IS_DIRECTORY "${dir}")
    return()
  endif()
  find_program(FUSIONLAB_PATCH patch)
  file(GLOB entries CONFIGURE_DEPENDS "${dir}/*.patch")
  set(course "${PROJECT_SOURCE_DIR}/lessons/${name}")
  set(solution "${PROJECT_SOURCE_DIR}/solutions/${name}")
  # the patches are diffs against the worked code, the solution less its
  # skeleton markers (what `fl_skeleton --level solution` prints)
  set(worked "${CMAKE_BINARY_DIR}/${kind}/worked/${name}")
  foreach(f IN LISTS exercise)
    _lesson_worked_code("${solution}/${f}" "${worked}/${f}")
  endforeach()
  foreach(entry IN LISTS entries)
    get_filename_component(stem "${entry}" NAME_WE)
    file(STRINGS "${entry}" rep REGEX "^// REPLACES: " LIMIT_COUNT 1)
    string(REGEX REPLACE "^// REPLACES: *([^ ]+).*$" "\\1" rep "${rep}")
    if(NOT rep OR NOT rep IN_LIST exercise)
      message(FATAL_ERROR "${entry}: needs a '// REPLACES: <one of ${exercise}>' line")
    endif()
    set(t "${prefix}_${num}_${stem}")
    set(copy "${CMAKE_BINARY_DIR}/${kind}/${num}_${stem}/${rep}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${entry}" "${solution}/${rep}")
    if(NOT FUSIONLAB_PATCH)
      message(WARNING "${entry}: GNU patch not found: the corpus entry ${t} is left out")
      continue()
    endif()
    get_filename_component(copy_dir "${copy}" DIRECTORY)
    file(MAKE_DIRECTORY "${copy_dir}")
    execute_process(COMMAND "${FUSIONLAB_PATCH}" --silent --force --fuzz=0 -o "${copy}"
                            "${worked}/${rep}" "${entry}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    file(REMOVE "${copy}.orig" "${copy}.rej")
    if(NOT rc EQUAL 0)
      file(REMOVE "${copy}")
      message(WARNING "${entry} no longer applies to ${solution}/${rep} (less its skeleton "
                      "markers: ${worked}/${rep}; left out): ${out}")
      continue()
    endif()
    set(srcs "${copy}")
    foreach(f IN LISTS exercise)
      if(NOT f STREQUAL rep)
        list(APPEND srcs "${solution}/${f}")
      endif()
    endforeach()
    add_library(${t}_lib STATIC ${srcs})
    target_include_directories(${t}_lib PUBLIC "${course}")
    target_link_libraries(${t}_lib PUBLIC lesson${num}_baseline fusionlab_common)
    add_executable(${t} "${PROJECT_SOURCE_DIR}/tests/test_${num}_${slug}.c")
    target_link_libraries(${t} PRIVATE ${t}_lib fusionlab_testlib)
    set_target_properties(${t} ${t}_lib PROPERTIES EXCLUDE_FROM_ALL TRUE)
    if(tool_targets)
      add_dependencies(${t} ${tool_targets})
    endif()
    set_property(GLOBAL APPEND PROPERTY ${listprop} "${name} ${t} ${t}_lib ${entry}")
    # for the corpus runner: the entry's program, and the object of its
    # patched file (the one the object scan judges)
    get_property(sh GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH)
    string(APPEND sh "fl_${t}_bin='$<TARGET_FILE:${t}>'\n"
      "fl_${t}_objects='$<JOIN:$<FILTER:$<TARGET_OBJECTS:${t}_lib>,INCLUDE,/${kind}/>, >'\n")
    set_property(GLOBAL PROPERTY FUSIONLAB_LAYOUT_SH "${sh}")
  endforeach()
endfunction()

# After the last lesson: write the corpus lists (empty without solutions/).
function(lesson_corpus_list)
  get_property(all GLOBAL PROPERTY FUSIONLAB_ADVERSARIAL_LIST)
  string(REPLACE ";" "\n" all "${all}")
  file(WRITE "${CMAKE_BINARY_DIR}/adversarial.txt" "${all}\n")
  get_property(all GLOBAL PROPERTY FUSIONLAB_VARIANTS_LIST)
  string(REPLACE ";" "\n" all "${all}")
  file(WRITE "${CMAKE_BINARY_DIR}/variants.txt" "${all}\n")
endfunction()
