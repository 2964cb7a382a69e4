#!/usr/bin/env bash
# Makes sure PostgreSQL and MariaDB run and are reachable, installing them with apt-get if missing,
# and creates the test databases. Idempotent: safe to run before every test run.
set -euo pipefail

PG_DB=${SQLINBOX_PG_DB:-test}
MY_DB=${SQLINBOX_MYSQL_DB:-test}

log() { printf 'services: %s\n' "$*"; }

apt_install() {
  log "installing $*"
  if [ "$(id -u)" -ne 0 ]; then log "not root: cannot install $*; install it and run again"; exit 1; fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # name, command...
  local name=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  log "$name did not become reachable within 60 s"; return 1
}

# `services.sh pgbouncer|pg-ha|pg-ha-fail|galera|stop-<name> …`: the production topologies beside the
# main servers (scripts/topologies.sh says what each is and on which ports).
case "${1:-}" in
  pgbouncer | pg-ha | pg-ha-fail | galera | stop-* | galera-stop-node-* | galera-kill-node-*) exec bash "$(dirname "$0")/topologies.sh" "$@" ;;
esac

# `services.sh restart-postgres`: a real server restart (the outage tests' fault), then ready again.
if [ "${1:-}" = "restart-postgres" ]; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main restart
  for _ in $(seq 1 300); do
    if pg_isready -h 127.0.0.1 -p 5432 -q; then log "PostgreSQL restarted"; exit 0; fi
    sleep 0.2
  done
  log "PostgreSQL did not come back within 60 s"; exit 1
fi

# --- PostgreSQL -------------------------------------------------------------
if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
  apt_install postgresql
  # The tests connect over TCP without a password, as on the project's machines: trust loopback.
  hba="/etc/postgresql/$(ls /etc/postgresql | head -n 1)/main/pg_hba.conf"
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main reload 2>/dev/null || true
fi
if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
fi
wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432 -q
# Runs one SQL statement as the postgres superuser: over the socket as the postgres OS user when root
# (a fresh install trusts only that), else over TCP.
psql_super() {
  if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then su postgres -c "psql -qAt -c \"$1\""; else psql -h 127.0.0.1 -U postgres -qAt -c "$1"; fi
}
for role in root postgres; do
  psql_super "select 1 from pg_roles where rolname='$role'" 2>/dev/null | grep -q 1 \
    || psql_super "create role $role superuser login" || true
done
# The test database, and one of its own for the dashboard's tests (vitest.workspace.ts).
for db in "$PG_DB" "${PG_DB}_dashboard"; do
  psql_super "select 1 from pg_database where datname='$db'" | grep -q 1 \
    || psql_super "create database $db"
done
log "PostgreSQL ready: $(psql -h 127.0.0.1 -U postgres -d "$PG_DB" -qAt -c 'show server_version')"

# --- MariaDB ----------------------------------------------------------------
if ! [ -x /usr/sbin/mariadbd ]; then
  apt_install mariadb-server
fi
if ! mariadb-admin -h 127.0.0.1 -P 3306 -uroot ping >/dev/null 2>&1; then
  log "starting MariaDB"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi
wait_for MariaDB mariadb-admin -h 127.0.0.1 -P 3306 -uroot ping
# The tests log in as root over TCP with an empty password, as on the project's machines; a fresh
# Debian install lets root in over the socket only, so allow both there.
if ! mariadb -h 127.0.0.1 -P 3306 -uroot -e "select 1" >/dev/null 2>&1; then
  mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('')"
fi
mariadb -h 127.0.0.1 -P 3306 -uroot -e "CREATE DATABASE IF NOT EXISTS \`$MY_DB\`; CREATE DATABASE IF NOT EXISTS \`${MY_DB}_dashboard\`"
log "MariaDB ready: $(mariadb -h 127.0.0.1 -P 3306 -uroot -N -e 'select version()')"

# --- Redis (BullMQ's backend in the benchmark) --------------------------------
if ! command -v redis-server >/dev/null 2>&1; then
  apt_install redis-server
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping
log "Redis ready: $(redis-cli -h 127.0.0.1 -p 6379 info server | sed -n 's/^redis_version:\(.*\)\r$/\1/p')"

# --- NATS with JetStream (the @sqlinbox/nats bridge tests) ---------------------------
if ! [ -x /usr/sbin/nats-server ]; then
  apt_install nats-server
fi
nats_up() { bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && head -c 4 <&3 | grep -q INFO'; }
if ! nats_up 2>/dev/null; then
  log "starting NATS (JetStream)"
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi
wait_for NATS nats_up
log "NATS ready: $(/usr/sbin/nats-server --version)"

# --- RabbitMQ (the @sqlinbox/amqp bridge tests; guest/guest, which RabbitMQ lets in from localhost only) ---
if ! [ -x /usr/sbin/rabbitmq-server ]; then
  apt_install rabbitmq-server
fi
amqp_up() { bash -c 'exec 3<>/dev/tcp/127.0.0.1/5672 && printf "AMQP\0\0\x09\x01" >&3 && head -c 4 <&3 | grep -q .'; }
if ! amqp_up 2>/dev/null; then
  log "starting RabbitMQ"
  RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 rabbitmq-server -detached
fi
wait_for RabbitMQ amqp_up
log "RabbitMQ ready: $(rabbitmqctl version 2>/dev/null || echo '(version unknown)')"

# --- Mosquitto (the @sqlinbox/mqtt bridge tests: MQTT 5, anonymous on 127.0.0.1, persistent sessions) ---
if ! [ -x /usr/sbin/mosquitto ]; then
  apt_install mosquitto
fi
mqtt_up() { bash -c 'exec 3<>/dev/tcp/127.0.0.1/1883'; }
if ! mqtt_up 2>/dev/null; then
  log "starting Mosquitto"
  mkdir -p /var/lib/mosquitto /var/log/mosquitto
  printf 'listener 1883 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location /var/lib/mosquitto/\nlog_dest file /var/log/mosquitto/ci.log\n' >/etc/mosquitto/sqlinbox-ci.conf
  mosquitto -d -c /etc/mosquitto/sqlinbox-ci.conf
fi
wait_for Mosquitto mqtt_up
log "Mosquitto ready: $(/usr/sbin/mosquitto -h 2>/dev/null | head -1)"
