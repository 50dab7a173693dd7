//! Background threads at a lower CPU priority, so a producer or reader that wakes never waits
//! out their time slice: the cleaner here, the broker's login thread in `logd-kafka`.

/// Sets the calling thread's niceness (Linux: per thread); false if the system refused.
#[allow(unsafe_code)]
pub fn lower_thread_priority(niceness: libc::c_int) -> bool {
    // SAFETY: setpriority on the calling thread's own id reads and writes no memory of ours.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, niceness) == 0 }
}
