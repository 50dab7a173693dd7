//! Under `fsync = always`, appends that arrive while an fdatasync is in flight share the next
//! one instead of each paying for their own.

use std::sync::Arc;
use std::time::Duration;

use super::instrumented::Instrumented;
use super::*;

#[test]
fn concurrent_appends_share_fdatasyncs() {
    const THREADS: usize = 8;
    const APPENDS: usize = 25;
    let storage = Arc::new(Instrumented::new(Duration::from_millis(5)));
    let config = LogConfig {
        checkpoint_interval_bytes: 1 << 30,
        segment_bytes: 1 << 30,
        ..small_config()
    };
    let log = Arc::new(PartitionLog::open_with(storage.clone(), "/p", config).unwrap());
    let before = storage.syncs();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..APPENDS {
                    let info = log
                        .append(&mut batch_of(&[format!("{t}-{i}").into_bytes()], 0))
                        .unwrap();
                    assert!(
                        log.durable_end_offset() > info.last_offset,
                        "acknowledged before durable"
                    );
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let used = storage.syncs() - before;
    let appends = (THREADS * APPENDS) as u64;
    // One fsync per append would be 200; with 8 writers waiting on each flush, a shared
    // fsync serves several of them.
    assert!(
        used * 2 <= appends,
        "{used} fdatasyncs for {appends} appends: no group commit"
    );
    assert_eq!(log.end_offset().0, appends as i64);
}
