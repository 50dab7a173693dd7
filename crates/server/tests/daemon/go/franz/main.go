// franz-go (github.com/twmb/franz-go, the strictest modern Go client) against logd, for the
// daemon tests: its admin (kadm) creates topic franz with three partitions, an idempotent
// producer sends 90 keyed records, a consumer in group fg reads them all and commits, and kadm
// lists the topics and groups and the group's committed offsets. One line per step; exits
// non-zero on a failure.
//
//	franz-client BROKER
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(step string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", step, err)
	os.Exit(1)
}

func main() {
	broker := os.Args[1]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		fail("admin client", err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	created, err := adm.CreateTopic(ctx, 3, 1, nil, "franz")
	if err != nil || created.Err != nil {
		fail("create topic", fmt.Errorf("%v %v", err, created.Err))
	}
	fmt.Println("created", created.Topic)

	producer, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("franz"))
	if err != nil {
		fail("producer", err)
	}
	for i := 0; i < 90; i++ {
		record := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := producer.ProduceSync(ctx, record).FirstErr(); err != nil {
			fail("produce", err)
		}
	}
	producer.Close()
	fmt.Println("produced 90")

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(broker),
		kgo.ConsumerGroup("fg"),
		kgo.ConsumeTopics("franz"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		fail("consumer", err)
	}
	seen := map[string]bool{}
	for len(seen) < 90 {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			fail("consume", err)
		}
		fetches.EachError(func(t string, p int32, err error) { fail(fmt.Sprintf("fetch %s-%d", t, p), err) })
		fetches.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		fail("commit", err)
	}
	consumer.Close()
	fmt.Println("consumed", len(seen))

	topics, err := adm.ListTopics(ctx)
	if err != nil {
		fail("list topics", err)
	}
	names := topics.Names()
	sort.Strings(names)
	fmt.Println("topics", names, "partitions", len(topics["franz"].Partitions))
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		fail("list groups", err)
	}
	fmt.Println("groups", groups.Groups())
	offsets, err := adm.FetchOffsets(ctx, "fg")
	if err != nil {
		fail("fetch offsets", err)
	}
	var committed int64
	offsets.Each(func(o kadm.OffsetResponse) { committed += o.At })
	fmt.Println("committed", committed)
	ends, err := adm.ListEndOffsets(ctx, "franz")
	if err != nil {
		fail("end offsets", err)
	}
	var end int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	fmt.Println("end", end)
}
