#!/usr/bin/env bash
# deploy/check_libraries.sh, the image build's library check, fails in each
# way it must: a library not found, no ELF file to check, a directory that is
# not there; and passes on a tree whose libraries all resolve.
# Usage: check_libraries_test.sh CHECK_LIBRARIES HETRT_BINARY
set -euo pipefail
check=$1
hetrt=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect() {  # expect pass|fail DESCRIPTION DIR...
  local want=$1 what=$2
  shift 2
  if sh "$check" "$@" >"$tmp/out" 2>&1; then got=pass; else got=fail; fi
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: check_libraries.sh should $want, it did not:"
    cat "$tmp/out"
    exit 1
  fi
  echo "ok: $what ($want): $(tail -1 "$tmp/out")"
}
mkdir -p "$tmp/good/bin" "$tmp/missing" "$tmp/empty/share"
cp "$hetrt" "$tmp/good/bin/"
expect pass "the hetrt CLI, every library resolved" "$tmp/good"
# A library that links one that is gone: build against a stub, then remove it.
echo 'int stub(void) { return 1; }' >"$tmp/stub.c"
echo 'int stub(void); int user(void) { return stub(); }' >"$tmp/user.c"
cc -shared -fPIC -o "$tmp/libhetrt_gone.so" "$tmp/stub.c"
cc -shared -fPIC -o "$tmp/missing/libuser.so" "$tmp/user.c" -L"$tmp" -lhetrt_gone
rm "$tmp/libhetrt_gone.so"
expect fail "a library that links a missing one" "$tmp/missing"
grep -q "libhetrt_gone.so" "$tmp/out" || { echo "FAIL: the message does not name the missing library"; cat "$tmp/out"; exit 1; }
echo "text, no ELF" >"$tmp/empty/share/readme"
expect fail "a tree with no ELF file (a check that checked nothing)" "$tmp/empty"
expect fail "a directory that does not exist" "$tmp/nonexistent"
mkdir -p "$tmp/broken"
cp "$hetrt" "$tmp/broken/"
printf '\177ELF truncated' >"$tmp/broken/libtruncated.so"
expect fail "an ELF file ldd cannot read (ldd itself failing)" "$tmp/broken"
grep -q "ldd failed on .*libtruncated.so" "$tmp/out" || { echo "FAIL: the message does not name the file"; cat "$tmp/out"; exit 1; }
