//! Zigzag varints as Kafka records use them (protobuf's encoding): a signed value is zigzagged
//! to unsigned, then written 7 bits at a time, low bits first, high bit set on all but the last.

/// Reads a zigzag varint of at most 5 bytes (an `i32`); `None` if truncated or too long.
#[inline(always)]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    let raw = read_unsigned(buf, pos, 5)?;
    let raw = u32::try_from(raw).ok()?;
    Some(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varint of at most 10 bytes (an `i64`); `None` if truncated or too long.
#[inline(always)]
pub(crate) fn read_varlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let raw = read_unsigned(buf, pos, 10)?;
    Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Reads a zigzag varint that must be a non-negative `i32` (a length or a count); `None` if
/// truncated, too long or negative. Cheaper than [`read_varint`] then a sign check: zigzag
/// keeps the sign in bit 0, so the non-negative values are the even ones.
#[inline(always)]
pub(crate) fn read_length(buf: &[u8], pos: &mut usize) -> Option<usize> {
    let raw = read_unsigned(buf, pos, 5)?;
    if raw & 1 != 0 || raw > u64::from(u32::MAX) {
        return None;
    }
    Some((raw >> 1) as usize)
}

/// Reads the unsigned varint before zigzag decoding, at most `max_len` bytes; `None` (cursor
/// unmoved) if truncated or too long.
#[inline(always)]
pub(super) fn read_unsigned(buf: &[u8], pos: &mut usize, max_len: usize) -> Option<u64> {
    // Most varints in a record (attributes aside: deltas, short lengths, header counts) fit
    // one byte; take that path without the loop.
    let first = *buf.get(*pos)?;
    if first & 0x80 == 0 {
        *pos += 1;
        return Some(u64::from(first));
    }
    // Two bytes cover the rest of a typical record's varints (lengths and deltas below 8192).
    let second = *buf.get(*pos + 1)?;
    if second & 0x80 == 0 {
        *pos += 2;
        return Some(u64::from(first & 0x7f) | u64::from(second) << 7);
    }
    let mut value = 0u64;
    for i in 0..max_len {
        let byte = *buf.get(*pos + i)?;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *pos += i + 1;
            return Some(value);
        }
    }
    None
}

/// Appends `value` as a zigzag varint.
pub(crate) fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, ((value << 1) ^ (value >> 31)) as u32 as u64);
}

/// Appends `value` as a zigzag varlong.
pub(crate) fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// Bytes `value` takes as a zigzag varint.
pub(crate) fn varint_len(value: i32) -> usize {
    unsigned_len(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// Bytes `value` takes as a zigzag varlong.
pub(crate) fn varlong_len(value: i64) -> usize {
    unsigned_len(((value << 1) ^ (value >> 63)) as u64)
}

/// Seven bits a byte: one byte for 0, ten for the largest u64.
fn unsigned_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

fn write_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings_match_protobuf_zigzag() {
        // Pairs from the protobuf encoding guide: 0 -> 00, -1 -> 01, 1 -> 02, -2 -> 03,
        // 63 -> 7e, -64 -> 7f, 64 -> 80 01.
        for (value, bytes) in [
            (0, vec![0x00]),
            (-1, vec![0x01]),
            (1, vec![0x02]),
            (-2, vec![0x03]),
            (63, vec![0x7e]),
            (-64, vec![0x7f]),
            (64, vec![0x80, 0x01]),
        ] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, bytes, "encoding {value}");
        }
    }

    #[test]
    fn overlong_and_truncated_varints_are_rejected() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0x80, 0x80], &mut pos), None);
        assert_eq!(read_varint(&[0xff; 6], &mut pos), None);
        assert_eq!(read_varlong(&[0xff; 11], &mut pos), None);
        assert_eq!(pos, 0, "a failed read must not move the cursor");
    }

    proptest! {
        #[test]
        fn varint_round_trips(value: i32) {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            let mut pos = 0;
            prop_assert_eq!(read_varint(&out, &mut pos), Some(value));
            prop_assert_eq!(pos, out.len());
            prop_assert_eq!(varint_len(value), out.len());
        }

        #[test]
        fn varlong_round_trips(value: i64) {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            let mut pos = 0;
            prop_assert_eq!(read_varlong(&out, &mut pos), Some(value));
            prop_assert_eq!(pos, out.len());
            prop_assert_eq!(varlong_len(value), out.len());
        }
    }
}
