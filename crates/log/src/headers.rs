//! [`Headers`] for the engine's producer and consumer records (the trait is
//! `logd_storage::Headers`, so `logd-retry`'s messages have it without the engine).

use crate::consumer::ConsumerRecord;
use crate::producer::ProducerRecord;
use logd_storage::{HeaderVisitor, Headers};

impl Headers for ConsumerRecord {
    fn each_header(&self, f: &mut HeaderVisitor<'_>) {
        for (name, value) in &self.headers {
            f(name, value.as_deref());
        }
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .rev()
            .find(|(k, _)| k.as_ref() == name.as_bytes())
            .and_then(|(_, v)| v.as_deref())
    }
}

impl Headers for ProducerRecord<'_> {
    fn each_header(&self, f: &mut HeaderVisitor<'_>) {
        for (name, value) in &self.headers {
            f(name.as_bytes(), *value);
        }
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .rev()
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| *v)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn the_last_value_of_a_name_wins_and_null_reads_as_none() {
        let producer = ProducerRecord::new("t", "v")
            .header("a", "1")
            .header("b", "2")
            .header("a", "3");
        assert_eq!(producer.header_str("a"), Some("3"));
        // `ProducerRecord::header` is the builder; the lookup is the trait's.
        assert_eq!(Headers::header(&producer, "missing"), None);
        let mut consumer = ConsumerRecord {
            topic: "t".into(),
            partition: 0,
            offset: 0,
            timestamp: 0,
            key: None,
            value: None,
            headers: vec![
                (Bytes::from("a"), Some(Bytes::from("1"))),
                (Bytes::from("n"), None),
            ],
        };
        assert_eq!(consumer.header("a"), Some(&b"1"[..]));
        assert_eq!(consumer.header("n"), None);
        consumer
            .headers
            .push((Bytes::from("bin"), Some(Bytes::from(vec![0xffu8]))));
        assert_eq!(consumer.header_str("bin"), None, "not UTF-8");
        let mut names = Vec::new();
        consumer.each_header(&mut |name, _| names.push(name.to_vec()));
        assert_eq!(names, [b"a".to_vec(), b"n".to_vec(), b"bin".to_vec()]);
    }
}
