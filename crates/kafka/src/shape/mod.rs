//! Checks a request body against the layout of its API and version before `kafka-protocol`
//! decodes it. The crate sizes vectors from array counts read off the wire
//! (`Vec::with_capacity(count)`, kafka-protocol-rs issues #161/#200): a 30-byte Metadata request
//! claiming 2^31 - 1 topics makes the allocator abort the whole daemon. Walking the body first
//! proves every count fits the bytes actually present, without allocating anything.
//!
//! Only the versions logd serves are described. Flexible versions (request header v2) spell out
//! their compact strings and arrays and their tagged-field sections; ApiVersions has no
//! arrays and is not described.

use kafka_protocol::messages::ApiKey;

mod layouts;
#[cfg(test)]
mod tests;

use layouts::Field::{
    self, Array, Bytes, CompactArray, CompactStr, Fixed, KnownTags, NullableStruct, Str, Tags,
};
use layouts::layout;

/// Checks the request body (after the header) of `key` at `version`.
pub(crate) fn check(key: ApiKey, version: i16, body: &[u8]) -> Result<(), &'static str> {
    match layout(key, version) {
        Some(fields) => walk(&fields, body, &mut 0),
        None => Ok(()),
    }
}

fn walk(fields: &[Field], buf: &[u8], pos: &mut usize) -> Result<(), &'static str> {
    for field in fields {
        match field {
            Fixed(n) => take(buf, pos, *n)?,
            Str => {
                let len = i16::from_be_bytes(read::<2>(buf, pos)?);
                if len >= 0 {
                    take(buf, pos, len as usize)?;
                } else if len != -1 {
                    return Err("negative string length");
                }
            }
            Bytes => {
                let len = i32::from_be_bytes(read::<4>(buf, pos)?);
                if len >= 0 {
                    take(buf, pos, len as usize)?;
                } else if len != -1 {
                    return Err("negative bytes length");
                }
            }
            Array(element) => {
                let count = i32::from_be_bytes(read::<4>(buf, pos)?);
                if count < -1 {
                    return Err("negative array count");
                }
                walk_elements(element, count.max(0) as usize, buf, pos)?;
            }
            CompactStr => {
                let len = uvarint(buf, pos)?;
                take(buf, pos, len.saturating_sub(1) as usize)?;
            }
            CompactArray(element) => {
                let count = uvarint(buf, pos)?.saturating_sub(1) as usize;
                walk_elements(element, count, buf, pos)?;
            }
            NullableStruct(fields) => {
                if read::<1>(buf, pos)?[0] == 1 {
                    walk(fields, buf, pos)?;
                }
            }
            Tags => walk(&[KnownTags(Vec::new())], buf, pos)?,
            KnownTags(known) => {
                let count = uvarint(buf, pos)?;
                for _ in 0..count {
                    let tag = uvarint(buf, pos)?;
                    let size = uvarint(buf, pos)? as usize;
                    let start = *pos;
                    take(buf, pos, size)?;
                    if let Some((_, layout)) = known.iter().find(|(t, _)| *t == tag) {
                        let mut inner = 0;
                        walk(layout, &buf[start..start + size], &mut inner)?;
                        if inner != size {
                            return Err("a tagged field's size is not its contents'");
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn walk_elements(
    element: &[Field],
    count: usize,
    buf: &[u8],
    pos: &mut usize,
) -> Result<(), &'static str> {
    // Every element takes at least one byte: a count beyond the remaining bytes cannot be
    // honest.
    if count > buf.len() - *pos {
        return Err("array count exceeds the request size");
    }
    for _ in 0..count {
        walk(element, buf, pos)?;
    }
    Ok(())
}

/// An unsigned varint of at most five bytes (a `u32`).
fn uvarint(buf: &[u8], pos: &mut usize) -> Result<u32, &'static str> {
    let mut value: u32 = 0;
    for i in 0..5 {
        let byte = *buf.get(*pos).ok_or("request ends early")?;
        *pos += 1;
        if i == 4 && byte > 0x0f {
            return Err("varint overflows 32 bits");
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint overflows 32 bits")
}

fn take(buf: &[u8], pos: &mut usize, n: usize) -> Result<(), &'static str> {
    if buf.len() - *pos < n {
        return Err("request ends early");
    }
    *pos += n;
    Ok(())
}

fn read<const N: usize>(buf: &[u8], pos: &mut usize) -> Result<[u8; N], &'static str> {
    let bytes = buf.get(*pos..*pos + N).ok_or("request ends early")?;
    *pos += N;
    Ok(bytes.try_into().expect("N bytes"))
}

/// Where the body starts in a frame with request header `header_version`: v1 is key,
/// version, correlation id and a nullable client id; v2 (flexible requests) adds a
/// tagged-field section.
pub(crate) fn body_offset(frame: &[u8], header_version: i16) -> Option<usize> {
    let len = i16::from_be_bytes(frame.get(8..10)?.try_into().ok()?);
    let mut start = 10 + usize::try_from(len.max(0)).ok()?;
    if start > frame.len() {
        return None;
    }
    if header_version >= 2 {
        walk(&[Tags], frame, &mut start).ok()?;
    }
    Some(start)
}
