//! [`Headers`]: one way to read a record's headers, for every record type that has them
//! (the engine's producer and consumer records, `logd-retry`'s messages). Kafka allows a name
//! more than once; lookups return the last value, as most clients read it.

use crate::consumer::ConsumerRecord;
use crate::producer::ProducerRecord;

/// What [`Headers::each_header`] calls with each header: its name and value (`None` for a
/// null value).
pub type HeaderVisitor<'a> = dyn FnMut(&[u8], Option<&[u8]>) + 'a;

/// Header lookup by name.
pub trait Headers {
    /// Calls `f` with every header, in order.
    fn each_header(&self, f: &mut HeaderVisitor<'_>);

    /// The value of the last header called `name` (`None` if there is none or it is null).
    fn header(&self, name: &str) -> Option<&[u8]>;

    /// [`Headers::header`] as text (`None` too if it is not UTF-8).
    fn header_str(&self, name: &str) -> Option<&str> {
        std::str::from_utf8(self.header(name)?).ok()
    }
}

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
