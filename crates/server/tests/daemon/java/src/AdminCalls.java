// Every Admin call of Kafka's Java client that logd serves, run in one fixed order against one
// cluster, each printed as one line of what it returned (or the class of the exception it threw),
// leaving out what differs between any two clusters (ids, hosts, ports, node counts). The daemon
// tests run it against logd and against a real Apache Kafka cluster and compare the lines.
//
//   java AdminCalls BROKER PREFIX      (names made with PREFIX, so runs never meet)

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.LeaderNotAvailableException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class AdminCalls {
  interface Call {
    Object run() throws Exception;
  }

  static void call(String name, Call call) {
    Object result;
    try {
      result = call.run();
    } catch (Exception e) {
      result = cause(e).getClass().getSimpleName();
    }
    System.out.println(name + ": " + result);
  }

  /** Retries what a cluster of several brokers learns a moment after its controller. */
  static <T> T settled(Call call) throws Exception {
    long end = System.currentTimeMillis() + 15_000;
    while (true) {
      try {
        @SuppressWarnings("unchecked")
        T result = (T) call.run();
        return result;
      } catch (Exception e) {
        Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
        boolean transient_ =
            cause instanceof UnknownTopicOrPartitionException
                || cause instanceof LeaderNotAvailableException;
        if (!transient_ || System.currentTimeMillis() > end) {
          throw e;
        }
        Thread.sleep(200);
      }
    }
  }

  interface Check {
    boolean done(Object value);
  }

  /**
   * Polls `call` until `check` holds (at most 15 s): a broker answers describes from its copy of
   * the cluster's metadata, which reaches it a moment after the controller committed a change.
   */
  static Object eventually(Call call, Check check) throws Exception {
    long end = System.currentTimeMillis() + 15_000;
    while (true) {
      Object value;
      try {
        value = call.run();
      } catch (ExecutionException e) {
        value = e.getCause().getClass().getSimpleName();
      }
      if (check.done(value) || System.currentTimeMillis() > end) {
        return value;
      }
      Thread.sleep(200);
    }
  }

  static boolean isEmpty(Object value) {
    return value instanceof Map<?, ?> m && m.isEmpty();
  }

  public static void main(String[] args) throws Exception {
    Properties common = new Properties();
    common.put("bootstrap.servers", args[0]);
    String prefix = args[1];
    try (Admin admin = Admin.create(common)) {
      run(admin, common, prefix);
    }
  }

  static String configs(Admin admin, String topic, String... names) throws Exception {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
    List<String> shown = new ArrayList<>();
    for (String name : names) {
      ConfigEntry entry = config.get(name);
      shown.add(name + "=" + entry.value() + " (" + entry.source() + ")");
    }
    return String.join(", ", shown);
  }

  /** Every config of group `group` as described, sorted, with sources, types and synonyms. */
  static String groupConfigs(Admin admin, String group) throws Exception {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
    Config config =
        admin
            .describeConfigs(List.of(resource), new DescribeConfigsOptions().includeSynonyms(true))
            .all()
            .get()
            .get(resource);
    Set<String> shown = new TreeSet<>();
    for (ConfigEntry e : config.entries()) {
      List<String> synonyms = new ArrayList<>();
      for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
        synonyms.add(s.name() + "=" + s.value() + "/" + s.source());
      }
      shown.add(e.name() + "=" + e.value() + " (" + e.source() + "," + e.type() + ",ro="
          + e.isReadOnly() + ",sensitive=" + e.isSensitive() + ") " + synonyms);
    }
    return String.join("; ", shown);
  }

  /** What an alteration of group configs answered: ok, or the refusal's class and message. */
  static String alterGroup(Admin admin, String group, boolean validateOnly, AlterConfigOp... ops) {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
    try {
      admin
          .incrementalAlterConfigs(
              Map.of(resource, List.of(ops)), new AlterConfigsOptions().validateOnly(validateOnly))
          .all()
          .get();
      return "ok";
    } catch (Exception e) {
      Throwable cause = cause(e);
      return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
  }

  /** What failed: the cause of a future's ExecutionException, or the exception itself. */
  static Throwable cause(Exception e) {
    return e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
  }

  static AlterConfigOp set(String name, String value) {
    return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
  }

  static AlterConfigOp delete(String name) {
    return new AlterConfigOp(new ConfigEntry(name, null), AlterConfigOp.OpType.DELETE);
  }

  /**
   * Group configs (Kafka 4.4's, on GROUP resources): their defaults, values set and shown as
   * Kafka normalises them, every kind of refusal with its message, validation only, and back to
   * the defaults. A group's configs need no group: this one never has a member.
   */
  static void groupConfigCalls(Admin admin, String group) throws Exception {
    call("describeConfigs group defaults", () -> groupConfigs(admin, group));
    AlterConfigOp[] sets = {
      set("share.delivery.count.limit", " 3 "),
      set("share.record.lock.duration.ms", "15000"),
      set("share.auto.offset.reset", "by_duration:PT1H"),
      set("share.isolation.level", "read_committed"),
      set("errors.deadletterqueue.topic.name", "dlq." + group),
      set("errors.deadletterqueue.copy.record.enable", "TRUE"),
      set("consumer.session.timeout.ms", "50000"),
      set("consumer.assignor.offload.enable", "false"),
      set("streams.rack.aware.assignment.tags", " a , b "),
    };
    call(
        "incrementalAlterConfigs group set",
        () ->
            alterGroup(admin, group, false, sets)
                + " "
                + eventually(
                    () -> groupConfigs(admin, group), v -> v.toString().contains("by_duration")));
    String[][] refused = {
      {"nope.config", "1"},
      {"share.delivery.count.limit", "1"},
      {"share.delivery.count.limit", "11"},
      {"share.delivery.count.limit", ""},
      {"share.record.lock.duration.ms", "999"},
      {"share.record.lock.duration.ms", "3700000"},
      {"share.partition.max.record.locks", "4001"},
      {"share.session.timeout.ms", "44000"},
      {"share.heartbeat.interval.ms", "16000"},
      {"consumer.session.timeout.ms", "5000"},
      {"consumer.heartbeat.interval.ms", "abc"},
      {"share.auto.offset.reset", "EARLIEST"},
      {"share.auto.offset.reset", "by_duration:-PT1H"},
      {"share.isolation.level", "READ_COMMITTED"},
      {"errors.deadletterqueue.copy.record.enable", "yes"},
      {"streams.num.standby.replicas", "3"},
      {"streams.assignor.name", "foo"},
      {"streams.rack.aware.assignment.tags", "a,,b"},
    };
    for (String[] r : refused) {
      call(
          "incrementalAlterConfigs group " + r[0] + "=" + r[1],
          () -> alterGroup(admin, group, false, set(r[0], r[1])));
    }
    call(
        "incrementalAlterConfigs group null value",
        () -> alterGroup(admin, group, false, set("share.delivery.count.limit", null)));
    call(
        "incrementalAlterConfigs group twice",
        () ->
            alterGroup(
                admin,
                group,
                false,
                set("share.delivery.count.limit", "3"),
                set("share.delivery.count.limit", "4")));
    call(
        "incrementalAlterConfigs group append",
        () ->
            alterGroup(
                admin,
                group,
                false,
                new AlterConfigOp(
                    new ConfigEntry("streams.rack.aware.assignment.tags", "c"),
                    AlterConfigOp.OpType.APPEND)));
    call(
        "incrementalAlterConfigs group empty name",
        () -> alterGroup(admin, "", false, set("share.delivery.count.limit", "3")));
    call("describeConfigs group empty name", () -> groupConfigs(admin, ""));
    call(
        "incrementalAlterConfigs group validateOnly",
        () ->
            alterGroup(admin, group, true, set("share.delivery.count.limit", "9"))
                + " "
                + groupConfigs(admin, group).contains("share.delivery.count.limit=3 "));
    // Every one set back to its default, and a name Kafka does not know (a no-op there).
    List<AlterConfigOp> deletes = new ArrayList<>();
    for (AlterConfigOp op : sets) {
      deletes.add(delete(op.configEntry().name()));
    }
    deletes.add(delete("nope.config"));
    call(
        "incrementalAlterConfigs group delete",
        () ->
            alterGroup(admin, group, false, deletes.toArray(new AlterConfigOp[0]))
                + " "
                + eventually(
                    () -> groupConfigs(admin, group),
                    v -> !v.toString().contains("GROUP_CONFIG")));
  }

  /**
   * A share group's offsets as listed: partition to start offset and lag (DescribeShareGroupOffsets
   * v1, KIP-1226).
   */
  static Object shareOffsets(Admin admin, String group) throws Exception {
    Map<String, Map<TopicPartition, SharePartitionOffsetInfo>> all =
        admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec())).all().get();
    Map<String, String> starts = new TreeMap<>();
    all.get(group)
        .forEach(
            (tp, info) ->
                starts.put(
                    tp.toString(),
                    info == null
                        ? null
                        : info.startOffset() + " lag " + info.lag().map(String::valueOf).orElse("-")));
    return starts;
  }

  /**
   * AlterShareGroupOffsets and DeleteShareGroupOffsets on share group `share` (never with a
   * member; KafkaShareConsumer runs are in share_groups.rs), and on the classic group `classic`.
   */
  static void shareOffsetCalls(Admin admin, String share, String topic, String classic)
      throws Exception {
    TopicPartition t0 = new TopicPartition(topic, 0);
    call("listShareGroupOffsets unknown group", () -> shareOffsets(admin, share));
    call("alterShareGroupOffsets unknown group", () -> {
      admin.alterShareGroupOffsets(share, Map.of(t0, 2L, new TopicPartition(topic, 2), 7L)).all().get();
      return "ok";
    });
    call("listShareGroupOffsets", () -> shareOffsets(admin, share));
    call("describeShareGroups altered", () -> admin.describeShareGroups(List.of(share)).all().get().get(share).groupState());
    call("alterShareGroupOffsets unknown topic", () -> {
      admin.alterShareGroupOffsets(share, Map.of(new TopicPartition(topic + ".none", 0), 2L)).all().get();
      return "ok";
    });
    call("alterShareGroupOffsets unknown partition", () -> {
      admin.alterShareGroupOffsets(share, Map.of(new TopicPartition(topic, 9), 2L)).all().get();
      return "ok";
    });
    call("alterShareGroupOffsets classic group", () -> {
      admin.alterShareGroupOffsets(classic, Map.of(t0, 0L)).all().get();
      return "ok";
    });
    call("deleteShareGroupOffsets unknown topic", () -> {
      admin.deleteShareGroupOffsets(share, Set.of(topic + ".none")).all().get();
      return "ok";
    });
    call("deleteShareGroupOffsets", () -> {
      admin.deleteShareGroupOffsets(share, Set.of(topic)).all().get();
      return "ok";
    });
    call("listShareGroupOffsets deleted", () -> shareOffsets(admin, share));
    call("deleteShareGroupOffsets again", () -> {
      admin.deleteShareGroupOffsets(share, Set.of(topic)).all().get();
      return "ok";
    });
    call("deleteShareGroupOffsets unknown group", () -> {
      admin.deleteShareGroupOffsets(share + ".none", Set.of(topic)).all().get();
      return "ok";
    });
    call("deleteShareGroupOffsets classic group", () -> {
      admin.deleteShareGroupOffsets(classic, Set.of(topic)).all().get();
      return "ok";
    });
  }

  static String partitions(Admin admin, String topic) throws Exception {
    TopicDescription d =
        AdminCalls.<TopicDescription>settled(
            () -> admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic));
    List<String> shown = new ArrayList<>();
    for (TopicPartitionInfo p : d.partitions()) {
      shown.add(p.partition() + ":replicas=" + p.replicas().size() + ",isr=" + p.isr().size());
    }
    return d.name() + " internal=" + d.isInternal() + " " + shown;
  }

  static Map<TopicPartition, Long> offsets(Admin admin, TopicPartition tp, OffsetSpec spec)
      throws Exception {
    ListOffsetsResult.ListOffsetsResultInfo info =
        admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get();
    return Map.of(tp, info.offset());
  }

  static Map<String, Long> committed(Admin admin, String group) throws Exception {
    Map<String, Long> shown = new TreeMap<>();
    for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet()) {
      shown.put(e.getKey().toString(), e.getValue() == null ? null : e.getValue().offset());
    }
    return shown;
  }

  static void run(Admin admin, Properties common, String prefix) throws Exception {
    String a = prefix + ".a";
    String c = prefix + ".c";
    String group = prefix + ".g";
    TopicPartition a0 = new TopicPartition(a, 0);

    // Topics.
    call(
        "createTopics",
        () -> {
          admin
              .createTopics(
                  List.of(
                      new NewTopic(a, 3, (short) 1).configs(Map.of("retention.ms", "3600000")),
                      new NewTopic(c, 1, (short) 1).configs(Map.of("cleanup.policy", "compact"))))
              .all()
              .get();
          return "ok";
        });
    call(
        "createTopics existing",
        () -> admin.createTopics(List.of(new NewTopic(a, 1, (short) 1))).all().get());
    call(
        "createTopics bad config",
        () ->
            admin
                .createTopics(
                    List.of(
                        new NewTopic(prefix + ".bad", 1, (short) 1)
                            .configs(Map.of("retention.ms", "soon"))))
                .all()
                .get());
    call(
        "createTopics validateOnly",
        () -> {
          admin
              .createTopics(
                  List.of(new NewTopic(prefix + ".v", 1, (short) 1)),
                  new org.apache.kafka.clients.admin.CreateTopicsOptions().validateOnly(true))
              .all()
              .get();
          return "ok";
        });
    call(
        "listTopics",
        () ->
            eventually(
                () -> {
                  Set<String> names = new TreeSet<>();
                  for (String name : admin.listTopics().names().get()) {
                    if (name.startsWith(prefix + ".")) {
                      names.add(name);
                    }
                  }
                  return names;
                },
                v -> v instanceof Set<?> names && names.size() == 2));
    call("describeTopics", () -> partitions(admin, a));
    call(
        "describeTopics by id",
        () -> {
          TopicDescription byName =
              AdminCalls.<TopicDescription>settled(
                  () -> admin.describeTopics(List.of(a)).allTopicNames().get().get(a));
          Uuid id = byName.topicId();
          return admin
              .describeTopics(TopicCollection.ofTopicIds(List.of(id)))
              .allTopicIds()
              .get()
              .get(id)
              .name();
        });
    call(
        "describeTopics missing",
        () -> admin.describeTopics(List.of(prefix + ".none")).allTopicNames().get());

    // Configs.
    call("describeConfigs", () -> configs(admin, a, "retention.ms", "cleanup.policy"));
    ConfigResource aConfigs = new ConfigResource(ConfigResource.Type.TOPIC, a);
    call(
        "incrementalAlterConfigs set",
        () -> {
          admin
              .incrementalAlterConfigs(
                  Map.of(
                      aConfigs,
                      List.of(
                          new AlterConfigOp(
                              new ConfigEntry("retention.ms", "7200000"),
                              AlterConfigOp.OpType.SET))))
              .all()
              .get();
          return eventually(
              () -> configs(admin, a, "retention.ms"), v -> v.toString().contains("7200000"));
        });
    call(
        "incrementalAlterConfigs bad value",
        () ->
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        aConfigs,
                        List.of(
                            new AlterConfigOp(
                                new ConfigEntry("retention.ms", "soon"),
                                AlterConfigOp.OpType.SET))))
                .all()
                .get());
    call(
        "incrementalAlterConfigs delete",
        () -> {
          admin
              .incrementalAlterConfigs(
                  Map.of(
                      aConfigs,
                      List.of(
                          new AlterConfigOp(
                              new ConfigEntry("retention.ms", null),
                              AlterConfigOp.OpType.DELETE))))
              .all()
              .get();
          return eventually(
              () -> configs(admin, a, "retention.ms"), v -> !v.toString().contains("7200000"));
        });

    groupConfigCalls(admin, prefix + ".configured");

    // Partitions.
    call(
        "createPartitions",
        () -> {
          admin.createPartitions(Map.of(a, NewPartitions.increaseTo(5))).all().get();
          return settled(
              () -> {
                String shown = partitions(admin, a);
                if (!shown.contains("4:")) {
                  throw new UnknownTopicOrPartitionException("not yet");
                }
                return shown;
              });
        });
    call(
        "createPartitions fewer",
        () -> admin.createPartitions(Map.of(a, NewPartitions.increaseTo(2))).all().get());

    // Records: ten, with timestamps 1000 to 1009, from an idempotent producer (the default).
    call(
        "produce",
        () -> {
          Properties p = (Properties) common.clone();
          p.put("key.serializer", StringSerializer.class.getName());
          p.put("value.serializer", StringSerializer.class.getName());
          List<Long> stored = new ArrayList<>();
          try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 10; i++) {
              stored.add(
                  producer
                      .send(new ProducerRecord<>(a, 0, 1000L + i, "k" + i, "v" + i))
                      .get()
                      .offset());
            }
          }
          return stored;
        });
    call("listOffsets earliest", () -> offsets(admin, a0, OffsetSpec.earliest()));
    call("listOffsets latest", () -> offsets(admin, a0, OffsetSpec.latest()));
    call("listOffsets maxTimestamp", () -> offsets(admin, a0, OffsetSpec.maxTimestamp()));
    call("listOffsets forTimestamp", () -> offsets(admin, a0, OffsetSpec.forTimestamp(1005)));
    call(
        "describeProducers",
        () -> {
          List<String> shown = new ArrayList<>();
          for (ProducerState s :
              admin.describeProducers(List.of(a0)).partitionResult(a0).get().activeProducers()) {
            shown.add("epoch=" + s.producerEpoch() + ",lastSequence=" + s.lastSequence());
          }
          return shown;
        });
    call(
        "deleteRecords",
        () ->
            admin
                .deleteRecords(Map.of(a0, RecordsToDelete.beforeOffset(4)))
                .lowWatermarks()
                .get(a0)
                .get()
                .lowWatermark());
    call("listOffsets after deleteRecords", () -> offsets(admin, a0, OffsetSpec.earliest()));
    call(
        "deleteRecords past the end",
        () ->
            admin
                .deleteRecords(Map.of(a0, RecordsToDelete.beforeOffset(100)))
                .lowWatermarks()
                .get(a0)
                .get());
    TopicPartition c0 = new TopicPartition(c, 0);
    call(
        "deleteRecords compacted",
        () ->
            admin
                .deleteRecords(Map.of(c0, RecordsToDelete.beforeOffset(0)))
                .lowWatermarks()
                .get(c0)
                .get());

    // A classic group: reads what is left, commits, leaves.
    call(
        "consume and commit",
        () -> {
          Properties p = (Properties) common.clone();
          p.put("group.id", group);
          p.put("auto.offset.reset", "earliest");
          p.put("enable.auto.commit", "false");
          p.put("key.deserializer", StringDeserializer.class.getName());
          p.put("value.deserializer", StringDeserializer.class.getName());
          int read = 0;
          try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(a));
            long end = System.currentTimeMillis() + 30_000;
            while (read < 6 && System.currentTimeMillis() < end) {
              ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
              read += records.count();
            }
            // Only what was read: which other partitions have a position by now is a race.
            consumer.commitSync(Map.of(a0, new OffsetAndMetadata(consumer.position(a0))));
            ConsumerGroupDescription d =
                admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            List<String> members = new ArrayList<>();
            for (var member : d.members()) {
              members.add(
                  "client=" + member.clientId().startsWith("consumer-" + group)
                      + ",partitions=" + member.assignment().topicPartitions().size());
            }
            return read + " records; while a member: state=" + d.groupState() + " assignor="
                + d.partitionAssignor() + " members=" + members;
          }
        });
    call("listConsumerGroupOffsets", () -> committed(admin, group));
    call(
        "listGroups",
        () -> {
          List<String> shown = new ArrayList<>();
          for (GroupListing g : admin.listGroups().all().get()) {
            if (g.groupId().equals(group)) {
              shown.add(g.groupId() + " type=" + g.type() + " protocol=" + g.protocol()
                  + " state=" + g.groupState());
            }
          }
          return shown;
        });
    call(
        "describeConsumerGroups",
        () -> {
          ConsumerGroupDescription d =
              admin.describeConsumerGroups(List.of(group)).all().get().get(group);
          return "state=" + d.groupState() + " type=" + d.type() + " members=" + d.members().size()
              + " simple=" + d.isSimpleConsumerGroup() + " assignor=" + d.partitionAssignor();
        });
    call(
        "alterConsumerGroupOffsets",
        () -> {
          admin
              .alterConsumerGroupOffsets(group, Map.of(a0, new OffsetAndMetadata(5)))
              .all()
              .get();
          return committed(admin, group);
        });
    call(
        "deleteConsumerGroupOffsets",
        () -> {
          admin.deleteConsumerGroupOffsets(group, Set.of(a0)).all().get();
          return committed(admin, group);
        });
    call(
        "deleteConsumerGroups",
        () -> {
          admin.deleteConsumerGroups(List.of(group)).all().get();
          return "ok";
        });
    call(
        "deleteConsumerGroups missing",
        () -> admin.deleteConsumerGroups(List.of(group)).all().get());

    // The cluster and its log directories.
    call(
        "describeCluster",
        () -> {
          DescribeClusterResult d = admin.describeCluster();
          return "nodes>0=" + !d.nodes().get().isEmpty()
              + " controller=" + (d.controller().get() != null)
              + " clusterId=" + !d.clusterId().get().isEmpty();
        });
    call(
        "describeLogDirs",
        () -> {
          List<Integer> ids = new ArrayList<>();
          for (Node node : admin.describeCluster().nodes().get()) {
            ids.add(node.id());
          }
          Map<String, Integer> found = new TreeMap<>();
          for (Map<String, LogDirDescription> dirs :
              admin.describeLogDirs(ids).allDescriptions().get().values()) {
            for (LogDirDescription dir : dirs.values()) {
              for (TopicPartition tp : dir.replicaInfos().keySet()) {
                if (tp.topic().startsWith(prefix + ".")) {
                  found.merge(tp.topic(), 1, Integer::sum);
                }
              }
            }
          }
          return found;
        });

    // ACLs.
    AclBinding acl =
        new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, a, PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
    AclBindingFilter acls =
        new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.TOPIC, a, PatternType.ANY),
            AccessControlEntryFilter.ANY);
    call(
        "createAcls",
        () -> {
          admin.createAcls(List.of(acl)).all().get();
          return eventually(
              () -> admin.describeAcls(acls).values().get(),
              v -> v instanceof Collection<?> l && !l.isEmpty());
        });
    call("deleteAcls", () -> admin.deleteAcls(List.of(acls)).all().get());
    call(
        "describeAcls after deleteAcls",
        () ->
            eventually(
                () -> admin.describeAcls(acls).values().get(),
                v -> v instanceof Collection<?> l && l.isEmpty()));

    // SCRAM users.
    String user = prefix + "-alice";
    call(
        "alterUserScramCredentials",
        () -> {
          admin
              .alterUserScramCredentials(
                  List.of(
                      new UserScramCredentialUpsertion(
                          user,
                          new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                          "alice-secret")))
              .all()
              .get();
          return eventually(
              () -> admin.describeUserScramCredentials(List.of(user)).all().get().get(user)
                  .credentialInfos(),
              v -> v instanceof List<?> l && !l.isEmpty());
        });
    call(
        "alterUserScramCredentials delete",
        () -> {
          admin
              .alterUserScramCredentials(
                  List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)))
              .all()
              .get();
          return eventually(
              () -> admin.describeUserScramCredentials(List.of(user)).all().get(),
              v -> v instanceof String);
        });

    // Client quotas.
    ClientQuotaEntity client = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, prefix));
    ClientQuotaFilter onlyIt =
        ClientQuotaFilter.containsOnly(
            List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, prefix)));
    call(
        "alterClientQuotas",
        () -> {
          admin
              .alterClientQuotas(
                  List.of(
                      new ClientQuotaAlteration(
                          client,
                          List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0)))))
              .all()
              .get();
          return eventually(
              () -> admin.describeClientQuotas(onlyIt).entities().get(), v -> !isEmpty(v));
        });
    call(
        "alterClientQuotas fractional",
        () ->
            admin
                .alterClientQuotas(
                    List.of(
                        new ClientQuotaAlteration(
                            client,
                            List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 10.5)))))
                .all()
                .get());
    call(
        "alterClientQuotas remove",
        () -> {
          admin
              .alterClientQuotas(
                  List.of(
                      new ClientQuotaAlteration(
                          client, List.of(new ClientQuotaAlteration.Op("producer_byte_rate", null)))))
              .all()
              .get();
          return eventually(
              () -> admin.describeClientQuotas(onlyIt).entities().get(), AdminCalls::isEmpty);
        });

    shareOffsetCalls(admin, prefix + ".share", a, group);

    // The end: the topics go.
    call(
        "deleteTopics",
        () -> {
          admin.deleteTopics(List.of(a, c)).all().get();
          // Brokers other than the controller's learn it a moment later.
          long end = System.currentTimeMillis() + 15_000;
          while (true) {
            Collection<String> left = new TreeSet<>();
            for (String name : admin.listTopics().names().get()) {
              if (name.startsWith(prefix + ".")) {
                left.add(name);
              }
            }
            if (left.isEmpty() || System.currentTimeMillis() > end) {
              return left;
            }
            Thread.sleep(200);
          }
        });
    call(
        "describeFeatures",
        () -> new TreeSet<>(admin.describeFeatures().featureMetadata().get().finalizedFeatures().keySet()));
    call("describeMetadataQuorum", () -> {
      admin.describeMetadataQuorum().quorumInfo().get();
      return "ok";
    });
  }
}
