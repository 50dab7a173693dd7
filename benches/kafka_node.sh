# Sourced by the benchmarks that run Apache Kafka beside logd: the properties of a single-node
# KRaft Kafka (broker and controller in one process, every internal topic with one replica,
# the share groups' state topic too, no initial rebalance delay), so each benchmark starts
# the same reference broker.
# Usage: kafka_node_properties FILE ADDR CONTROLLER_PORT DATA_DIR [EXTRA_LINE...]
kafka_node_properties() {
  local file=$1 addr=$2 cport=$3 data=$4
  shift 4
  cat > "$file" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://$addr,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://$addr
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
PROPS
  local line
  for line in "$@"; do
    printf '%s\n' "$line" >> "$file"
  done
}
