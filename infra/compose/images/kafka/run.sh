#!/bin/bash
# The official image's start-up, reduced: every KAFKA_* variable becomes a server property
# (KAFKA_LOG_DIRS -> log.dirs; "__" -> "_", "___" -> "-"), the storage is formatted once with
# CLUSTER_ID, then the broker runs in the foreground.
set -euo pipefail
config=/opt/kafka/config/server.properties
: > "$config"
declare -A seen=()
while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS | KAFKA_OPTS | KAFKA_JVM_PERFORMANCE_OPTS | KAFKA_LOG4J_OPTS | KAFKA_GC_LOG_OPTS | KAFKA_JMX_OPTS) continue ;;
  esac
  property="${name#KAFKA_}"
  property="${property,,}"
  property="${property//___/-}"
  property="${property//__/@}"
  property="${property//_/.}"
  property="${property//@/_}"
  seen[$property]=1
  printf '%s=%s\n' "$property" "$value" >> "$config"
done < <(env | grep '^KAFKA_' || true)
[ -n "${seen[log.dirs]:-}" ] || echo "log.dirs=/tmp/kraft-combined-logs" >> "$config"
cat > /opt/kafka/config/log4j.properties <<'LOG'
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.BrokerServer=INFO
LOG
# shellcheck disable=SC2206
java=(java ${KAFKA_HEAP_OPTS:--Xmx256m -Xms256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Djava.awt.headless=true -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties
  ${KAFKA_OPTS:-} -cp '/opt/kafka/libs/*')
"${java[@]}" kafka.tools.StorageTool format --cluster-id="${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" \
  -c "$config" --ignore-formatted > /dev/null
exec "${java[@]}" kafka.Kafka "$config"
