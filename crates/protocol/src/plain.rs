//! The primitives of logd's own APIs, which use Kafka's non-flexible encoding: (nullable)
//! STRINGs with an INT16 length and fixed-size big-endian numbers, each read only when the
//! bytes for it are there.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};

pub(crate) fn malformed(what: &'static str, reason: impl Into<String>) -> Error {
    Error::Malformed {
        what,
        reason: reason.into(),
    }
}

/// Appends a (nullable) Kafka STRING: an INT16 length (-1 for null), then UTF-8 bytes.
pub(crate) fn put_string(
    out: &mut BytesMut,
    value: Option<&str>,
    what: &'static str,
) -> Result<()> {
    match value {
        None => out.put_i16(-1),
        Some(s) => {
            let len = i16::try_from(s.len()).map_err(|_| malformed(what, "string too long"))?;
            out.put_i16(len);
            out.put_slice(s.as_bytes());
        }
    }
    Ok(())
}

/// Reads a (nullable) Kafka STRING, checking its length against the bytes present.
pub(crate) fn get_string(buf: &mut Bytes, what: &'static str) -> Result<Option<String>> {
    let len = get(buf, Bytes::get_i16, what)?;
    let Ok(len) = usize::try_from(len) else {
        return match len {
            -1 => Ok(None),
            _ => Err(malformed(what, format!("string length {len}"))),
        };
    };
    if buf.remaining() < len {
        return Err(malformed(what, "string longer than the bytes left"));
    }
    let bytes = buf.split_to(len);
    String::from_utf8(bytes.to_vec())
        .map(Some)
        .map_err(|_| malformed(what, "string is not UTF-8"))
}

/// Reads one fixed-size number, or says the bytes ran out.
pub(crate) fn get<T>(buf: &mut Bytes, read: fn(&mut Bytes) -> T, what: &'static str) -> Result<T> {
    if buf.remaining() < std::mem::size_of::<T>() {
        return Err(malformed(what, "truncated"));
    }
    Ok(read(buf))
}

/// Reads an array count, refused when the bytes left cannot hold that many entries of at
/// least `min_entry` bytes each, before anything is allocated for them.
pub(crate) fn get_count(buf: &mut Bytes, min_entry: usize, what: &'static str) -> Result<usize> {
    let count = get(buf, Bytes::get_i32, what)?;
    match usize::try_from(count) {
        Ok(n) if n <= buf.remaining() / min_entry => Ok(n),
        Ok(n) => Err(malformed(
            what,
            format!("{n} partitions announced, bytes for fewer"),
        )),
        Err(_) => Err(malformed(what, format!("partition count {count}"))),
    }
}
