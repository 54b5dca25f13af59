#!/usr/bin/env bash
# A PostgreSQL primary with a synchronous streaming standby, for the failover test
# (test/e2e/pg-failover.test.ts, docs/scale-out.md "Failover of the primary"): two clusters of
# Debian's PostgreSQL beside the machine's 15/main, which this never touches.
#
#   fo-primary on 127.0.0.1:${FO_PRIMARY_PORT:-5441}   synchronous_standby_names = '*'
#   fo-standby on 127.0.0.1:${FO_STANDBY_PORT:-5442}   pg_basebackup -R of the primary, streaming
#
# Idempotent: run it again (the test does, at its start) and it leaves that pair running, in
# that orientation, whatever the last run left: a stopped primary is started, and a standby
# that was promoted, stopped, or is not streaming synchronously is made again from the primary.
# Trust authentication on 127.0.0.1 only. Prints nothing but errors unless FO_VERBOSE is set.
set -euo pipefail

VERSION="${FO_PG_VERSION:-15}"
PRIMARY=fo-primary
STANDBY=fo-standby
PRIMARY_PORT="${FO_PRIMARY_PORT:-5441}"
STANDBY_PORT="${FO_STANDBY_PORT:-5442}"
DATABASE=test

say() { [ -z "${FO_VERBOSE:-}" ] || echo "pg-replicas: $*" >&2; }
# synchronous_commit=local: this script's own writes (CREATE DATABASE) must not wait for a
# standby that it has not made yet.
psql_at() { local port=$1; shift; PGOPTIONS='-c synchronous_commit=local' psql -X -q -A -t -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
running() { pg_lsclusters -h "$VERSION" "$1" 2>/dev/null | awk '{print $4}' | grep -q '^online'; }
exists() { [ -d "/etc/postgresql/$VERSION/$1" ]; }
ctl() { pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$@"; }

# Settings of both clusters: loopback only, trust there (as the machine's 15/main), room for
# the test's nodes, and a quick shutdown of the WAL sender on a killed peer.
configure() {
  local name=$1 port=$2
  local conf="/etc/postgresql/$VERSION/$name"
  mkdir -p "$conf/conf.d"
  cat >"$conf/conf.d/10-failover.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
max_connections = 100
wal_level = replica
max_wal_senders = 5
hot_standby = on
wal_sender_timeout = 5s
wal_receiver_timeout = 5s
EOF
  cat >"$conf/pg_hba.conf" <<EOF
local all all trust
host all all 127.0.0.1/32 trust
local replication all trust
host replication all 127.0.0.1/32 trust
EOF
}

# The primary waits for the standby's flush before it acknowledges a commit. Only the primary
# says so: a promoted standby with no standby of its own must not wait for one.
primary_settings() {
  cat >"/etc/postgresql/$VERSION/$PRIMARY/conf.d/20-primary.conf" <<EOF
synchronous_standby_names = '*'
synchronous_commit = on
EOF
}

if ! exists "$PRIMARY"; then
  say "creating $PRIMARY on $PRIMARY_PORT"
  pg_createcluster "$VERSION" "$PRIMARY" -p "$PRIMARY_PORT" >/dev/null
fi
configure "$PRIMARY" "$PRIMARY_PORT"
primary_settings
if running "$PRIMARY"; then
  ctl "$PRIMARY" reload
else
  ctl "$PRIMARY" start
fi
if [ "$(psql_at "$PRIMARY_PORT" -c 'SELECT pg_is_in_recovery()')" != "f" ]; then
  echo "pg-replicas: $PRIMARY on $PRIMARY_PORT is in recovery; drop it (pg_dropcluster --stop $VERSION $PRIMARY) and run this again" >&2
  exit 1
fi
if [ "$(psql_at "$PRIMARY_PORT" -c "SELECT count(*) FROM pg_database WHERE datname = '$DATABASE'")" = "0" ]; then
  psql_at "$PRIMARY_PORT" -c "CREATE DATABASE $DATABASE"
fi

# A standby that streams synchronously from this primary now is kept; anything else is remade.
healthy_standby() {
  running "$STANDBY" || return 1
  [ "$(psql_at "$STANDBY_PORT" -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = "t" ] || return 1
  [ "$(psql_at "$PRIMARY_PORT" -c "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'")" = "1" ]
}

wait_streaming() {
  for _ in $(seq 1 100); do
    if healthy_standby; then return 0; fi
    sleep 0.1
  done
  echo "pg-replicas: $STANDBY did not stream synchronously from $PRIMARY within 10 s" >&2
  exit 1
}

if exists "$STANDBY" && running "$STANDBY"; then
  for _ in $(seq 1 30); do healthy_standby && break; sleep 0.1; done
fi
if ! healthy_standby; then
  say "making $STANDBY on $STANDBY_PORT from $PRIMARY"
  # The cluster's configuration (in /etc) is kept; only its data is made again (no initdb).
  if exists "$STANDBY"; then
    running "$STANDBY" && ctl "$STANDBY" stop -m immediate
  else
    pg_createcluster "$VERSION" "$STANDBY" -p "$STANDBY_PORT" >/dev/null
  fi
  configure "$STANDBY" "$STANDBY_PORT"
  data="/var/lib/postgresql/$VERSION/$STANDBY"
  rm -rf "$data"
  install -d -o postgres -g postgres -m 700 "$data"
  # -R writes standby.signal and primary_conninfo; the WAL receiver names itself after the
  # cluster (cluster_name), which synchronous_standby_names = '*' accepts.
  runuser -u postgres -- pg_basebackup -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$data" -R -X stream -c fast
  ctl "$STANDBY" start
  wait_streaming
fi
say "ready: primary 127.0.0.1:$PRIMARY_PORT, synchronous standby 127.0.0.1:$STANDBY_PORT"
