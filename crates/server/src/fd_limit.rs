//! The process's file-descriptor limit: raised at start from the soft to the hard limit, as
//! Go's runtime and many servers do, since every partition keeps files open and the common
//! soft default (1,024) would stop logd near 250 partitions; then logged, so an operator sees
//! the limit the broker runs with.

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
