//! The process's file-descriptor limit: raised at start from the soft to the hard limit, as
//! Go's runtime and many servers do, since every partition keeps files open and the common
//! soft default (1,024) would stop logd near 250 partitions; then logged, so an operator sees
//! the limit the broker runs with. [`Shares`] divides it between partitions' files and client
//! connections, so that the defaults of both fit under it.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; the (soft, hard) limits now in force.
#[allow(unsafe_code)]
pub(crate) fn raise() -> std::io::Result<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into `limit`, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads only `raised`, which lives for the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Ok((limit.rlim_cur, limit.rlim_max))
}

/// How the open-file limit is divided when the options do not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shares {
    /// Partition files (segments, indexes) kept open at most: two fifths, at least 64.
    pub(crate) partition_files: usize,
    /// Client connections at once: what is left after the partitions' files and a twentieth
    /// (at least 64) kept for everything else (the offset and group stores, listeners, the
    /// HTTP listener's connections, logs), at least 64.
    pub(crate) connections: usize,
}

/// The shares of a soft limit of `soft` descriptors (an unlimited one counts as 2^20).
pub(crate) fn shares(soft: u64, partition_files: Option<usize>) -> Shares {
    let soft = usize::try_from(soft.min(1 << 20)).unwrap_or(1 << 20);
    let partition_files = partition_files.unwrap_or((soft / 5 * 2).max(64));
    let spare = (soft / 20).max(64);
    Shares {
        partition_files,
        connections: soft.saturating_sub(partition_files + spare).max(64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_thousand_descriptors_hold_ten_thousand_connections_beside_the_files() {
        let shares = shares(20_000, None);
        assert_eq!(shares.partition_files, 8_000);
        assert_eq!(shares.connections, 11_000);
    }

    #[test]
    fn a_file_cache_given_leaves_the_rest_to_connections() {
        assert_eq!(shares(20_000, Some(2_000)).connections, 17_000);
        assert_eq!(shares(20_000, Some(50_000)).connections, 64, "never none");
    }

    #[test]
    fn small_and_unlimited_limits() {
        assert_eq!(
            shares(128, None),
            Shares {
                partition_files: 64,
                connections: 64
            }
        );
        let unlimited = shares(u64::MAX, None);
        assert_eq!(unlimited.partition_files, (1 << 20) / 5 * 2);
        assert!(unlimited.connections > 500_000);
    }
}
