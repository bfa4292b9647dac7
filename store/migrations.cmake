# The migration files' numbering rule, checked at configure time (and by a ctest in script
# mode over deliberately broken folders): every file is NNNN_name.sql, and the numbers are
# exactly 1, 2, 3, ... with no gap and no duplicate. The schema version a database records is
# the number of the last file applied, so a gap or a duplicate would make a version mean two
# things. Usage as a script: cmake -DMIGRATIONS_DIR=dir -P store/migrations.cmake

# Sets ${out_var} to the sorted list of migration files in `dir`, or stops with FATAL_ERROR
# naming the offending file.
function(blocktune_check_migrations dir out_var)
  file(GLOB files ${dir}/*.sql)
  list(SORT files)
  if(NOT files)
    message(FATAL_ERROR "no migrations in ${dir}")
  endif()
  set(expected 1)
  foreach(f ${files})
    get_filename_component(name ${f} NAME)
    if(NOT name MATCHES "^([0-9][0-9][0-9][0-9])_[a-z0-9_]+\\.sql$")
      message(FATAL_ERROR "migration ${name}: the name must be NNNN_lowercase_words.sql")
    endif()
    math(EXPR number "1${CMAKE_MATCH_1} - 10000")  # "0007" -> 7 (a leading 0 is not octal here)
    if(number LESS expected)
      message(FATAL_ERROR "migration ${name}: duplicate number ${CMAKE_MATCH_1}")
    elseif(number GREATER expected)
      message(FATAL_ERROR "migration ${name}: gap, number ${expected} is missing before it")
    endif()
    math(EXPR expected "${expected} + 1")
  endforeach()
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND MIGRATIONS_DIR)
  blocktune_check_migrations(${MIGRATIONS_DIR} files)
  list(LENGTH files n)
  message(STATUS "${n} migrations numbered 1..${n}")
endif()
