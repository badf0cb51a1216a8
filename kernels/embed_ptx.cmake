# cmake -DINPUT=<file.ptx> -DOUTPUT=<header> -DNAME=<identifier> -P embed_ptx.cmake:
# writes a header holding the PTX text as `inline constexpr char NAME[]`.
file(READ ${INPUT} text)
if(text MATCHES "\\)hetrt_ptx\"")
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter")
endif()
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by embed_ptx.cmake.\n#pragma once\n"
  "inline constexpr char ${NAME}[] = R\"hetrt_ptx(${text})hetrt_ptx\";\n")
