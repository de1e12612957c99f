# Fails when the committed runtime op table differs from the one tcc-tblgen
# writes from the op definitions (run by the tcc-check-op-table target).
file(READ ${GENERATED} generated)
if(EXISTS ${COMMITTED})
  file(READ ${COMMITTED} committed)
else()
  set(committed "")
endif()
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR
    "runtime/plan/library_ops.inc is not what the tcc ops define (an op with "
    "LibraryCallOpInterface changed its operands, results or attributes). "
    "Refresh it with `cmake --build build --target tcc-update-op-table` and "
    "commit it.")
endif()
