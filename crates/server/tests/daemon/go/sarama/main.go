// A Kafka client built on Go's sarama 1.22 (Kafka protocol version 2.0), for logd's daemon
// tests: it creates topics, produces and consumes in a group as a sarama application would.
//
//	sarama-client produce BROKER TOPIC PARTITIONS FROM COUNT
//	sarama-client consume BROKER GROUP TOPIC MEMBERS COUNT
//
// produce creates TOPIC (PARTITIONS partitions) unless it exists, sends records k<i>:v<i> for
// i in [FROM, FROM+COUNT) with a synchronous producer and prints "produced COUNT". consume
// runs MEMBERS members of GROUP in one process until COUNT records have arrived between them,
// prints "record MEMBER PARTITION OFFSET KEY VALUE" for each, marks it consumed, and closes
// the members (committing their offsets). Errors go to stderr with exit code 1.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V2_0_0_0
	c.ClientID = "logd-sarama-test"
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Retry.Max = 0
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	// With a retention set, sarama commits with OffsetCommit v2: its default (v1) is gone
	// from Kafka 4.0 (KIP-896), and logd serves Kafka 4's versions.
	c.Consumer.Offsets.Retention = 7 * 24 * time.Hour
	c.Consumer.Return.Errors = true
	return c
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func number(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("not a number: %s", s)
	}
	return n
}

func produce(broker, topic string, partitions, from, count int) {
	admin, err := sarama.NewClusterAdmin([]string{broker}, config())
	if err != nil {
		fail("admin: %v", err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: 1}, false)
	if err != nil {
		if kerr, ok := err.(*sarama.TopicError); !ok || kerr.Err != sarama.ErrTopicAlreadyExists {
			fail("create topic: %v", err)
		}
	}
	admin.Close()
	producer, err := sarama.NewSyncProducer([]string{broker}, config())
	if err != nil {
		fail("producer: %v", err)
	}
	for i := from; i < from+count; i++ {
		message := &sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)),
		}
		if _, _, err := producer.SendMessage(message); err != nil {
			fail("record %d: %v", i, err)
		}
	}
	if err := producer.Close(); err != nil {
		fail("close producer: %v", err)
	}
	fmt.Printf("produced %d\n", count)
}

// member handles one group member's claims, counting records into the shared total.
type member struct {
	id    int
	mu    *sync.Mutex
	seen  *int
	want  int
	done  chan struct{}
	close *sync.Once
}

func (m member) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (m member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m member) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		m.mu.Lock()
		fmt.Printf("record %d %d %d %s %s\n", m.id, message.Partition, message.Offset, message.Key, message.Value)
		session.MarkMessage(message, "")
		*m.seen++
		if *m.seen >= m.want {
			m.close.Do(func() { close(m.done) })
		}
		m.mu.Unlock()
	}
	return nil
}

func consume(broker, group, topic string, members, count int) {
	var mu sync.Mutex
	seen := 0
	done := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	var groups []sarama.ConsumerGroup
	for id := 0; id < members; id++ {
		g, err := sarama.NewConsumerGroup([]string{broker}, group, config())
		if err != nil {
			fail("member %d: %v", id, err)
		}
		groups = append(groups, g)
		handler := member{id: id, mu: &mu, seen: &seen, want: count, done: done, close: &once}
		running.Add(1)
		go func(g sarama.ConsumerGroup) {
			defer running.Done()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, handler); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "consume: %v\n", err)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}(g)
		go func(g sarama.ConsumerGroup) {
			for err := range g.Errors() {
				fmt.Fprintf(os.Stderr, "group error: %v\n", err)
			}
		}(g)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		mu.Lock()
		fail("timed out with %d of %d records", seen, count)
	}
	cancel()
	running.Wait()
	for _, g := range groups {
		if err := g.Close(); err != nil {
			fail("close member: %v", err)
		}
	}
}

func main() {
	args := os.Args[1:]
	switch {
	case len(args) == 6 && args[0] == "produce":
		produce(args[1], args[2], number(args[3]), number(args[4]), number(args[5]))
	case len(args) == 6 && args[0] == "consume":
		consume(args[1], args[2], args[3], number(args[4]), number(args[5]))
	default:
		fail("usage: sarama-client produce BROKER TOPIC PARTITIONS FROM COUNT | consume BROKER GROUP TOPIC MEMBERS COUNT")
	}
}
