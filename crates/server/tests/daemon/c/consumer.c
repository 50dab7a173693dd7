/* A group consumer on the system librdkafka (Debian's 2.0.2), for the daemon tests of what
 * that version did to logd: it subscribes to a topic or a pattern (`^...`), applies each
 * rebalance incrementally under the cooperative protocol, polls for SECONDS, then closes.
 *
 *   consumer BROKER GROUP SUBSCRIPTION SECONDS [NAME=VALUE ...]
 *
 * Each NAME=VALUE is a librdkafka setting. Prints "assigned N", "revoked N" per rebalance and
 * "closed" at the end, each line flushed as it happens. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts, void *opaque) {
  (void)opaque;
  int cooperative = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    printf("assigned %d\n", parts->cnt);
    if (cooperative) rd_kafka_incremental_assign(rk, parts);
    else rd_kafka_assign(rk, parts);
  } else {
    printf("revoked %d\n", parts->cnt);
    if (cooperative) rd_kafka_incremental_unassign(rk, parts);
    else rd_kafka_assign(rk, NULL);
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 5) return 2;
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", argv[2], err, sizeof err);
  for (int i = 5; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) return 2;
    *eq = '\0';
    if (rd_kafka_conf_set(conf, argv[i], eq + 1, err, sizeof err) != RD_KAFKA_CONF_OK) {
      fprintf(stderr, "%s\n", err);
      return 2;
    }
  }
  rd_kafka_conf_set_rebalance_cb(conf, rebalance);
  rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!c) { fprintf(stderr, "%s\n", err); return 1; }
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, argv[3], RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(c, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  time_t start = time(NULL);
  while (time(NULL) - start < atoi(argv[4])) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
    if (m) rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  printf("closed\n");
  fflush(stdout);
  return 0;
}
