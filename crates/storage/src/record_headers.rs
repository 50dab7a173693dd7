//! [`Headers`]: one way to read a record's headers, for every record type that has them
//! (the engine's producer and consumer records, `logd-retry`'s messages). Kafka allows a name
//! more than once; lookups return the last value, as most clients read it.

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
