//! Typed views of the runtime's waiting and thread-pool events that `clrspy report hangs`
//! reads beside `Contention/*` ([`crate::runtime`]): `WaitHandleWait/Start`/`Stop` (keyword
//! `WaitHandle`, .NET 9+), the pool's hill-climbing sample, its configured minimum and
//! maximum, the work items it queued and ran (`ThreadPool/Enqueue`/`Dequeue`), and the start
//! of a thread (`Thread/Creating` on its creator, `Thread/Running` on it). Each has
//! `parse(payload, version, pointer_size) -> Result<_, ViewError>`; a payload cut short is an
//! error naming the event and the field, never zeros.
//!
//! ```
//! use clr_events::threading::{WaitHandleWaitStart, WaitSource};
//! let mut p = vec![1u8];
//! p.extend(0x7f00_1000u64.to_le_bytes());
//! p.extend(0u16.to_le_bytes());
//! let w = WaitHandleWaitStart::parse(&p, 0, 8).unwrap();
//! assert_eq!((w.source, w.associated_object_id), (WaitSource::MonitorWait, 0x7f00_1000));
//! assert!(WaitHandleWaitStart::parse(&p[..4], 0, 8).is_err());
//! ```

use crate::view::{Cursor, ViewError};
use crate::KnownProvider;

/// Event ids of `Microsoft-Windows-DotNETRuntime` read here.
pub mod ids {
    /// ThreadPoolWorkerThreadAdjustment/Sample.
    pub const TP_ADJUSTMENT_SAMPLE: u32 = 54;
    /// ThreadPoolMinMaxThreads.
    pub const TP_MIN_MAX_THREADS: u32 = 59;
    /// ThreadPool/Enqueue.
    pub const TP_ENQUEUE: u32 = 61;
    /// ThreadPool/Dequeue.
    pub const TP_DEQUEUE: u32 = 62;
    /// WaitHandleWait/Start.
    pub const WAIT_HANDLE_WAIT_START: u32 = 301;
    /// WaitHandleWait/Stop.
    pub const WAIT_HANDLE_WAIT_STOP: u32 = 302;
    /// Thread/Running: a new thread starts (written on it); `Thread/Creating` (70, on the
    /// creating thread) is [`crate::runtime::ids::THREAD_CREATING`].
    pub const THREAD_RUNNING: u32 = 71;
}

fn rt<'a>(id: u32, version: u8, p: &'a [u8], ptr: u8) -> Result<Cursor<'a>, ViewError> {
    Cursor::for_event(KnownProvider::Runtime, id, version, p, ptr)
}

/// What a `WaitHandleWait` waits in (the runtime's `WaitHandleWaitSourceMap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitSource {
    /// A wait handle, `Thread.Join`, a lock's slow path: the runtime does not say.
    Unknown,
    /// `Monitor.Wait`.
    MonitorWait,
    /// A value this crate does not know.
    Other(u8),
}

impl WaitSource {
    /// The source for a payload's `WaitSource` byte.
    pub(crate) fn from_u8(v: u8) -> WaitSource {
        match v {
            0 => WaitSource::Unknown,
            1 => WaitSource::MonitorWait,
            v => WaitSource::Other(v),
        }
    }
}

impl std::fmt::Display for WaitSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitSource::Unknown => f.write_str("Unknown"),
            WaitSource::MonitorWait => f.write_str("MonitorWait"),
            WaitSource::Other(v) => write!(f, "{v}"),
        }
    }
}

/// `WaitHandleWait/Start`: a thread starts waiting (a wait handle, a monitor, a join).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitHandleWaitStart {
    /// What it waits in.
    pub source: WaitSource,
    /// The object waited on (`Monitor.Wait`'s; 0 when none).
    pub associated_object_id: u64,
}

impl WaitHandleWaitStart {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::WAIT_HANDLE_WAIT_START, version, payload, pointer_size)?;
        let source = c.u32("WaitSource")?;
        Ok(WaitHandleWaitStart {
            source: WaitSource::from_u8(u8::try_from(source).unwrap_or(u8::MAX)),
            associated_object_id: c.u64("AssociatedObjectID")?,
        })
    }
}

/// `ThreadPoolWorkerThreadAdjustment/Sample`: the throughput hill climbing measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadPoolSample {
    /// Work items completed per second.
    pub throughput: f64,
}

impl ThreadPoolSample {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::TP_ADJUSTMENT_SAMPLE, version, payload, pointer_size)?;
        Ok(ThreadPoolSample {
            throughput: c.f64("Throughput")?,
        })
    }
}

/// `ThreadPoolMinMaxThreads`: the pool's limits (its minimum is how many workers it starts
/// at once before injecting slowly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadPoolMinMax {
    /// The minimum of worker threads.
    pub min_workers: u32,
    /// The maximum of worker threads.
    pub max_workers: u32,
}

impl ThreadPoolMinMax {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::TP_MIN_MAX_THREADS, version, payload, pointer_size)?;
        Ok(ThreadPoolMinMax {
            min_workers: c.u32("MinWorkerThreads")?,
            max_workers: c.u32("MaxWorkerThreads")?,
        })
    }
}

/// `ThreadPool/Enqueue` and `ThreadPool/Dequeue`: a work item queued, or taken by a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadPoolWork {
    /// The work item.
    pub(crate) work_id: u64,
}

impl ThreadPoolWork {
    /// Parses event `id` (one of the two).
    pub fn parse(
        id: u32,
        payload: &[u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = rt(id, version, payload, pointer_size)?;
        Ok(ThreadPoolWork {
            work_id: c.u64("WorkID")?,
        })
    }
}

/// `Thread/Creating` (written on the creating thread) or `Thread/Running` (on the new thread):
/// the new thread's runtime object, the same in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadStartWork {
    /// The runtime's object of the new thread.
    pub id: u64,
}

