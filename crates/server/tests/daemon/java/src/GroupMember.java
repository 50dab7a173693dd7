// A member of a KIP-848 consumer group (`group.protocol=consumer`) with Kafka's Java client, for
// the daemon tests: subscribes to `jobs` and prints, one line each, `assign NAME TIME P,P`,
// `revoke ...` and `lost ...` from its rebalance callbacks and `rec NAME TIME PARTITION OFFSET`
// per record, committing each before the next (as the confluent-kafka member in
// consumer_protocol.rs does). Runs until killed.
//
//   java GroupMember BROKER NAME GROUP

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupMember {
  static String now() {
    return String.format("%.3f", System.currentTimeMillis() / 1000.0);
  }

  static void event(String kind, String name, Collection<TopicPartition> partitions) {
    String list =
        partitions.stream().map(p -> String.valueOf(p.partition())).collect(Collectors.joining(","));
    System.out.println(kind + " " + name + " " + now() + " " + list);
    System.out.flush();
  }

  public static void main(String[] args) {
    String broker = args[0], name = args[1], group = args[2];
    Properties p = new Properties();
    p.put("bootstrap.servers", broker);
    p.put("group.id", group);
    p.put("group.protocol", "consumer");
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(
          List.of("jobs"),
          new ConsumerRebalanceListener() {
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
              event("assign", name, partitions);
            }

            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
              event("revoke", name, partitions);
            }

            public void onPartitionsLost(Collection<TopicPartition> partitions) {
              event("lost", name, partitions);
            }
          });
      while (true) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          System.out.println("rec " + name + " " + now() + " " + r.partition() + " " + r.offset());
          System.out.flush();
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          consumer.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)));
        }
      }
    }
  }
}
