/* librdkafka's transaction scenarios (its 0103_transactions, whose consume-transform-produce
 * part is the 0098 kind) against the system librdkafka (Debian's 2.0.2):
 *
 *   misuse    a transaction timeout above the broker's maximum is refused with
 *             INVALID_TRANSACTION_TIMEOUT; init_transactions() inside a transaction is
 *             refused (__STATE).
 *   basic     four transactions on PREFIX-basic (4 partitions) read by a read_committed
 *             consumer: commit 100 records produced one at a time, commit 1000 produced at
 *             once, abort 500 one at a time, abort 5000 at once. Each committed one is read
 *             whole, once; nothing of an aborted one is ever read.
 *   pipeline  300 records committed to PREFIX-in; a read_committed consumer (group PREFIX-in)
 *             and a transactional producer copy them to PREFIX-out in ten transactions of 10,
 *             20 or 30 records with the consumer's positions (send_offsets_to_transaction),
 *             every third transaction aborted; after the second abort the consumer is
 *             recreated and starts again from the group's committed offsets. A read_committed
 *             consumer of PREFIX-out then reads exactly the records of the committed
 *             transactions, each once.
 *   fenced    a second producer with the same transactional id fences the first inside its
 *             transaction: the first one's commit fails fatally (__FENCED) and none of its
 *             records are ever read.
 *
 *   transactions BROKER PREFIX
 *
 * Prints "ok SCENARIO" after each; exits 1 with the reason at the first failure. */
#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *broker;
static char errstr[512];

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void ok(const char *what, rd_kafka_error_t *error) {
  if (error) die("%s: %s", what, rd_kafka_error_string(error));
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
  if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
    die("%s: %s", key, errstr);
}

static rd_kafka_t *producer(const char *txn_id, const char *timeout_ms) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", broker);
  set(conf, "transactional.id", txn_id);
  if (timeout_ms) set(conf, "transaction.timeout.ms", timeout_ms);
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!p) die("producer: %s", errstr);
  return p;
}

static rd_kafka_t *consumer(const char *group, const char *topic) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", broker);
  set(conf, "group.id", group);
  set(conf, "isolation.level", "read_committed");
  set(conf, "auto.offset.reset", "earliest");
  set(conf, "enable.auto.commit", "false");
  set(conf, "enable.partition.eof", "false");
  rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (!c) die("consumer: %s", errstr);
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(c, topics);
  if (err) die("subscribe %s: %s", topic, rd_kafka_err2str(err));
  rd_kafka_topic_partition_list_destroy(topics);
  return c;
}

/* Polls until the consumer has partitions assigned, so that records produced from now on are
 * fetched (and a wait for none really waits on a fetching consumer). */
static void wait_assigned(rd_kafka_t *c) {
  long long deadline = now_ms() + 60000;
  for (;;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
    if (m) {
      if (!m->err) die("read %.*s while waiting for the assignment", (int)m->len, (char *)m->payload);
      rd_kafka_message_destroy(m);
    }
    rd_kafka_topic_partition_list_t *assigned = NULL;
    rd_kafka_assignment(c, &assigned);
    int n = assigned ? assigned->cnt : 0;
    if (assigned) rd_kafka_topic_partition_list_destroy(assigned);
    if (n > 0) return;
    if (now_ms() > deadline) die("no assignment within 60 s");
  }
}

/* Produces TAG:0 .. TAG:N-1 to TOPIC (keyed, spread over its partitions); one at a time
 * (each delivered before the next) when SYNC. */
static void produce(rd_kafka_t *p, const char *topic, const char *tag, int n, int sync) {
  char value[64];
  for (int i = 0; i < n; i++) {
    int len = snprintf(value, sizeof value, "%s:%d", tag, i);
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_KEY(value, len), RD_KAFKA_V_VALUE(value, len),
                                    RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(p, 10);
    if (err) die("produce %s: %s", value, rd_kafka_err2str(err));
    if (sync && rd_kafka_flush(p, 30000)) die("%s not delivered", value);
    rd_kafka_poll(p, 0);
  }
}

/* Reads until N records tagged TAG came, each once and nothing else; or, with N == 0, reads
 * for WAIT_MS and fails at any record. */