impl ThreadStartWork {
    /// Parses event `id` (one of the two).
    pub fn parse(
        id: u32,
        payload: &[u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = rt(id, version, payload, pointer_size)?;
        Ok(ThreadStartWork { id: c.u64("ID")? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{event_name_for, KnownProvider};

    #[test]
    fn ids_match_the_names() {
        for (id, name) in [
            (
                ids::TP_ADJUSTMENT_SAMPLE,
                "ThreadPoolWorkerThreadAdjustment/Sample",
            ),
            (ids::TP_MIN_MAX_THREADS, "ThreadPoolMinMaxThreads"),
            (ids::TP_ENQUEUE, "ThreadPool/Enqueue"),
            (ids::TP_DEQUEUE, "ThreadPool/Dequeue"),
            (ids::WAIT_HANDLE_WAIT_START, "WaitHandleWait/Start"),
            (ids::WAIT_HANDLE_WAIT_STOP, "WaitHandleWait/Stop"),
            (ids::THREAD_RUNNING, "Thread/Running"),
        ] {
            assert_eq!(event_name_for(KnownProvider::Runtime, id, 0), Some(name));
        }
    }

    #[test]
    fn wait_handle_waits_version_0() {
        // As .NET 10 writes a Monitor.Wait: source 1, the object, the instance id.
        let mut p = vec![1u8];
        p.extend(0x7efa_8991_d6b0u64.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        let w = WaitHandleWaitStart::parse(&p, 0, 8).unwrap();
        assert_eq!(w.source, WaitSource::MonitorWait);
        assert_eq!(w.associated_object_id, 0x7efa_8991_d6b0);
        assert_eq!(WaitSource::from_u8(0).to_string(), "Unknown");
        assert_eq!(WaitSource::from_u8(9).to_string(), "9");
        // 32-bit processes write a 4-byte pointer.
        let mut q = vec![0u8];
        q.extend(0x1234u32.to_le_bytes());
        q.extend(0u16.to_le_bytes());
        assert_eq!(
            WaitHandleWaitStart::parse(&q, 0, 4).unwrap(),
            WaitHandleWaitStart {
                source: WaitSource::Unknown,
                associated_object_id: 0x1234
            }
        );
        let e = WaitHandleWaitStart::parse(&p[..5], 0, 8).unwrap_err();
        assert!(e.to_string().contains("AssociatedObjectID"), "{e}");
    }

    #[test]
    fn thread_pool_events_version_0() {
        let mut s = 12.5f64.to_le_bytes().to_vec();
        s.extend(0u16.to_le_bytes());
        assert_eq!(ThreadPoolSample::parse(&s, 0, 8).unwrap().throughput, 12.5);
        assert!(ThreadPoolSample::parse(&s[..7], 0, 8).is_err());
        // .NET 10's defaults on 2 CPUs: 2 to 32767 workers, 1 to 1000 I/O threads.
        let mut m = Vec::new();
        for v in [2u16, 32767, 1, 1000, 0] {
            m.extend(v.to_le_bytes());
        }
        let mm = ThreadPoolMinMax::parse(&m, 0, 8).unwrap();
        assert_eq!((mm.min_workers, mm.max_workers), (2, 32767));
        assert!(ThreadPoolMinMax::parse(&m[..3], 0, 8).is_err());
        let mut w = 0xABCDu64.to_le_bytes().to_vec();
        w.extend(0u16.to_le_bytes());
        for id in [ids::TP_ENQUEUE, ids::TP_DEQUEUE] {
            assert_eq!(ThreadPoolWork::parse(id, &w, 0, 8).unwrap().work_id, 0xABCD);
        }
        assert!(ThreadPoolWork::parse(ids::TP_ENQUEUE, &w[..4], 0, 8).is_err());
    }

    #[test]
    fn contention_start_names_lock_object_and_owner_from_version_2() {
        use crate::runtime::{ids as rt_ids, ContentionStart};
        // .NET 10's Contention/Start v2, as recorded from the `hang` workload.
        let mut p = vec![0u8, 0, 0];
        p.extend(0x7f09_1400_2e30u64.to_le_bytes());
        p.extend(0x7f09_4589_f0c8u64.to_le_bytes());
        p.extend(7359u64.to_le_bytes());
        let s = ContentionStart::parse(&p, 2, 8).unwrap();
        assert_eq!(s.lock_id, Some(0x7f09_1400_2e30));
        assert_eq!(s.associated_object_id, Some(0x7f09_4589_f0c8));
        assert_eq!(s.owner_thread_id, Some(7359));
        // Version 1 (.NET 5-7): flags and instance id only.
        let v1 = ContentionStart::parse(&[0, 0, 0], 1, 8).unwrap();
        assert_eq!(
            (v1.lock_id, v1.associated_object_id, v1.owner_thread_id),
            (None, None, None)
        );
        assert_eq!(rt_ids::CONTENTION_START, 81);
    }

    #[test]
    fn a_thread_start_names_the_new_threads_object() {
        let mut p = 0x7f00_2000u64.to_le_bytes().to_vec();
        p.extend(0u16.to_le_bytes());
        for id in [crate::runtime::ids::THREAD_CREATING, ids::THREAD_RUNNING] {
            assert_eq!(
                ThreadStartWork::parse(id, &p, 0, 8).unwrap().id,
                0x7f00_2000
            );
            assert!(ThreadStartWork::parse(id, &p[..5], 0, 8).is_err());
        }
    }
}
