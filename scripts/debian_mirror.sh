# shellcheck shell=bash
# The Debian mirror this machine's apt already uses, for debootstrap
# (scripts/test_container.sh): no package host is written into the
# repository. Sourced; each function prints its answer or returns 1.
#
#   debian_apt_entries [APT_DIR]      every enabled "deb" entry of APT_DIR
#                                     (/etc/apt): "URI SUITE COMPONENT..."
#   debian_mirror SUITE [APT_DIR]     the URI of the first entry for SUITE
#                                     with component main; else, on a Debian
#                                     machine, that of its own release (a
#                                     Debian mirror serves every release)
#   debian_security_mirror SUITE [APT_DIR]
#                                     the URI of the first entry for
#                                     SUITE-security (or SUITE/updates)
#
# Read as apt reads them: APT_DIR/sources.list, then APT_DIR/sources.list.d/ in
# name order, *.list in the one-line format ("deb [options] URI suite
# component...") and *.sources in the deb822 format (Types, URIs, Suites,
# Components; Enabled: no skips a stanza); other files are ignored, as apt
# ignores them. A "mirror+file:" URI (Debian's cloud images) is the first
# mirror its list names; other URIs debootstrap cannot fetch from (mirror:,
# cdrom:, tor+...) are passed over. The machine's release comes from
# os-release beside APT_DIR (/etc/os-release).

# One-line entries of one file, as "URI SUITE COMPONENT...".
debian_list_entries() {
  awk '
    { sub(/#.*/, "") }
    $1 != "deb" { next }
    {
      i = 2
      if ($i ~ /^\[/) {  # [option=value ...], possibly over several fields
        while (i <= NF && $i !~ /\]$/) i++
        i++
      }
      if (i + 1 > NF) next
      line = $i " " $(i + 1)
      for (j = i + 2; j <= NF; j++) line = line " " $j
      print line
    }' "$1"
}

# deb822 stanzas of one file, one line per URI and suite.
debian_sources_entries() {
  awk '
    function flush(   n, m, a, b, U, S) {
      if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
        n = split(uris, U, " ")
        m = split(suites, S, " ")
        for (a = 1; a <= n; a++)
          for (b = 1; b <= m; b++) print U[a] " " S[b] components
      }
      types = uris = suites = components = key = ""
      enabled = "yes"
    }
    BEGIN { enabled = "yes" }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ {  # a continuation of the field before
      value = $0
      gsub(/^[ \t]+|[ \t]+$/, "", value)
      if (key == "uris") uris = uris " " value
      else if (key == "suites") suites = suites " " value
      else if (key == "components") components = components " " value
      else if (key == "types") types = types " " value
      next
    }
    {
      at = index($0, ":")
      if (at == 0) next
      key = tolower(substr($0, 1, at - 1))
      value = substr($0, at + 1)
      gsub(/^[ \t]+|[ \t]+$/, "", value)
      gsub(/[ \t]+/, " ", value)
      if (key == "types") types = value
      else if (key == "uris") uris = value
      else if (key == "suites") suites = value
      else if (key == "components") components = " " value
      else if (key == "enabled") enabled = value
    }
    END { flush() }' "$1"
}

# A URI debootstrap can fetch from, or nothing.
debian_fetchable_uri() {
  local uri=$1 list line
  case "$uri" in
    mirror+file:*)
      list=${uri#mirror+file:}
      list=/${list#"${list%%[!/]*}"}  # file:///x and file:/x alike
      [ -r "$list" ] || return 1
      while read -r line; do
        line=${line%%#*}
        line=${line%%[[:space:]]*}
        [ -n "$line" ] && { debian_fetchable_uri "$line"; return; }
      done <"$list"
      return 1
      ;;
    http://* | https://* | ftp://* | file:/*) echo "${uri%/}" ;;
    *) return 1 ;;
  esac
}

debian_apt_entries() {
  local dir=${1:-/etc/apt} file
  [ -f "$dir/sources.list" ] && debian_list_entries "$dir/sources.list"
  for file in "$dir"/sources.list.d/*; do
    case "$file" in
      *.list) debian_list_entries "$file" ;;
      *.sources) debian_sources_entries "$file" ;;
    esac
  done
  return 0
}

# The URI of the first entry whose suite is one of the arguments after the
# first (APT_DIR) and which has component main.
debian_entry_uri() {
  local dir=$1 uri suite components want found
  shift
  while read -r uri suite components; do
    for want in "$@"; do
      [ "$suite" = "$want" ] || continue
      case " $components " in *" main "*) ;; *) continue ;; esac
      if found=$(debian_fetchable_uri "$uri"); then
        echo "$found"
        return 0
      fi
    done
  done < <(debian_apt_entries "$dir")
  return 1
}

debian_mirror() {
  local suite=$1 dir=${2:-/etc/apt} release
  debian_entry_uri "$dir" "$suite" && return 0
  # The machine's own Debian release: its mirror has the others too.
  release=$(
    # shellcheck source=/dev/null
    . "$dir/../os-release" 2>/dev/null || exit 1
    [ "${ID:-}" = debian ] && [ -n "${VERSION_CODENAME:-}" ] && echo "$VERSION_CODENAME"
  ) || return 1
  [ "$release" != "$suite" ] && debian_entry_uri "$dir" "$release"
}

debian_security_mirror() {
  local suite=$1 dir=${2:-/etc/apt}
  debian_entry_uri "$dir" "$suite-security" "$suite/updates"
}