static void expect(rd_kafka_t *c, const char *tag, int n, int wait_ms) {
  char *seen = calloc(n > 0 ? n : 1, 1);
  int got = 0;
  size_t tag_len = strlen(tag);
  long long deadline = now_ms() + wait_ms;
  while (n > 0 ? got < n : now_ms() < deadline) {
    if (n > 0 && now_ms() > deadline) die("%s: %d of %d records read", tag, got, n);
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
    if (!m) continue;
    if (m->err) {
      fprintf(stderr, "consumer: %s\n", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    const char *v = m->payload;
    int i;
    if (n == 0 || m->len <= tag_len || strncmp(v, tag, tag_len) || v[tag_len] != ':' ||
        sscanf(v + tag_len + 1, "%d", &i) != 1 || i < 0 || i >= n)
      die("%s: read %.*s, which is not to be read", tag, (int)m->len, v);
    if (seen[i]) die("%s: read %.*s twice", tag, (int)m->len, v);
    seen[i] = 1;
    got++;
    rd_kafka_message_destroy(m);
  }
  free(seen);
}

static void misuse(const char *prefix) {
  char id[256];
  snprintf(id, sizeof id, "%s-misuse", prefix);
  rd_kafka_t *p = producer(id, "2147483647");
  rd_kafka_error_t *error = rd_kafka_init_transactions(p, 30000);
  if (!error || rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR_INVALID_TRANSACTION_TIMEOUT)
    die("a timeout above the broker's maximum: %s",
        error ? rd_kafka_error_name(error) : "accepted");
  rd_kafka_error_destroy(error);
  rd_kafka_destroy(p);

  p = producer(id, NULL);
  ok("init_transactions", rd_kafka_init_transactions(p, 30000));
  ok("begin_transaction", rd_kafka_begin_transaction(p));
  error = rd_kafka_init_transactions(p, 3000);
  if (!error || rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR__STATE)
    die("init_transactions in a transaction: %s", error ? rd_kafka_error_name(error) : "accepted");
  rd_kafka_error_destroy(error);
  rd_kafka_destroy(p);
  printf("ok misuse\n");
}

static void basic(const char *prefix) {
  char topic[256];
  snprintf(topic, sizeof topic, "%s-basic", prefix);
  struct { const char *tag; int n; int abort; int sync; } txns[] = {
      {"commit-sync", 100, 0, 1},
      {"commit-async", 1000, 0, 0},
      {"abort-sync", 500, 1, 1},
      {"abort-async", 5000, 1, 0},
  };
  rd_kafka_t *p = producer(topic, NULL);
  rd_kafka_t *c = consumer(topic, topic);
  wait_assigned(c);
  ok("init_transactions", rd_kafka_init_transactions(p, 30000));
  for (size_t t = 0; t < sizeof txns / sizeof txns[0]; t++) {
    ok("begin_transaction", rd_kafka_begin_transaction(p));
    produce(p, topic, txns[t].tag, txns[t].n, txns[t].sync);
    if (txns[t].abort) {
      ok("abort_transaction", rd_kafka_abort_transaction(p, 30000));
      expect(c, txns[t].tag, 0, 3000);
    } else {
      ok("commit_transaction", rd_kafka_commit_transaction(p, 30000));
      expect(c, txns[t].tag, txns[t].n, 30000);
    }
  }
  rd_kafka_destroy(p);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  printf("ok basic\n");
}

/* Up to N records read by C (their values, in values[]); returns how many. */
static int read_some(rd_kafka_t *c, char values[][64], int n) {
  int got = 0;
  long long deadline = now_ms() + 30000;
  while (got < n) {
    if (now_ms() > deadline) die("input: %d of %d records within 30 s", got, n);
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
    if (!m) continue;
    if (!m->err) {
      snprintf(values[got], 64, "%.*s", (int)m->len, (char *)m->payload);
      got++;
    }
    rd_kafka_message_destroy(m);
  }
  return got;
}

static void pipeline(const char *prefix) {
  char in[256], out[256], in_id[300], out_id[300];
  snprintf(in, sizeof in, "%s-in", prefix);
  snprintf(out, sizeof out, "%s-out", prefix);
  snprintf(in_id, sizeof in_id, "%s-seed", in);
  snprintf(out_id, sizeof out_id, "%s-copy", out);
  const int total = 300;

  rd_kafka_t *seed = producer(in_id, NULL);
  ok("init_transactions", rd_kafka_init_transactions(seed, 30000));
  ok("begin_transaction", rd_kafka_begin_transaction(seed));
  produce(seed, in, "in", total, 0);
  ok("commit_transaction", rd_kafka_commit_transaction(seed, 30000));
  rd_kafka_destroy(seed);

  rd_kafka_t *c1 = consumer(in, in);
  rd_kafka_t *p2 = producer(out_id, NULL);
  ok("init_transactions", rd_kafka_init_transactions(p2, 30000));

  /* What the committed transactions copied: input index -> copies. */
  int *expected = calloc(total, sizeof(int));
  int committed = 0;
  static char values[30][64];
  for (int txn = 0; txn < 10; txn++) {
    int n = 10 * (1 + txn % 3);
    int abort = txn % 3 == 0;
    read_some(c1, values, n);
    ok("begin_transaction", rd_kafka_begin_transaction(p2));
    for (int i = 0; i < n; i++) {
      int len = strlen(values[i]);
      rd_kafka_resp_err_t err =
          rd_kafka_producev(p2, RD_KAFKA_V_TOPIC(out), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_KEY(values[i], len), RD_KAFKA_V_VALUE(values[i], len),
                            RD_KAFKA_V_END);
      if (err) die("produce %s: %s", values[i], rd_kafka_err2str(err));
      rd_kafka_poll(p2, 0);
      if (!abort) {
        int index;
        if (sscanf(values[i], "in:%d", &index) != 1 || index < 0 || index >= total)
          die("input record %s", values[i]);
        expected[index]++;
        committed++;
      }
    }
    rd_kafka_topic_partition_list_t *positions = NULL;
    rd_kafka_resp_err_t err = rd_kafka_assignment(c1, &positions);
    if (err) die("assignment: %s", rd_kafka_err2str(err));
    err = rd_kafka_position(c1, positions);
    if (err) die("position: %s", rd_kafka_err2str(err));
    rd_kafka_consumer_group_metadata_t *group = rd_kafka_consumer_group_metadata(c1);
    ok("send_offsets_to_transaction",
       rd_kafka_send_offsets_to_transaction(p2, positions, group, 30000));
    rd_kafka_consumer_group_metadata_destroy(group);
    rd_kafka_topic_partition_list_destroy(positions);
    if (abort)
      ok("abort_transaction", rd_kafka_abort_transaction(p2, 30000));
    else
      ok("commit_transaction", rd_kafka_commit_transaction(p2, 30000));
    if (abort && txn == 3) {
      /* Back to the group's committed offsets: the aborted records come again. */
      rd_kafka_consumer_close(c1);
      rd_kafka_destroy(c1);
      c1 = consumer(in, in);
    }
  }
  rd_kafka_destroy(p2);
  rd_kafka_consumer_close(c1);
  rd_kafka_destroy(c1);

  /* The output, read_committed: exactly what the committed transactions copied. */
  rd_kafka_t *c2 = consumer(out, out);
  int *found = calloc(total, sizeof(int));
  int got = 0;
  long long deadline = now_ms() + 60000;
  while (got < committed && now_ms() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c2, 200);
    if (!m) continue;
    if (!m->err) {
      int index;
      if (sscanf((char *)m->payload, "in:%d", &index) != 1 || index < 0 || index >= total)
        die("output record %.*s", (int)m->len, (char *)m->payload);
      found[index]++;
      got++;
    }
    rd_kafka_message_destroy(m);
  }
  /* A little longer: a record of an aborted transaction would show up now. */
  long long linger = now_ms() + 3000;
  while (now_ms() < linger) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c2, 200);
    if (!m) continue;
    if (!m->err) die("output: %.*s beyond the committed records", (int)m->len, (char *)m->payload);
    rd_kafka_message_destroy(m);
  }
  for (int i = 0; i < total; i++)
    if (found[i] != expected[i])
      die("output: in:%d read %d times, committed %d times", i, found[i], expected[i]);
  rd_kafka_consumer_close(c2);
  rd_kafka_destroy(c2);
  free(found);
  free(expected);
  printf("ok pipeline %d\n", committed);
}

