#!/bin/sh
# check_libraries.sh DIR...: fails unless every ELF file under DIR resolves all
# of its shared libraries. Fails as well when ldd itself fails on a file or when
# no ELF file is found at all, so a broken check cannot pass for a good image.
set -eu
[ "$#" -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
checked=0
missing=0
for file in $(find "$@" -type f); do
  [ "$(head -c 4 "$file" | od -An -c | tr -d ' \n')" = '177ELF' ] || continue
  case "$file" in *.o) continue ;; esac  # relocatable objects link nothing
  if ! out=$(ldd "$file" 2>&1); then
    echo "check_libraries: ldd failed on $file: $out" >&2
    exit 1
  fi
  if printf '%s\n' "$out" | grep -q "not found"; then
    printf '%s\n' "$out" | grep "not found" | sed "s|^|check_libraries: $file: |" >&2
    missing=1
  fi
  checked=$((checked + 1))
done
[ "$missing" -eq 0 ] || exit 1
[ "$checked" -gt 0 ] || { echo "check_libraries: no ELF file under $*" >&2; exit 1; }
echo "check_libraries: $checked ELF files under $*, every shared library found"
