/* librdkafka's 0053_stats scenario against the system librdkafka (Debian's 2.0.2): a producer
 * and a consumer reporting statistics every second; 100 records of 6 KiB with 256-byte keys to
 * each of a topic's two partitions, then the consumer assigned both from the beginning reads
 * them all.
 *
 *   stats BROKER TOPIC SECONDS
 *
 * Prints "consumed N stats P C" (records read, statistics reports of the producer and the
 * consumer); exits 1 unless it read all 200 within SECONDS. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int count_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
  (void)rk, (void)json, (void)len;
  (*(int *)opaque)++;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  char err[512];
  int producer_stats = 0, consumer_stats = 0;
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof err);
  rd_kafka_conf_set(conf, "statistics.interval.ms", "1000", err, sizeof err);
  rd_kafka_conf_set_stats_cb(conf, count_stats);
  rd_kafka_conf_t *consumer_conf = rd_kafka_conf_dup(conf);
  rd_kafka_conf_set_opaque(conf, &producer_stats);
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!p) { fprintf(stderr, "%s\n", err); return 1; }
  char key[256];
  static char value[6 * 1024];
  memset(value, 'v', sizeof value);
  for (int part = 0; part < 2; part++)
    for (int i = 0; i < 100; i++) {
      memset(key, 0, sizeof key);
      snprintf(key, sizeof key, "partition=%d, msg=%d", part, i);
      if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(argv[2]), RD_KAFKA_V_PARTITION(part),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_VALUE(value, sizeof value), RD_KAFKA_V_KEY(key, sizeof key),
                            RD_KAFKA_V_END)) {
        fprintf(stderr, "produce failed\n");
        return 1;
      }
      rd_kafka_poll(p, 0);
    }
  if (rd_kafka_flush(p, 15000)) { fprintf(stderr, "records not delivered\n"); return 1; }

  rd_kafka_conf_set(consumer_conf, "group.id", argv[2], err, sizeof err);
  rd_kafka_conf_set(consumer_conf, "auto.offset.reset", "earliest", err, sizeof err);
  rd_kafka_conf_set(consumer_conf, "enable.partition.eof", "false", err, sizeof err);
  rd_kafka_conf_set_opaque(consumer_conf, &consumer_stats);
  rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, consumer_conf, err, sizeof err);
  if (!c) { fprintf(stderr, "%s\n", err); return 1; }
  rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(2);
  for (int part = 0; part < 2; part++)
    rd_kafka_topic_partition_list_add(parts, argv[2], part)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(c, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  int got = 0;
  time_t start = time(NULL);
  while (got < 200 && time(NULL) - start < atoi(argv[3])) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 500);
    if (!m) continue;
    if (m->err) fprintf(stderr, "consume: %s\n", rd_kafka_message_errstr(m));
    else got++;
    rd_kafka_message_destroy(m);
  }
  /* Serve the statistics reports (on each client's main queue), a few seconds at most. */
  for (int i = 0; i < 50 && (producer_stats == 0 || consumer_stats == 0); i++) {
    rd_kafka_poll(p, 50);
    rd_kafka_poll(c, 50);
  }
  printf("consumed %d stats %d %d\n", got, producer_stats > 0, consumer_stats > 0);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  rd_kafka_destroy(p);
  return got == 200 ? 0 : 1;
}
