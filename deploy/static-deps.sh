#!/usr/bin/env bash
# Fetches the Debian source packages of the four libraries Debian 12 ships without a static
# archive (fmt, spdlog, muparser, cpp-httplib) at the versions pinned, file by file with sha256,
# in deploy/static-deps.lock, for the static runtime (cmake/static_runtime.cmake), which
# compiles them into static libraries so that build/static/{blocktune,blocktuned,blocktune-worker}
# need nothing but the C library (docs/install.md).
#
# The client is apt-get source. Its deb-src lines are this machine's own Debian deb lines with
# the type changed, in a private apt state under OUT: the system's apt configuration is not
# touched, and Debian's signed index authenticates what is downloaded before the lock's sha256
# pins it.
#   deploy/static-deps.sh check       installed -dev packages against the lock (exit 1, naming each)
#   deploy/static-deps.sh fetch OUT   download, verify, extract into OUT/src/<source-package>,
#                                     split cpp-httplib into OUT/src/cpp-httplib/split/
#   deploy/static-deps.sh lock OUT    print a lock for the installed versions (after Debian updates one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lock=$here/static-deps.lock

# "dev source version" per source package, in the lock's order.
packages() { grep -v '^#' "$lock" | awk 'NF { print $1, $2, $3 }' | uniq; }

installed_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

check() {
  local bad=0 dev src version have
  while read -r dev src version; do
    have=$(installed_version "$dev")
    if [[ $have != "$version" ]]; then
      echo "deploy/static-deps.lock pins $src $version but $dev ${have:-is not installed}${have:+ is installed}" >&2
      bad=1
    fi
  done < <(packages)
  if ((bad)); then
    echo "fix: deploy/install-deps.sh, or refresh the lock for the installed versions with" \
         "'deploy/static-deps.sh lock /tmp/static-deps > deploy/static-deps.lock'," \
         "or configure with -DBLOCKTUNE_STATIC_RUNTIME=OFF" >&2
    return 1
  fi
}

# apt-get with a private state under $1 whose sources are the system's Debian deb entries as deb-src.
apt_private() {
  local dir=$1
  shift
  apt-get -q -o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts="$dir/apt/sources.d" \
    -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o APT::Sandbox::User=root "$@"
}

write_sources() {
  local dir=$1 f
  mkdir -p "$dir/apt/sources.d" "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial"
  # One-line format: every "deb" line of a Debian archive (its path ends in /debian or
  # /debian-security) becomes "deb-src".
  : >"$dir/apt/sources.list"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    sed -nE 's#^[[:space:]]*deb[[:space:]]+(.*/debian(-security)?/?[[:space:]].*)$#deb-src \1#p' "$f" >>"$dir/apt/sources.list"
  done
  # deb822 format: each paragraph of type deb whose URIs are a Debian archive, with the type changed.
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Types:[^\n]*deb/ && /(^|\n)URIs:[^\n]*\/debian(-security)?\/?([ \n]|$)/ && !/(^|\n)Enabled: *no/ {
           sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f" >"$dir/apt/sources.d/$(basename "$f")"
  done
}

fetch() {
  local out=$1 dev src version file sum dl=$1/download
  check
  write_sources "$out"
  mkdir -p "$dl"
  local specs=()
  while read -r dev src version; do specs+=("$src=$version"); done < <(packages)
  # The private index is kept between runs; refreshed when a pinned version is not in it.
  if ! (cd "$dl" && apt_private "$out" source --download-only "${specs[@]}" >"$out/apt-source.log" 2>&1); then
    apt_private "$out" update >"$out/apt-update.log" 2>&1 || { cat "$out/apt-update.log" >&2; exit 1; }
    (cd "$dl" && apt_private "$out" source --download-only "${specs[@]}" >"$out/apt-source.log" 2>&1) \
      || { cat "$out/apt-source.log" >&2; exit 1; }
  fi
  grep -v '^#' "$lock" | awk 'NF { print $5 "  " $4 }' | (cd "$dl" && sha256sum --quiet -c -) \
    || { echo "a downloaded file does not match deploy/static-deps.lock's sha256" >&2; exit 1; }

  mkdir -p "$out/src"
  while read -r dev src version; do
    local dsc
    dsc=$(grep -v '^#' "$lock" | awk -v s="$src" '$2 == s && $4 ~ /\.dsc$/ { print $4 }')
    rm -rf "${out:?}/src/$src"
    # --no-check: the files were verified against the lock's sha256 above.
    dpkg-source --no-check -x "$dl/$dsc" "$out/src/$src" >/dev/null
  done < <(packages)
  rm -f "$out"/src/*.orig.tar.*  # dpkg-source's copies beside the folders
  python3 "$out/src/cpp-httplib/split.py" --out "$out/src/cpp-httplib/split" >/dev/null

  # The static libraries must match the headers blocktune's objects were compiled against.
  local same=1
  diff -rq "$out/src/fmtlib/include/fmt" /usr/include/fmt >&2 || same=0
  diff -rq "$out/src/spdlog/include/spdlog" /usr/include/spdlog >&2 || same=0
  for f in "$out"/src/muparser/include/*.h; do cmp "$f" "/usr/include/$(basename "$f")" >&2 || same=0; done
  cmp "$out/src/cpp-httplib/split/httplib.h" /usr/include/httplib.h >&2 || same=0
  if ((!same)); then
    echo "the locked sources' headers differ from the installed ones (above): see deploy/static-deps.lock" >&2
    exit 1
  fi
  sha256sum "$lock" >"$out/fetched.stamp"
}

lock_for_installed() {
  local out=$1 dev src version have
  write_sources "$out"
  apt_private "$out" update >"$out/apt-update.log" 2>&1 || { cat "$out/apt-update.log" >&2; exit 1; }
  sed -n '/^# dev-package/q;p' "$lock"
  echo "# dev-package source-package version file sha256"
  while read -r dev src version; do
    have=$(installed_version "$dev")
    rm -rf "$out/lock-$src" && mkdir -p "$out/lock-$src"
    (cd "$out/lock-$src" && apt_private "$out" source --download-only "$src=$have" >/dev/null 2>&1) \
      || { echo "apt-get source $src=$have failed" >&2; exit 1; }
    (cd "$out/lock-$src" && sha256sum ./*.dsc ./*.tar.*) | while read -r sum file; do
      echo "$dev $src $have ${file#./} $sum"
    done
  done < <(packages)
}

case ${1:-} in
  check) check ;;
  fetch) [[ -n ${2:-} ]] || { echo "usage: $0 fetch OUT" >&2; exit 2; }; mkdir -p "$2"; fetch "$(cd "$2" && pwd)" ;;
  lock) [[ -n ${2:-} ]] || { echo "usage: $0 lock OUT" >&2; exit 2; }; mkdir -p "$2"; lock_for_installed "$(cd "$2" && pwd)" ;;
  *) echo "usage: $0 check | fetch OUT | lock OUT" >&2; exit 2 ;;
esac
