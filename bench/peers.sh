#!/usr/bin/env bash
# The rivals of `ward-bench --ensemble 3`: a 3-server Apache ZooKeeper ensemble and a 3-member
# etcd cluster on 127.0.0.1, from Debian's packages, run as plain background processes (the
# packages' system services stay off).
#
#   bench/peers.sh start    start every server that is not running (so it also brings back one
#                           that a failover measurement killed), wait until both clusters
#                           serve, print their addresses and pid files
#   bench/peers.sh start zk   the same for the ZooKeeper ensemble alone (no etcd needed)
#   bench/peers.sh status   the addresses, and which processes run
#   bench/peers.sh stop     stop both clusters (their data stays under the directory)
#   bench/peers.sh clean    stop them and remove the directory
#
# Needs: apt-get install -y zookeeper etcd-server etcd-client (java comes with zookeeper);
#        only zookeeper for `start zk`.
# Env:   PEERS_DIR (default /tmp/ward-bench-peers), ZK_HEAP (default 512m per server).
# Ports: ZooKeeper clients 32181-32183 (quorum 32281-32283, election 32381-32383);
#        etcd clients 32481-32483 (peers 32581-32583).
# Both systems keep their defaults for durability: ZooKeeper fsyncs its transaction log
# (forceSync=yes) and etcd its WAL before a write is acknowledged, as Ward does.
set -euo pipefail

DIR="${PEERS_DIR:-/tmp/ward-bench-peers}"
HEAP="${ZK_HEAP:-512m}"
MEMBERS=(1 2 3)

zk_port() { echo $((32180 + $1)); }
etcd_port() { echo $((32480 + $1)); }
etcd_peer_port() { echo $((32580 + $1)); }

zk_connect() { local s=""; for i in "${MEMBERS[@]}"; do s+="${s:+,}127.0.0.1:$(zk_port "$i")"; done; echo "$s"; }
etcd_urls() { local s=""; for i in "${MEMBERS[@]}"; do s+="${s:+,}http://127.0.0.1:$(etcd_port "$i")"; done; echo "$s"; }

# A four-letter word to a ZooKeeper server; the reply, or nothing.
four() { (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && timeout 2 cat <&3) 2>/dev/null || true; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_zk() {
  local i=$1 d="$DIR/zk-$i"
  alive "$d/pid" && return 0
  mkdir -p "$d/data" "$d/log"
  echo "$i" > "$d/data/myid"
  {
    echo "tickTime=2000"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$d/data"
    echo "clientPortAddress=127.0.0.1"
    echo "clientPort=$(zk_port "$i")"
    echo "maxClientCnxns=0"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr,ruok,mntr"
    for j in "${MEMBERS[@]}"; do echo "server.$j=127.0.0.1:$((32280 + j)):$((32380 + j))"; done
  } > "$d/zoo.cfg"
  printf '%s\n' "log4j.rootLogger=INFO, F" "log4j.appender.F=org.apache.log4j.FileAppender" \
    "log4j.appender.F.File=$d/log/zookeeper.log" "log4j.appender.F.layout=org.apache.log4j.PatternLayout" \
    "log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %m%n" > "$d/log4j.properties"
  local cp="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"
  nohup java -Xmx"$HEAP" -Dlog4j.configuration="file:$d/log4j.properties" -cp "$cp" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >> "$d/log/stdout.log" 2>&1 < /dev/null &
  echo $! > "$d/pid"
}

start_etcd() {
  local i=$1 d="$DIR/etcd-$i" cluster="" state=new
  alive "$d/pid" && return 0
  mkdir -p "$d"
  for j in "${MEMBERS[@]}"; do cluster+="${cluster:+,}e$j=http://127.0.0.1:$(etcd_peer_port "$j")"; done
  # A member that has data rejoins with it; only a fresh directory bootstraps.
  [ -d "$d/data/member" ] && state=existing
  nohup etcd --name "e$i" --data-dir "$d/data" \
    --listen-client-urls "http://127.0.0.1:$(etcd_port "$i")" \
    --advertise-client-urls "http://127.0.0.1:$(etcd_port "$i")" \
    --listen-peer-urls "http://127.0.0.1:$(etcd_peer_port "$i")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$i")" \
    --initial-cluster "$cluster" --initial-cluster-state "$state" --initial-cluster-token ward-bench \
    --logger zap --log-outputs "$d/etcd.log" >> "$d/stdout.log" 2>&1 < /dev/null &
  echo $! > "$d/pid"
}

# True once every ZooKeeper server answers and one of them leads.
zk_ready() {
  local leader=0
  for i in "${MEMBERS[@]}"; do
    local reply; reply=$(four "$(zk_port "$i")" srvr)
    grep -q '^Mode: ' <<< "$reply" || return 1
    grep -q '^Mode: leader' <<< "$reply" && leader=1
  done
  [ "$leader" = 1 ]
}

etcd_ready() {
  ETCDCTL_API=3 etcdctl --endpoints "$(etcd_urls)" --command-timeout=2s endpoint health > /dev/null 2>&1
}

status() {
  echo "zookeeper: $(zk_connect)"
  echo "etcd:      $(etcd_urls)"
  for i in "${MEMBERS[@]}"; do
    for sys in zk etcd; do
      local p="$DIR/$sys-$i/pid" state=stopped
      alive "$p" && state="running (pid $(cat "$p"))"
      echo "  $sys-$i: $state; pid file $p"
    done
  done
}

stop() {
  for i in "${MEMBERS[@]}"; do
    for sys in zk etcd; do
      local p="$DIR/$sys-$i/pid"
      if alive "$p"; then kill "$(cat "$p")"; fi
      rm -f "$p"
    done
  done
}

case "${1:-}" in
  start)
    with_etcd=1
    case "${2:-}" in
      "") ;;
      zk) with_etcd=0 ;;
      *) echo "peers.sh: start takes nothing or zk" >&2; exit 2 ;;
    esac
    command -v java > /dev/null && [ -f /usr/share/java/zookeeper.jar ] ||
      { echo "peers.sh: no ZooKeeper: apt-get install -y zookeeper" >&2; exit 1; }
    [ "$with_etcd" = 0 ] || { command -v etcd > /dev/null && command -v etcdctl > /dev/null; } ||
      { echo "peers.sh: no etcd: apt-get install -y etcd-server etcd-client (or: start zk)" >&2; exit 1; }
    mkdir -p "$DIR"
    start_all() { for i in "${MEMBERS[@]}"; do start_zk "$i"; [ "$with_etcd" = 0 ] || start_etcd "$i"; done; }
    start_all
    for _ in $(seq 600); do # 60 s at most
      # A server that exited while starting (a port the killed one held) is started again.
      start_all
      if zk_ready && { [ "$with_etcd" = 0 ] || etcd_ready; }; then status; exit 0; fi
      sleep 0.1
    done
    echo "peers.sh: the clusters did not serve within 60 s; logs under $DIR" >&2
    status >&2
    exit 1
    ;;
  status) status ;;
  stop) stop ;;
  clean) stop; rm -rf "$DIR" ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
esac
