#!/usr/bin/env bash
# Installs the PostgreSQL and MariaDB servers whose binaries the tests run as throwaway instances
# (internal/database/dbtest), and the client tools a backup Job runs (pg_dump, pg_restore, psql,
# mariadb-dump, mariadb; internal/backup), from Debian's packages. Does nothing when all are
# present; the package index is refreshed only when installing from the current one fails.
#
# It also puts a second, newer Debian release's PostgreSQL and MariaDB (NEWER_DEBIAN, trixie:
# PostgreSQL 17 and MariaDB 11.8, the backup image's clients) in bin/debian/$NEWER_DEBIAN, so that
# the tests run each engine's client tools against servers of two major versions. That release is
# unpacked by debootstrap into the folder and its programs are made to load their own C library
# and libraries from it (patchelf): nothing of it is installed on the machine, and no chroot is
# needed to run it. Set NEWER_DEBIAN= (empty) to skip it; the tests then run one version.
set -euo pipefail
cd "$(dirname "$0")/.."
NEWER_DEBIAN=${NEWER_DEBIAN-trixie}
NEWER_ROOT=bin/debian/$NEWER_DEBIAN

log() { echo "install-databases: $*" >&2; }

have_postgres() {
  compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null &&
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null &&
    compgen -G '/usr/lib/postgresql/*/bin/pg_dump' >/dev/null &&
    compgen -G '/usr/lib/postgresql/*/bin/pg_restore' >/dev/null &&
    compgen -G '/usr/lib/postgresql/*/bin/psql' >/dev/null
}
have_mariadb() {
  { command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ]; } &&
    command -v mariadb-install-db >/dev/null &&
    command -v mariadb-dump >/dev/null &&
    command -v mariadb >/dev/null
}

# newer_release unpacks NEWER_DEBIAN's servers and clients into NEWER_ROOT, once: the file
# .landlord-ready, written last, says the folder is whole.
newer_release() {
  [ -n "$NEWER_DEBIAN" ] || return 0
  if [ -f "$NEWER_ROOT/.landlord-ready" ]; then
    log "Debian $NEWER_DEBIAN's PostgreSQL and MariaDB are in $NEWER_ROOT"
    return 0
  fi
  local tools=()
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || tools+=(debootstrap)
  command -v patchelf >/dev/null || tools+=(patchelf)
  if [ ${#tools[@]} -gt 0 ]; then
    packages=("${tools[@]}")
    log "installing ${packages[*]}"
    install || { "${as_root[@]}" apt-get update && install; }
  fi
  local tmp="$NEWER_ROOT.tmp"
  "${as_root[@]}" rm -rf --one-file-system "$tmp"
  mkdir -p "$(dirname "$NEWER_ROOT")"
  log "unpacking Debian $NEWER_DEBIAN's PostgreSQL and MariaDB into $NEWER_ROOT (about a minute)"
  # The server packages' own setup (a default cluster, a service) runs inside the folder only.
  "${as_root[@]}" env PATH="/usr/sbin:/usr/bin:/sbin:/bin" debootstrap --variant=minbase \
    --include=postgresql,mariadb-server-core,mariadb-client \
    "$NEWER_DEBIAN" "$tmp" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$tmp.log" 2>&1 ||
    { tail -20 "$tmp.log" >&2; log "debootstrap failed (log: $tmp.log)"; exit 1; }
  # The folder's programs load the folder's loader and libraries, wherever the folder is.
  local root libs f
  root=$(cd "$tmp" && pwd)
  libs="$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/aarch64-linux-gnu"
  local loader
  loader=$(ls "$root"/usr/lib/*-linux-gnu/ld-linux-*.so.* | head -1)
  local final
  final="$(cd "$(dirname "$NEWER_ROOT")" && pwd)/$(basename "$NEWER_ROOT")"
  for f in "$root"/usr/lib/postgresql/*/bin/* "$root"/usr/sbin/mariadbd "$root"/usr/bin/mariadb* \
    "$root"/usr/bin/my_print_defaults "$root"/usr/bin/resolveip; do
    [ -f "$f" ] && [ ! -L "$f" ] && head -c4 "$f" | grep -q ELF || continue
    "${as_root[@]}" patchelf --set-interpreter "${loader/$root/$final}" --force-rpath \
      --set-rpath "${libs//$root/$final}:$(ls -d "$root"/usr/lib/postgresql/*/lib | sed "s|$root|$final|" | head -1)" "$f"
  done
  "${as_root[@]}" rm -f "$tmp.log"
  "${as_root[@]}" rm -rf --one-file-system "$NEWER_ROOT"
  "${as_root[@]}" mv "$tmp" "$NEWER_ROOT"
  "$NEWER_ROOT"/usr/lib/postgresql/*/bin/postgres --version >&2
  "$NEWER_ROOT"/usr/sbin/mariadbd --version >&2
  "${as_root[@]}" touch "$NEWER_ROOT/.landlord-ready"
  log "Debian $NEWER_DEBIAN's PostgreSQL and MariaDB are in $NEWER_ROOT"
}

if ! command -v apt-get >/dev/null; then
  if have_postgres && have_mariadb; then
    log "PostgreSQL and MariaDB are installed; apt-get not found: the tests run one version of each"
    exit 0
  fi
  log "apt-get not found: install PostgreSQL (initdb, postgres, pg_dump, pg_restore, psql) and MariaDB (mariadbd, mariadb-install-db, mariadb-dump, mariadb) by hand"
  exit 1
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { log "not root and no sudo: cannot install packages"; exit 1; }
  as_root=(sudo)
fi
install() {
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${packages[@]}"
}

if have_postgres && have_mariadb; then
  log "PostgreSQL and MariaDB are installed"
  newer_release
  exit 0
fi

# The server-core packages bring the daemons without their service setup; the postgresql
# metapackage is Debian's current major version, with its client tools. mariadb-client brings
# mariadb-dump.
packages=(postgresql mariadb-server-core mariadb-client-core mariadb-client)
log "installing ${packages[*]}"
if ! install; then
  log "installing from the current package index failed; updating it"
  "${as_root[@]}" apt-get update
  install
fi

if ! have_postgres || ! have_mariadb; then
  log "packages installed, but initdb, postgres, pg_dump, pg_restore, psql, mariadbd, mariadb-install-db, mariadb-dump or mariadb is still missing"
  exit 1
fi
newer_release
log "done"
