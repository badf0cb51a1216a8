#!/usr/bin/env bash
# scripts/debian_mirror.sh, which gives scripts/test_container.sh's
# debootstrap the Debian mirror of the machine's apt sources, over apt
# directories made here: the one-line and deb822 formats, options in
# brackets, disabled stanzas and comments, files apt ignores, the order apt
# reads files in, the security suite, Debian cloud images' mirror+file URIs,
# a host of another Debian release, and no Debian entry at all.
# Usage: debian_mirror_test.sh DEBIAN_MIRROR_SH
set -euo pipefail
# shellcheck source=scripts/debian_mirror.sh
. "$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
expect() {  # expect WANT DESCRIPTION COMMAND...: WANT "" means the command fails
  local want=$1 what=$2 got
  shift 2
  if got=$("$@"); then :; else got=""; fi
  if [ "$got" = "$want" ]; then
    echo "ok: $what: ${got:-(none)}"
  else
    echo "FAIL: $what: got '${got}', want '${want}'"
    failures=$((failures + 1))
  fi
}
apt_dir() {  # apt_dir NAME: a fresh etc/apt under $tmp/NAME, printed
  mkdir -p "$tmp/$1/etc/apt/sources.list.d"
  echo "$tmp/$1/etc/apt"
}

# bookworm's image: deb822 only; the security suite in its own stanza.
dir=$(apt_dir deb822)
cat >"$dir/sources.list.d/debian.sources" <<'EOF'
Types: deb
# a comment inside the stanza
URIs: http://mirror.example.org/debian/
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
expect "http://mirror.example.org/debian" "deb822 (trailing slash dropped)" debian_mirror bookworm "$dir"
expect "http://security.example.org/debian-security" "deb822 security suite" debian_security_mirror bookworm "$dir"

# The one-line format with options, deb-src and comments; sources.list first.
dir=$(apt_dir oneline)
cat >"$dir/sources.list" <<'EOF'
# deb http://commented.example.org/debian bookworm main
deb-src http://source.example.org/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian.gpg] http://first.example.org/debian bookworm main non-free-firmware
deb http://first.example.org/debian-security bookworm/updates main
EOF
echo "deb http://later.example.org/debian bookworm main" >"$dir/sources.list.d/later.list"
expect "http://first.example.org/debian" "one-line with options, before sources.list.d" debian_mirror bookworm "$dir"
expect "http://first.example.org/debian-security" "the old security suite name" debian_security_mirror bookworm "$dir"

# Third-party repositories, disabled stanzas and files apt ignores come to nothing.
dir=$(apt_dir others)
cat >"$dir/sources.list.d/a-vendor.list" <<'EOF'
deb https://vendor.example.com/apt vendor-bookworm main
deb https://contrib-only.example.org/debian bookworm contrib
EOF
cat >"$dir/sources.list.d/b-disabled.sources" <<'EOF'
Types: deb
URIs: http://disabled.example.org/debian
Suites: bookworm
Components: main
Enabled: no
EOF
echo "deb http://ignored.example.org/debian bookworm main" >"$dir/sources.list.d/c.list.disabled"
cat >"$dir/sources.list.d/d-debian.sources" <<'EOF'
Types: deb-src deb
URIs: http://d.example.org/debian
Suites:
 bookworm
Components: main
EOF
expect "http://d.example.org/debian" "past vendors, disabled stanzas, ignored files; a folded field" \
  debian_mirror bookworm "$dir"
expect "" "no security entry" debian_security_mirror bookworm "$dir"

# Debian's cloud images: mirror+file:, the first mirror of its list.
dir=$(apt_dir cloud)
mkdir -p "$tmp/cloud/etc/apt/mirrors"
printf '# mirrors\nhttps://cloud.example.net/debian\tpriority:1\nhttps://second.example.net/debian\n' \
  >"$tmp/cloud/etc/apt/mirrors/debian.list"
cat >"$dir/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: mirror+file://$tmp/cloud/etc/apt/mirrors/debian.list
Suites: bookworm
Components: main
EOF
expect "https://cloud.example.net/debian" "mirror+file: list" debian_mirror bookworm "$dir"

# A trixie machine: its own release's mirror serves bookworm too; a machine
# that is not Debian has no Debian mirror to offer.
dir=$(apt_dir trixie)
printf 'ID=debian\nVERSION_CODENAME=trixie\n' >"$tmp/trixie/etc/os-release"
printf 'deb http://trixie.example.org/debian trixie main\n' >"$dir/sources.list"
expect "http://trixie.example.org/debian" "the host's own Debian release" debian_mirror bookworm "$dir"
dir=$(apt_dir ubuntu)
printf 'ID=ubuntu\nVERSION_CODENAME=noble\n' >"$tmp/ubuntu/etc/os-release"
printf 'deb http://archive.example.com/ubuntu noble main\n' >"$dir/sources.list"
expect "" "not a Debian machine" debian_mirror bookworm "$dir"
expect "" "no apt sources at all" debian_mirror bookworm "$tmp/nothing/etc/apt"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "every apt layout gave the mirror apt uses"
