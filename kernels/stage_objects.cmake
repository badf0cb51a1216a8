# Copies each object in OBJECTS (separated by |) to DESTINATION/<source name>.o (CMake names
# them <source>.c.o; the exporter lists the folder).
string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
foreach(object ${OBJECTS})
  get_filename_component(name ${object} NAME)
  string(REGEX REPLACE "\\.c\\.o$" ".o" name "${name}")
  file(COPY_FILE ${object} ${DESTINATION}/${name} ONLY_IF_DIFFERENT)
endforeach()
