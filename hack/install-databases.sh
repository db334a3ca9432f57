#!/usr/bin/env bash
# Installs the PostgreSQL and MariaDB servers whose binaries the tests run as throwaway instances
# (internal/database/dbtest), and the client tools a backup Job runs (pg_dump, pg_restore, psql,
# mariadb-dump, mariadb; internal/backup), from Debian's packages. Does nothing when all are
# present; the package index is refreshed only when installing from the current one fails.
set -euo pipefail

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

if have_postgres && have_mariadb; then
  log "PostgreSQL and MariaDB are installed"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  log "apt-get not found: install PostgreSQL (initdb, postgres, pg_dump, pg_restore, psql) and MariaDB (mariadbd, mariadb-install-db, mariadb-dump, mariadb) by hand"
  exit 1
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { log "not root and no sudo: cannot install packages"; exit 1; }
  as_root=(sudo)
fi

# The server-core packages bring the daemons without their service setup; the postgresql
# metapackage is Debian's current major version, with its client tools. mariadb-client brings
# mariadb-dump.
packages=(postgresql mariadb-server-core mariadb-client-core mariadb-client)
install() {
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${packages[@]}"
}
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
log "done"
