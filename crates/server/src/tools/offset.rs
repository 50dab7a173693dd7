//! Where to start reading: `beginning`, `end`, an offset `N`, `-N` (the last N records), or
//! `@TIME` (epoch milliseconds or RFC 3339), as `consume` and `replay` take it.

use logd_client::{Client, PartitionOffsets};

/// A parsed `-o` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetSpec {
    Beginning,
    End,
    At(i64),
    Last(i64),
    Time(i64),
}

impl std::str::FromStr for OffsetSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<OffsetSpec, String> {
        Ok(match s {
            "beginning" | "earliest" => OffsetSpec::Beginning,
            "end" | "latest" => OffsetSpec::End,
            _ if s.starts_with('@') => OffsetSpec::Time(parse_time(&s[1..])?),
            _ if s.starts_with('-') => {
                OffsetSpec::Last(s[1..].parse().map_err(|_| format!("bad offset {s:?}"))?)
            }
            _ => OffsetSpec::At(s.parse().map_err(|_| {
                format!(
                    "bad offset {s:?}: use beginning, end, N, -N or @TIME (epoch ms or RFC 3339)"
                )
            })?),
        })
    }
}

impl OffsetSpec {
    /// The first offset to read in `topic`/`partition`.
    pub(crate) fn resolve(
        self,
        client: &mut Client,
        topic: &str,
        partition: i32,
    ) -> anyhow::Result<i64> {
        let PartitionOffsets { earliest, latest } = client.offsets(topic, partition)?;
        Ok(match self {
            OffsetSpec::Beginning => earliest,
            OffsetSpec::End => latest,
            OffsetSpec::At(n) => n.clamp(earliest, latest),
            OffsetSpec::Last(n) => latest.saturating_sub(n).max(earliest),
            OffsetSpec::Time(ms) => client.list_offset(topic, partition, ms)?.unwrap_or(latest),
        })
    }
}

/// Epoch milliseconds, or RFC 3339 (`2026-11-30T08:00:00Z`, `…+01:00`, fractions allowed).
pub(crate) fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    let bad = || format!("bad time {s:?}: use epoch milliseconds or RFC 3339");
    let (date, rest) = s.split_once(['T', 't', ' ']).ok_or_else(bad)?;
    let mut ymd = date
        .splitn(3, '-')
        .map(|p| p.parse::<i64>().map_err(|_| bad()));
    let (y, mo, d) = (
        ymd.next().ok_or_else(bad)??,
        ymd.next().ok_or_else(bad)??,
        ymd.next().ok_or_else(bad)??,
    );
    let zone_at = rest.find(['Z', 'z', '+', '-']).ok_or_else(bad)?;
    let (clock, zone) = rest.split_at(zone_at);
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = hms
        .splitn(3, ':')
        .map(|p| p.parse::<i64>().map_err(|_| bad()));
    let (h, mi, sec) = (
        parts.next().ok_or_else(bad)??,
        parts.next().ok_or_else(bad)??,
        parts.next().unwrap_or(Ok(0))?,
    );
    let millis = format!("{fraction:0<3}")
        .get(..3)
        .and_then(|f| f.parse::<i64>().ok())
        .ok_or_else(bad)?;
    let offset_minutes = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (zh, zm) = zone[1..].split_once(':').ok_or_else(bad)?;
            sign * (zh.parse::<i64>().map_err(|_| bad())? * 60
                + zm.parse::<i64>().map_err(|_| bad())?)
        }
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return Err(bad());
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(((days * 24 + h) * 60 + mi - offset_minutes) * 60_000 + sec * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_specs_parse() {
        assert_eq!("beginning".parse(), Ok(OffsetSpec::Beginning));
        assert_eq!("end".parse(), Ok(OffsetSpec::End));
        assert_eq!("42".parse(), Ok(OffsetSpec::At(42)));
        assert_eq!("-3".parse(), Ok(OffsetSpec::Last(3)));
        assert_eq!(
            "@1700000000000".parse(),
            Ok(OffsetSpec::Time(1_700_000_000_000))
        );
        assert!("soon".parse::<OffsetSpec>().is_err());
    }

    #[test]
    fn rfc3339_times_match_known_epochs() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0));
        // `date -d 2023-11-14T22:13:20Z +%s` = 1700000000
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
        assert_eq!(
            parse_time("2023-11-14T23:13:20.5+01:00"),
            Ok(1_700_000_000_500)
        );
        assert_eq!(parse_time("2000-02-29T12:00:00-05:30"), Ok(951_845_400_000));
        assert!(parse_time("2023-13-01T00:00:00Z").is_err());
        assert!(parse_time("yesterday").is_err());
    }
}
