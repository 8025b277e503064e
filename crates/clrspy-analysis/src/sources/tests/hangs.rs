//! The `hangs` model's tests on a dotnet-trace recording of a deadlock.

use super::analysed_file;
use crate::ModelSet;

/// dotnet-trace's recording of the `hang` workload (tests/data/README.md): two threads each
/// hold one lock and wait for the other's; no `Contention/Stop` ever comes.
#[test]
fn a_dotnet_trace_deadlock_is_one_cycle_of_two_threads() {
    use crate::sources::hangs::{HangModel, WaitKind};
    let a = analysed_file(
        "dotnet-trace-deadlock.nettrace.zip",
        ModelSet::named(&["hangs"]).unwrap(),
    );
    let m = a.model::<HangModel>().unwrap();
    assert_eq!((m.lock_waits, m.lock_waits_ended), (2, 0));
    assert_eq!((m.handle_waits, m.handle_waits_ended), (3, 1));
    assert_eq!(m.open_locks.len(), 2);
    let cycles = m.cycles();
    assert_eq!(cycles.len(), 1);
    let c = &cycles[0];
    assert_eq!(c.len(), 2);
    // Each waits for the lock the other holds, and its owner is the other.
    assert_eq!(c[0].wait.owner, c[1].wait.thread);
    assert_eq!(c[1].wait.owner, c[0].wait.thread);
    assert_eq!(c[0].holds_lock, c[1].wait.lock_id);
    assert_eq!(c[1].holds_lock, c[0].wait.lock_id);
    assert_ne!(c[0].wait.lock_id, c[1].wait.lock_id);
    assert!(c[0].wait.thread < c[1].wait.thread);
    for member in c {
        let frames = a.frames(member.wait.stack);
        assert!(
            frames
                .iter()
                .any(|f| f.starts_with("Workloads.Deadlock.Take")),
            "{frames:?}"
        );
    }
    // Both open lock waits are summed by stack until the trace's end.
    let open: u64 = m
        .by_stack
        .iter()
        .filter(|((k, _), _)| *k == WaitKind::Lock)
        .map(|(_, t)| t.open)
        .sum();
    assert_eq!(open, 2);
}
