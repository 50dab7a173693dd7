import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own share consumer (KIP-932, `KafkaShareConsumer`) against a broker, one mode per
 * run: `setup TOPIC GROUP N [config=value...]` creates a one-partition topic, sets the group's
 * configs and produces N records; `share TOPIC GROUP N` runs two members side by side that
 * accept every record (1 ms of work each) and prints what each got; `release-reject TOPIC GROUP`
 * releases offset 0 every time it comes, rejects offset 1 and accepts the rest, printing each
 * delivery; `hold TOPIC GROUP K` accepts K records, then holds what it gets next without
 * acknowledging, printing it, and waits to be killed; `drain TOPIC GROUP [QUIET_MS]` accepts what
 * it gets until QUIET_MS (8 s) pass without a record (30 s before the first), printing each with its delivery count;
 * `letters TOPIC -` prints each record of TOPIC's partition 0 with its key, value and headers;
 * `renew TOPIC GROUP HOLD_MS` holds the first record it gets for HOLD_MS, renewing its lock
 * (KIP-1222's RENEW) every 3 s and printing it each time it comes back, then accepts it.
 * A setup that names `errors.deadletterqueue.topic.name` creates that topic for share groups'
 * dead letters (`errors.deadletterqueue.group.enable=true`), as Kafka 4.4 requires.
 */
public class ShareConsumers {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], mode = args[1], topic = args[2], group = args[3];
    Properties common = new Properties();
    common.put("bootstrap.servers", bootstrap);
    switch (mode) {
      case "setup" -> setup(common, topic, group, Integer.parseInt(args[4]), args);
      case "share" -> share(common, topic, group, Integer.parseInt(args[4]));
      case "release-reject" -> releaseReject(common, topic, group);
      case "hold" -> hold(common, topic, group, Integer.parseInt(args[4]));
      case "drain" -> drain(common, topic, group, args.length > 4 ? Long.parseLong(args[4]) : 8_000);
      case "letters" -> letters(common, topic);
      case "renew" -> renew(common, topic, group, Long.parseLong(args[4]));
      default -> throw new IllegalArgumentException(mode);
    }
  }

  static void setup(Properties common, String topic, String group, int n, String[] args)
      throws Exception {
    try (Admin admin = Admin.create(common)) {
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
      List<AlterConfigOp> ops = new ArrayList<>();
      ops.add(set("share.auto.offset.reset", "earliest"));
      for (int i = 5; i < args.length; i++) {
        String[] kv = args[i].split("=", 2);
        ops.add(set(kv[0], kv[1]));
        if (kv[0].equals("errors.deadletterqueue.topic.name")) {
          NewTopic dlq = new NewTopic(kv[1], 1, (short) 1)
              .configs(Map.of("errors.deadletterqueue.group.enable", "true"));
          admin.createTopics(List.of(dlq)).all().get();
        }
      }
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
    }
    Properties p = (Properties) common.clone();
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < n; i++) {
        producer.send(new ProducerRecord<>(topic, "key-" + i, "job-" + i)).get();
      }
    }
    System.out.println("SETUP " + n);
  }

  static AlterConfigOp set(String name, String value) {
    return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
  }

  static KafkaShareConsumer<String, String> consumer(Properties common, String group, int max) {
    Properties c = (Properties) common.clone();
    c.put("group.id", group);
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", StringDeserializer.class.getName());
    c.put("share.acknowledgement.mode", "explicit");
    c.put("max.poll.records", Integer.toString(max));
    return new KafkaShareConsumer<>(c);
  }

  static short count(ConsumerRecord<String, String> r) {
    return r.deliveryCount().orElse((short) -1);
  }

  static void share(Properties common, String topic, String group, int n) throws Exception {
    ConcurrentHashMap<Long, Integer> seen = new ConcurrentHashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    List<Future<Integer>> members = new ArrayList<>();
    for (int m = 0; m < 2; m++) {
      int me = m;
      members.add(
          pool.submit(
              () -> {
                int mine = 0;
                try (KafkaShareConsumer<String, String> c = consumer(common, group, 5)) {
                  c.subscribe(List.of(topic));
                  long end = System.currentTimeMillis() + 60_000;
                  while (seen.size() < n && System.currentTimeMillis() < end) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                      Thread.sleep(1);
                      if (seen.putIfAbsent(r.offset(), me) != null) {
                        System.out.println("DUPLICATE " + r.offset());
                      }
                      c.acknowledge(r, AcknowledgeType.ACCEPT);
                      mine++;
                    }
                    c.commitSync();
                  }
                }
                return mine;
              }));
    }
    for (int m = 0; m < 2; m++) {
      System.out.println("MEMBER " + m + " " + members.get(m).get());
    }
    pool.shutdown();
    System.out.println("SEEN " + seen.size());
  }

  static void releaseReject(Properties common, String topic, String group) {
    try (KafkaShareConsumer<String, String> c = consumer(common, group, 100)) {
      c.subscribe(List.of(topic));
      // The first records may take a moment (the group forms); then 8 s of quiet ends it.
      long quietUntil = System.currentTimeMillis() + 30_000;
      while (System.currentTimeMillis() < quietUntil) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          quietUntil = System.currentTimeMillis() + 8_000;
          System.out.println("DELIVERY " + r.offset() + " " + count(r));
          AcknowledgeType kind =
              r.offset() == 0
                  ? AcknowledgeType.RELEASE
                  : r.offset() == 1 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
          c.acknowledge(r, kind);
        }
        c.commitSync();
      }
    }
    System.out.println("DONE");
  }

  static void letters(Properties common, String topic) {
    Properties c = (Properties) common.clone();
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", StringDeserializer.class.getName());
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = consumer.endOffsets(List.of(tp)).get(tp);
      while (consumer.position(tp) < end) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          StringBuilder line = new StringBuilder("LETTER " + r.key() + " " + r.value());
          for (Header h : r.headers()) {
            line.append(" ").append(h.key()).append("=").append(new String(h.value()));
          }
          System.out.println(line);
        }
      }
    }
  }

  static void hold(Properties common, String topic, String group, int accept) throws Exception {
    KafkaShareConsumer<String, String> c = consumer(common, group, accept);
    c.subscribe(List.of(topic));
    int accepted = 0;
    while (accepted < accept) {
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
        c.acknowledge(r, AcknowledgeType.ACCEPT);
        System.out.println("ACCEPTED " + r.offset());
        accepted++;
      }
      c.commitSync();
    }
    while (true) {
      var held = c.poll(Duration.ofMillis(100));
      if (!held.isEmpty()) {
        for (ConsumerRecord<String, String> r : held) {
          System.out.println("HELD " + r.offset() + " " + count(r));
        }
        System.out.println("HOLDING");
        System.out.flush();
        Thread.sleep(600_000);
      }
    }
  }

  static void renew(Properties common, String topic, String group, long holdMs)
      throws Exception {
    try (KafkaShareConsumer<String, String> c = consumer(common, group, 1)) {
      c.subscribe(List.of(topic));
      ConsumerRecord<String, String> held = null;
      long deadline = System.currentTimeMillis() + 30_000;
      while (held == null && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          held = r;
        }
      }
      if (held == null) {
        throw new IllegalStateException("no record came to hold");
      }
      System.out.println("HELD " + held.offset() + " " + count(held));
      System.out.flush();
      long until = System.currentTimeMillis() + holdMs;
      while (System.currentTimeMillis() < until) {
        Thread.sleep(3_000);
        c.acknowledge(held, AcknowledgeType.RENEW);
        // The client hands a renewed record out again.
        ConsumerRecord<String, String> again = null;
        long wait = System.currentTimeMillis() + 10_000;
        while (again == null && System.currentTimeMillis() < wait) {
          for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
            again = r;
          }
        }
        if (again == null) {
          throw new IllegalStateException("the renewed record did not come back");
        }
        held = again;
        System.out.println("RENEWED " + held.offset() + " " + count(held));
        System.out.flush();
      }
      c.acknowledge(held, AcknowledgeType.ACCEPT);
      c.commitSync();
      System.out.println(
          "ACCEPTED " + held.offset() + " LOCK " + c.acquisitionLockTimeoutMs().orElse(-1));
    }
  }

  static void drain(Properties common, String topic, String group, long quietMs) {
    try (KafkaShareConsumer<String, String> c = consumer(common, group, 100)) {
      c.subscribe(List.of(topic));
      // The first records may take a moment (the group forms); then 8 s of quiet ends it.
      long quietUntil = System.currentTimeMillis() + 30_000;
      while (System.currentTimeMillis() < quietUntil) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          quietUntil = System.currentTimeMillis() + quietMs;
          System.out.println("GOT " + r.offset() + " " + count(r));
          c.acknowledge(r, AcknowledgeType.ACCEPT);
        }
        c.commitSync();
      }
    }
    System.out.println("DONE");
  }
}
