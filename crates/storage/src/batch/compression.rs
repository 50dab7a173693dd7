//! The four codecs Kafka clients compress record payloads with (attribute bits 0-2), with a hard
//! cap on decompressed size so a small batch cannot expand into gigabytes.

use std::io::{self, Read, Write};

use crate::error::{Error, Result};

/// A record-payload codec, numbered as in the batch attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Stored as is.
    None = 0,
    /// gzip (RFC 1952).
    Gzip = 1,
    /// Snappy: raw blocks, or the xerial framing the Java client writes.
    Snappy = 2,
    /// The LZ4 frame format.
    Lz4 = 3,
    /// Zstandard frames.
    Zstd = 4,
}

/// The 8-byte magic that opens a xerial-framed snappy stream (Java's `SnappyOutputStream`).
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic, then version (i32) and compatible version (i32).
const XERIAL_HEADER_LEN: usize = 16;

impl Compression {
    /// The codec's name in errors (`Gzip`).
    pub fn label(self) -> &'static str {
        match self {
            Compression::None => "None",
            Compression::Gzip => "Gzip",
            Compression::Snappy => "Snappy",
            Compression::Lz4 => "Lz4",
            Compression::Zstd => "Zstd",
        }
    }

    /// The codec with attribute id `id`.
    pub fn from_id(id: u8) -> Result<Compression> {
        Ok(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            codec => return Err(Error::UnknownCompression { codec }),
        })
    }

    /// Compresses `input`.
    pub fn compress(self, input: &[u8]) -> Result<Vec<u8>> {
        let fail = |source| Error::Codec {
            codec: self.label(),
            source,
        };
        match self {
            Compression::None => Ok(input.to_vec()),
            Compression::Gzip => {
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                enc.write_all(input).map_err(fail)?;
                enc.finish().map_err(fail)
            }
            Compression::Snappy => snap::raw::Encoder::new()
                .compress_vec(input)
                .map_err(|e| fail(io::Error::other(e))),
            Compression::Lz4 => {
                let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
                enc.write_all(input).map_err(fail)?;
                enc.finish().map_err(|e| fail(io::Error::other(e)))
            }
            Compression::Zstd => zstd::stream::encode_all(input, 3).map_err(fail),
        }
    }

    /// Decompresses `input`, failing with [`Error::DecompressedTooLarge`] rather than producing
    /// more than `limit` bytes.
    pub fn decompress(self, input: &[u8], limit: usize) -> Result<Vec<u8>> {
        match self {
            Compression::None => {
                if input.len() > limit {
                    return Err(Error::DecompressedTooLarge {
                        codec: self.label(),
                        limit,
                    });
                }
                Ok(input.to_vec())
            }
            Compression::Gzip => self.read_capped(flate2::read::GzDecoder::new(input), limit),
            Compression::Snappy => self.decompress_snappy(input, limit),
            Compression::Lz4 => self.read_capped(lz4_flex::frame::FrameDecoder::new(input), limit),
            Compression::Zstd => {
                let decoder =
                    zstd::stream::read::Decoder::new(input).map_err(|source| Error::Codec {
                        codec: self.label(),
                        source,
                    })?;
                self.read_capped(decoder, limit)
            }
        }
    }

    fn read_capped(self, reader: impl Read, limit: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        reader
            .take(cap)
            .read_to_end(&mut out)
            .map_err(|source| Error::Codec {
                codec: self.label(),
                source,
            })?;
        if out.len() > limit {
            return Err(Error::DecompressedTooLarge {
                codec: self.label(),
                limit,
            });
        }
        Ok(out)
    }

    fn decompress_snappy(self, input: &[u8], limit: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        if input.starts_with(&XERIAL_MAGIC) {
            let mut rest = input.get(XERIAL_HEADER_LEN..).unwrap_or_default();
            while !rest.is_empty() {
                let Some((len, tail)) = rest.split_first_chunk::<4>() else {
                    return Err(self.corrupt("truncated xerial block length"));
                };
                let len = u32::from_be_bytes(*len) as usize;
                let Some(block) = tail.get(..len) else {
                    return Err(self.corrupt("truncated xerial block"));
                };
                self.snappy_block(block, limit - out.len(), &mut out)?;
                rest = &tail[len..];
            }
        } else {
            self.snappy_block(input, limit, &mut out)?;
        }
        Ok(out)
    }

    fn snappy_block(self, block: &[u8], room: usize, out: &mut Vec<u8>) -> Result<()> {
        let claimed = snap::raw::decompress_len(block).map_err(|e| self.corrupt_io(e))?;
        if claimed > room {
            return Err(Error::DecompressedTooLarge {
                codec: self.label(),
                limit: room,
            });
        }
        let start = out.len();
        out.resize(start + claimed, 0);
        let written = snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|e| self.corrupt_io(e))?;
        out.truncate(start + written);
        Ok(())
    }

    fn corrupt(self, what: &'static str) -> Error {
        Error::Codec {
            codec: self.label(),
            source: io::Error::new(io::ErrorKind::InvalidData, what),
        }
    }

    fn corrupt_io(self, e: snap::Error) -> Error {
        Error::Codec {
            codec: self.label(),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn a_bomb_stops_at_the_limit() {
        let zeros = vec![0u8; 1 << 20];
        for codec in ALL {
            let packed = codec.compress(&zeros).unwrap();
            let err = codec.decompress(&packed, 4096).unwrap_err();
            assert!(
                matches!(err, Error::DecompressedTooLarge { limit: 4096, .. }),
                "{codec:?}: {err}"
            );
        }
    }

    #[test]
    fn xerial_framed_snappy_decodes() {
        // Java's SnappyOutputStream: magic, version 1, compatible 1, then length-prefixed blocks.
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&1i32.to_be_bytes());
        framed.extend_from_slice(&1i32.to_be_bytes());
        for part in [&b"hello "[..], b"world"] {
            let block = snap::raw::Encoder::new().compress_vec(part).unwrap();
            framed.extend_from_slice(&(block.len() as u32).to_be_bytes());
            framed.extend_from_slice(&block);
        }
        let out = Compression::Snappy.decompress(&framed, 1024).unwrap();
        assert_eq!(out, b"hello world");
        framed.truncate(framed.len() - 2);
        assert!(Compression::Snappy.decompress(&framed, 1024).is_err());
    }

    #[test]
    fn unknown_codec_ids_are_errors() {
        for id in 5..8 {
            assert!(
                matches!(Compression::from_id(id), Err(Error::UnknownCompression { codec }) if codec == id)
            );
        }
    }

    proptest! {
        #[test]
        fn every_codec_round_trips(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            for codec in ALL {
                let packed = codec.compress(&data).unwrap();
                prop_assert_eq!(codec.decompress(&packed, data.len()).unwrap(), data.clone());
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            for codec in ALL {
                let _ = codec.decompress(&data, 1 << 16);
            }
        }
    }
}
