#!/usr/bin/env bash
# The production topologies the `topologies` test project runs through, each on loopback ports of its
# own, beside (never instead of) the main PostgreSQL on 5432 and MariaDB on 3306, which are never
# stopped or reconfigured here. Run through `scripts/services.sh <subcommand>…`; every start is
# idempotent (a topology already up is left as it is), every stop ends only what it started.
#
#   pgbouncer       PgBouncer in front of 127.0.0.1:5432: transaction mode on 6432, session mode on 6433
#   pg-ha           a new primary (5441) and its streaming standby (5442, not readable), and HAProxy on
#                   5440 following whichever of them accepts sessions (a health check every 250 ms)
#   pg-ha-fail      stops the primary hard (immediate shutdown) and promotes the standby
#   galera          three MariaDB nodes with wsrep on, on 3307, 3308, 3309 (galera-4); a node that is
#                   down rejoins the others
#   galera-kill-node-N / galera-stop-node-N   ends node N (1–3) with SIGKILL / a clean shutdown
#   stop-<name>     stops one of them
#
# Everything lives under $TOPO (default /var/lib/sqlinbox-topo): data directories, configs, logs.
# Needs root (packages, and the postgres and mysql OS users that own the data directories).
set -euo pipefail

TOPO=${SQLINBOX_TOPO_DIR:-/var/lib/sqlinbox-topo}
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
APT_UPDATED=0

log() { printf 'topologies: %s\n' "$*"; }

