// Kafka Streams 4.x on logd: a word count with a repartition topic (groupBy) and a changelog
// (the count store), at-least-once or exactly-once (v2). Each step prints one line; exits
// non-zero on a failure.
//
//   java WordCount BROKER produce FROM COUNT   lines FROM..FROM+COUNT into topic text
//   java WordCount BROKER run STATE_DIR [eos]  runs the app until it has committed everything in
//                                              text, then closes it
//   java WordCount BROKER serve STATE_DIR eos  runs the app, prints "progress" once it has
//                                              committed something, and runs until killed
//   java WordCount BROKER check [eos]          the latest count of each word in topic counts
//                                              (read_committed with eos), the changelog's
//                                              cleanup.policy and the repartition topics'
//                                              start offsets
//
// Line i holds the words "w(i % 7)" and "all", so after n lines "all" counts n.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class WordCount {
  static final String APP = "wordcount";

  static Properties common(String broker) {
    Properties p = new Properties();
    p.put("bootstrap.servers", broker);
    return p;
  }

  static void produce(String broker, int from, int count) throws Exception {
    Properties p = common(broker);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int i = from; i < from + count; i++) {
        producer.send(new ProducerRecord<>("text", "line" + i, "w" + (i % 7) + " all")).get();
      }
    }
    System.out.println("produced " + count);
  }

  /**
   * Whether the app's group has committed the end of every partition it reads: text, then the
   * repartition topic its counts come from (its records are committed with text's offsets, so
   * once text is caught up the repartition topic's end is final).
   */
  static boolean caughtUp(Admin admin) throws Exception {
    if (!caughtUp(admin, List.of("text"))) {
      return false;
    }
    List<String> repartition = repartitionTopics(admin);
    return !repartition.isEmpty() && caughtUp(admin, repartition);
  }

  static List<String> repartitionTopics(Admin admin) throws Exception {
    return admin.listTopics().names().get().stream()
        .filter(t -> t.startsWith(APP + "-") && t.endsWith("-repartition"))
        .collect(Collectors.toList());
  }

  static boolean caughtUp(Admin admin, List<String> topics) throws Exception {
    var partitions = admin.describeTopics(topics).allTopicNames().get().values().stream()
        .flatMap(d -> d.partitions().stream().map(p -> new TopicPartition(d.name(), p.partition())))
        .collect(Collectors.toList());
    var ends = admin.listOffsets(partitions.stream()
        .collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest()))).all().get();
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(APP).partitionsToOffsetAndMetadata().get();
    for (TopicPartition tp : partitions) {
      OffsetAndMetadata c = committed.get(tp);
      if (c == null || c.offset() < ends.get(tp).offset()) {
        return false;
      }
    }
    return true;
  }

  /** Whether every repartition topic's start has reached its end. */
  static boolean purged(Admin admin) throws Exception {
    var partitions = admin.describeTopics(repartitionTopics(admin)).allTopicNames().get().values().stream()
        .flatMap(d -> d.partitions().stream().map(p -> new TopicPartition(d.name(), p.partition())))
        .collect(Collectors.toList());
    var starts = admin.listOffsets(partitions.stream()
        .collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.earliest()))).all().get();
    var ends = admin.listOffsets(partitions.stream()
        .collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest()))).all().get();
    return partitions.stream().allMatch(tp -> starts.get(tp).offset() == ends.get(tp).offset());
  }

  static KafkaStreams streams(String broker, String stateDir, boolean eos) {
    return streams(broker, stateDir, eos, 100);
  }

  static KafkaStreams streams(String broker, String stateDir, boolean eos, int commitMs) {
    Properties p = common(broker);
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
    p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
        eos ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    // Streams leaves its group on close only by timing out: a short session lets the restarted
    // instance take its partitions over in seconds rather than Kafka's 45.
    p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
    p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream("text")
        .flatMapValues(v -> Arrays.asList(v.split(" ")))
        .groupBy((k, word) -> word)
        .count(Materialized.as("counts"))
        .toStream()
        .to("counts", Produced.with(Serdes.String(), Serdes.Long()));
    return new KafkaStreams(builder.build(), p);
  }

  static void run(String broker, String stateDir, boolean eos) throws Exception {
    try (KafkaStreams streams = streams(broker, stateDir, eos);
        Admin admin = Admin.create(common(broker))) {
      streams.start();
      long deadline = System.currentTimeMillis() + 120_000;
      while (!caughtUp(admin)) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("not caught up, state " + streams.state());
        }
        Thread.sleep(200);
      }
      // Streams purges what it has committed of its repartition topics every 100 ms
      // (DeleteRecords): closing before the last purge would leave records behind.
      while (!purged(admin)) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("repartition topics not purged to their ends");
        }
        Thread.sleep(200);
      }
      System.out.println("caught up");
    }
  }

  /**
   * Runs until killed, saying "progress" once the group has committed an offset. Commits
   * every 2 s, so whenever it is killed while input flows, a transaction holds records.
   */
  static void serve(String broker, String stateDir, boolean eos) throws Exception {
    KafkaStreams streams = streams(broker, stateDir, eos, 2000);
    streams.start();
    try (Admin admin = Admin.create(common(broker))) {
      while (admin.listConsumerGroupOffsets(APP).partitionsToOffsetAndMetadata().get().isEmpty()) {
        Thread.sleep(50);
      }
    }
    System.out.println("progress");
    System.out.flush();
    Thread.sleep(600_000);
  }

  static void check(String broker, boolean eos) throws Exception {
    Properties c = common(broker);
    if (eos) {
      c.put("isolation.level", "read_committed");
    }
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", LongDeserializer.class.getName());
    Map<String, Long> latest = new TreeMap<>();
    try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(c);
        Admin admin = Admin.create(common(broker))) {
      List<TopicPartition> partitions = new ArrayList<>();
      consumer.partitionsFor("counts").forEach(i -> partitions.add(new TopicPartition("counts", i.partition())));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
      long deadline = System.currentTimeMillis() + 30_000;
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))
          && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
          latest.put(r.key(), r.value());
        }
      }
      System.out.println("counts " + latest);
      var topics = admin.listTopics().names().get();
      String changelog = APP + "-counts-changelog";
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
      System.out.println("changelog " + topics.contains(changelog) + " cleanup.policy "
          + admin.describeConfigs(List.of(resource)).all().get().get(resource)
              .get("cleanup.policy").value());
      for (String topic : new TreeMap<>(topics.stream().filter(t -> t.endsWith("-repartition"))
          .collect(Collectors.toMap(t -> t, t -> t))).keySet()) {
        var tps = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
            .partitions().stream().map(pi -> new TopicPartition(topic, pi.partition()))
            .collect(Collectors.toList());
        long start = 0;
        long end = 0;
        for (TopicPartition tp : tps) {
          start += admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset();
          end += admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset();
        }
        System.out.println("repartition purged " + (start > 0) + " all " + (start == end));
      }
    }
  }

  public static void main(String[] args) throws Exception {
    switch (args[1]) {
      case "produce" -> produce(args[0], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
      case "run" -> run(args[0], args[2], args.length > 3 && args[3].equals("eos"));
      case "serve" -> serve(args[0], args[2], args.length > 3 && args[3].equals("eos"));
      case "check" -> check(args[0], args.length > 2 && args[2].equals("eos"));
      default -> throw new IllegalArgumentException(args[1]);
    }
  }
}
