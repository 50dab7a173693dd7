// Kafka's Java client (kafka-clients 4.x, as pinned in ../pom.xml) against logd, for the daemon
// tests: the admin creates and describes a topic and alters its configs, the producer sends with
// its defaults (idempotent, acks=all), a classic consumer group reads, commits and resumes, and
// the admin reads and deletes the group; the admin describes the cluster (DescribeCluster). Prints one line per step; exits non-zero on a failure.
//
//   java JavaClients BROKER [PROTOCOL]
//
// PROTOCOL `consumer` makes the group's consumers use KIP-848's protocol
// (`group.protocol=consumer`) instead of the classic one.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClients {
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
        producer.send(new ProducerRecord<>("orders", "k" + i, "v" + i)).get();
      }
      System.out.println("produced " + count);
    }
  }

  static String protocol = "classic";

  static List<String> consume(String broker, int count) {
    Properties p = common(broker);
    p.put("group.id", "billing");
    p.put("group.protocol", protocol);
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    List<String> values = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(List.of("orders"));
      long end = System.currentTimeMillis() + 60_000;
      while (values.size() < count && System.currentTimeMillis() < end) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          values.add(r.value());
        }
      }
      consumer.commitSync();
    }
    return values;
  }

  public static void main(String[] args) throws Exception {
    String broker = args[0];
    if (args.length > 1) {
      protocol = args[1];
    }
    try (Admin admin = Admin.create(common(broker))) {
      admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1))).all().get();
      int partitions = admin.describeTopics(List.of("orders")).allTopicNames().get()
          .get("orders").partitions().size();
      System.out.println("topic orders " + partitions + " partitions");
      ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "orders");
      admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(
          new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)))).all().get();
      ConfigEntry retention = admin.describeConfigs(List.of(topic)).all().get().get(topic)
          .get("retention.ms");
      System.out.println("retention.ms " + retention.value() + " " + retention.source());
      var cluster = admin.describeCluster();
      System.out.println("cluster " + cluster.nodes().get().size() + " node, controller "
          + cluster.controller().get().id());
    }
    produce(broker, 0, 100);
    List<String> first = consume(broker, 100);
    System.out.println("consumed " + first.size() + " distinct " + first.stream().distinct().count());
    produce(broker, 100, 50);
    List<String> resumed = consume(broker, 50);
    System.out.println("resumed " + resumed.size() + " all new "
        + resumed.stream().allMatch(v -> Integer.parseInt(v.substring(1)) >= 100));
    try (Admin admin = Admin.create(common(broker))) {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          admin.listConsumerGroupOffsets("billing").partitionsToOffsetAndMetadata().get();
      long committed = offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
      System.out.println("group offsets " + committed);
      admin.deleteConsumerGroups(List.of("billing")).all().get();
      System.out.println("groups left " + admin.listGroups().all().get().size());
    }
  }
}