apt_install() { # packages… (apt-get update once per run)
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then log "not root: cannot install ${missing[*]}; install them and run again"; exit 1; fi
  log "installing ${missing[*]}"
  if [ "$APT_UPDATED" -eq 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

as_postgres() { su postgres -s /bin/bash -c "$*"; }

wait_until() { # seconds, what, command…
  local seconds=$1 what=$2; shift 2
  for _ in $(seq 1 $((seconds * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  log "$what: not ready within $seconds s"; return 1
}

pid_alive() { [ -f "$1" ] && kill -0 "$(head -n 1 "$1")" 2>/dev/null; }

# --- PgBouncer ----------------------------------------------------------------------------------------
pgbouncer_one() { # mode port
  local mode=$1 port=$2 dir="$TOPO/pgbouncer-$1"
  if pid_alive "$dir/pgbouncer.pid" && pg_isready -h 127.0.0.1 -p "$port" -q; then log "PgBouncer ($mode mode) already on $port"; return; fi
  mkdir -p "$dir"
  printf '"postgres" ""\n"root" ""\n' >"$dir/users.txt"
  cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = $mode
max_client_conn = 500
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,options
server_reset_query = DISCARD ALL
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
  chown -R postgres:postgres "$dir"
  as_postgres "pgbouncer -d -q '$dir/pgbouncer.ini'"
  wait_until 20 "PgBouncer ($mode mode)" pg_isready -h 127.0.0.1 -p "$port" -q
  log "PgBouncer ($mode mode) on $port"
}

start_pgbouncer() {
  if ! dpkg -s pgbouncer >/dev/null 2>&1; then
    apt_install pgbouncer postgresql-client
    # Debian's package starts its own PgBouncer on 6432 where systemd runs: these ports are ours.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet pgbouncer 2>/dev/null; then systemctl disable --now pgbouncer; fi
  fi
  apt_install postgresql-client
  pgbouncer_one transaction 6432
  pgbouncer_one session 6433
}

stop_pgbouncer() {
  for mode in transaction session; do
    local pidfile="$TOPO/pgbouncer-$mode/pgbouncer.pid"
    if pid_alive "$pidfile"; then kill "$(head -n 1 "$pidfile")"; log "PgBouncer ($mode mode) stopped"; fi
  done
}

# --- PostgreSQL primary + streaming standby + HAProxy ---------------------------------------------------
PG_A="$TOPO/pg-a" # the primary at creation, on 5441
PG_B="$TOPO/pg-b" # the standby at creation, on 5442

pg_ctl_as() { as_postgres "'$PG_BIN/pg_ctl' $*"; }

pg_ha_healthy() { # the primary takes writes, the standby streams from it, HAProxy answers
  [ "$(psql -h 127.0.0.1 -p 5441 -U postgres -d postgres -qAtc 'select pg_is_in_recovery()' 2>/dev/null)" = "f" ] &&
    [ "$(psql -h 127.0.0.1 -p 5441 -U postgres -d postgres -qAtc "select count(*) from pg_stat_replication where application_name = 'standby' and state = 'streaming'" 2>/dev/null)" = "1" ] &&
    pid_alive "$TOPO/haproxy/haproxy.pid" && pg_isready -h 127.0.0.1 -p 5440 -q
}

stop_pg_clusters() {
  for dir in "$PG_A" "$PG_B"; do
    if [ -f "$dir/postmaster.pid" ]; then pg_ctl_as "-D '$dir' -m immediate stop" >/dev/null 2>&1 || true; fi
  done
}

start_haproxy() {
  local dir="$TOPO/haproxy"
  mkdir -p "$dir"
  # pgsql-check: a server that answers a startup packet with an authentication request is up; the
  # standby runs with hot_standby off, so it refuses sessions (and the check) until it is promoted.
  cat >"$dir/haproxy.cfg" <<EOF
global
  daemon
  pidfile $dir/haproxy.pid
  log stderr format raw local0 notice

defaults
  mode tcp
  timeout connect 1s
  timeout client 1h
  timeout server 1h
  timeout check 500ms

listen postgres
  bind 127.0.0.1:5440
  option pgsql-check user postgres
  default-server inter 250ms fall 2 rise 1 on-marked-down shutdown-sessions
  server a 127.0.0.1:5441 check
  server b 127.0.0.1:5442 check
EOF
  if pid_alive "$dir/haproxy.pid"; then kill "$(head -n 1 "$dir/haproxy.pid")"; sleep 0.3; fi
  haproxy -q -f "$dir/haproxy.cfg"
}

start_pg_ha() {
  apt_install haproxy postgresql postgresql-client
  if pg_ha_healthy; then log "pg-ha already up: primary 5441, standby 5442, HAProxy 5440"; return; fi
  log "creating pg-ha from scratch (primary 5441, standby 5442)"
  stop_pg_clusters
  rm -rf "$PG_A" "$PG_B" "$TOPO/pg-run"
  mkdir -p "$TOPO/pg-run"
  chown postgres:postgres "$TOPO" "$TOPO/pg-run"
  as_postgres "'$PG_BIN/initdb' -D '$PG_A' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync" >/dev/null
  cat >>"$PG_A/postgresql.conf" <<EOF
port = 5441
listen_addresses = '127.0.0.1'
unix_socket_directories = '$TOPO/pg-run'
max_connections = 200
wal_level = replica
max_wal_senders = 5
wal_keep_size = 256MB
hot_standby = off
wal_sender_timeout = 5s
wal_receiver_timeout = 5s
EOF
  pg_ctl_as "-D '$PG_A' -l '$TOPO/pg-a.log' -w start" >/dev/null
  psql -h 127.0.0.1 -p 5441 -U postgres -d postgres -qc "create role root superuser login" -c "create database test"
  as_postgres "'$PG_BIN/pg_basebackup' -h 127.0.0.1 -p 5441 -U postgres -D '$PG_B' -X stream -c fast --no-sync"
  touch "$PG_B/standby.signal"
  cat >>"$PG_B/postgresql.auto.conf" <<EOF
port = 5442
primary_conninfo = 'host=127.0.0.1 port=5441 user=postgres application_name=standby'
EOF
  chown postgres:postgres "$PG_B/standby.signal" "$PG_B/postgresql.auto.conf"
  pg_ctl_as "-D '$PG_B' -l '$TOPO/pg-b.log' start" >/dev/null
  start_haproxy
  wait_until 30 "pg-ha" pg_ha_healthy
  log "pg-ha up: primary 5441, standby 5442 streaming (asynchronous), HAProxy 5440 follows the primary"
}

# The fault: the primary stops hard (no shutdown checkpoint, sessions cut), the standby is promoted.
pg_ha_fail() {
  pg_ctl_as "-D '$PG_A' -m immediate stop" >/dev/null
  pg_ctl_as "-D '$PG_B' -w promote" >/dev/null
  log "primary 5441 stopped hard; standby 5442 promoted"
}

stop_pg_ha() {
  stop_pg_clusters
  local pidfile="$TOPO/haproxy/haproxy.pid"
  if pid_alive "$pidfile"; then kill "$(head -n 1 "$pidfile")"; fi
  log "pg-ha stopped"
}

# --- Galera: three MariaDB nodes -----------------------------------------------------------------------
GALERA_PORTS=(3307 3308 3309)

galera_conf() { # node (1-3)
  local n=$1 dir="$TOPO/galera-$1" port=${GALERA_PORTS[$(($1 - 1))]}
  local base=$((4557 + n * 10))
  cat <<EOF
[mariadbd]
datadir = $dir/data
port = $port
bind-address = 127.0.0.1
socket = $dir/mysqld.sock
pid-file = $dir/mysqld.pid
log-error = $dir/error.log
user = mysql
skip-log-bin
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
innodb_buffer_pool_size = 64M
innodb_log_file_size = 48M
innodb_flush_log_at_trx_commit = 2
max_connections = 300
wsrep_on = ON
wsrep_provider = $(ls /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so 2>/dev/null | head -n 1)
wsrep_cluster_name = sqlinbox-topo
wsrep_cluster_address = gcomm://127.0.0.1:4567,127.0.0.1:4577,127.0.0.1:4587
wsrep_node_name = node$n
wsrep_node_address = 127.0.0.1:$base
wsrep_provider_options = "base_port=$base;ist.recv_addr=127.0.0.1:$((base + 1));gcache.size=64M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S"
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$((base + 2))
EOF
}

galera_up() { mariadb-admin -h 127.0.0.1 -P "${GALERA_PORTS[$(($1 - 1))]}" -uroot ping >/dev/null 2>&1; }
galera_size() { mariadb -h 127.0.0.1 -P "${GALERA_PORTS[$(($1 - 1))]}" -uroot -N -e "show status like 'wsrep_cluster_size'" 2>/dev/null | awk '{print $2}'; }
galera_synced() { [ "$(mariadb -h 127.0.0.1 -P "${GALERA_PORTS[$(($1 - 1))]}" -uroot -N -e "show status like 'wsrep_local_state_comment'" 2>/dev/null | awk '{print $2}')" = "Synced" ]; }
galera_all_synced() { for n in 1 2 3; do galera_synced "$n" || return 1; done; [ "$(galera_size 1)" = "3" ]; }

galera_start_node() { # node [--wsrep-new-cluster]
  local n=$1 dir="$TOPO/galera-$1"
  shift
  mkdir -p /run/mysqld
  chown mysql:mysql /run/mysqld
  start-stop-daemon --start --background --pidfile "$dir/mysqld.pid" --exec /usr/sbin/mariadbd -- --defaults-file="$dir/my.cnf" "$@"
}

start_galera() {
  apt_install galera-4 mariadb-server rsync
  if galera_all_synced; then log "galera already up: three nodes synced on 3307–3309"; return; fi
  local up=0
  for n in 1 2 3; do galera_up "$n" && up=$((up + 1)); done
  if [ "$up" -eq 0 ]; then
    log "creating galera from scratch (three nodes on 3307–3309)"
    for n in 1 2 3; do
      local dir="$TOPO/galera-$n"
      rm -rf "$dir"
      mkdir -p "$dir/data"
      galera_conf "$n" >"$dir/my.cnf"
      chown -R mysql:mysql "$dir"
    done
    mariadb-install-db --defaults-file="$TOPO/galera-1/my.cnf" --auth-root-authentication-method=normal --skip-test-db >/dev/null
    galera_start_node 1 --wsrep-new-cluster
    wait_until 60 "galera node 1" galera_synced 1
    mariadb -h 127.0.0.1 -P 3307 -uroot -e "CREATE DATABASE IF NOT EXISTS test"
  fi
  # A node that is down joins the nodes that are up (state transfer by rsync).
  for n in 1 2 3; do
    if ! galera_up "$n"; then
      galera_conf "$n" >"$TOPO/galera-$n/my.cnf"
      galera_start_node "$n"
    fi
  done
  wait_until 120 "galera (three nodes synced)" galera_all_synced
  log "galera up: three nodes synced on 3307, 3308, 3309"
}

stop_galera_node() { # node [signal]
  local n=$1 dir="$TOPO/galera-$1" signal=${2:-TERM}
  if pid_alive "$dir/mysqld.pid"; then
    local pid
    pid=$(head -n 1 "$dir/mysqld.pid")
    kill "-$signal" "$pid"
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
}

stop_galera() {
  for n in 3 2 1; do stop_galera_node "$n"; done
  log "galera stopped"
}

for command in "$@"; do
  case "$command" in
    pgbouncer) start_pgbouncer ;;
    stop-pgbouncer) stop_pgbouncer ;;
    pg-ha) start_pg_ha ;;
    pg-ha-fail) pg_ha_fail ;;
    stop-pg-ha) stop_pg_ha ;;
    galera) start_galera ;;
    stop-galera) stop_galera ;;
    galera-stop-node-*) stop_galera_node "${command#galera-stop-node-}" ;;
    galera-kill-node-*) stop_galera_node "${command#galera-kill-node-}" KILL ;;
    *) log "unknown subcommand: $command"; exit 2 ;;
  esac
done
