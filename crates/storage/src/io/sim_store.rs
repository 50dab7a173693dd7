//! The power-cut test of a store kept in one file replaced whole (`replace_file`): quotas,
//! group configs, and the like. One workload of six changes, the store reopened halfway, run
//! with the power cut after each of its operations in turn; every crash image must reopen to
//! the state of the last acknowledged change or of a later attempted one, never an older or
//! mixed one.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use super::{SimFs, Storage};

/// A store of state `T` under test: how to open it on a file system (in `/d`), read its state,
/// and apply change `step` (0 to 5), given the state acknowledged so far.
pub trait PowerCutStore {
    /// The state the store holds.
    type State: Clone + PartialEq + Debug + Default;
    /// The store.
    type Store;
    /// Opens the store in `dir` of `storage`.
    fn open(&self, storage: Arc<dyn Storage>, dir: &Path) -> Result<Self::Store, String>;
    /// What the store holds.
    fn state(&self, store: &Self::Store) -> Self::State;
    /// The state change `step` leads to from `acked`, and the change applied (`false` when it
    /// failed, the power being cut).
    fn change(
        &self,
        store: &mut Self::Store,
        step: u32,
        acked: &Self::State,
    ) -> (Self::State, bool);
}

/// Runs the workload of `store` with the power cut after every operation, in every crash mode,
/// and checks each recovered state; returns how many crash states were checked.
pub fn check_every_power_cut<P: PowerCutStore>(store: &P) -> usize {
    let dir = Path::new("/d");
    let workload = |fs: &SimFs| {
        let mut acked = P::State::default();
        let mut attempts = vec![acked.clone()];
        let open = || store.open(Arc::new(fs.clone()), dir);
        if super::create_dir_durable(fs, dir).is_err() {
            return (acked, attempts);
        }
        let Ok(mut opened) = open() else {
            return (acked, attempts);
        };
        for step in 0..6u32 {
            if step == 3 {
                match open() {
                    Ok(again) => opened = again,
                    Err(_) => return (acked, attempts),
                }
            }
            let (next, applied) = store.change(&mut opened, step, &acked);
            attempts.push(next);
            if !applied {
                return (acked, attempts);
            }
            acked = store.state(&opened);
        }
        (acked, attempts)
    };
    SimFs::every_power_cut(workload, |image, (acked, attempts), cut, mode| {
        let _ = image.create_dir_all(dir);
        let recovered = store
            .open(Arc::new(image), dir)
            .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
        let recovered = store.state(&recovered);
        let acked_at = attempts.iter().rposition(|s| s == acked).unwrap();
        let position = attempts.iter().rposition(|s| *s == recovered);
        assert!(
            matches!(position, Some(p) if p >= acked_at),
            "cut {cut} {mode:?}: recovered {recovered:?}, acknowledged {acked:?}"
        );
    })
}