static void fenced(const char *prefix) {
  char topic[256];
  snprintf(topic, sizeof topic, "%s-fenced", prefix);
  rd_kafka_t *p1 = producer(topic, NULL);
  rd_kafka_t *p2 = producer(topic, NULL);
  ok("init_transactions", rd_kafka_init_transactions(p1, 30000));
  ok("begin_transaction", rd_kafka_begin_transaction(p1));
  produce(p1, topic, "fenced", 10, 1);
  ok("init_transactions of the second", rd_kafka_init_transactions(p2, 30000));
  rd_kafka_error_t *error = rd_kafka_commit_transaction(p1, 30000);
  if (!error) die("the fenced producer's commit succeeded");
  if (!rd_kafka_error_is_fatal(error) || rd_kafka_error_code(error) != RD_KAFKA_RESP_ERR__FENCED)
    die("the fenced producer's commit: %s (%s), not fatal __FENCED", rd_kafka_error_name(error),
        rd_kafka_error_string(error));
  rd_kafka_error_destroy(error);
  rd_kafka_destroy(p1);
  rd_kafka_destroy(p2);
  rd_kafka_t *c = consumer(topic, topic);
  wait_assigned(c);
  expect(c, "fenced", 0, 3000);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  printf("ok fenced\n");
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  broker = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
  misuse(argv[2]);
  basic(argv[2]);
  pipeline(argv[2]);
  fenced(argv[2]);
  return 0;
}
