// Kafka's Java admin deleting records on logd (DeleteRecords, as kafka-delete-records and Kafka
// Streams' repartition purge send it). Step "delete" creates topic purge, produces 100 records,
// deletes those below 40 and then past the end; every step prints the earliest offset
// (ListOffsets) and the first offset a consumer reading from the beginning gets.
//
//   java DeleteRecords BROKER delete|check

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class DeleteRecords {
  public static void main(String[] args) throws Exception {
    String broker = args[0];
    Properties common = new Properties();
    common.put("bootstrap.servers", broker);
    TopicPartition tp = new TopicPartition("purge", 0);
    try (Admin admin = Admin.create(common)) {
      if (args[1].equals("delete")) {
        admin.createTopics(List.of(new NewTopic("purge", 1, (short) 1))).all().get();
        Properties p = (Properties) common.clone();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
          for (int i = 0; i < 100; i++) {
            producer.send(new ProducerRecord<>("purge", 0, "k" + i, "v" + i)).get();
          }
        }
        long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(40)))
            .lowWatermarks().get(tp).get().lowWatermark();
        System.out.println("low watermark " + low);
        try {
          admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(1000))).all().get();
          System.out.println("past the end deleted");
        } catch (ExecutionException e) {
          System.out.println("past the end " + e.getCause().getClass().getSimpleName());
        }
      }
      long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()))
          .partitionResult(tp).get().offset();
      System.out.println("earliest " + earliest);
    }
    Properties c = (Properties) common.clone();
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = System.currentTimeMillis() + 30_000;
      while (System.currentTimeMillis() < end) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
        if (!records.isEmpty()) {
          var first = records.iterator().next();
          System.out.println("first read " + first.offset() + " " + first.value());
          return;
        }
      }
      System.out.println("nothing read");
    }
  }
}
