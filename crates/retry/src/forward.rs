//! [`forward_transport!`](crate::forward_transport): a wrapper's [`Transport`](crate::Transport)
//! calls that go unchanged to the transport it wraps. A wrapper changes one or two calls (the
//! console's checks appends against the ACLs; a group member answers ownership and commits
//! itself); the signatures of the rest are written once, here, beside the trait, not again in
//! every wrapper. The compiler still checks that each wrapper's impl is complete.

/// Inside `impl Transport for W`, forwards the named calls to the field `inner`:
/// `forward_transport!(inner => now_ms, fetch, commit);`.
#[macro_export]
macro_rules! forward_transport {
    ($inner:ident => $($call:ident),+ $(,)?) => {
        $( $crate::forward_transport!(@call $inner $call); )+
    };
    (@call $inner:ident now_ms) => {
        fn now_ms(&self) -> i64 {
            self.$inner.now_ms()
        }
    };
    (@call $inner:ident ensure_topic) => {
        fn ensure_topic(
            &mut self,
            topic: &str,
            partitions: u32,
            retention_ms: ::std::option::Option<i64>,
        ) -> $crate::Result<()> {
            self.$inner.ensure_topic(topic, partitions, retention_ms)
        }
    };
    (@call $inner:ident partition_count) => {
        fn partition_count(&mut self, topic: &str) -> $crate::Result<u32> {
            self.$inner.partition_count(topic)
        }
    };
    (@call $inner:ident partitions_if_exists) => {
        fn partitions_if_exists(
            &mut self,
            topic: &str,
        ) -> $crate::Result<::std::option::Option<u32>> {
            self.$inner.partitions_if_exists(topic)
        }
    };
    (@call $inner:ident owned_partitions) => {
        fn owned_partitions(
            &mut self,
            group: &str,
            topics: &[::std::string::String],
            partitions: u32,
        ) -> $crate::Result<$crate::Ownership> {
            self.$inner.owned_partitions(group, topics, partitions)
        }
    };
    (@call $inner:ident fetch) => {
        fn fetch(
            &mut self,
            topic: &str,
            partition: u32,
            offset: i64,
        ) -> $crate::Result<::std::vec::Vec<$crate::Message>> {
            self.$inner.fetch(topic, partition, offset)
        }
    };
    (@call $inner:ident append) => {
        fn append(
            &mut self,
            topic: &str,
            partition: u32,
            batch: ::std::vec::Vec<u8>,
        ) -> $crate::Result<i64> {
            self.$inner.append(topic, partition, batch)
        }
    };
    (@call $inner:ident init_producer_id) => {
        fn init_producer_id(&mut self) -> $crate::Result<i64> {
            self.$inner.init_producer_id()
        }
    };
    (@call $inner:ident committed) => {
        fn committed(
            &mut self,
            group: &str,
            topic: &str,
            partition: u32,
        ) -> $crate::Result<::std::option::Option<i64>> {
            self.$inner.committed(group, topic, partition)
        }
    };
    (@call $inner:ident commit) => {
        fn commit(
            &mut self,
            group: &str,
            topic: &str,
            partition: u32,
            offset: i64,
        ) -> $crate::Result<()> {
            self.$inner.commit(group, topic, partition, offset)
        }
    };
    (@call $inner:ident init_transactions) => {
        fn init_transactions(&mut self, transactional_id: &str) -> $crate::Result<()> {
            self.$inner.init_transactions(transactional_id)
        }
    };
    (@call $inner:ident append_in_transaction) => {
        fn append_in_transaction(
            &mut self,
            transactional_id: &str,
            topic: &str,
            partition: u32,
            record: &$crate::OutRecord,
        ) -> $crate::Result<i64> {
            self.$inner
                .append_in_transaction(transactional_id, topic, partition, record)
        }
    };
    (@call $inner:ident commit_transaction) => {
        fn commit_transaction(
            &mut self,
            transactional_id: &str,
            group: &str,
            offsets: &[(::std::string::String, u32, i64)],
        ) -> $crate::Result<()> {
            self.$inner
                .commit_transaction(transactional_id, group, offsets)
        }
    };
    (@call $inner:ident marker) => {
        fn marker(&mut self) -> u64 {
            self.$inner.marker()
        }
    };
    (@call $inner:ident wait) => {
        fn wait(&mut self, marker: u64, timeout: ::std::time::Duration) {
            self.$inner.wait(marker, timeout)
        }
    };
}
